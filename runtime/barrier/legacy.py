"""Flink 1.10's ``CheckpointBarrierAligner``: exactly-once alignment with consumer-side blocking.

Before Flink 1.11 the consumer, not the network, blocked a channel: everything a blocked channel
delivered (data and events) was buffered by the gate and replayed once the alignment ended (see
``gate.LegacyCheckpointedInputGate``). The aligner keeps the blocked flags and tells the gate when
to release (roll over) the buffered sequence through ``take_release()``.
"""

from __future__ import annotations

from runtime.barrier.base import CheckpointBarrierHandler
from runtime.barrier.states import ProtocolError
from runtime.effects import GateEffect
from runtime.network import CheckpointBarrier
from runtime.reasons import CheckpointFailureReason


class CheckpointBarrierAligner(CheckpointBarrierHandler):
    def __init__(self, num_channels: int, *, checkpoints_after_tasks_finish: bool = False) -> None:
        super().__init__(checkpoints_after_tasks_finish=checkpoints_after_tasks_finish)
        self._total_channels = num_channels
        self._blocked = [False] * num_channels
        self._num_barriers_received = 0
        self._num_closed_channels = 0
        self._current_checkpoint_id = -1
        self._pending_barrier: CheckpointBarrier | None = None
        self._release = False

    @property
    def latest_checkpoint_id(self) -> int:
        return self._current_checkpoint_id

    @property
    def is_checkpoint_pending(self) -> bool:
        return self._num_barriers_received > 0

    def is_blocked(self, channel: int) -> bool:
        return self._blocked[channel]

    @property
    def blocked_channels(self) -> list[int]:
        return [c for c, b in enumerate(self._blocked) if b]

    def take_release(self) -> bool:
        """Whether the last event ended an alignment (the gate must replay what it buffered)."""
        release, self._release = self._release, False
        return release

    def checkpoint_size_limit_exceeded(self, now: int) -> list[GateEffect]:
        """The gate buffered more than ``task.checkpoint.alignment.max-size``: give up."""
        self._now = now
        out: list[GateEffect] = []
        self._out = out
        self._release_blocks_and_reset_barriers()
        self._notify_abort(
            self._current_checkpoint_id,
            CheckpointFailureReason.CHECKPOINT_DECLINED_ALIGNMENT_LIMIT_EXCEEDED,
        )
        return out

    # --- events -----------------------------------------------------------------------------

    def _on_barrier(self, barrier: CheckpointBarrier, channel: int) -> None:
        barrier_id = barrier.checkpoint_id
        if self._total_channels == 1:
            if barrier_id > self._current_checkpoint_id:
                self._current_checkpoint_id = barrier_id
                self._mark_alignment_start_and_end(barrier_id, barrier.timestamp)
                self._notify_checkpoint(barrier)
            return
        if self._num_barriers_received > 0:
            if barrier_id == self._current_checkpoint_id:
                self._on_barrier_of_current(channel)
            elif barrier_id > self._current_checkpoint_id:
                self._notify_abort(
                    self._current_checkpoint_id,
                    CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED,
                )
                self._release_blocks_and_reset_barriers()
                self._begin_new_alignment(barrier, channel)
            else:
                return  # trailing barrier of an earlier checkpoint
        elif barrier_id > self._current_checkpoint_id:
            self._begin_new_alignment(barrier, channel)
        else:
            return  # the current checkpoint was cancelled, or an old one
        if self._num_barriers_received + self._num_closed_channels == self._total_channels:
            self._release_blocks_and_reset_barriers(end_alignment=True)
            self._notify_checkpoint(barrier)

    def _on_cancel_marker(self, checkpoint_id: int, channel: int) -> None:
        reason = CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER
        if self._total_channels == 1:
            if checkpoint_id > self._current_checkpoint_id:
                self._current_checkpoint_id = checkpoint_id
                self._notify_abort(checkpoint_id, reason)
            return
        if self._num_barriers_received > 0:
            if checkpoint_id == self._current_checkpoint_id:
                self._release_blocks_and_reset_barriers()
                self._notify_abort(checkpoint_id, reason)
            elif checkpoint_id > self._current_checkpoint_id:
                # cancelling the next checkpoint also ends the current alignment (silently)
                self._release_blocks_and_reset_barriers()
                self._current_checkpoint_id = checkpoint_id
                self._notify_abort(checkpoint_id, reason)
        elif checkpoint_id > self._current_checkpoint_id:
            # a new checkpoint starting as cancelled: its barriers can no longer align
            self._current_checkpoint_id = checkpoint_id
            self._reset_alignment()
            self._notify_abort(checkpoint_id, reason)

    def _on_end_of_partition(self, channel: int) -> None:
        self._num_closed_channels += 1
        if not self.is_checkpoint_pending:
            return
        if not self.checkpoints_after_tasks_finish:
            self._notify_abort(
                self._current_checkpoint_id,
                CheckpointFailureReason.CHECKPOINT_DECLINED_INPUT_END_OF_STREAM,
            )
            self._release_blocks_and_reset_barriers()
        elif self._num_barriers_received + self._num_closed_channels == self._total_channels:
            barrier = self._pending_barrier
            assert barrier is not None
            self._release_blocks_and_reset_barriers(end_alignment=True)
            self._notify_checkpoint(barrier)

    # --- internals --------------------------------------------------------------------------

    def _begin_new_alignment(self, barrier: CheckpointBarrier, channel: int) -> None:
        self._current_checkpoint_id = barrier.checkpoint_id
        self._pending_barrier = barrier
        self._on_barrier_of_current(channel)
        self._mark_alignment_start(barrier.checkpoint_id, barrier.timestamp)

    def _on_barrier_of_current(self, channel: int) -> None:
        if self._blocked[channel]:
            raise ProtocolError(
                f"stream corrupt: repeated barrier {self._current_checkpoint_id} on channel {channel}"
            )
        self._blocked[channel] = True
        self._num_barriers_received += 1

    def _release_blocks_and_reset_barriers(self, *, end_alignment: bool = False) -> None:
        self._blocked = [False] * self._total_channels
        self._num_barriers_received = 0
        self._pending_barrier = None
        self._release = True
        if end_alignment:
            self._mark_alignment_end()
        else:
            self._reset_alignment()
