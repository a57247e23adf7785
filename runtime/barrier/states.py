"""The states of ``SingleCheckpointBarrierHandler``: Flink's ``BarrierHandlerState`` pattern.

One class per state. A state receives an event with a ``Controller`` (the handler's view the
states may use) and returns the next state. The families:

- aligned (exactly-once, unaligned checkpoints disabled): ``WaitingForFirstBarrier`` ->
  ``CollectingBarriers`` -> trigger on the last barrier, unblock, back to waiting;
- alternating (unaligned checkpoints enabled): ``AlternatingWaitingForFirstBarrier`` /
  ``AlternatingCollectingBarriers`` align like the above but switch to the unaligned states on an
  unaligned barrier or an alignment timeout (active: the timer fires; passive: a late barrier);
- unaligned: ``AlternatingWaitingForFirstBarrierUnaligned`` triggers on the first barrier and
  ``AlternatingCollectingBarriersUnaligned`` waits for the remaining ones; with
  ``alternating=False`` this is the pure unaligned handler.
"""

from __future__ import annotations

from typing import Protocol

from runtime.network import CheckpointBarrier


class ProtocolError(RuntimeError):
    """An event that cannot happen in a correct run (a bug in the caller, not a failure)."""


class Controller(Protocol):
    """What a state may ask of / tell its handler (Flink's ``BarrierHandlerState.Controller``)."""

    def trigger_global_checkpoint(self, barrier: CheckpointBarrier) -> None: ...

    def is_timed_out(self, barrier: CheckpointBarrier) -> bool: ...

    def all_barriers_received(self) -> bool: ...

    def pending_checkpoint_barrier(self) -> CheckpointBarrier | None: ...

    def checkpoint_started(self, barrier: CheckpointBarrier) -> None:
        """``initInputsCheckpoint`` + ``checkpointStarted`` on every input."""

    def checkpoint_stopped(self, checkpoint_id: int) -> None: ...


class CheckpointableInputs(Protocol):
    """The gate's input channels as the handler drives them (Flink's ``CheckpointableInput``;
    ``gate.ChannelInputs``).

    ``checkpoint_started`` may raise ``CheckpointException``: the checkpoint is then aborted
    with its reason instead of triggered.
    """

    def resume_consumption(self, channel: int) -> None: ...

    def convert_to_priority_event(self, channel: int, sequence_number: int) -> None: ...

    def checkpoint_started(self, barrier: CheckpointBarrier) -> None: ...

    def checkpoint_stopped(self, checkpoint_id: int) -> None: ...


class ChannelBook:
    """The handler's bookkeeping of blocked channels and seen announcements (Flink's
    ``ChannelState``), and the inputs it resumes and prioritises."""

    __slots__ = ("announced", "blocked", "inputs")

    def __init__(self, inputs: CheckpointableInputs) -> None:
        self.inputs = inputs
        self.blocked: set[int] = set()
        self.announced: dict[int, int] = {}

    def block(self, channel: int) -> None:
        self.blocked.add(channel)

    def remove_from_blocked(self, channel: int) -> None:
        self.blocked.discard(channel)

    def channel_finished(self, channel: int) -> None:
        self.blocked.discard(channel)
        self.announced.pop(channel, None)

    def add_announcement(self, channel: int, sequence_number: int) -> None:
        self.announced[channel] = sequence_number

    def remove_announcement(self, channel: int) -> None:
        self.announced.pop(channel, None)

    def convert_to_priority(self, channel: int, sequence_number: int) -> None:
        self.inputs.convert_to_priority_event(channel, sequence_number)

    def prioritize_all_announcements(self) -> None:
        for channel, sequence_number in sorted(self.announced.items()):
            self.convert_to_priority(channel, sequence_number)
        self.announced.clear()

    def unblock_all(self) -> None:
        for channel in sorted(self.blocked):
            self.inputs.resume_consumption(channel)
        self.blocked.clear()

    def empty(self) -> ChannelBook:
        return ChannelBook(self.inputs)


class BarrierHandlerState:
    """Base of all states; every transition returns the next state."""

    __slots__ = ("book",)

    def __init__(self, book: ChannelBook) -> None:
        self.book = book

    @property
    def name(self) -> str:
        return type(self).__name__

    def barrier_received(
        self, ctl: Controller, channel: int, barrier: CheckpointBarrier, mark_blocked: bool
    ) -> BarrierHandlerState:
        raise NotImplementedError

    def announcement_received(
        self, ctl: Controller, channel: int, sequence_number: int
    ) -> BarrierHandlerState:
        raise NotImplementedError

    def aligned_checkpoint_timeout(
        self, ctl: Controller, barrier: CheckpointBarrier
    ) -> BarrierHandlerState:
        raise NotImplementedError

    def end_of_partition_received(self, ctl: Controller, channel: int) -> BarrierHandlerState:
        raise NotImplementedError

    def abort(self, ctl: Controller, checkpoint_id: int) -> BarrierHandlerState:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{self.name}(blocked={sorted(self.book.blocked)})"


# --- aligned family -----------------------------------------------------------------------


class _AbstractAligned(BarrierHandlerState):
    __slots__ = ()

    def barrier_received(
        self, ctl: Controller, channel: int, barrier: CheckpointBarrier, mark_blocked: bool
    ) -> BarrierHandlerState:
        if barrier.is_unaligned:
            raise ProtocolError(
                f"unaligned barrier {barrier.checkpoint_id} on channel {channel} reached an "
                "aligned handler (unaligned checkpoints are disabled for this task)"
            )
        self.book.block(channel)
        if ctl.all_barriers_received():
            return self._trigger(ctl, barrier)
        return CollectingBarriers(self.book)

    def announcement_received(
        self, ctl: Controller, channel: int, sequence_number: int
    ) -> BarrierHandlerState:
        return self

    def aligned_checkpoint_timeout(
        self, ctl: Controller, barrier: CheckpointBarrier
    ) -> BarrierHandlerState:
        raise ProtocolError("an alignment cannot time out when unaligned checkpoints are disabled")

    def end_of_partition_received(self, ctl: Controller, channel: int) -> BarrierHandlerState:
        self.book.channel_finished(channel)
        pending = ctl.pending_checkpoint_barrier()
        if ctl.all_barriers_received() and pending is not None:
            return self._trigger(ctl, pending)
        return self

    def abort(self, ctl: Controller, checkpoint_id: int) -> BarrierHandlerState:
        self.book.unblock_all()
        return WaitingForFirstBarrier(self.book)

    def _trigger(self, ctl: Controller, barrier: CheckpointBarrier) -> BarrierHandlerState:
        ctl.trigger_global_checkpoint(barrier)
        self.book.unblock_all()
        return WaitingForFirstBarrier(self.book)


class WaitingForFirstBarrier(_AbstractAligned):
    """Aligned checkpoints: no barrier of the current checkpoint seen yet."""

    __slots__ = ()


class CollectingBarriers(_AbstractAligned):
    """Aligned checkpoints: some channels delivered their barrier and are blocked."""

    __slots__ = ()


# --- alternating family (unaligned enabled, starting aligned) ------------------------------


class _AbstractAlternatingAligned(BarrierHandlerState):
    __slots__ = ()

    def announcement_received(
        self, ctl: Controller, channel: int, sequence_number: int
    ) -> BarrierHandlerState:
        self.book.add_announcement(channel, sequence_number)
        return self

    def barrier_received(
        self, ctl: Controller, channel: int, barrier: CheckpointBarrier, mark_blocked: bool
    ) -> BarrierHandlerState:
        if barrier.is_unaligned:
            # the upstream already switched: switch too
            return self.aligned_checkpoint_timeout(ctl, barrier).barrier_received(
                ctl, channel, barrier, mark_blocked
            )
        self.book.remove_announcement(channel)
        self.book.block(channel)
        if ctl.all_barriers_received():
            ctl.trigger_global_checkpoint(barrier)
            self.book.unblock_all()
            return AlternatingWaitingForFirstBarrier(self.book)
        if ctl.is_timed_out(barrier):
            # passive timeout: this barrier arrived too late to stay aligned
            self.book.remove_from_blocked(channel)
            return self.aligned_checkpoint_timeout(ctl, barrier).barrier_received(
                ctl, channel, barrier, mark_blocked
            )
        return AlternatingCollectingBarriers(self.book)

    def abort(self, ctl: Controller, checkpoint_id: int) -> BarrierHandlerState:
        self.book.unblock_all()
        return AlternatingWaitingForFirstBarrier(self.book)


class AlternatingWaitingForFirstBarrier(_AbstractAlternatingAligned):
    """Aligned with timeout: no barrier seen yet (announcements may have been)."""

    __slots__ = ()

    def aligned_checkpoint_timeout(
        self, ctl: Controller, barrier: CheckpointBarrier
    ) -> BarrierHandlerState:
        self.book.prioritize_all_announcements()
        return AlternatingWaitingForFirstBarrierUnaligned(self.book, alternating=True)

    def end_of_partition_received(self, ctl: Controller, channel: int) -> BarrierHandlerState:
        self.book.channel_finished(channel)
        return self


class AlternatingCollectingBarriers(_AbstractAlternatingAligned):
    """Aligned with timeout: some barriers seen, channels blocked, not yet timed out."""

    __slots__ = ()

    def aligned_checkpoint_timeout(
        self, ctl: Controller, barrier: CheckpointBarrier
    ) -> BarrierHandlerState:
        self.book.prioritize_all_announcements()
        unaligned = barrier.as_unaligned()
        ctl.checkpoint_started(unaligned)
        ctl.trigger_global_checkpoint(unaligned)
        return AlternatingCollectingBarriersUnaligned(self.book, alternating=True)

    def end_of_partition_received(self, ctl: Controller, channel: int) -> BarrierHandlerState:
        self.book.channel_finished(channel)
        pending = ctl.pending_checkpoint_barrier()
        if pending is None:
            raise ProtocolError("collecting barriers without a pending barrier")
        if ctl.all_barriers_received():
            ctl.trigger_global_checkpoint(pending)
            self.book.unblock_all()
            return AlternatingWaitingForFirstBarrier(self.book.empty())
        if ctl.is_timed_out(pending):
            return self.aligned_checkpoint_timeout(ctl, pending).end_of_partition_received(
                ctl, channel
            )
        return self


# --- unaligned family ---------------------------------------------------------------------


class _AbstractUnaligned(BarrierHandlerState):
    __slots__ = ("alternating",)

    def __init__(self, book: ChannelBook, *, alternating: bool) -> None:
        super().__init__(book)
        self.alternating = alternating

    def aligned_checkpoint_timeout(
        self, ctl: Controller, barrier: CheckpointBarrier
    ) -> BarrierHandlerState:
        return self  # already unaligned

    def announcement_received(
        self, ctl: Controller, channel: int, sequence_number: int
    ) -> BarrierHandlerState:
        self.book.convert_to_priority(channel, sequence_number)
        return self

    def _stop(self) -> BarrierHandlerState:
        self.book.unblock_all()
        book = self.book.empty()
        if self.alternating:
            return AlternatingWaitingForFirstBarrier(book)
        return AlternatingWaitingForFirstBarrierUnaligned(book, alternating=False)


class AlternatingWaitingForFirstBarrierUnaligned(_AbstractUnaligned):
    """Unaligned: the next barrier triggers the checkpoint at once."""

    __slots__ = ()

    def barrier_received(
        self, ctl: Controller, channel: int, barrier: CheckpointBarrier, mark_blocked: bool
    ) -> BarrierHandlerState:
        if mark_blocked and not barrier.is_unaligned:
            # an aligned barrier paused its channel in the network; remember to resume it
            self.book.block(channel)
        unaligned = barrier.as_unaligned()
        ctl.checkpoint_started(unaligned)
        ctl.trigger_global_checkpoint(unaligned)
        if ctl.all_barriers_received():
            ctl.checkpoint_stopped(unaligned.checkpoint_id)
            return self._stop()
        return AlternatingCollectingBarriersUnaligned(self.book, alternating=self.alternating)

    def end_of_partition_received(self, ctl: Controller, channel: int) -> BarrierHandlerState:
        self.book.channel_finished(channel)
        return self

    def abort(self, ctl: Controller, checkpoint_id: int) -> BarrierHandlerState:
        return self._stop()


class AlternatingCollectingBarriersUnaligned(_AbstractUnaligned):
    """Unaligned: triggered; waiting for the remaining barriers to stop persisting in-flight data."""

    __slots__ = ()

    def barrier_received(
        self, ctl: Controller, channel: int, barrier: CheckpointBarrier, mark_blocked: bool
    ) -> BarrierHandlerState:
        if mark_blocked and not barrier.is_unaligned:
            self.book.block(channel)
        if ctl.all_barriers_received():
            return self._finish(ctl, barrier.checkpoint_id)
        return self

    def end_of_partition_received(self, ctl: Controller, channel: int) -> BarrierHandlerState:
        self.book.channel_finished(channel)
        pending = ctl.pending_checkpoint_barrier()
        if ctl.all_barriers_received() and pending is not None:
            return self._finish(ctl, pending.checkpoint_id)
        return self

    def abort(self, ctl: Controller, checkpoint_id: int) -> BarrierHandlerState:
        return self._finish(ctl, checkpoint_id)

    def _finish(self, ctl: Controller, checkpoint_id: int) -> BarrierHandlerState:
        ctl.checkpoint_stopped(checkpoint_id)
        return self._stop()
