"""Barrier handlers on their own: per-checkpoint metrics, timers, and what a handler reports of
what it did to its gate's channels."""

from __future__ import annotations

from typing import TypeVar

import pytest

from runtime.barrier import (
    AlignmentTimer,
    ChannelInputs,
    CheckpointBarrierAligner,
    CheckpointBarrierTracker,
    InputChannelQueue,
    LegacyCheckpointedInputGate,
    ProtocolError,
    SingleCheckpointBarrierHandler,
    make_gate,
)
from runtime.checkpoint import AlignmentType, CheckpointOptions
from runtime.effects import (
    AbortCheckpointOnBarrier,
    AllBarriersReceived,
    CancelTimer,
    ConvertToPriorityEvent,
    GateEffect,
    ResumeConsumption,
    ScheduleTimer,
    TriggerCheckpointOnBarrier,
)
from runtime.messages import (
    AnnouncementReceived,
    BarrierReceived,
    CancelMarkerReceived,
    EndOfPartitionReceived,
    TimerFired,
)
from runtime.network import Buffer, CheckpointBarrier
from runtime.reasons import CheckpointFailureReason as R

T = TypeVar("T")
ALIGNED = CheckpointOptions()
UNALIGNED = CheckpointOptions(alignment=AlignmentType.UNALIGNED)


def barrier(cid: int, ts: int = 0, options: CheckpointOptions = ALIGNED) -> CheckpointBarrier:
    return CheckpointBarrier(checkpoint_id=cid, timestamp=ts, options=options)


def timeoutable(cid: int, timeout: int, ts: int = 0) -> CheckpointBarrier:
    return barrier(cid, ts, CheckpointOptions(aligned_checkpoint_timeout=timeout))


def only(effects: list[GateEffect], kind: type[T]) -> list[T]:
    return [e for e in effects if isinstance(e, kind)]


def channels(n: int) -> ChannelInputs:
    """The gate's channels, as the handler drives them."""
    return ChannelInputs([InputChannelQueue(i) for i in range(n)])


def test_aligned_trigger_reports_start_delay_alignment_time_and_bytes_processed() -> None:
    handler = SingleCheckpointBarrierHandler.aligned(2, inputs=channels(2))
    handler.handle(BarrierReceived(channel=0, barrier=barrier(1, ts=100)), now=130)
    handler.add_processed_bytes(500)  # channel 1 keeps delivering during the alignment
    effects = handler.handle(BarrierReceived(channel=1, barrier=barrier(1, ts=100)), now=180)
    (trigger,) = only(effects, TriggerCheckpointOnBarrier)
    assert trigger.start_delay_ms == 30
    assert trigger.alignment_duration_ms == 50
    assert trigger.bytes_processed_during_alignment == 500
    handler.add_processed_bytes(999)  # after the alignment: not counted
    assert handler.last_bytes_processed_during_alignment == 500


def test_unaligned_trigger_leaves_alignment_open_until_all_barriers_arrived() -> None:
    inputs = channels(2)
    handler = SingleCheckpointBarrierHandler.unaligned(2, inputs=inputs)
    inputs.channels[1].push(Buffer(["in flight"], 10))
    first = handler.handle(BarrierReceived(channel=0, barrier=barrier(1, 0, UNALIGNED)), now=10)
    (trigger,) = only(first, TriggerCheckpointOnBarrier)
    assert trigger.alignment_duration_ms is None
    assert [e.item for e in inputs.channels[1].persisted[1]] == [Buffer(["in flight"], 10)], (
        "the channels start persisting in-flight data"
    )
    last = handler.handle(BarrierReceived(channel=1, barrier=barrier(1, 0, UNALIGNED)), now=25)
    (done,) = only(last, AllBarriersReceived)
    assert (done.checkpoint_id, done.alignment_duration_ms) == (1, 15)
    inputs.channels[1].push(Buffer(["after"], 10))
    assert len(inputs.channels[1].persisted[1]) == 1, "persisting stopped with the last barrier"


def test_the_handler_reports_the_channels_it_resumes_after_the_trigger() -> None:
    handler = SingleCheckpointBarrierHandler.aligned(2, inputs=channels(2))
    handler.handle(BarrierReceived(channel=0, barrier=barrier(1)), now=0)
    effects = handler.handle(BarrierReceived(channel=1, barrier=barrier(1)), now=0)
    assert [type(e) for e in effects] == [
        TriggerCheckpointOnBarrier,
        ResumeConsumption,
        ResumeConsumption,
    ], "trigger, then unblock (Flink's CollectingBarriers)"
    assert sorted(e.channel for e in only(effects, ResumeConsumption)) == [0, 1]
    obsolete = handler.handle(BarrierReceived(channel=0, barrier=barrier(1)), now=0)
    assert obsolete == [ResumeConsumption(channel=0)], (
        "an obsolete aligned barrier is resumed at once"
    )


def test_alignment_timer_is_scheduled_from_the_barrier_timestamp_and_cancelled_on_completion() -> (
    None
):
    handler = SingleCheckpointBarrierHandler.alternating(2, inputs=channels(2))
    effects = handler.handle(
        BarrierReceived(channel=0, barrier=timeoutable(1, 50, ts=100)), now=120
    )
    assert only(effects, ScheduleTimer) == [ScheduleTimer(key=AlignmentTimer(1), due=150)]
    effects = handler.handle(
        BarrierReceived(channel=1, barrier=timeoutable(1, 50, ts=100)), now=130
    )
    assert only(effects, CancelTimer) == [CancelTimer(key=AlignmentTimer(1))]
    assert only(effects, TriggerCheckpointOnBarrier)[0].barrier.options.is_unaligned is False


def test_active_timeout_switches_to_unaligned_and_prioritises_announced_barriers() -> None:
    handler = SingleCheckpointBarrierHandler.alternating(3, inputs=channels(3))
    handler.handle(BarrierReceived(channel=0, barrier=timeoutable(1, 50)), now=10)
    handler.handle(
        AnnouncementReceived(channel=1, barrier=timeoutable(1, 50), sequence_number=7), now=11
    )
    effects = handler.handle(TimerFired(key=AlignmentTimer(1)), now=50)
    assert only(effects, ConvertToPriorityEvent) == [
        ConvertToPriorityEvent(channel=1, sequence_number=7)
    ]
    (trigger,) = only(effects, TriggerCheckpointOnBarrier)
    assert trigger.barrier.is_unaligned


def test_a_stale_alignment_timer_does_nothing() -> None:
    handler = SingleCheckpointBarrierHandler.alternating(2, inputs=channels(2))
    handler.handle(BarrierReceived(channel=0, barrier=timeoutable(1, 50)), now=10)
    handler.handle(BarrierReceived(channel=1, barrier=timeoutable(1, 50)), now=20)
    assert handler.handle(TimerFired(key=AlignmentTimer(1)), now=50) == []


def test_end_of_partition_aborts_with_end_of_stream_when_flip147_is_off() -> None:
    handler = SingleCheckpointBarrierHandler.aligned(
        2, inputs=channels(2), checkpoints_after_tasks_finish=False
    )
    handler.handle(BarrierReceived(channel=0, barrier=barrier(3)), now=0)
    effects = handler.handle(EndOfPartitionReceived(channel=1), now=0)
    assert only(effects, AbortCheckpointOnBarrier) == [
        AbortCheckpointOnBarrier(checkpoint_id=3, reason=R.CHECKPOINT_DECLINED_INPUT_END_OF_STREAM)
    ]
    assert handler.num_open_channels == 1


def test_unaligned_barrier_in_an_aligned_handler_is_a_protocol_error() -> None:
    handler = SingleCheckpointBarrierHandler.aligned(2, inputs=channels(2))
    with pytest.raises(ProtocolError, match="unaligned barrier"):
        handler.handle(BarrierReceived(channel=0, barrier=barrier(1, 0, UNALIGNED)), now=0)


def test_legacy_aligner_rejects_a_repeated_barrier_as_a_corrupt_stream() -> None:
    aligner = CheckpointBarrierAligner(2)
    aligner.handle(BarrierReceived(channel=0, barrier=barrier(1)), now=0)
    with pytest.raises(ProtocolError, match="stream corrupt"):
        aligner.handle(BarrierReceived(channel=0, barrier=barrier(1)), now=0)


def test_tracker_tracks_at_most_fifty_checkpoints() -> None:
    tracker = CheckpointBarrierTracker(2)
    options = CheckpointOptions(alignment=AlignmentType.AT_LEAST_ONCE)
    for cid in range(1, 61):
        tracker.handle(BarrierReceived(channel=0, barrier=barrier(cid, 0, options)), now=0)
    assert tracker.pending_checkpoint_ids == list(range(11, 61))
    effects = tracker.handle(BarrierReceived(channel=1, barrier=barrier(5, 0, options)), now=0)
    assert effects == [], "a checkpoint dropped from tracking can no longer trigger"


def test_tracker_cancel_marker_aborts_every_older_pending_checkpoint_once() -> None:
    tracker = CheckpointBarrierTracker(2)
    options = CheckpointOptions(alignment=AlignmentType.AT_LEAST_ONCE)
    for cid in (1, 2):
        tracker.handle(BarrierReceived(channel=0, barrier=barrier(cid, 0, options)), now=0)
    effects = tracker.handle(CancelMarkerReceived(channel=1, checkpoint_id=3), now=0)
    assert [e.checkpoint_id for e in only(effects, AbortCheckpointOnBarrier)] == [1, 2, 3]


def test_legacy_gate_reports_alignment_limit_and_replays_what_it_buffered() -> None:
    gate = make_gate("legacy_buffered", 2, max_buffered_bytes=150)
    assert isinstance(gate, LegacyCheckpointedInputGate)
    gate.push(0, barrier(1))
    gate.push(0, Buffer(["x"], 100))
    gate.push(0, Buffer(["y"], 100))
    assert gate.poll(0, 0).effects == []
    assert gate.poll(0, 0).delivered is None  # buffered
    aborted = gate.poll(0, 0).effects
    assert aborted == [
        AbortCheckpointOnBarrier(
            checkpoint_id=1, reason=R.CHECKPOINT_DECLINED_ALIGNMENT_LIMIT_EXCEEDED
        )
    ]
    assert gate.replay_pending
    replayed = [gate.poll_replay(0).delivered for _ in range(2)]
    items = [e.item for e in replayed if e is not None]
    assert items == [Buffer(["x"], 100), Buffer(["y"], 100)]
