"""Splits and offsets without Spark: ``SplitReader`` over an in-memory feed, and a job whose
task fails and restores from a checkpoint taken in the middle of a split."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from actors.faults import FailTask
from ckptsim import StreamExecutionEnvironment
from runtime.job import JobResult
from spark_bridge import FeedChanged, InMemoryFeed, ParquetSink, SplitReader, source_from_feed
from spark_bridge.feed import assigned_splits
from tests.conftest import protocol_events

PARTITIONS = [[(p, i) for i in range(n)] for p, n in enumerate([7, 0, 12, 5, 9])]


def read_all(reader: SplitReader, size: int) -> list[Sequence[Any]]:
    buffers = []
    while (buffer := reader.read(size, 0)) is not None:
        assert buffer, "a blocking reader never returns an empty buffer"
        buffers.append(buffer)
    return buffers


def test_partitions_are_assigned_round_robin_by_index() -> None:
    assert assigned_splits(5, 0, 2) == [0, 2, 4]
    assert assigned_splits(5, 1, 2) == [1, 3]
    assert assigned_splits(2, 2, 3) == []  # more subtasks than partitions: nothing to read
    feed = InMemoryFeed(PARTITIONS, chunk=4)
    first = read_all(SplitReader(feed, 0, 2, name="s"), 3)
    second = read_all(SplitReader(feed, 1, 2, name="s"), 3)
    assert [r for b in first for r in b] == PARTITIONS[0] + PARTITIONS[2] + PARTITIONS[4]
    assert [r for b in second for r in b] == PARTITIONS[1] + PARTITIONS[3]
    for buffer in first + second:  # a buffer holds at most max_records, from one split only
        assert len(buffer) <= 3
        assert len({partition for partition, _ in buffer}) == 1
    assert SplitReader(InMemoryFeed(PARTITIONS[:2]), 2, 3, name="s").read(10, 0) is None


@pytest.mark.parametrize("stop_after", [0, 1, 3, 4, 7, 9])
def test_a_seek_resumes_right_after_the_last_record_emitted(stop_after: int) -> None:
    feed = InMemoryFeed(PARTITIONS, chunk=5)
    reader = SplitReader(feed, 0, 2, name="s")
    before = [r for _ in range(stop_after) for r in reader.read(2, 0) or ()]
    position = json.loads(json.dumps(reader.position()))  # JSON-safe, as in a checkpoint
    feed.opened.clear()
    restored = SplitReader(feed, 0, 2, name="s")
    restored.seek(position)
    after = read_all(restored, 2)
    emitted = before + [r for b in after for r in b]
    assert emitted == PARTITIONS[0] + PARTITIONS[2] + PARTITIONS[4]
    if position["split"] is not None:  # the split is reopened at the offset, not from row 0
        assert feed.opened[0] == (position["split"], position["offset"])


def test_the_position_names_the_split_the_offset_and_the_finished_splits() -> None:
    reader = SplitReader(InMemoryFeed(PARTITIONS, chunk=5), 0, 2, name="s")
    assert reader.position() == {"partitions": 5, "split": 0, "offset": 0, "finished": []}
    for _ in range(5):  # 7 rows of partition 0 (2 + 2 + 2 + 1), then 1 buffer of partition 2
        reader.read(2, 0)
    assert reader.position() == {"partitions": 5, "split": 2, "offset": 2, "finished": [0]}
    read_all(reader, 100)
    assert reader.position() == {"partitions": 5, "split": None, "offset": 0, "finished": [0, 2, 4]}


def test_a_position_from_other_input_or_parallelism_is_refused() -> None:
    position = {"partitions": 5, "split": 2, "offset": 3, "finished": [0]}
    with pytest.raises(FeedChanged, match="the checkpoint read 5 partition"):
        SplitReader(InMemoryFeed(PARTITIONS[:4]), 0, 2, name="s").seek(position)
    with pytest.raises(FeedChanged, match="parallelism"):
        SplitReader(InMemoryFeed(PARTITIONS), 0, 3, name="s").seek(position)


def keyed_count_job(feed: InMemoryFeed, out: Path, *, fail: bool) -> JobResult:
    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(10)
    env.configure(
        {
            "ckptsim.buffer.records": 50,
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.delay": "5 ms",
        }
    )
    (
        source_from_feed(env, feed, name="feed", uid="feed")
        .map(lambda r: r)
        .processing_cost(per_buffer_ms=1)  # virtual time: checkpoints fall mid-split
        .key_by(lambda r: r[1])
        .reduce(lambda a, b: (a[0], a[1], a[2] + b[2]))
        .sink_to(ParquetSink(out), name="out")
    )
    faults = [FailTask(task="reduce-3#0", at_record=1000)] if fail else []
    return env.execute("keyed count", runtime="simulation", seed=3, faults=faults)


def test_a_failed_task_restores_mid_split_and_the_output_is_exactly_once(tmp_path: Path) -> None:
    partitions = [[(p, i % 7, 1) for i in range(1000)] for p in range(4)]
    feed = InMemoryFeed(partitions, chunk=300)
    with protocol_events() as events:
        result = keyed_count_job(feed, tmp_path / "out", fail=True)
    assert result.succeeded and result.restarts == 1
    (restart,) = [e for e in events if e["event"] == "job_restarting"]
    assert restart["checkpoint_id"] is not None, "restored from a checkpoint, not from scratch"
    reopened = feed.opened[4:]  # after the four first openings
    assert reopened and all(offset % 50 == 0 and 0 < offset < 1000 for _, offset in reopened)
    rows = pq.read_table(tmp_path / "out").to_pylist()
    assert len(rows) == 4000  # one running count per record: none lost, none twice
    finals: dict[int, int] = {}
    for row in rows:
        finals[row["_2"]] = max(finals.get(row["_2"], 0), row["_3"])
    assert finals == {k: sum(1 for i in range(1000) if i % 7 == k) * 4 for k in range(7)}
    assert not list((tmp_path / "out" / ".staging").glob("*"))  # nothing left staged
