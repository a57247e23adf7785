"""The cluster path on a real multi-JVM Spark: ``local-cluster[2,1,1024]`` (a master, two
workers, their executors: each a JVM of its own) in a process of its own, since a process
has one SparkContext (``cluster_job.py``). The slowest Spark test: the cluster's start is
most of it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def test_decimals_and_timestamps_through_a_failure_on_a_multi_jvm_cluster(
    spark: Any, tmp_path: Path
) -> None:
    """``spark`` (unused): the suite's session, for its skip when Spark cannot run here."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.spark_bridge.cluster_job", str(tmp_path / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    # a local-cluster worker keeps the application's folder in $SPARK_HOME/work (PySpark's
    # own folder unless SPARK_HOME says otherwise): this test's goes
    import pyspark  # noqa: PLC0415

    home = os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)
    shutil.rmtree(Path(home, "work", report["application"]), ignore_errors=True)
    assert report["master"] == "local-cluster[2,1,1024]"
    assert report["restarts"] == 1
    # 1.2 MB partitions and a 1 MB maxResultSize: each read in slices, jobs of the caller's group
    assert report["jobs_in_group"] >= 2 * 3
    assert report["keys"] == 13 and report["match"], "the topology's answer is Spark's"
    # a timestamp stays a timestamp, the decimal sum a decimal
    assert report["schema"] == "struct<user:bigint,total:decimal(38,18),n:bigint,at:timestamp>"
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.name.startswith("part-"))
