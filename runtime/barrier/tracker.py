"""``CheckpointBarrierTracker``: at-least-once barrier handling. It never blocks a channel.

It counts barriers per checkpoint id; a checkpoint triggers when its barrier has been seen on
every open channel. Completing a later checkpoint drops all earlier pending ones silently (they
can no longer complete). At most ``MAX_CHECKPOINTS_TO_TRACK`` checkpoints are tracked.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from runtime.barrier.base import CheckpointBarrierHandler
from runtime.network import CheckpointBarrier
from runtime.reasons import CheckpointFailureReason

MAX_CHECKPOINTS_TO_TRACK = 50


@dataclass(slots=True)
class _BarrierCount:
    checkpoint_id: int
    target: int
    barrier: CheckpointBarrier | None
    channels: set[int] = field(default_factory=set)
    aborted: bool = False

    def mark_aligned(self, channel: int) -> int:
        self.channels.add(channel)
        return len(self.channels)

    def mark_aborted(self) -> bool:
        """True the first time only."""
        first = not self.aborted
        self.aborted = True
        return first


class CheckpointBarrierTracker(CheckpointBarrierHandler):
    def __init__(self, num_channels: int, *, checkpoints_after_tasks_finish: bool = True) -> None:
        super().__init__(checkpoints_after_tasks_finish=checkpoints_after_tasks_finish)
        self._num_open_channels = num_channels
        self._pending: deque[_BarrierCount] = deque()
        self._latest_pending_id = -1

    @property
    def latest_checkpoint_id(self) -> int:
        return self._pending[-1].checkpoint_id if self._pending else -1

    @property
    def is_checkpoint_pending(self) -> bool:
        return bool(self._pending)

    @property
    def pending_checkpoint_ids(self) -> list[int]:
        return [c.checkpoint_id for c in self._pending]

    @property
    def num_open_channels(self) -> int:
        return self._num_open_channels

    def _on_barrier(self, barrier: CheckpointBarrier, channel: int) -> None:
        barrier_id = barrier.checkpoint_id
        # fast path only for new checkpoints (an older pending one may still need this channel)
        if barrier_id > self._latest_pending_id and self._num_open_channels == 1:
            self._mark_alignment_start_and_end(barrier_id, barrier.timestamp)
            self._notify_checkpoint(barrier)
            return
        position, count = self._find(barrier_id)
        if count is not None:
            if count.mark_aligned(channel) == count.target:
                for _ in range(position + 1):
                    self._pending.popleft()
                if not count.aborted:
                    self._trigger_on_aligned(count)
        elif barrier_id > self._latest_pending_id:
            self._mark_alignment_start(barrier_id, barrier.timestamp)
            self._latest_pending_id = barrier_id
            self._pending.append(
                _BarrierCount(barrier_id, self._num_open_channels, barrier, {channel})
            )
            if len(self._pending) > MAX_CHECKPOINTS_TO_TRACK:
                self._pending.popleft()

    def _on_cancel_marker(self, checkpoint_id: int, channel: int) -> None:
        if checkpoint_id > self._latest_pending_id and self._num_open_channels == 1:
            self._reset_alignment()
            self._notify_abort(
                checkpoint_id, CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER
            )
            return
        while self._pending and self._pending[0].checkpoint_id < checkpoint_id:
            older = self._pending.popleft()
            if older.mark_aborted():
                self._notify_abort(
                    older.checkpoint_id,
                    CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER,
                )
        head = self._pending[0] if self._pending else None
        if head is not None and head.checkpoint_id == checkpoint_id:
            if head.mark_aborted():
                self._notify_abort(
                    checkpoint_id,
                    CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER,
                )
            if head.mark_aligned(channel) == head.target:
                self._pending.popleft()
        elif checkpoint_id > self._latest_pending_id:
            self._notify_abort(
                checkpoint_id, CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER
            )
            self._latest_pending_id = checkpoint_id
            marker = _BarrierCount(checkpoint_id, self._num_open_channels, None, {channel}, True)
            self._pending.appendleft(marker)

    def _on_end_of_partition(self, channel: int) -> None:
        self._num_open_channels -= 1
        if not self.checkpoints_after_tasks_finish:
            while self._pending:
                count = self._pending.popleft()
                if count.mark_aborted():
                    self._notify_abort(
                        count.checkpoint_id,
                        CheckpointFailureReason.CHECKPOINT_DECLINED_INPUT_END_OF_STREAM,
                    )
            self._reset_alignment()
            return
        # the newest pending checkpoint that this channel completes (counting it on the way)
        completed: _BarrierCount | None = None
        position = len(self._pending)
        for count in reversed(self._pending):
            position -= 1
            if count.mark_aligned(channel) == count.target:
                completed = count
                break
        if completed is not None:
            for _ in range(position + 1):
                self._pending.popleft()
            if not completed.aborted:
                self._trigger_on_aligned(completed)

    def _find(self, checkpoint_id: int) -> tuple[int, _BarrierCount | None]:
        for position, count in enumerate(self._pending):
            if count.checkpoint_id == checkpoint_id:
                return position, count
        return -1, None

    def _trigger_on_aligned(self, count: _BarrierCount) -> None:
        if count.checkpoint_id == self._latest_pending_id:
            self._mark_alignment_end()
        assert count.barrier is not None, "a non-aborted count always has its barrier"
        self._notify_checkpoint(count.barrier)
