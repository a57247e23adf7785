"""Spark partitions as sources: split assignment, offsets, replay after a restore, and the
output back as a DataFrame. Small DataFrames on the suite's one SparkSession."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import functions as F

from actors.faults import FailTask
from ckptsim import StreamExecutionEnvironment
from runtime.datastream import DataStream
from spark_bridge import (
    FeedChanged,
    SplitReader,
    TopologyFailed,
    from_spark,
    run_topology,
    run_topology_job,
    spark_feed,
)
from tests.conftest import protocol_events


def _boom(record: Any) -> Any:
    raise ZeroDivisionError("no")


def read_all(reader: SplitReader, size: int) -> list[Sequence[Any]]:
    buffers = []
    while (buffer := reader.read(size, 0)) is not None:
        buffers.append(buffer)
    return buffers


def partitioned(spark: Any, rows: int = 40, partitions: int = 4) -> Any:
    """(id, the partition Spark computed the row in)."""
    return spark.range(0, rows, 1, partitions).select("id", F.spark_partition_id().alias("part"))


def test_each_partition_is_a_split_and_subtasks_take_them_round_robin(spark: Any) -> None:
    df = partitioned(spark, rows=40, partitions=5)
    feed = spark_feed(df)
    try:
        assert feed.num_partitions == 5
        by_partition = {p: sorted(r[0] for r in df.collect() if r[1] == p) for p in range(5)}
        for subtask, expected in [(0, [0, 2, 4]), (1, [1, 3])]:
            buffers = read_all(SplitReader(feed, subtask, 2, name="s"), 3)
            assert all(isinstance(b, list) and isinstance(b[0], tuple) for b in buffers)
            assert all(len(b) <= 3 and len({r[1] for r in b}) == 1 for b in buffers)
            rows = [r for b in buffers for r in b]
            assert [r[1] for r in rows] == sorted(r[1] for r in rows)  # split after split
            assert sorted({r[1] for r in rows}) == expected
            assert [r[0] for r in rows] == [i for p in expected for i in by_partition[p]]
    finally:
        feed.release()


@pytest.mark.parametrize("kind", ["dataframe", "rdd"])
def test_a_split_resumes_at_its_row_offset(spark: Any, kind: str) -> None:
    data = (
        partitioned(spark, rows=60, partitions=3)
        if kind == "dataframe"
        else spark.sparkContext.parallelize([(i, i % 5) for i in range(60)], 3)
    )
    feed = spark_feed(data)
    try:
        whole = [r for b in read_all(SplitReader(feed, 0, 2, name="s"), 4) for r in b]
        reader = SplitReader(feed, 0, 2, name="s")
        first = [r for _ in range(7) for r in reader.read(4, 0) or ()]  # into the 2nd split
        position = reader.position()
        assert position["finished"] == [0] and position["split"] == 2 and position["offset"] > 0
        resumed = SplitReader(feed, 0, 2, name="s")
        resumed.seek(position)
        rest = [r for b in read_all(resumed, 4) for r in b]
        assert first + rest == whole
        beyond = {**position, "offset": 10_000}  # more rows than the partition has
        gone = SplitReader(feed, 0, 2, name="s")
        gone.seek(beyond)
        with pytest.raises(FeedChanged, match="the input changed"):
            read_all(gone, 4)
    finally:
        feed.release()


def clicks(spark: Any, rows: int = 4000, partitions: int = 4) -> Any:
    ids = spark.range(0, rows, 1, partitions)
    return ids.select((F.col("id") % 13).alias("user"), ((F.col("id") % 100) / 4.0).alias("amount"))


def spend(stream: DataStream) -> DataStream:
    return (
        stream.map(lambda r: (r[0], r[1], 1))
        .processing_cost(per_buffer_ms=1)  # virtual time: checkpoints fall mid-split
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1], a[2] + b[2]))
    )


def test_offsets_are_checkpointed_and_a_restore_replays_exactly_once(
    spark: Any, tmp_path: Path
) -> None:
    df = clicks(spark)
    with protocol_events() as events:
        run = run_topology_job(
            spark,
            df,
            spend,
            schema="user long, amount double, clicks long",
            output=tmp_path / "out",
            parallelism=2,
            checkpoint_interval=10,
            config={
                "ckptsim.buffer.records": 50,
                "restart-strategy.type": "fixed-delay",
                "restart-strategy.fixed-delay.delay": "5 ms",
            },
            faults=[FailTask(task="reduce-3#1", at_record=1200)],
            runtime="simulation",
            seed=5,
        )
    assert run.result.restarts == 1
    (restart,) = [e for e in events if e["event"] == "job_restarting"]
    assert restart["checkpoint_id"] is not None, "restored from a checkpoint, not from scratch"
    restored = [e for e in events if e["event"] == "task_restored" and "spark-source" in e["task"]]
    assert restored
    replays = [e for e in events if e["event"] == "split_opened" and e["offset"] > 0]
    assert replays, "the restored sources resumed inside a split"
    assert all(e["offset"] % 50 == 0 for e in replays)
    out = run.dataframe
    assert out.count() == 4000  # one running total per click: none lost, none twice
    final = {
        r["user"]: (r["clicks"], r["amount"])
        for r in out.groupBy("user")
        .agg(F.max("clicks").alias("clicks"), F.max_by("amount", "clicks").alias("amount"))
        .collect()
    }
    expected = {
        r["user"]: (r["n"], r["total"])
        for r in df.groupBy("user")
        .agg(F.count("*").alias("n"), F.sum("amount").alias("total"))
        .collect()
    }
    assert final == expected


TYPED = (
    "id long, n int, x double, name string, ok boolean, at timestamp, day date, price decimal(10,2)"
)


def test_a_dataframe_round_trips_with_its_schema(spark: Any, tmp_path: Path) -> None:
    rows = [
        (
            i,
            i * 3,
            i / 7,
            f"name {i}" if i % 4 else None,
            i % 2 == 0,
            datetime.datetime(2024, 5, 1, 12, i % 60, 7, 250_000),
            datetime.date(2024, 1, 1 + i % 28),
            decimal.Decimal(f"{i}.25"),
        )
        for i in range(30)
    ]
    df = spark.createDataFrame(rows, TYPED).repartition(3, "id").sortWithinPartitions("id")
    back = run_topology(
        spark, df, lambda stream: stream, schema=TYPED, output=tmp_path / "out", parallelism=2
    )
    assert back.schema.simpleString() == df.schema.simpleString()
    assert sorted(back.collect()) == sorted(df.collect())
    assert not (tmp_path / "out" / ".staging").exists()  # run_topology cleans up after the job


def test_without_a_schema_the_output_schema_is_inferred(spark: Any, tmp_path: Path) -> None:
    df = spark.range(0, 10, 1, 2)
    back = run_topology(
        spark, df, lambda s: s.map(lambda r: (r[0], f"#{r[0]}", r[0] / 2)), output=tmp_path / "o"
    )
    assert back.schema.simpleString() == "struct<_1:bigint,_2:string,_3:double>"
    assert sorted(tuple(r) for r in back.collect()) == [(i, f"#{i}", i / 2) for i in range(10)]


def test_arrow_buffers_reach_batch_functions_and_the_sink(spark: Any, tmp_path: Path) -> None:
    df = partitioned(spark, rows=50, partitions=3)
    seen: list[str] = []

    def double(batch: Any) -> Any:
        seen.append(type(batch).__name__)
        return pa.RecordBatch.from_arrays(
            [pc.multiply(batch.column(0), 2), batch.column(1)], names=["twice", "part"]
        )

    back = run_topology(
        spark,
        df,
        lambda stream: stream.map_batch(double),
        output=tmp_path / "out",
        batch_format="arrow",
    )
    assert set(seen) == {"RecordBatch"}
    assert sorted(r["twice"] for r in back.collect()) == [2 * i for i in range(50)]


def test_an_rdd_is_a_source_of_its_elements(spark: Any) -> None:
    rdd = spark.sparkContext.parallelize(range(100), 3)
    env = StreamExecutionEnvironment(parallelism=2)
    from_spark(env, rdd).map(lambda x: x * x).collect("squares")
    result = env.execute("squares")
    rdd.unpersist()
    assert sorted(result.collected("squares")) == [x * x for x in range(100)]


def test_from_spark_persists_the_input_unless_told_otherwise(spark: Any) -> None:
    df = spark.range(0, 8, 1, 2)
    feed = spark_feed(df)
    assert df.is_cached and feed.persisted
    feed.release()
    assert not df.is_cached
    other = spark.range(0, 8, 1, 2)
    spark_feed(other, stabilize="none").release()
    assert not other.is_cached
    with pytest.raises(TypeError, match="DataFrame or RDD"):
        spark_feed([1, 2, 3])


def test_run_topology_says_what_is_wrong(spark: Any, tmp_path: Path) -> None:
    df = spark.range(0, 20, 1, 2)

    def forgets_to_return(stream: DataStream) -> Any:
        stream.map(str)

    with pytest.raises(TypeError, match="build\\(\\) must return the stream"):
        run_topology(spark, df, forgets_to_return)
    with pytest.raises(ValueError, match="this job does not have; its tasks are spark-source#0"):
        run_topology(spark, df, lambda s: s, faults=[FailTask(task="map-9#0", at_record=1)])
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "old.parquet").write_text("")
    with pytest.raises(FileExistsError, match="not an empty directory"):
        run_topology(spark, df, lambda s: s, output=tmp_path / "taken")

    with pytest.raises(
        TopologyFailed, match=r"FAILED after 0 restart.*ZeroDivisionError"
    ) as failed:
        run_topology(spark, df, lambda s: s.map(_boom), checkpoint_interval=None)
    assert failed.value.result.restarts == 0
    assert not df.is_cached  # persisted for the run, released after it


def test_a_checkpointed_batch_step_with_a_deterministic_error_fails_after_three_restarts(
    spark: Any,
) -> None:
    """Not Flink's default (exponential-delay, unlimited attempts: a driver-side batch step
    would retry a deterministic error forever), unless the config chooses a strategy."""
    df = partitioned(spark, rows=20, partitions=2)

    with pytest.raises(TopologyFailed, match=r"FAILED after 3 restart") as failed:
        run_topology(spark, df, lambda s: s.map(_boom), runtime="simulation", seed=1)
    assert failed.value.result.restarts == 3
    with pytest.raises(TopologyFailed, match=r"FAILED after 0 restart"):
        run_topology(
            spark,
            df,
            lambda s: s.map(_boom),
            runtime="simulation",
            seed=1,
            config={"restart-strategy.type": "none"},
        )


def test_env_from_spark_reads_the_dataframe_as_spark_bridge_from_spark_does(spark: Any) -> None:
    """The DataStream environment's own ``from_spark`` (the bridge imported only then)."""
    df = partitioned(spark, rows=30, partitions=3)
    env = StreamExecutionEnvironment(parallelism=2)
    env.from_spark(df, name="Spark rows").map(lambda r: r[0]).collect("ids")
    result = env.execute("env.from_spark", runtime="simulation", seed=1)
    assert sorted(result.collected("ids")) == list(range(30))
    assert any(v.name.startswith("Spark rows") for v in env.build_job_graph().vertices)


def test_a_batch_step_cancelled_while_failing_over_says_why(spark: Any) -> None:
    df = partitioned(spark, rows=20, partitions=2)

    settings = {"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": 99}
    with pytest.raises(TopologyFailed, match=r"CANCELED.*after the failure.*ZeroDivisionError"):
        run_topology(
            spark,
            df,
            lambda s: s.map(_boom),
            runtime="simulation",
            seed=1,
            config=settings,
            timeout=5.0,
        )


class RecordedFeed:
    """A feed's opens, in order (the prefetch thread's included)."""

    def __init__(self, feed: Any) -> None:
        self.feed = feed
        self.convert = feed.convert
        self.prefetch = feed.prefetch
        self.opened: list[tuple[int, int]] = []

    @property
    def num_partitions(self) -> int:
        return int(self.feed.num_partitions)

    def open(self, partition: int, offset: int) -> Any:
        self.opened.append((partition, offset))
        return self.feed.open(partition, offset)


def test_the_next_partitions_first_batch_is_fetched_while_one_is_read(spark: Any) -> None:
    df = partitioned(spark, rows=40, partitions=4)
    feed = spark_feed(df, stabilize="none", rows_per_job=4)
    assert feed.prefetch
    recorded = RecordedFeed(feed)
    reader = SplitReader(recorded, 0, 1, name="s")
    first = reader.read(3, 0)
    assert first is not None and {r[1] for r in first} == {0}
    prefetch = reader._prefetch
    assert prefetch is not None and prefetch.partition == 1
    prefetch._thread.join()  # its Spark job ran while partition 0 is still being read
    assert recorded.opened == [(0, 0), (1, 0)] and reader.index == 0
    rows = list(first) + [r for b in read_all(reader, 3) for r in b]
    assert [r[0] for r in rows] == list(range(40))  # each row once, split after split
    assert recorded.opened == [(0, 0), (1, 0), (2, 0), (3, 0)]  # one ahead, none opened twice
    assert reader._prefetch is None


@pytest.mark.parametrize("stop_after", [3, 12, 21])  # in partition 0, 1 (prefetched), 2
def test_a_restore_with_a_prefetched_split_resumes_exactly(spark: Any, stop_after: int) -> None:
    df = partitioned(spark, rows=40, partitions=4)
    feed = spark_feed(df, stabilize="none", rows_per_job=4)
    reader = SplitReader(feed, 0, 1, name="s")
    before: list[Any] = []
    while len(before) < stop_after:
        buffer = reader.read(3, 0)
        assert buffer is not None
        before.extend(buffer)
    position = reader.position()
    reader.close()  # the prefetched split is let go with it
    assert reader._prefetch is None
    restored = SplitReader(feed, 0, 1, name="s")
    restored.seek(position)
    after = [r for b in read_all(restored, 3) for r in b]
    assert [r[0] for r in before + after] == list(range(40))
