"""The exactly-once Parquet sink, driven as the task drives it: write, pre-commit on the
snapshot, commit on completion, restore after a failure, close."""

from __future__ import annotations

import datetime as dt
import decimal
import zoneinfo
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from actors.connectors import make_connector
from runtime.checkpoint import TaskId
from runtime.descriptors import SinkDescriptor, SinkKind
from runtime.row import Row, TupleRow
from spark_bridge import ParquetSink, SchemaMismatch
from spark_bridge.sinks import ParquetConnector

TASK = TaskId("sink-2", 1)
SCHEMA = pa.schema([("user", pa.int64()), ("total", pa.float64())])


def writer(attempt: int) -> str:
    """The writer id the task gives the connector of an attempt (a UUID)."""
    return f"00000000-0000-4000-8000-{attempt:012d}"


def connector(sink: ParquetSink, *, attempt: int = 0, transactional: bool = True) -> Any:
    """Through ``make_connector``, as a task makes it for ``sink_to(factory)``."""
    made = make_connector(
        SinkDescriptor(sink=SinkKind.CUSTOM, factory=sink),
        TASK,
        2,
        transactional=transactional,
        attempt=attempt,
        writer=writer(attempt),
    )
    assert isinstance(made, ParquetConnector)
    return made


def committed(path: Path) -> list[tuple[Any, ...]]:
    files = sorted(path.glob("part-*.parquet"))
    return [tuple(r.values()) for f in files for r in pq.read_table(f).to_pylist()]


def staged(path: Path) -> list[str]:
    return (
        sorted(p.name for p in (path / ".staging").glob("*"))
        if (path / ".staging").exists()
        else []
    )


def test_records_become_visible_only_when_their_checkpoint_completes(tmp_path: Path) -> None:
    sink = ParquetSink(tmp_path, SCHEMA)
    c = connector(sink)
    c.write([(1, 1.5), (2, 2.5)])
    state = c.pre_commit(1)
    assert state == {"pending": [1]}
    assert committed(tmp_path) == []  # pre-committed: staged, not visible
    assert staged(tmp_path) == [f"part-sink-2-1-{writer(0)}-1.pending"]
    c.write([(3, 3.5)])
    c.commit(1)
    assert committed(tmp_path) == [(1, 1.5), (2, 2.5)]
    assert [p.name for p in sink.committed_files()] == [f"part-sink-2-1-{writer(0)}-1.parquet"]
    c.commit(1)  # a repeated notification commits nothing twice
    assert committed(tmp_path) == [(1, 1.5), (2, 2.5)]


def test_a_restore_commits_the_checkpoints_files_and_discards_what_came_after(
    tmp_path: Path,
) -> None:
    sink = ParquetSink(tmp_path, SCHEMA)
    c = connector(sink)
    c.write([(1, 1.0)])
    at_2 = c.pre_commit(2)  # checkpoint 2 completes, but the notification is lost in the failure
    c.write([(2, 2.0)])
    c.pre_commit(3)  # checkpoint 3 never completes
    c.write([(3, 3.0)])
    c.write([(4, 4.0)] * 70_000)  # a row group written to the in-progress file
    c.close(finished=False)  # the task fails
    assert committed(tmp_path) == []
    assert len(staged(tmp_path)) == 3  # pending 2, pending 3, attempt 0's in-progress file
    again = connector(sink, attempt=1)
    again.restore([at_2])  # the job restores checkpoint 2
    assert committed(tmp_path) == [(1, 1.0)]  # checkpoint 2's file, committed on restore
    # under the name of the writer that staged it (attempt 0), as Flink's FileSink commits
    assert [p.name for p in sink.committed_files()] == [f"part-sink-2-1-{writer(0)}-2.parquet"]
    assert staged(tmp_path) == []  # checkpoint 3's and the failed attempt's files are gone
    again.restore([at_2])  # idempotent
    assert committed(tmp_path) == [(1, 1.0)]
    again.write([(2, 2.0)])
    again.close(finished=True)  # the end of input, with no final checkpoint to wait for
    assert committed(tmp_path) == [(1, 1.0), (2, 2.0)]
    assert staged(tmp_path) == []  # (.staging itself stays: other subtasks may still write)
    assert sink.remove_staging() and not (tmp_path / ".staging").exists()


def test_without_checkpointing_one_file_appears_when_the_subtask_finishes(tmp_path: Path) -> None:
    sink = ParquetSink(tmp_path, SCHEMA)
    c = connector(sink, transactional=False)
    c.write([(1, 1.0)])
    assert c.pre_commit(1) is None
    assert committed(tmp_path) == []
    c.close(finished=True)
    assert [p.name for p in sink.committed_files()] == ["part-sink-2-1.parquet"]
    cancelled = connector(ParquetSink(tmp_path / "other", SCHEMA), transactional=False)
    cancelled.write([(2, 2.0)])
    cancelled.close(finished=False)
    assert committed(tmp_path / "other") == [] and staged(tmp_path / "other") == []


def test_committed_files_are_what_spark_reads(spark: Any, tmp_path: Path) -> None:
    c = connector(ParquetSink(tmp_path, SCHEMA))
    c.write([(1, 1.0), (2, 2.0)])
    c.commit(c.pre_commit(1)["pending"][0])
    c.write([(3, 3.0)])
    c.pre_commit(2)  # staged under .staging: Spark skips it
    rows = spark.read.parquet(str(tmp_path)).collect()
    assert sorted(tuple(r) for r in rows) == [(1, 1.0), (2, 2.0)]


@pytest.mark.parametrize(
    ("records", "names"),
    [
        ([(1, "a"), (2, "b")], ["_1", "_2"]),
        ([{"user": 1, "name": "a"}, {"user": 2, "name": "b"}], ["user", "name"]),
        ([7, 8], ["value"]),
    ],
)
def test_the_schema_is_inferred_once_from_the_first_records(
    tmp_path: Path, records: list[Any], names: list[str]
) -> None:
    sink = ParquetSink(tmp_path)
    sink.to_batch(records)
    assert sink.schema.names == names
    with pytest.raises(SchemaMismatch):
        sink.to_batch([("not", "fitting", "at all")] if names != ["value"] else ["text"])


def test_records_that_do_not_fit_the_schema_are_named_in_the_error(tmp_path: Path) -> None:
    sink = ParquetSink(tmp_path, SCHEMA)
    with pytest.raises(SchemaMismatch, match="column 'total'"):
        sink.to_batch([(1, 1.0), (2, "two")])
    with pytest.raises(SchemaMismatch, match="only None"):
        ParquetSink(tmp_path / "x").to_batch([(1, None)])


def test_a_restore_retracts_what_any_writer_committed_after_the_restored_checkpoint(
    tmp_path: Path,
) -> None:
    """Resuming from checkpoint 1 of a run that went on to commit 2 and 3: the later files
    go (their records are replayed), whoever wrote them; checkpoint 1's stays."""
    sink = ParquetSink(tmp_path, SCHEMA)
    first = connector(sink)
    states = []
    for k in (1, 2, 3):
        first.write([(k, float(k))])
        states.append(first.pre_commit(k))
        first.commit(k)
    first.close(finished=False)
    assert committed(tmp_path) == [(1, 1.0), (2, 2.0), (3, 3.0)]
    again = connector(sink, attempt=1)
    again.restore([states[0]])
    assert again.retract_after(1) == [
        f"part-sink-2-1-{writer(0)}-2.parquet",
        f"part-sink-2-1-{writer(0)}-3.parquet",
    ]
    assert committed(tmp_path) == [(1, 1.0)]
    again.write([(2, 2.0)])
    again.commit(again.pre_commit(2)["pending"][0])  # the new writer's own file for 2
    assert sorted(p.name for p in sink.committed_files()) == [
        f"part-sink-2-1-{writer(0)}-1.parquet",
        f"part-sink-2-1-{writer(1)}-2.parquet",
    ]


def test_columns_are_named_after_rows_and_typed_as_spark_infers_them(tmp_path: Path) -> None:
    sink = ParquetSink(tmp_path)
    at = dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC)
    batch = sink.to_batch(
        [
            TupleRow(user=1, at=at, price=decimal.Decimal("1.5"), tags={"a": 1}, pos=(1.0, 2.0)),
            TupleRow(user=2, at=None, price=None, tags={}, pos=None),
        ]
    )
    assert sink.schema == pa.schema(
        [
            ("user", pa.int64()),
            ("at", pa.timestamp("us", tz="UTC")),  # Spark's timestamp: an instant
            ("price", pa.decimal128(38, 18)),  # what Spark infers for a Decimal
            ("tags", pa.map_(pa.string(), pa.int64())),  # a dict is a map, not a struct
            ("pos", pa.struct([("_1", pa.float64()), ("_2", pa.float64())])),
        ]
    )
    assert batch.column(1).to_pylist()[0] == at
    flink = ParquetSink(tmp_path / "flink")
    named = Row(word="a", n=1)
    flink.to_batch([named])
    assert flink.schema.names == ["word", "n"]


def test_a_column_of_the_input_keeps_its_type_and_naive_times_are_the_sessions(
    tmp_path: Path,
) -> None:
    new_york = zoneinfo.ZoneInfo("America/New_York")
    sink = ParquetSink(
        tmp_path,
        input_schema=pa.schema(
            [("price", pa.decimal128(12, 2)), ("at", pa.timestamp("us", "UTC"))]
        ),
        time_zone=new_york,
    )
    sink.to_batch([TupleRow(price=decimal.Decimal("1.20"), at=dt.datetime(2024, 7, 1, 8))])
    assert sink.schema.field("price").type == pa.decimal128(12, 2)  # not decimal(3, 2)
    later = sink.to_batch(
        [TupleRow(price=decimal.Decimal("1234567890.12"), at=dt.datetime(2024, 7, 1, 9))]
    )
    assert later.column(0).to_pylist() == [decimal.Decimal("1234567890.12")]
    # a naive datetime is wall-clock time in the session's zone: 9:00 EDT is 13:00 UTC
    assert later.column(1).to_pylist() == [dt.datetime(2024, 7, 1, 13, tzinfo=dt.UTC)]
    with pytest.raises(SchemaMismatch, match="column 'price'"):
        sink.to_batch([TupleRow(price="cheap", at=None)])


def _counting_into_parquet(out: Path, root: Path, *, seed: int, **run: Any) -> Any:
    """The counting job of ``test_failover`` into a Parquet sink, on the simulation, its
    checkpoints retained under ``root``; resumed from ``start_from``, cancelled after
    ``kill_after`` virtual seconds (else it runs to its end)."""
    from ckptsim import StreamExecutionEnvironment  # noqa: PLC0415
    from tests.actors.test_failover import RESTARTS, count, key, record  # noqa: PLC0415

    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(10)
    env.configure(
        {
            "ckptsim.buffer.records": 50,
            **RESTARTS,
            "execution.checkpointing.num-retained": 3,
            "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
            "execution.checkpointing.dir": str(root),
        }
    )
    if run.get("start_from") is not None:
        env.configure({"execution.state-recovery.path": run["start_from"]})
    (
        env.from_generator(record, 2_000, rate=50_000)
        .uid("numbers")
        .key_by(key)
        .reduce(count)
        .uid("counts")
        .processing_cost(per_buffer_ms=1)
        .sink_to(ParquetSink(out), name="files")
    )
    timeout = run.get("kill_after") or 600.0
    return env.execute(f"run {seed}", runtime="simulation", seed=seed, timeout=timeout)


def test_a_branching_resume_leaves_exactly_the_last_lineages_parquet_files(tmp_path: Path) -> None:
    """Issue 22's branching resume into Parquet files, as into ``sink_to_file``'s: run 1 is
    killed keeping three checkpoints; run 2 resumes from the oldest and finishes; run 3
    resumes from run 1's newest. Each leaves exactly the failure-free records (before, run 3
    kept run 2's files for the ids after the oldest checkpoint: thousands of duplicates)."""
    from runtime.status import JobStatus  # noqa: PLC0415
    from runtime.storage import load_checkpoint  # noqa: PLC0415
    from tests.actors.test_failover import failure_free, observe  # noqa: PLC0415

    out = tmp_path / "out"
    first = _counting_into_parquet(out, tmp_path / "chk1", seed=1, kill_after=0.035)
    assert first.status is JobStatus.CANCELED
    kept = sorted(first.retained_checkpoints, key=lambda p: load_checkpoint(p).checkpoint_id)
    assert len(kept) == 3
    second = _counting_into_parquet(out, tmp_path / "chk2", seed=2, start_from=kept[0])
    assert second.status is JobStatus.FINISHED
    assert observe(committed(out)) == failure_free()
    third = _counting_into_parquet(out, tmp_path / "chk3", seed=3, start_from=kept[-1])
    assert third.status is JobStatus.FINISHED
    assert observe(committed(out)) == failure_free()
    fourth = _counting_into_parquet(out, tmp_path / "chk4", seed=4, start_from=kept[1])
    assert fourth.status is JobStatus.FINISHED
    assert observe(committed(out)) == failure_free()


def test_a_schema_with_a_decimal_of_negative_scale_is_refused_when_the_sink_is_made(
    tmp_path: Path,
) -> None:
    """Parquet cannot hold decimal(5,-2): the sink refuses the schema before any job runs,
    naming the column and the type that holds its values."""
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("d", pa.decimal128(5, -2))])
    with pytest.raises(SchemaMismatch, match=r"column 'd' .*negative scale.*decimal128\(7, 0\)"):
        ParquetSink(tmp_path / "out", schema)
