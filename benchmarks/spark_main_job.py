"""The Spark main job's rate against the same topology fed from a generator, in one process.

    python benchmarks/spark_main_job.py [--rows 2000000] [--repeat 3]

``examples/spark_clicks.py``'s topology (clicks -> map -> key_by(user) -> running totals ->
the exactly-once Parquet sink, parallelism 2, checkpoints every 200 ms, no injected failure),
fed once from the Spark DataFrame through ``spark_bridge.run_topology_job`` and once from
``env.from_generator`` producing the same (user, ts, amount) tuples, runs interleaved; the
median rate of each and their ratio (issue target: Spark-fed >= 0.5 of generator-fed).
Spark's start and the DataFrame's caching are outside the measured time.
"""

from __future__ import annotations

import argparse
import datetime
import runpy
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ckptsim import StreamExecutionEnvironment
from ckptsim._cli import configure_logging
from spark_bridge import ParquetSink, local_spark, run_topology_job

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = runpy.run_path(str(ROOT / "examples" / "spark_clicks.py"))
USERS, PARTITIONS, PARALLELISM, INTERVAL = 10_000, 4, 2, "200 ms"


def spark_fed(spark: Any, clicks: Any) -> float:
    started = time.perf_counter()
    run = run_topology_job(
        spark,
        clicks,
        EXAMPLE["spend_per_user"],
        schema=EXAMPLE["SCHEMA"],
        parallelism=PARALLELISM,
        checkpoint_interval=INTERVAL,
        name="spark-fed",
    )
    elapsed = time.perf_counter() - started
    if not run.result.succeeded:
        raise SystemExit(f"the Spark-fed job did not finish: {run.result.failure}")
    shutil.rmtree(run.path, ignore_errors=True)
    return elapsed


def generator_fed(rows: list[tuple[int, datetime.datetime, float]], spark: Any) -> float:
    out = Path(tempfile.mkdtemp(prefix="ckptsim-bench-gen-"))
    env = StreamExecutionEnvironment(parallelism=PARALLELISM)
    env.enable_checkpointing(INTERVAL)
    stream = env.from_generator(rows.__getitem__, len(rows), name="Clicks")
    schema = spark.createDataFrame([], EXAMPLE["SCHEMA"]).schema
    EXAMPLE["spend_per_user"](stream).sink_to(ParquetSink(out, schema), name="out")
    started = time.perf_counter()
    result = env.execute("generator-fed")
    elapsed = time.perf_counter() - started
    shutil.rmtree(out, ignore_errors=True)
    if not result.succeeded:
        raise SystemExit(f"the generator-fed job did not finish: {result.failure}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    configure_logging(level="error")
    spark = local_spark()
    clicks = EXAMPLE["generate"](spark, args.rows, USERS, PARTITIONS).cache()
    assert clicks.count() == args.rows
    # the same tuples, in memory: the generator-fed job reads them without Spark
    rows = [tuple(r) for r in clicks.toLocalIterator()]
    spark_times: list[float] = []
    generator_times: list[float] = []
    spark_fed(spark, clicks)  # warm-up: Spark's Python workers, imports
    for _ in range(args.repeat):
        spark_times.append(spark_fed(spark, clicks))
        generator_times.append(generator_fed(rows, spark))
    spark_rate = args.rows / statistics.median(spark_times)
    generator_rate = args.rows / statistics.median(generator_times)
    print(
        f"spark_clicks topology: {args.rows:,} clicks, parallelism {PARALLELISM}, checkpoints "
        f"every {INTERVAL}, Parquet sink; median of {args.repeat} interleaved runs"
    )
    print(f"  fed from the Spark DataFrame   {spark_rate:12,.0f} rows/s")
    print(f"  fed from a generator           {generator_rate:12,.0f} rows/s")
    print(f"  Spark-fed / generator-fed      {spark_rate / generator_rate:12.2f}  (target >= 0.5)")
    clicks.unpersist()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
