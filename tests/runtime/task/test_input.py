"""``StreamInputProcessor``: the task's input gate (the conformance harness's gate) as a task
polls it, with the consumer's side of credit-based flow control."""

from __future__ import annotations

from runtime.barrier.mode import GateMode
from runtime.effects import (
    AcknowledgeAllRecordsProcessed,
    AnnounceCredit,
    Traced,
    TriggerCheckpointOnBarrier,
)
from runtime.network import Buffer, EndOfData, EndOfPartition
from runtime.task.input import StreamInputProcessor
from tests.runtime.task.helpers import UNALIGNED, barrier, only


def test_items_are_polled_in_arrival_order_and_each_buffer_returns_a_credit() -> None:
    inputs = StreamInputProcessor(2, GateMode.ALIGNED)
    inputs.receive(1, Buffer(["a"], 8))
    inputs.receive(0, Buffer(["b", "c"], 8))
    first = inputs.poll_next(0)
    second = inputs.poll_next(0)
    assert first is not None and second is not None
    assert (first.channel, second.channel) == (1, 0)
    assert first.effects == [AnnounceCredit(channel=1)]
    assert inputs.consumed == [2, 1]
    assert inputs.poll_next(0) is None and not inputs.is_available


def test_recovered_in_flight_data_comes_first_and_returns_no_credit() -> None:
    inputs = StreamInputProcessor(1, GateMode.ALIGNED)
    inputs.restore({0: [Buffer(["old"], 8)]})
    inputs.receive(0, Buffer(["new"], 8))
    old, new = inputs.poll_next(0), inputs.poll_next(0)
    assert old is not None and isinstance(old.delivered, Buffer)
    assert list(old.delivered.records) == ["old"] and old.effects == []
    assert new is not None and new.effects == [AnnounceCredit(channel=0)]


def test_end_of_data_is_acknowledged_and_end_of_partition_ends_the_channel() -> None:
    inputs = StreamInputProcessor(1, GateMode.ALIGNED)
    inputs.receive(0, EndOfData())
    inputs.receive(0, EndOfPartition())
    ended = inputs.poll_next(0)
    assert ended is not None and isinstance(ended.delivered, EndOfData)
    assert AcknowledgeAllRecordsProcessed(channel=0) in ended.effects
    assert inputs.all_data_ended and not inputs.all_partitions_ended
    finished = inputs.poll_next(0)
    assert finished is not None and isinstance(finished.delivered, EndOfPartition)
    assert inputs.all_partitions_ended


def test_priority_events_are_polled_first_and_report_what_they_overtook() -> None:
    inputs = StreamInputProcessor(2, GateMode.ALIGNED_WITH_TIMEOUT)
    inputs.receive(0, Buffer([1], 8))
    inputs.receive(0, Buffer([2], 8))
    assert not inputs.has_priority_event
    inputs.receive(0, barrier(1, UNALIGNED))
    assert inputs.has_priority_event
    poll = inputs.poll_priority(0)
    assert poll is not None and poll.delivered is None
    (trigger,) = only(poll.gate_effects, TriggerCheckpointOnBarrier)
    assert trigger.barrier.is_unaligned
    (fact,) = only(poll.effects, Traced)
    assert fact.fields["priority"] and fact.fields["overtaken"] == 2
    assert inputs.poll_priority(0) is None and not inputs.has_priority_event
    assert sorted(inputs.take_inflight(1)) == [0], "the overtaken buffers are in flight"


def test_triggered_directly_the_barrier_counts_on_each_unfinished_channel() -> None:
    inputs = StreamInputProcessor(2, GateMode.ALIGNED)
    inputs.receive(0, EndOfPartition())
    inputs.poll_next(0)
    facts, effects = inputs.trigger_unfinished_channels(barrier(3), 0)
    assert [f.fields["channel"] for f in only(facts, Traced)] == [1]
    assert [e.barrier.checkpoint_id for e in only(effects, TriggerCheckpointOnBarrier)] == [3]
