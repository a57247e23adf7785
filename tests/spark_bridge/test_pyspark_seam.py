"""The contract of the PySpark internals the bridge uses (``spark_bridge._pyspark_seam``): a
PySpark release that moves one fails here first, and an unsupported release is refused at
import with the releases that work."""

from __future__ import annotations

from typing import Any

import pytest

from spark_bridge._pyspark_seam import (
    PySparkSeamError,
    arrow_batch_rdd,
    arrow_frames_of_all_partitions,
    check_pyspark,
    hearing_group_cancels,
    is_classic,
    java_rdd,
    jvm_is_running,
    local_socket,
    max_result_size,
    run_partition_job,
)
from spark_bridge.session import arrow_schema_of


@pytest.mark.parametrize("version", ["3.5.0", "3.5.6", "4.0.0", "4.3.0", "4.9.1.dev0"])
def test_supported_pyspark_releases_pass(version: str) -> None:
    check_pyspark(version)


@pytest.mark.parametrize("version", ["3.4.4", "2.4.8", "5.0.0", "nonsense"])
def test_other_pyspark_releases_are_refused_naming_the_ones_that_work(version: str) -> None:
    with pytest.raises(PySparkSeamError, match=r"PySpark 3\.5 and 4\.x"):
        check_pyspark(version)


def test_the_installed_pyspark_passes() -> None:
    check_pyspark()


def test_the_internals_are_where_the_bridge_reads_them(spark: Any) -> None:
    assert jvm_is_running()
    assert is_classic(spark)
    df = spark.createDataFrame([(i, f"r{i}") for i in range(6)], "id INT, name STRING")
    assert is_classic(df)
    assert int(arrow_batch_rdd(df.repartition(3)).getNumPartitions()) == 3
    pa = pytest.importorskip("pyarrow")
    schema = arrow_schema_of(df.schema)
    batches = [
        pa.ipc.read_record_batch(pa.py_buffer(f), schema)
        for f in arrow_frames_of_all_partitions(df)
    ]
    assert sorted(i for b in batches for i in b.column(0).to_pylist()) == list(range(6))
    rdd = spark.sparkContext.parallelize(range(10), 2)
    jrdd, deserializer = java_rdd(rdd)
    sockfile, sock = local_socket(run_partition_job(spark.sparkContext, jrdd, 1))
    try:
        assert list(deserializer.load_stream(sockfile)) == [5, 6, 7, 8, 9]
    finally:
        sockfile.close()
        sock.close()
    assert max_result_size(spark.sparkContext) == 1024**3  # Spark's default, 1g


def test_cancel_job_group_is_heard_by_every_run_inside_and_put_back_after(spark: Any) -> None:
    """Two runs at once on one context both hear ``sc.cancelJobGroup``; Spark's own method
    (here a stand-in the instance had) still runs first; once both left, the instance's
    ``cancelJobGroup`` is what it was."""
    sc = spark.sparkContext
    calls: list[str] = []
    own = sc.__dict__.get("cancelJobGroup")

    def stand_in(group: str) -> None:
        calls.append(f"spark:{group}")

    sc.cancelJobGroup = stand_in
    try:
        with hearing_group_cancels(sc, lambda g: calls.append(f"first:{g}")):
            with hearing_group_cancels(sc, lambda g: calls.append(f"second:{g}")):
                sc.cancelJobGroup("etl")
            sc.cancelJobGroup("other")
        sc.cancelJobGroup("after")
        assert sc.cancelJobGroup is stand_in
    finally:
        if own is None:
            del sc.cancelJobGroup
        else:
            sc.cancelJobGroup = own
    assert calls == [
        "spark:etl",
        "first:etl",
        "second:etl",
        "spark:other",
        "first:other",
        "spark:after",
    ]
