"""What every barrier handler shares (Flink's ``CheckpointBarrierHandler``): the sans-IO
``handle`` entry point and the per-checkpoint alignment metrics (start delay, alignment duration,
bytes processed during alignment)."""

from __future__ import annotations

from runtime.effects import (
    AbortCheckpointOnBarrier,
    AllBarriersReceived,
    GateEffect,
    TriggerCheckpointOnBarrier,
)
from runtime.messages import (
    AnnouncementReceived,
    BarrierReceived,
    CancelMarkerReceived,
    EndOfPartitionReceived,
    HandlerMessage,
    TimerFired,
)
from runtime.network import CheckpointBarrier
from runtime.reasons import CheckpointFailureReason


class CheckpointBarrierHandler:
    """Base of the input-side handlers. Subclasses implement the ``_on_*`` hooks.

    ``handle(msg, now)`` returns the effects of one event. Data buffers do not go through
    ``handle`` (records stay on the fast path): the gate reports their size with
    ``add_processed_bytes`` so the handler can count bytes processed during alignment.
    """

    def __init__(self, *, checkpoints_after_tasks_finish: bool = True) -> None:
        self.checkpoints_after_tasks_finish = checkpoints_after_tasks_finish
        self._out: list[GateEffect] = []
        self._now = 0
        self._alignment_start: int | None = None
        self._alignment_checkpoint_id = -1
        self._start_delay_ms = 0
        self._bytes_processed = 0
        self._ended_alignment_id: int | None = None
        self._awaiting_alignment_id: int | None = None
        #: duration of the last alignment that ended (0 after an abort), ms
        self.last_alignment_duration_ms = 0
        #: bytes delivered to the operator during the last alignment that ended
        self.last_bytes_processed_during_alignment = 0

    # --- entry points -------------------------------------------------------------------

    def handle(self, msg: HandlerMessage, now: int) -> list[GateEffect]:
        self._now = now
        out: list[GateEffect] = []
        self._out = out
        match msg:
            case BarrierReceived(channel=channel, barrier=barrier):
                self._on_barrier(barrier, channel)
            case CancelMarkerReceived(channel=channel, checkpoint_id=checkpoint_id):
                self._on_cancel_marker(checkpoint_id, channel)
            case EndOfPartitionReceived(channel=channel):
                self._on_end_of_partition(channel)
            case AnnouncementReceived(
                channel=channel, barrier=barrier, sequence_number=sequence_number
            ):
                self._on_announcement(barrier, sequence_number, channel)
            case TimerFired(key=key):
                self._on_timer(key)
        return out

    def add_processed_bytes(self, size: int) -> None:
        if self._alignment_start is not None:
            self._bytes_processed += size

    @property
    def latest_checkpoint_id(self) -> int:
        raise NotImplementedError

    @property
    def is_checkpoint_pending(self) -> bool:
        raise NotImplementedError

    # --- hooks ----------------------------------------------------------------------------

    def _on_barrier(self, barrier: CheckpointBarrier, channel: int) -> None:
        raise NotImplementedError

    def _on_cancel_marker(self, checkpoint_id: int, channel: int) -> None:
        raise NotImplementedError

    def _on_end_of_partition(self, channel: int) -> None:
        raise NotImplementedError

    def _on_announcement(
        self, barrier: CheckpointBarrier, sequence_number: int, channel: int
    ) -> None:
        """Announcements are ignored unless a handler can switch to unaligned."""

    def _on_timer(self, key: object) -> None:
        """No timers unless a handler registers some."""

    # --- shared helpers ---------------------------------------------------------------------

    def _emit(self, effect: GateEffect) -> None:
        self._out.append(effect)

    def _notify_checkpoint(self, barrier: CheckpointBarrier) -> None:
        if barrier.checkpoint_id == self._alignment_checkpoint_id:
            start_delay = self._start_delay_ms
            if self._ended_alignment_id == barrier.checkpoint_id:
                duration: int | None = self.last_alignment_duration_ms
                processed: int | None = self.last_bytes_processed_during_alignment
            else:
                duration = processed = None
                self._awaiting_alignment_id = barrier.checkpoint_id
        else:
            start_delay, duration, processed = 0, 0, 0
        self._emit(
            TriggerCheckpointOnBarrier(
                barrier=barrier,
                start_delay_ms=start_delay,
                alignment_duration_ms=duration,
                bytes_processed_during_alignment=processed,
            )
        )

    def _notify_abort(self, checkpoint_id: int, reason: CheckpointFailureReason) -> None:
        self._emit(AbortCheckpointOnBarrier(checkpoint_id=checkpoint_id, reason=reason))

    def _mark_alignment_start(self, checkpoint_id: int, barrier_timestamp: int) -> None:
        self._start_delay_ms = max(0, self._now - barrier_timestamp)
        self._reset_alignment()
        self._alignment_start = self._now
        self._alignment_checkpoint_id = checkpoint_id

    def _mark_alignment_start_and_end(self, checkpoint_id: int, barrier_timestamp: int) -> None:
        self._mark_alignment_start(checkpoint_id, barrier_timestamp)
        self._mark_alignment_end(0)

    def _mark_alignment_end(self, duration: int | None = None) -> None:
        if duration is None:
            duration = self._now - (
                self._alignment_start if self._alignment_start is not None else self._now
            )
        self.last_alignment_duration_ms = duration
        self.last_bytes_processed_during_alignment = self._bytes_processed
        self._ended_alignment_id = self._alignment_checkpoint_id
        if self._awaiting_alignment_id == self._alignment_checkpoint_id:
            self._awaiting_alignment_id = None
            self._emit(
                AllBarriersReceived(
                    checkpoint_id=self._alignment_checkpoint_id,
                    alignment_duration_ms=duration,
                    bytes_processed_during_alignment=self._bytes_processed,
                )
            )
        self._alignment_start = None
        self._bytes_processed = 0

    def _reset_alignment(self) -> None:
        self._awaiting_alignment_id = None
        self._mark_alignment_end(0)
        self._ended_alignment_id = None
