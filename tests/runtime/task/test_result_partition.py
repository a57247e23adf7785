"""``ResultPartition`` and ``RecordWriter``: buffers cut by size, a bounded pool, credits,
events, priority overtaking (output channel state), recovered output."""

from __future__ import annotations

import pytest

from runtime.checkpoint import AlignmentType, CheckpointOptions
from runtime.failure import UserCodeError
from runtime.network import (
    Buffer,
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfData,
)
from runtime.partition import ChannelSelector, Partitioner, estimate_size
from runtime.task.result_partition import RecordWriter, ResultPartition


def partition(
    subpartitions: int = 1,
    *,
    pool: int = 10,
    credits: int = 100,
    segment: int = 1 << 20,
    records: int = 1000,
    per_channel: int = 10,
) -> ResultPartition:
    return ResultPartition(
        subpartitions,
        pool_size=pool,
        max_buffers_per_channel=per_channel,
        initial_credits=credits,
        segment_size=segment,
        max_records=records,
    )


def sent_records(p: ResultPartition) -> list[list[object]]:
    return [list(item.records) for _, item in p.poll_sendable() if isinstance(item, Buffer)]


def test_the_pool_is_at_least_one_buffer_more_than_subpartitions() -> None:
    with pytest.raises(ValueError, match="at least 4 buffers"):
        partition(3, pool=3)


def test_buffers_are_cut_at_the_segment_size_by_estimated_record_size() -> None:
    records = [("key", n) for n in range(100)]
    per_record = estimate_size(records) // len(records)
    p = partition(segment=per_record * 30)
    p.emit(0, records)
    p.flush()
    sizes = [len(r) for r in sent_records(p)]
    assert sum(sizes) == 100
    assert max(sizes) <= 30 and sizes[0] >= 25, sizes


def test_buffers_are_cut_at_the_record_cap_too_and_filled_across_emits() -> None:
    p = partition(records=4)
    p.emit(0, [1, 2, 3])
    p.emit(0, [4, 5, 6])
    assert sent_records(p) == [[1, 2, 3, 4]], "one full buffer; [5, 6] still being filled"
    p.flush()
    assert sent_records(p) == [[5, 6]]
    assert p.emitted() == {0: 6}


def test_keys_travel_with_their_records() -> None:
    p = partition(records=2)
    p.emit(0, ["a", "b", "c"], ["ka", "kb", "kc"])
    p.flush()
    buffers = [item for _, item in p.poll_sendable() if isinstance(item, Buffer)]
    assert [list(b.keys or ()) for b in buffers] == [["ka", "kb"], ["kc"]]


def test_a_buffer_leaves_only_with_credit_but_events_need_none() -> None:
    p = partition(credits=1, records=1)
    p.emit(0, [1, 2])
    p.broadcast_event(CancelCheckpointMarker(5))
    out = p.poll_sendable()
    assert [item for _, item in out] == [Buffer([1], out[0][1].size)]  # type: ignore[union-attr]
    p.add_credit(0, 1)
    assert [type(item) for _, item in p.poll_sendable()] == [Buffer, CancelCheckpointMarker]


def test_the_writer_goes_on_while_the_pool_has_buffers_then_is_back_pressured() -> None:
    p = partition(pool=3, credits=0, records=1)
    p.emit(0, [1])
    p.emit(0, [2])
    assert p.is_available, "two buffers taken of three, no credit at all"
    p.emit(0, [3])
    assert not p.is_available and p.poll_sendable() == []
    p.add_credit(0, 1)
    assert [list(item.records) for _, item in p.poll_sendable()] == [[1]]
    assert p.is_available, "the sent buffer went back to the pool"


def test_one_subpartition_holding_max_buffers_per_channel_back_pressures_the_writer() -> None:
    p = partition(2, pool=20, credits=0, records=1, per_channel=2)
    p.emit(1, [1])
    assert p.is_available
    p.emit(1, [2])
    assert not p.is_available and p.in_use == 2
    p.add_credit(1, 1)
    p.poll_sendable()
    assert p.is_available


def test_a_priority_barrier_overtakes_the_queued_buffers_which_become_output_state() -> None:
    p = partition(2, credits=0, records=1)
    p.emit(0, [1])
    p.emit(0, [2])
    p.emit(1, [3])
    barrier = CheckpointBarrier(checkpoint_id=1, timestamp=0)
    overtaken = p.broadcast_event(barrier, priority=True)
    assert {c: [list(b.records) for b in bs] for c, bs in overtaken.items()} == {
        0: [[1], [2]],
        1: [[3]],
    }
    assert [(c, item) for c, item in p.poll_sendable()] == [(0, barrier), (1, barrier)]
    p.add_credit(0, 2)
    assert sent_records(p) == [[1], [2]], "the overtaken buffers still go, after the barrier"


def test_a_second_priority_event_queues_behind_the_first_not_ahead() -> None:
    p = partition(credits=0)
    unaligned = CheckpointOptions(alignment=AlignmentType.UNALIGNED)
    first = CheckpointBarrier(checkpoint_id=1, timestamp=0, options=unaligned)
    second = CheckpointBarrier(checkpoint_id=2, timestamp=0, options=unaligned)
    p.emit(0, [1])
    p.subpartitions[0].queue.appendleft(first)  # still queued (not drained yet)
    p.broadcast_event(second, priority=True)
    assert list(p.subpartitions[0].queue)[:2] == [first, second]


def test_recovered_output_is_sent_first_and_counts_as_emitted() -> None:
    p = partition(credits=10)
    p.emit(0, [9])
    p.restore(0, [Buffer([1, 2], 16)])
    p.flush()
    assert sent_records(p) == [[1, 2], [9]]
    assert p.emitted() == {0: 3}


def test_a_non_list_batch_travels_as_one_buffer() -> None:
    p = partition(records=1)
    batch = (1, 2, 3)  # e.g. an Arrow batch: kept whole, never split per record
    p.emit(0, batch)
    assert [item.records for _, item in p.poll_sendable()] == [batch]  # type: ignore[union-attr]


def test_all_data_processed_once_every_consumer_acknowledged_end_of_data() -> None:
    p = partition(2)
    p.broadcast_event(EndOfData())
    p.all_data_processed(0)
    assert not p.is_all_data_processed
    p.all_data_processed(1)
    assert p.is_all_data_processed


def test_the_record_writer_splits_over_edges_and_names_a_failing_key_selector() -> None:
    p = partition(3, records=10)
    writer = RecordWriter(
        [
            (ChannelSelector(Partitioner.FORWARD, 1), "map-2"),
            (ChannelSelector(Partitioner.HASH, 2, key_selector=lambda r: r % 2), "reduce-3"),
        ],
        p,
    )
    writer.emit([1, 2, 3])
    assert p.emitted()[0] == 3 and p.emitted()[1] + p.emitted()[2] == 3
    assert writer.records_out == 3
    with pytest.raises(UserCodeError) as raised:
        writer.emit(["not a number"])
    assert raised.value.operator == "key_by selector of reduce-3"
    assert isinstance(raised.value.__cause__, TypeError)
