"""``SingleCheckpointBarrierHandler``: exactly-once barrier handling, one checkpoint at a time.

It keeps the checkpoint-id bookkeeping (current id, last cancelled or completed id, aligned
channels, target count, open channels, the alignment timer) and delegates what to do with the
channels to its ``BarrierHandlerState`` (see ``states``). Modes (``GateMode``): ``aligned``
(unaligned checkpoints disabled), ``unaligned`` (Flink's test-only pure unaligned handler) and
``aligned_with_timeout`` (Flink's ``alternating`` handler: unaligned checkpoints enabled;
barriers may start aligned and time out).

The handler drives the gate's channels (``CheckpointableInputs``) directly; what it did to them
(resume a channel, move a barrier to the front) is also returned as effects, in the order it
happened, e.g. an aligned trigger comes before the channels' resumption, as in Flink.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from runtime.barrier.base import CheckpointBarrierHandler
from runtime.barrier.mode import GateMode
from runtime.barrier.states import (
    AlternatingWaitingForFirstBarrier,
    AlternatingWaitingForFirstBarrierUnaligned,
    BarrierHandlerState,
    ChannelBook,
    CheckpointableInputs,
    WaitingForFirstBarrier,
)
from runtime.effects import (
    CancelTimer,
    ConvertToPriorityEvent,
    GateEffect,
    ResumeConsumption,
    ScheduleTimer,
)
from runtime.network import CheckpointBarrier
from runtime.reasons import CheckpointException, CheckpointFailureReason

_Transform = Callable[[BarrierHandlerState], BarrierHandlerState]


@dataclass(frozen=True, slots=True)
class AlignmentTimer:
    """Timer key of the aligned-checkpoint timeout of one checkpoint."""

    checkpoint_id: int


class _ReportingInputs:
    """The gate's channels as the states drive them; what is done to them is reported too."""

    __slots__ = ("_emit", "_inputs")

    def __init__(self, inputs: CheckpointableInputs, emit: Callable[[GateEffect], None]) -> None:
        self._inputs = inputs
        self._emit = emit

    def resume_consumption(self, channel: int) -> None:
        self._inputs.resume_consumption(channel)
        self._emit(ResumeConsumption(channel=channel))

    def convert_to_priority_event(self, channel: int, sequence_number: int) -> None:
        self._inputs.convert_to_priority_event(channel, sequence_number)
        self._emit(ConvertToPriorityEvent(channel=channel, sequence_number=sequence_number))

    def checkpoint_started(self, barrier: CheckpointBarrier) -> None:
        self._inputs.checkpoint_started(barrier)

    def checkpoint_stopped(self, checkpoint_id: int) -> None:
        self._inputs.checkpoint_stopped(checkpoint_id)


class SingleCheckpointBarrierHandler(CheckpointBarrierHandler):
    def __init__(
        self,
        num_channels: int,
        *,
        mode: GateMode | str,
        inputs: CheckpointableInputs,
        checkpoints_after_tasks_finish: bool = True,
    ) -> None:
        super().__init__(checkpoints_after_tasks_finish=checkpoints_after_tasks_finish)
        if num_channels < 0:
            raise ValueError(f"num_channels must be >= 0, got {num_channels}")
        self.inputs: CheckpointableInputs = _ReportingInputs(inputs, self._emit)
        book = ChannelBook(self.inputs)
        self.mode = GateMode.parse(mode)
        self._state: BarrierHandlerState
        if self.mode is GateMode.ALIGNED:
            self._state = WaitingForFirstBarrier(book)
        elif self.mode is GateMode.UNALIGNED:
            self._state = AlternatingWaitingForFirstBarrierUnaligned(book, alternating=False)
        elif self.mode is GateMode.ALIGNED_WITH_TIMEOUT:
            self._state = AlternatingWaitingForFirstBarrier(book)
        else:
            raise ValueError(
                f"SingleCheckpointBarrierHandler handles aligned, unaligned and "
                f"aligned_with_timeout, not {self.mode.value}"
            )
        self._alternating = self.mode is GateMode.ALIGNED_WITH_TIMEOUT
        self._num_open_channels = num_channels
        self._current_checkpoint_id = -1
        self._last_cancelled_or_completed_id = -1
        self._pending_barrier: CheckpointBarrier | None = None
        self._aligned_channels: set[int] = set()
        self._target_channel_count = 0
        self._alignment_timer: AlignmentTimer | None = None
        self._ctl = _Controller(self)

    @classmethod
    def aligned(
        cls,
        num_channels: int,
        *,
        inputs: CheckpointableInputs,
        checkpoints_after_tasks_finish: bool = True,
    ) -> SingleCheckpointBarrierHandler:
        return cls(
            num_channels,
            mode=GateMode.ALIGNED,
            inputs=inputs,
            checkpoints_after_tasks_finish=checkpoints_after_tasks_finish,
        )

    @classmethod
    def unaligned(
        cls,
        num_channels: int,
        *,
        inputs: CheckpointableInputs,
        checkpoints_after_tasks_finish: bool = True,
    ) -> SingleCheckpointBarrierHandler:
        return cls(
            num_channels,
            mode=GateMode.UNALIGNED,
            inputs=inputs,
            checkpoints_after_tasks_finish=checkpoints_after_tasks_finish,
        )

    @classmethod
    def alternating(
        cls,
        num_channels: int,
        *,
        inputs: CheckpointableInputs,
        checkpoints_after_tasks_finish: bool = True,
    ) -> SingleCheckpointBarrierHandler:
        return cls(
            num_channels,
            mode=GateMode.ALIGNED_WITH_TIMEOUT,
            inputs=inputs,
            checkpoints_after_tasks_finish=checkpoints_after_tasks_finish,
        )

    # --- views ------------------------------------------------------------------------------

    @property
    def state(self) -> BarrierHandlerState:
        return self._state

    @property
    def latest_checkpoint_id(self) -> int:
        return self._current_checkpoint_id

    @property
    def is_checkpoint_pending(self) -> bool:
        return (
            self._current_checkpoint_id != self._last_cancelled_or_completed_id
            and self._current_checkpoint_id >= 0
        )

    @property
    def num_open_channels(self) -> int:
        return self._num_open_channels

    def __repr__(self) -> str:
        return (
            f"SingleCheckpointBarrierHandler({self.mode.value}, current={self._current_checkpoint_id}, "
            f"aligned={sorted(self._aligned_channels)}/{self._target_channel_count}, "
            f"open={self._num_open_channels}, state={self._state!r})"
        )

    # --- events -----------------------------------------------------------------------------

    def _on_barrier(self, barrier: CheckpointBarrier, channel: int) -> None:
        barrier_id = barrier.checkpoint_id
        if self._current_checkpoint_id > barrier_id or (
            self._current_checkpoint_id == barrier_id and not self.is_checkpoint_pending
        ):
            # obsolete: the network paused the channel for this aligned barrier; resume it
            if not barrier.is_unaligned:
                self.inputs.resume_consumption(channel)
            return
        self._check_new_checkpoint(barrier)
        self._mark_aligned_and_transform(
            channel,
            barrier,
            lambda state: state.barrier_received(self._ctl, channel, barrier, True),
        )

    def _on_announcement(
        self, barrier: CheckpointBarrier, sequence_number: int, channel: int
    ) -> None:
        self._check_new_checkpoint(barrier)
        barrier_id = barrier.checkpoint_id
        if self._current_checkpoint_id > barrier_id or (
            self._current_checkpoint_id == barrier_id and not self.is_checkpoint_pending
        ):
            return  # obsolete announcement
        self._state = self._state.announcement_received(self._ctl, channel, sequence_number)

    def _on_cancel_marker(self, checkpoint_id: int, channel: int) -> None:
        if checkpoint_id > self._current_checkpoint_id or (
            checkpoint_id == self._current_checkpoint_id and self._aligned_channels
        ):
            self._abort(
                checkpoint_id, CheckpointFailureReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER
            )

    def _on_end_of_partition(self, channel: int) -> None:
        self._num_open_channels -= 1
        if not self.checkpoints_after_tasks_finish:
            if self.is_checkpoint_pending:
                self._abort(
                    self._current_checkpoint_id,
                    CheckpointFailureReason.CHECKPOINT_DECLINED_INPUT_END_OF_STREAM,
                )
            return
        if not self.is_checkpoint_pending:
            return
        pending = self._pending_barrier
        assert pending is not None, "a pending checkpoint always has its barrier"
        self._mark_aligned_and_transform(
            channel, pending, lambda state: state.end_of_partition_received(self._ctl, channel)
        )

    def _on_timer(self, key: object) -> None:
        if not isinstance(key, AlignmentTimer) or key != self._alignment_timer:
            return
        self._alignment_timer = None
        barrier = self._pending_barrier
        if (
            barrier is not None
            and self._current_checkpoint_id == key.checkpoint_id
            and self.is_checkpoint_pending
        ):
            try:
                self._state = self._state.aligned_checkpoint_timeout(self._ctl, barrier)
            except CheckpointException as error:
                self._abort(key.checkpoint_id, error.reason)

    # --- internals --------------------------------------------------------------------------

    def _check_new_checkpoint(self, barrier: CheckpointBarrier) -> None:
        barrier_id = barrier.checkpoint_id
        if self._current_checkpoint_id >= barrier_id:
            return
        if self.is_checkpoint_pending:
            self._abort(
                self._current_checkpoint_id, CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED
            )
        self._current_checkpoint_id = barrier_id
        self._pending_barrier = barrier
        self._aligned_channels.clear()
        self._target_channel_count = self._num_open_channels
        if self._alternating and barrier.options.is_timeoutable:
            self._alignment_timer = AlignmentTimer(barrier_id)
            due = barrier.timestamp + barrier.options.aligned_checkpoint_timeout
            self._emit(ScheduleTimer(key=self._alignment_timer, due=max(due, self._now)))

    def _mark_aligned_and_transform(
        self,
        channel: int,
        barrier: CheckpointBarrier,
        transform: _Transform,
    ) -> None:
        self._aligned_channels.add(channel)
        if len(self._aligned_channels) == 1:
            if self._target_channel_count == 1:
                self._mark_alignment_start_and_end(barrier.checkpoint_id, barrier.timestamp)
            else:
                self._mark_alignment_start(barrier.checkpoint_id, barrier.timestamp)
        all_aligned = len(self._aligned_channels) == self._target_channel_count
        if all_aligned and self._target_channel_count > 1:
            self._mark_alignment_end()
        try:
            self._state = transform(self._state)
        except CheckpointException as error:
            self._abort(self._current_checkpoint_id, error.reason)
        if len(self._aligned_channels) == self._target_channel_count:
            self._aligned_channels.clear()
            self._last_cancelled_or_completed_id = self._current_checkpoint_id
            self._reset_alignment_timer()

    def _abort(self, checkpoint_id: int, reason: CheckpointFailureReason) -> None:
        self._current_checkpoint_id = max(checkpoint_id, self._current_checkpoint_id)
        self._last_cancelled_or_completed_id = max(
            self._last_cancelled_or_completed_id, checkpoint_id
        )
        self._pending_barrier = None
        self._aligned_channels.clear()
        self._target_channel_count = 0
        self._reset_alignment_timer()
        self._state = self._state.abort(self._ctl, checkpoint_id)
        if checkpoint_id == self._current_checkpoint_id:
            self._reset_alignment()
        self._notify_abort(checkpoint_id, reason)

    def _reset_alignment_timer(self) -> None:
        if self._alignment_timer is not None:
            self._emit(CancelTimer(key=self._alignment_timer))
            self._alignment_timer = None


class _Controller:
    """The handler as its states see it."""

    __slots__ = ("_h",)

    def __init__(self, handler: SingleCheckpointBarrierHandler) -> None:
        self._h = handler

    def trigger_global_checkpoint(self, barrier: CheckpointBarrier) -> None:
        self._h._notify_checkpoint(barrier)

    def is_timed_out(self, barrier: CheckpointBarrier) -> bool:
        return (
            barrier.options.is_timeoutable
            and barrier.checkpoint_id <= self._h._current_checkpoint_id
            and barrier.options.aligned_checkpoint_timeout < self._h._now - barrier.timestamp
        )

    def all_barriers_received(self) -> bool:
        return len(self._h._aligned_channels) == self._h._target_channel_count

    def pending_checkpoint_barrier(self) -> CheckpointBarrier | None:
        return self._h._pending_barrier

    def checkpoint_started(self, barrier: CheckpointBarrier) -> None:
        self._h.inputs.checkpoint_started(barrier)

    def checkpoint_stopped(self, checkpoint_id: int) -> None:
        self._h.inputs.checkpoint_stopped(checkpoint_id)
