"""Output the cluster can read: folders as paths or URIs (``file:``, ``hdfs:``, ``s3a:`` ...)
through ``pyarrow.fs``; an unavailable filesystem and a driver-only folder on a cluster are
refused before any job runs; checkpoint folders are the driver's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow.fs import _MockFileSystem

from actors.connectors import make_connector
from runtime.checkpoint import TaskId
from runtime.descriptors import SinkDescriptor, SinkKind
from spark_bridge import ParquetSink, SparkBridgeError, run_topology, run_topology_job
from spark_bridge.locations import (
    Location,
    arrow_uri,
    check_cluster_can_read,
    resolve,
    scheme_of,
)
from spark_bridge.orchestrator import _from_arrow
from spark_bridge.sinks import ParquetConnector

SCHEMA = pa.schema([("user", pa.int64()), ("total", pa.float64())])


@pytest.mark.parametrize(
    ("where", "scheme", "arrow"),
    [
        ("/data/out", "", "/data/out"),
        ("relative/out", "", "relative/out"),
        ("file:///data/out", "file", "file:///data/out"),
        ("file:/data/out", "file", "file:///data/out"),  # Hadoop's form
        ("s3a://bucket/out", "s3a", "s3://bucket/out"),  # Spark's S3, PyArrow's S3
        ("S3N://bucket/out", "s3n", "s3://bucket/out"),
        ("hdfs://nn:8020/out", "hdfs", "hdfs://nn:8020/out"),
    ],
)
def test_uris_are_read_as_spark_reads_them(where: str, scheme: str, arrow: str) -> None:
    assert scheme_of(where) == scheme
    assert arrow_uri(where) == arrow


def test_a_file_uri_is_a_local_folder(tmp_path: Path) -> None:
    location = resolve(f"file://{tmp_path}/out", "output=")
    assert location.path == f"{tmp_path}/out" and location.uri == f"file://{tmp_path}/out"
    assert not location.local  # said with file://: a folder every node mounts


def test_a_filesystem_that_is_not_here_is_one_error_naming_the_folder(
    spark: Any, tmp_path: Path
) -> None:
    df = spark.range(0, 4, 1, 2)
    with pytest.raises(SparkBridgeError, match=r"output='hdfs://namenode:8020/out'.*hdfs://"):
        run_topology(spark, df, lambda s: s, output="hdfs://namenode:8020/out")
    with pytest.raises(SparkBridgeError, match="output='nosuchfs://x/y'"):
        run_topology(spark, df, lambda s: s, output="nosuchfs://x/y")
    assert not df.is_cached  # refused before the input was touched
    assert not Path("hdfs:").exists() and not Path("nosuchfs:").exists()  # no ./hdfs:/ folder


def test_a_driver_path_is_refused_with_a_cluster_master() -> None:
    local = resolve("/tmp/out", "output=")
    with pytest.raises(SparkBridgeError, match=r"output='/tmp/out' is a folder on the driver"):
        check_cluster_can_read(local, "spark://host:7077", "output=")
    for master in ("local[2]", "local-cluster[2,1,1024]", "local"):
        check_cluster_can_read(local, master, "output=")
    shared = resolve("file:///mnt/shared/out", "output=")
    check_cluster_can_read(shared, "yarn", "output=")  # file:// says every node mounts it


def test_output_and_checkpoints_in_file_uris(spark: Any, tmp_path: Path) -> None:
    df = spark.range(0, 40, 1, 2)
    run = run_topology_job(
        spark,
        df,
        lambda s: s.map(lambda r: (r.id, r.id * 2)),
        output=f"file://{tmp_path}/out",
        checkpoint_interval=10,
        config={"execution.checkpointing.dir": f"file://{tmp_path}/checkpoints"},
        runtime="simulation",
        seed=1,
    )
    assert run.uri == f"file://{tmp_path}/out" and run.path == tmp_path / "out"
    assert sorted(tuple(r) for r in run.dataframe.collect()) == [(i, 2 * i) for i in range(40)]
    assert (tmp_path / "checkpoints").is_dir()  # the storage wrote there, not ./file:/...
    assert not Path("file:").exists()


def test_a_checkpoint_folder_of_another_filesystem_is_refused_before_the_job(
    spark: Any,
) -> None:
    df = spark.range(0, 4, 1, 2)
    with pytest.raises(
        SparkBridgeError, match=r"execution.checkpointing.dir='s3a://b/c'.*folder of the driver"
    ):
        run_topology(spark, df, lambda s: s, config={"execution.checkpointing.dir": "s3a://b/c"})
    assert not df.is_cached


def connector(sink: ParquetSink, attempt: int = 0) -> ParquetConnector:
    made = make_connector(
        SinkDescriptor(sink=SinkKind.CUSTOM, factory=sink),
        TaskId("sink-2", 1),
        2,
        transactional=True,
        attempt=attempt,
        writer=f"00000000-0000-4000-8000-{attempt:012d}",
    )
    assert isinstance(made, ParquetConnector)
    return made


def test_the_exactly_once_sink_writes_through_any_pyarrow_filesystem() -> None:
    """A filesystem that is not the local disk (PyArrow's in-memory one, as HDFS or S3 would
    be): staging, commit, restore and retraction go through ``pyarrow.fs`` only."""
    filesystem = _MockFileSystem()
    location = Location(uri="mock://out", filesystem=filesystem, path="out", scheme="mock")
    sink = ParquetSink(location, SCHEMA)
    assert sink.path is None  # not a local folder
    first = connector(sink)
    first.write([(1, 1.0)])
    at_1 = first.pre_commit(1)
    first.commit(1)
    first.write([(2, 2.0)])
    first.pre_commit(2)
    first.commit(2)
    first.write([(3, 3.0)])
    first.close(finished=False)
    again = connector(sink, attempt=1)
    again.restore([at_1])
    assert again.retract_after(1) == [
        "part-sink-2-1-00000000-0000-4000-8000-000000000000-2.parquet"
    ]
    again.write([(2, 2.0)])
    again.close(finished=True)
    files = [str(f) for f in sink.committed_files()]
    rows = pq.ParquetDataset(files, filesystem=filesystem).read().to_pylist()
    assert sorted((r["user"], r["total"]) for r in rows) == [(1, 1.0), (2, 2.0)]
    assert sink.remove_staging()


def test_a_result_can_reach_spark_from_the_drivers_memory(spark: Any, tmp_path: Path) -> None:
    """What a cluster master gets without output=: the driver's files as one Arrow table."""
    sink = ParquetSink(tmp_path, SCHEMA)
    c = connector(sink)
    c.write([(1, 1.5), (2, 2.5)])
    c.commit(c.pre_commit(1)["pending"][0])
    df = _from_arrow(spark, sink, None)
    assert sorted(tuple(r) for r in df.collect()) == [(1, 1.5), (2, 2.5)]
    assert df.schema.simpleString() == "struct<user:bigint,total:double>"
