"""The bridge's own Spark jobs: bounded (a partition is read a slice per job, a restore skips
rows on the executors), in the caller's job group, description and pool; and what a batch step
returns: the final value per key, faults named after the user's operators."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from actors.faults import FailTask
from runtime.datastream import DataStream
from spark_bridge import (
    FeedChanged,
    JobGroupCancelled,
    SplitReader,
    TopologyFailed,
    run_topology_job,
    spark_feed,
)
from spark_bridge.spark_feed import CONTEXT_PROPERTIES, _run_partition_job
from tests.spark_bridge import jobs_in_group


def read_all(reader: SplitReader, size: int = 4) -> list[Any]:
    rows: list[Any] = []
    while (buffer := reader.read(size, 0)) is not None:
        rows.extend(buffer)
    return rows


@pytest.fixture
def job_group(spark: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """The caller's job group, one per test: a reader a test leaves behind may still have a
    prefetch job under way (a DataFrame feed fetches the next split's first chunk in a
    background thread, in the caller's group), which must not count as the next test's."""
    sc = spark.sparkContext
    group = f"ckptsim-nightly {request.node.name}"
    sc.setJobGroup(group, "nightly etl")
    sc.setLocalProperty("spark.scheduler.pool", "etl")
    try:
        yield group
    finally:
        for key in CONTEXT_PROPERTIES:
            sc.setLocalProperty(key, None)


@pytest.mark.parametrize("kind", ["dataframe", "rdd"])
def test_a_partition_is_read_a_slice_per_job_in_the_callers_job_group(
    spark: Any, job_group: str, kind: str
) -> None:
    data = (
        spark.range(0, 60, 1, 3).select("id", F.spark_partition_id().alias("part"))
        if kind == "dataframe"
        else spark.sparkContext.parallelize([(i, i // 20) for i in range(60)], 3)
    )
    feed = spark_feed(data, rows_per_job=7)
    try:
        before = jobs_in_group(spark, job_group)
        whole = read_all(SplitReader(feed, 0, 1, name="s"))
        jobs = jobs_in_group(spark, job_group) - before
        assert [tuple(r) for r in whole] == [tuple(r) for r in data.collect()]
        # 20 rows per partition, 7 per job: rows 0-6, 7-13, 14-19 (fewer than 7: the end)
        assert len(jobs) == 3 * 3
        reader = SplitReader(feed, 0, 1, name="s")
        first = [r for _ in range(8) for r in reader.read(4, 0) or ()]  # into partition 1
        resumed = SplitReader(feed, 0, 1, name="s")
        resumed.seek(reader.position())
        assert first + read_all(resumed) == whole
        gone = SplitReader(feed, 0, 1, name="s")
        gone.seek({**reader.position(), "offset": 25})  # partition 1 has 20 rows
        with pytest.raises(FeedChanged, match="the input changed"):
            read_all(gone)
    finally:
        feed.release()


class FakeContext:
    """The local properties of one thread, as ``SparkContext`` keeps them."""

    def __init__(self) -> None:
        self.properties: dict[str, str | None] = {"spark.job.description": "the thread's own"}
        self.during: dict[str, str | None] = {}
        self._jvm = self
        self._jsc = self
        self.PythonRDD = self

    def getLocalProperty(self, key: str) -> str | None:
        return self.properties.get(key)

    def setLocalProperty(self, key: str, value: str | None) -> None:
        self.properties[key] = value

    def sc(self) -> Any:
        return self

    def runJob(self, sc: Any, jrdd: Any, partitions: Sequence[int]) -> str:
        self.during = dict(self.properties)
        return "socket"


def test_the_bridges_jobs_run_in_the_callers_group_pool_and_description() -> None:
    sc = FakeContext()
    caller = {
        "spark.jobGroup.id": "nightly-etl",
        "spark.job.description": "nightly",
        "spark.scheduler.pool": "etl",
        "spark.job.interruptOnCancel": "true",
    }
    assert _run_partition_job(sc, None, 3, "ckptsim source 's': partition 3", caller) == "socket"
    assert sc.during["spark.jobGroup.id"] == "nightly-etl"
    assert sc.during["spark.scheduler.pool"] == "etl"
    assert sc.during["spark.job.interruptOnCancel"] == "true"
    assert sc.during["spark.job.description"] == "nightly: ckptsim source 's': partition 3"
    assert sc.properties["spark.job.description"] == "the thread's own"  # put back
    assert sc.properties["spark.jobGroup.id"] is None


def spend(stream: DataStream) -> DataStream:
    return (
        stream.map(lambda r: (r.user, r.amount, 1), name="Click")
        .processing_cost(per_buffer_ms=1)
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1], a[2] + b[2]), name="Spend")
    )


def test_final_only_returns_the_last_value_per_key_through_a_failure_named_by_operator(
    spark: Any, tmp_path: Path
) -> None:
    df = spark.range(0, 2000, 1, 4).select(
        (F.col("id") % 11).alias("user"), ((F.col("id") % 100) / 4.0).alias("amount")
    )
    run = run_topology_job(
        spark,
        df,
        spend,
        schema="user long, amount double, clicks long",
        output=str(tmp_path / "out"),
        parallelism=2,
        checkpoint_interval=10,
        config={"ckptsim.buffer.records": 50, "restart-strategy.fixed-delay.delay": "5 ms"},
        faults=[FailTask(task="Spend#1", at_record=600)],  # the user's name, not reduce-3#1
        final_only=True,
        runtime="simulation",
        seed=5,
    )
    assert run.result.restarts == 1
    got = sorted(tuple(r) for r in run.dataframe.collect())
    expected = sorted(
        tuple(r)
        for r in df.groupBy("user")
        .agg(F.sum("amount").alias("amount"), F.count("*").alias("clicks"))
        .collect()
    )
    assert got == expected  # one row per user: its final value, not the changelog


def test_final_only_needs_a_key(spark: Any) -> None:
    df = spark.range(0, 4, 1, 2)
    with pytest.raises(ValueError, match="final_only=True takes the key"):
        run_topology_job(spark, df, lambda s: s.map(lambda r: r.id), final_only=True)
    with pytest.raises(ValueError, match=r"or an operator's name or uid and a subtask: .*Twice"):
        run_topology_job(
            spark,
            df,
            lambda s: s.map(lambda r: r.id * 2, name="Twice"),
            faults=[FailTask(task="Thrice#0", at_record=1)],
        )


def test_a_cancel_between_the_bridges_spark_jobs_stops_the_topology_too(
    spark: Any, job_group: str, tmp_path: Path
) -> None:
    """``sc.cancelJobGroup`` while none of the bridge's Spark jobs runs (Spark cancels only the
    group's running jobs and keeps no trace): the topology is cancelled all the same, a
    ``state=`` run commits nothing, and the same run again gives the whole answer. The cancel
    comes from the topology's map (a thread of its own) after the only Spark job (one
    partition, one slice, served once finished) returned its rows."""
    sc = spark.sparkContext
    df = spark.range(0, 50, 1, 1)
    cancels = [10]  # once, at id 10

    def cancel_once(r: Any) -> Any:
        if cancels and r.id == cancels[0]:
            cancels.clear()
            sc.cancelJobGroup(job_group)
        return (r.id % 3, r.id)

    def build(s: DataStream) -> DataStream:
        return (
            s.map(cancel_once, name="Cancel")
            .uid("cancel")
            .key_by(lambda r: r[0])
            .reduce(lambda a, b: (a[0], a[1] + b[1]), name="Sum")
            .uid("sum")
        )

    state = str(tmp_path / "state")
    options: dict[str, Any] = {
        "parallelism": 1,
        "checkpoint_interval": 10,
        "stabilize": "none",
        "state": state,
        "run_id": "d1",
        "final_only": True,
    }
    with pytest.raises(JobGroupCancelled) as caught:
        run_topology_job(spark, df, build, output=str(tmp_path / "out"), **options)
    assert caught.value.group == job_group and caught.value.result.restarts == 0
    assert caught.value.result.status.name == "CANCELED"
    assert "cancelJobGroup" not in vars(sc)  # Spark's own method again
    assert not list(Path(state).rglob("runs/*.json"))  # nothing committed
    again = run_topology_job(spark, df, build, output=str(tmp_path / "again"), **options)
    assert sorted(tuple(r) for r in again.dataframe.collect()) == [
        (k, sum(range(k, 50, 3))) for k in range(3)
    ]


def test_cancelling_the_callers_job_group_stops_the_topology_with_one_clear_error(
    spark: Any, job_group: str, tmp_path: Path
) -> None:
    """``sc.cancelJobGroup`` from another thread while the topology reads its input: the
    Spark job running then is cancelled, the topology is cancelled at once (no restart, no
    further Spark job), ``run_topology`` raises ``JobGroupCancelled`` naming the group, and the
    output folder shows only committed part files (staged ones stay in ``.staging``). No
    sleep: partition 1's Spark task waits at a FIFO, which the cancelling thread opens once the
    task is there."""
    sc = spark.sparkContext
    gate = str(tmp_path / "gate")
    os.mkfifo(gate)

    def wait_at_the_gate(index: int, rows: Iterator[Any]) -> Iterator[Any]:
        if index == 1:
            with open(gate, "rb") as waiting:  # until the test's thread opens it, then closes it
                waiting.read()
        yield from rows

    data = sc.parallelize([(i % 5, i) for i in range(40)], 2).mapPartitionsWithIndex(
        wait_at_the_gate
    )
    cancelled = threading.Event()

    def cancel_once_partition_1_runs() -> None:
        with open(gate, "wb"):  # opens once partition 1's task waits at the gate
            sc.cancelJobGroup(job_group)
            cancelled.set()

    canceller = threading.Thread(target=cancel_once_partition_1_runs, daemon=True)
    canceller.start()
    before = jobs_in_group(spark, job_group)
    out = tmp_path / "out"
    try:
        with pytest.raises(JobGroupCancelled) as caught:
            run_topology_job(
                spark,
                data,
                lambda s: s.key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])),
                output=str(out),
                parallelism=1,
                checkpoint_interval=10,
                stabilize="none",
            )
    finally:  # never leave the thread waiting at the gate (a reader lets its open return)
        unblock = os.open(gate, os.O_RDONLY | os.O_NONBLOCK)
        canceller.join()
        os.close(unblock)
    assert cancelled.is_set()
    error = caught.value
    message = str(error)
    assert f"Spark job group {job_group!r} was cancelled (sc.cancelJobGroup)" in message
    assert "\n" not in message
    assert isinstance(error, TopologyFailed) and error.group == job_group
    assert error.result.status.name == "CANCELED" and error.result.restarts == 0
    # partition 0's job, and partition 1's, cancelled: no Spark job after the cancel
    assert len(jobs_in_group(spark, job_group) - before) == 2
    visible = [p for p in out.rglob("*") if not any(part[0] in "._" for part in p.parts[-1:])]
    visible = [p for p in visible if ".staging" not in p.parts]
    assert all(re.fullmatch(r"part-.*\.parquet", p.name) for p in visible), visible
