"""One input channel of a task's gate, as pure state: the queue of buffers and events the
network delivered (Flink's input channel's received buffers), with a priority section, the
pause after an aligned barrier, and the persisting of in-flight data for unaligned checkpoints.

- FIFO: items leave in arrival order; priority items (unaligned barriers, announcements,
  barriers converted to priority after an alignment timeout) leave before the others.
- Pause: after it delivers an aligned barrier a channel holds back everything that came after
  that barrier until ``resume()`` (in Flink 1.11+ the upstream subpartition stops sending until
  the consumer resumes it; the records processed are the same). Buffers *before* the barrier
  that a prioritized barrier overtook can still be delivered. The Flink 1.10 mode (``pause_on_aligned_barrier=False``) never pauses: the gate
  buffers instead.
- Persisting (Flink's ``ChannelStatePersister``): when an unaligned checkpoint starts, the channel
  records the buffers queued before that checkpoint's barrier (or all queued ones, if the
  barrier has not arrived), and every buffer arriving until the barrier arrives. They are still
  delivered normally; the records are the checkpoint's input channel state.
- Remote channels announce timeoutable aligned barriers (a priority ``EventAnnouncement``
  carrying the barrier's sequence number); local channels do not.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass
from heapq import heappush

from runtime.network import (
    Buffer,
    ChannelItem,
    CheckpointBarrier,
    EndOfPartition,
    EventAnnouncement,
    is_priority,
)
from runtime.reasons import CheckpointException, CheckpointFailureReason


@dataclass(frozen=True, slots=True)
class Entry:
    """An item in a channel with its sequence number (arrival order within the channel)."""

    seq: int
    item: ChannelItem


class _Persisting(enum.Enum):
    COMPLETED = "COMPLETED"
    BARRIER_PENDING = "BARRIER_PENDING"
    BARRIER_RECEIVED = "BARRIER_RECEIVED"


class InputChannelQueue:
    __slots__ = (
        "_last_barrier_id",
        "_last_barrier_seq",
        "_last_seen_barrier",
        "_next_seq",
        "_pause_seq",
        "_persisting",
        "_priority",
        "_queue",
        "finished",
        "heads",
        "index",
        "pause_on_aligned_barrier",
        "persisted",
        "remote",
    )

    def __init__(
        self, index: int, *, remote: bool = True, pause_on_aligned_barrier: bool = True
    ) -> None:
        self.index = index
        self.remote = remote
        self.pause_on_aligned_barrier = pause_on_aligned_barrier
        self._priority: deque[Entry] = deque()
        self._queue: deque[Entry] = deque()
        self._next_seq = 0
        self._pause_seq: int | None = None
        self.finished = False
        # persisting of in-flight data (ChannelStatePersister)
        self._persisting = _Persisting.COMPLETED
        self._last_seen_barrier = -1
        self._last_barrier_id = -1
        self._last_barrier_seq: int | None = None
        #: checkpoint id -> buffers persisted as this channel's state of that checkpoint
        self.persisted: dict[int, list[Entry]] = {}
        #: the gate's heap of (sequence number, channel index) of heads that may be pollable
        #: (``CheckpointedInputGate``): whenever this channel's queue head can be polled, it is
        #: there (entries that no longer hold are skipped by the gate)
        self.heads: list[tuple[int, int]] | None = None

    # --- arrival ---------------------------------------------------------------------------

    def push(self, item: ChannelItem, seq: int | None = None) -> int:
        """Put an item on the channel; returns its sequence number."""
        if seq is None:
            seq = self._next_seq
        elif seq < self._next_seq:
            raise ValueError(f"channel {self.index}: sequence {seq} after {self._next_seq - 1}")
        self._next_seq = seq + 1
        entry = Entry(seq, item)
        if is_priority(item):
            self._priority.append(entry)
        else:
            self._queue.append(entry)
            if len(self._queue) == 1:
                self.offer_head()
            if self.remote and isinstance(item, CheckpointBarrier) and item.options.is_timeoutable:
                announcement = EventAnnouncement(barrier=item, sequence_number=seq)
                self._priority.append(Entry(seq, announcement))
        if isinstance(item, CheckpointBarrier):
            self._check_for_barrier(item, seq)
        elif isinstance(item, Buffer) and self._persisting is _Persisting.BARRIER_PENDING:
            self.persisted.setdefault(self._last_seen_barrier, []).append(entry)
        return seq

    # --- delivery ---------------------------------------------------------------------------

    def can_poll(self) -> bool:
        if self._priority:
            return True
        if not self._queue:
            return False
        return self._pause_seq is None or self._queue[0].seq < self._pause_seq

    def offers(self, seq: int) -> bool:
        """The queue's (non-priority) head is ``seq`` and can be polled now."""
        queue = self._queue
        return (
            bool(queue)
            and queue[0].seq == seq
            and (self._pause_seq is None or seq < self._pause_seq)
        )

    def offer_head(self) -> None:
        """The queue's head changed or may have become pollable: put it in the gate's heap."""
        heads, queue = self.heads, self._queue
        if heads is not None and queue:
            seq = queue[0].seq
            if self._pause_seq is None or seq < self._pause_seq:
                heappush(heads, (seq, self.index))

    def head(self) -> Entry | None:
        """The entry ``poll`` would deliver (None if nothing can be polled now)."""
        if self._priority:
            return self._priority[0]
        if self.can_poll():
            return self._queue[0]
        return None

    def poll(self) -> Entry:
        if not self.can_poll():
            raise IndexError(f"channel {self.index} has nothing to deliver")
        if self._priority:
            entry = self._priority.popleft()
            from_queue = False
        else:
            entry = self._queue.popleft()
            from_queue = True
        item = entry.item
        if (
            self.pause_on_aligned_barrier
            and isinstance(item, CheckpointBarrier)
            and item.options.needs_alignment
        ):
            self._pause_seq = entry.seq
        elif isinstance(item, EndOfPartition):
            self.finished = True
        if from_queue:
            self.offer_head()
        return entry

    def head_is_priority(self) -> bool:
        return bool(self._priority)

    def buffers_before(self, seq: int) -> list[Buffer]:
        """Queued (non-priority) buffers that precede position ``seq``: what a barrier at
        ``seq`` overtakes when it moves to the front."""
        return [e.item for e in self._queue if e.seq < seq and isinstance(e.item, Buffer)]

    @property
    def paused(self) -> bool:
        return self._pause_seq is not None

    def resume(self) -> None:
        self._pause_seq = None
        self.offer_head()

    def __len__(self) -> int:
        return len(self._priority) + len(self._queue)

    def queued(self) -> list[Entry]:
        return [*self._priority, *self._queue]

    # --- priority conversion ------------------------------------------------------------------

    def convert_to_priority(self, sequence_number: int) -> bool:
        """Move the queued barrier at ``sequence_number`` to the priority section.

        Returns False when it is no longer queued (already delivered): nothing to do then.
        """
        for entry in self._queue:
            if entry.seq == sequence_number:
                if not isinstance(entry.item, CheckpointBarrier):
                    raise ValueError(
                        f"channel {self.index}: item {sequence_number} is not a barrier"
                    )
                was_head = self._queue[0] is entry
                self._queue.remove(entry)
                self._priority.append(entry)
                if was_head:
                    self.offer_head()
                return True
        return False

    # --- persisting in-flight data -----------------------------------------------------------

    def checkpoint_started(self, barrier: CheckpointBarrier) -> list[Entry]:
        """Start persisting for an unaligned checkpoint; returns the buffers recorded now.

        Raises ``CheckpointException(CHECKPOINT_SUBSUMED)`` when a newer barrier already
        arrived: where this checkpoint's barrier sat in the queue is no longer known.
        """
        checkpoint_id = barrier.checkpoint_id
        if checkpoint_id < self._last_barrier_id:
            raise CheckpointException(
                CheckpointFailureReason.CHECKPOINT_SUBSUMED,
                f"channel {self.index}: the position of barrier {checkpoint_id} is not known "
                f"(overwritten by the newer barrier {self._last_barrier_id})",
            )
        if checkpoint_id > self._last_barrier_id:
            self._last_barrier_id = -1  # an older, obsolete barrier's position
            self._last_barrier_seq = None
        if self._last_seen_barrier < checkpoint_id:
            self._persisting = _Persisting.BARRIER_PENDING
            self._last_seen_barrier = checkpoint_id
        known = self._inflight_buffers(checkpoint_id)
        if known:
            self.persisted.setdefault(checkpoint_id, []).extend(known)
        return known

    def checkpoint_stopped(self, checkpoint_id: int) -> None:
        if checkpoint_id >= self._last_seen_barrier:
            self._persisting = _Persisting.COMPLETED
            self._last_seen_barrier = checkpoint_id
        if self._last_barrier_id == checkpoint_id:
            self._last_barrier_id = -1
            self._last_barrier_seq = None

    def discard_persisted(self, checkpoint_id: int) -> None:
        self.persisted.pop(checkpoint_id, None)

    def _inflight_buffers(self, checkpoint_id: int) -> list[Entry]:
        limit = self._last_barrier_seq if self._last_barrier_id == checkpoint_id else None
        known: list[Entry] = []
        for entry in self._queue:
            if limit is not None and entry.seq >= limit:
                break
            if isinstance(entry.item, Buffer):
                known.append(entry)
        return known

    def _check_for_barrier(self, barrier: CheckpointBarrier, seq: int) -> None:
        expected = (
            self._last_seen_barrier + 1
            if self._persisting is _Persisting.COMPLETED
            else self._last_seen_barrier
        )
        if barrier.checkpoint_id >= expected:
            self._persisting = _Persisting.BARRIER_RECEIVED
            self._last_seen_barrier = barrier.checkpoint_id
            self._last_barrier_id = barrier.checkpoint_id
            self._last_barrier_seq = seq
