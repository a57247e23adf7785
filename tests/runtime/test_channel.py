"""InputChannelQueue: FIFO with a priority section, the pause after an aligned barrier, and the
persisting of in-flight data for unaligned checkpoints (Flink's ``ChannelStatePersister``).

Reference: flink-checkpointing.md §1.9 (unaligned in-flight data rule, announcements) and §1.10
(sender-side pause after an aligned barrier, priority events).
"""

from __future__ import annotations

import pytest

from runtime.barrier.channel import Entry, InputChannelQueue
from runtime.checkpoint import AlignmentType, CheckpointOptions, SnapshotType
from runtime.network import (
    Buffer,
    CancelCheckpointMarker,
    ChannelItem,
    CheckpointBarrier,
    EndOfPartition,
    EventAnnouncement,
)
from runtime.reasons import CheckpointException, CheckpointFailureReason


def buf(n: int) -> Buffer:
    return Buffer(records=(n,), size=8)


def aligned(checkpoint_id: int) -> CheckpointBarrier:
    return CheckpointBarrier(checkpoint_id=checkpoint_id, timestamp=100 * checkpoint_id)


def timeoutable(checkpoint_id: int, timeout: int = 50) -> CheckpointBarrier:
    return CheckpointBarrier(
        checkpoint_id=checkpoint_id,
        timestamp=100 * checkpoint_id,
        options=CheckpointOptions(
            alignment=AlignmentType.ALIGNED, aligned_checkpoint_timeout=timeout
        ),
    )


def unaligned(checkpoint_id: int) -> CheckpointBarrier:
    return CheckpointBarrier(
        checkpoint_id=checkpoint_id,
        timestamp=100 * checkpoint_id,
        options=CheckpointOptions(alignment=AlignmentType.UNALIGNED),
    )


def at_least_once(checkpoint_id: int) -> CheckpointBarrier:
    return CheckpointBarrier(
        checkpoint_id=checkpoint_id,
        timestamp=100 * checkpoint_id,
        options=CheckpointOptions(alignment=AlignmentType.AT_LEAST_ONCE),
    )


def savepoint(checkpoint_id: int) -> CheckpointBarrier:
    return CheckpointBarrier(
        checkpoint_id=checkpoint_id,
        timestamp=100 * checkpoint_id,
        options=CheckpointOptions(snapshot_type=SnapshotType.SAVEPOINT),
    )


def channel_with(*items: ChannelItem, remote: bool = True) -> InputChannelQueue:
    channel = InputChannelQueue(0, remote=remote)
    for item in items:
        channel.push(item)
    return channel


def drain(channel: InputChannelQueue) -> list[ChannelItem]:
    out = []
    while channel.can_poll():
        out.append(channel.poll().item)
    return out


def records(entries: list[Entry]) -> list[ChannelItem]:
    return [e.item for e in entries]


# --- order ------------------------------------------------------------------------------------


def test_items_leave_in_arrival_order() -> None:
    items: list[ChannelItem] = [buf(1), CancelCheckpointMarker(3), buf(2), buf(3)]
    channel = channel_with(*items)
    assert len(channel) == 4
    assert drain(channel) == items
    assert len(channel) == 0


def test_push_numbers_items_in_arrival_order() -> None:
    channel = InputChannelQueue(0)
    assert [channel.push(buf(i)) for i in range(3)] == [0, 1, 2]
    assert [channel.poll().seq for _ in range(3)] == [0, 1, 2]


def test_empty_channel_has_nothing_to_poll() -> None:
    channel = InputChannelQueue(0)
    assert not channel.can_poll()
    assert channel.head() is None
    with pytest.raises(IndexError):
        channel.poll()


def test_head_is_what_poll_delivers() -> None:
    channel = channel_with(buf(1), unaligned(1))
    head = channel.head()
    assert head is not None
    assert channel.poll() == head


def test_unaligned_barrier_overtakes_queued_buffers() -> None:
    channel = channel_with(buf(1), buf(2), unaligned(1), buf(3))
    assert drain(channel) == [unaligned(1), buf(1), buf(2), buf(3)]


def test_announcement_overtakes_queued_buffers() -> None:
    announcement = EventAnnouncement(barrier=aligned(1), sequence_number=7)
    channel = channel_with(buf(1), buf(2), announcement)
    assert drain(channel) == [announcement, buf(1), buf(2)]


def test_priority_items_keep_their_order_among_themselves() -> None:
    channel = channel_with(buf(1), unaligned(1), unaligned(2))
    assert drain(channel) == [unaligned(1), unaligned(2), buf(1)]


def test_queued_lists_priority_items_first() -> None:
    channel = channel_with(buf(1), unaligned(1))
    assert records(channel.queued()) == [unaligned(1), buf(1)]


# --- announcements ------------------------------------------------------------------------------


def test_remote_channel_announces_a_timeoutable_aligned_barrier() -> None:
    channel = channel_with(buf(1), buf(2), timeoutable(4))
    first = channel.poll()
    assert first.item == EventAnnouncement(barrier=timeoutable(4), sequence_number=2)
    assert drain(channel) == [buf(1), buf(2), timeoutable(4)]


def test_local_channel_does_not_announce() -> None:
    channel = channel_with(buf(1), timeoutable(4), remote=False)
    assert drain(channel) == [buf(1), timeoutable(4)]


@pytest.mark.parametrize("barrier", [aligned(4), unaligned(4), at_least_once(4)])
def test_remote_channel_announces_only_timeoutable_barriers(barrier: CheckpointBarrier) -> None:
    channel = channel_with(buf(1), barrier)
    assert not any(isinstance(item, EventAnnouncement) for item in records(channel.queued()))


# --- pause after an aligned barrier ----------------------------------------------------------


@pytest.mark.parametrize("barrier", [aligned(1), timeoutable(1), savepoint(1)])
def test_channel_pauses_after_delivering_an_aligned_barrier_until_resumed(
    barrier: CheckpointBarrier,
) -> None:
    channel = channel_with(buf(1), barrier, buf(2), remote=False)
    assert channel.poll().item == buf(1)
    assert not channel.paused
    assert channel.poll().item == barrier
    assert channel.paused
    assert not channel.can_poll()
    assert channel.head() is None
    with pytest.raises(IndexError):
        channel.poll()
    channel.resume()
    assert not channel.paused
    assert drain(channel) == [buf(2)]


def test_items_arriving_while_paused_are_held_until_resume() -> None:
    channel = channel_with(aligned(1))
    channel.poll()
    channel.push(buf(1))
    channel.push(buf(2))
    assert not channel.can_poll()
    assert len(channel) == 2
    channel.resume()
    assert drain(channel) == [buf(1), buf(2)]


def test_items_before_a_prioritized_aligned_barrier_can_be_polled_while_paused() -> None:
    channel = channel_with(buf(1), buf(2), timeoutable(1), buf(3))
    announcement = channel.poll().item
    assert isinstance(announcement, EventAnnouncement)
    assert channel.convert_to_priority(announcement.sequence_number)
    assert channel.poll().item == timeoutable(1)
    assert channel.paused
    assert drain(channel) == [buf(1), buf(2)]  # overtaken buffers still flow
    assert channel.paused
    assert len(channel) == 1  # buf(3), after the barrier, is held
    channel.resume()
    assert drain(channel) == [buf(3)]


@pytest.mark.parametrize("barrier", [at_least_once(1), unaligned(1)])
def test_at_least_once_and_unaligned_barriers_do_not_pause(barrier: CheckpointBarrier) -> None:
    channel = channel_with(barrier, buf(1))
    assert drain(channel) == [barrier, buf(1)]
    assert not channel.paused


def test_channel_without_pause_on_aligned_barrier_never_pauses() -> None:
    channel = InputChannelQueue(0, remote=False, pause_on_aligned_barrier=False)
    for item in (buf(1), aligned(1), buf(2), savepoint(2), buf(3)):
        channel.push(item)
    assert drain(channel) == [buf(1), aligned(1), buf(2), savepoint(2), buf(3)]
    assert not channel.paused


# --- priority conversion ----------------------------------------------------------------------


def test_convert_to_priority_moves_the_queued_barrier_to_the_front() -> None:
    channel = channel_with(buf(1), buf(2), aligned(1), buf(3), remote=False)
    assert channel.convert_to_priority(2)
    assert drain(channel)[:3] == [aligned(1), buf(1), buf(2)]


def test_convert_to_priority_of_a_delivered_barrier_returns_false() -> None:
    channel = channel_with(aligned(1), buf(1), remote=False)
    channel.poll()
    assert not channel.convert_to_priority(0)
    channel.resume()
    assert drain(channel) == [buf(1)]


def test_convert_to_priority_of_an_unknown_sequence_number_returns_false() -> None:
    channel = channel_with(buf(1), aligned(1), remote=False)
    assert not channel.convert_to_priority(99)
    assert records(channel.queued()) == [buf(1), aligned(1)]


def test_convert_to_priority_of_a_buffer_is_an_error() -> None:
    channel = channel_with(buf(1), aligned(1), remote=False)
    with pytest.raises(ValueError):
        channel.convert_to_priority(0)


# --- persisting in-flight data ----------------------------------------------------------------


def test_checkpoint_started_persists_the_buffers_queued_before_its_barrier() -> None:
    channel = channel_with(buf(1), CancelCheckpointMarker(0), buf(2), aligned(3), buf(4))
    known = channel.checkpoint_started(aligned(3).as_unaligned())
    assert records(known) == [buf(1), buf(2)]
    assert records(channel.persisted[3]) == [buf(1), buf(2)]
    channel.push(buf(5))
    assert records(channel.persisted[3]) == [buf(1), buf(2)]


def test_checkpoint_started_persists_the_buffers_an_unaligned_barrier_overtook() -> None:
    channel = channel_with(buf(1), buf(2), unaligned(1))
    assert channel.poll().item == unaligned(1)
    known = channel.checkpoint_started(unaligned(1))
    assert records(known) == [buf(1), buf(2)]
    channel.push(buf(3))  # after the barrier: not channel state
    assert records(channel.persisted[1]) == [buf(1), buf(2)]
    assert drain(channel) == [buf(1), buf(2), buf(3)]  # persisted buffers are still delivered


def test_checkpoint_started_before_the_barrier_persists_queued_and_later_buffers() -> None:
    channel = channel_with(buf(1), buf(2))
    known = channel.checkpoint_started(unaligned(1))
    assert records(known) == [buf(1), buf(2)]
    channel.push(buf(3))
    channel.push(CancelCheckpointMarker(0))
    channel.push(buf(4))
    channel.push(aligned(1))
    channel.push(buf(5))
    assert records(channel.persisted[1]) == [buf(1), buf(2), buf(3), buf(4)]


def test_checkpoint_started_before_the_barrier_persists_until_a_priority_barrier_arrives() -> None:
    channel = channel_with(buf(1))
    channel.checkpoint_started(unaligned(1))
    channel.push(buf(2))
    channel.push(unaligned(1))
    channel.push(buf(3))
    assert records(channel.persisted[1]) == [buf(1), buf(2)]


def test_checkpoint_started_on_an_empty_channel_records_only_later_arrivals() -> None:
    channel = InputChannelQueue(0)
    assert channel.checkpoint_started(unaligned(1)) == []
    assert 1 not in channel.persisted
    channel.push(buf(1))
    assert records(channel.persisted[1]) == [buf(1)]


def test_checkpoint_stopped_stops_persisting() -> None:
    channel = channel_with(buf(1))
    channel.checkpoint_started(unaligned(1))
    channel.push(buf(2))
    channel.checkpoint_stopped(1)
    channel.push(buf(3))
    assert records(channel.persisted[1]) == [buf(1), buf(2)]


def test_checkpoint_stopped_for_an_older_checkpoint_keeps_persisting_the_newer_one() -> None:
    channel = InputChannelQueue(0)
    channel.checkpoint_started(unaligned(2))
    channel.checkpoint_stopped(1)
    channel.push(buf(1))
    assert records(channel.persisted[2]) == [buf(1)]


def test_checkpoint_started_after_a_newer_barrier_arrived_is_subsumed() -> None:
    channel = channel_with(buf(1), aligned(2), remote=False)
    with pytest.raises(CheckpointException) as info:
        channel.checkpoint_started(unaligned(1))
    assert info.value.reason is CheckpointFailureReason.CHECKPOINT_SUBSUMED
    assert channel.persisted == {}


def test_checkpoint_started_past_an_obsolete_barrier_persists_every_queued_buffer() -> None:
    channel = channel_with(buf(1), aligned(1), buf(2), remote=False)
    known = channel.checkpoint_started(unaligned(2))
    assert records(known) == [buf(1), buf(2)]
    channel.push(buf(3))
    assert records(channel.persisted[2]) == [buf(1), buf(2), buf(3)]


def test_discard_persisted_drops_only_that_checkpoint() -> None:
    channel = channel_with(buf(1))
    channel.checkpoint_started(unaligned(1))
    channel.checkpoint_stopped(1)
    channel.push(buf(2))
    channel.checkpoint_started(unaligned(2))
    channel.discard_persisted(1)
    assert 1 not in channel.persisted
    assert records(channel.persisted[2]) == [buf(1), buf(2)]
    channel.discard_persisted(7)  # nothing recorded: no error


# --- sequence numbers and end of partition ---------------------------------------------------


def test_push_with_explicit_sequence_numbers_may_leave_gaps() -> None:
    channel = InputChannelQueue(0)
    assert channel.push(buf(1), seq=5) == 5
    assert channel.push(buf(2)) == 6
    assert channel.push(buf(3), seq=10) == 10
    assert [channel.poll().seq for _ in range(3)] == [5, 6, 10]


@pytest.mark.parametrize("seq", [3, 4])
def test_push_with_a_sequence_number_not_above_the_previous_is_an_error(seq: int) -> None:
    channel = InputChannelQueue(0)
    channel.push(buf(1), seq=4)
    with pytest.raises(ValueError):
        channel.push(buf(2), seq=seq)


def test_end_of_partition_marks_the_channel_finished_when_delivered() -> None:
    channel = channel_with(buf(1), EndOfPartition())
    assert not channel.finished
    channel.poll()
    assert not channel.finished
    assert channel.poll().item == EndOfPartition()
    assert channel.finished
