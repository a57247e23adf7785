"""A task's input gate as one pure object: its channels plus its barrier handler.

``CheckpointedInputGate`` (Flink 1.11+) hands events to the handler and applies the handler's
channel effects (resume, start/stop persisting, prioritise) to its own channels; what concerns
the task (trigger, abort, alignment metrics, timers) is returned. ``LegacyCheckpointedInputGate``
is Flink 1.10's: the gate buffers what blocked channels deliver and replays it after the
alignment. Both serve the conformance runner, the property tests and the deterministic
simulation; the actor runtime splits the same pieces across channel and task actors.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field

from runtime.barrier.base import CheckpointBarrierHandler
from runtime.barrier.channel import Entry, InputChannelQueue
from runtime.barrier.handler import SingleCheckpointBarrierHandler
from runtime.barrier.legacy import CheckpointBarrierAligner
from runtime.barrier.states import ProtocolError
from runtime.barrier.tracker import CheckpointBarrierTracker
from runtime.effects import (
    AbortCheckpointOnBarrier,
    CheckpointStarted,
    CheckpointStopped,
    ConvertToPriorityEvent,
    Effect,
    ResumeConsumption,
)
from runtime.messages import (
    AnnouncementReceived,
    BarrierReceived,
    CancelMarkerReceived,
    EndOfPartitionReceived,
    HandlerMessage,
    TimerFired,
)
from runtime.network import (
    Buffer,
    CancelCheckpointMarker,
    ChannelItem,
    CheckpointBarrier,
    EndOfPartition,
    EventAnnouncement,
)

GATE_MODES = ("aligned", "unaligned", "aligned_with_timeout", "at_least_once", "legacy_buffered")


@dataclass(slots=True)
class GatePoll:
    """One poll of the gate: the entry taken from the channel, what reached the operator (a
    buffer or end of partition; ``None`` for events and buffered data), and the task's effects."""

    polled: Entry
    channel: int
    delivered: Entry | None = None
    effects: list[Effect] = field(default_factory=list)
    #: Flink 1.10: the item came from a blocked channel and was buffered for replay
    buffered: bool = False


class CheckpointedInputGate:
    def __init__(
        self,
        handler: CheckpointBarrierHandler,
        channels: list[InputChannelQueue],
    ) -> None:
        self.handler = handler
        self.channels = channels

    # --- arrival and delivery ---------------------------------------------------------------

    def push(self, channel: int, item: ChannelItem, seq: int | None = None) -> int:
        return self.channels[channel].push(item, seq)

    def can_poll(self, channel: int) -> bool:
        return self.channels[channel].can_poll()

    def pollable(self) -> list[int]:
        return [c.index for c in self.channels if c.can_poll()]

    def poll(self, channel: int, now: int) -> GatePoll:
        entry = self.channels[channel].poll()
        item = entry.item
        result = GatePoll(entry, channel)
        if isinstance(item, Buffer):
            self.handler.add_processed_bytes(item.size)
            result.delivered = entry
            return result
        msg: HandlerMessage
        if isinstance(item, CheckpointBarrier):
            msg = BarrierReceived(channel=channel, barrier=item)
        elif isinstance(item, EventAnnouncement):
            msg = AnnouncementReceived(
                channel=channel, barrier=item.barrier, sequence_number=item.sequence_number
            )
        elif isinstance(item, CancelCheckpointMarker):
            msg = CancelMarkerReceived(channel=channel, checkpoint_id=item.checkpoint_id)
        else:
            assert isinstance(item, EndOfPartition)
            msg = EndOfPartitionReceived(channel=channel)
            result.delivered = entry
        result.effects = self._apply(self.handler.handle(msg, now))
        return result

    def on_timer(self, key: Hashable, now: int) -> list[Effect]:
        return self._apply(self.handler.handle(TimerFired(key=key), now))

    # --- views ------------------------------------------------------------------------------

    def blocked(self) -> list[int]:
        return [c.index for c in self.channels if c.paused]

    def inflight(self, checkpoint_id: int) -> list[Entry]:
        return [e for c in self.channels for e in c.persisted.get(checkpoint_id, [])]

    @property
    def replay_pending(self) -> bool:
        return False

    # --- channel effects ------------------------------------------------------------------------

    def _apply(self, effects: list[Effect]) -> list[Effect]:
        """The handler drove the channels directly (``ChannelInputs``); what is left is for the
        task. An aborted checkpoint's persisted in-flight data is dropped."""
        for effect in effects:
            if isinstance(effect, _CHANNEL_EFFECTS):
                raise ProtocolError(
                    f"{effect} must be carried out by the gate's inputs: build the handler with "
                    "inputs=ChannelInputs(channels)"
                )
            if isinstance(effect, AbortCheckpointOnBarrier):
                for c in self.channels:
                    c.discard_persisted(effect.checkpoint_id)
        return effects


_CHANNEL_EFFECTS = (ResumeConsumption, CheckpointStarted, CheckpointStopped, ConvertToPriorityEvent)


class ChannelInputs:
    """The gate's own channels as the handler's ``CheckpointableInputs``."""

    __slots__ = ("channels",)

    def __init__(self, channels: list[InputChannelQueue]) -> None:
        self.channels = channels

    def resume_consumption(self, channel: int) -> None:
        self.channels[channel].resume()

    def convert_to_priority_event(self, channel: int, sequence_number: int) -> None:
        self.channels[channel].convert_to_priority(sequence_number)

    def checkpoint_started(self, barrier: CheckpointBarrier) -> None:
        for channel in self.channels:
            channel.checkpoint_started(barrier)

    def checkpoint_stopped(self, checkpoint_id: int) -> None:
        for channel in self.channels:
            channel.checkpoint_stopped(checkpoint_id)


class LegacyCheckpointedInputGate(CheckpointedInputGate):
    """Flink 1.10: consumer-side blocking with buffering and replay (``BufferStorage``)."""

    def __init__(
        self,
        aligner: CheckpointBarrierAligner,
        channels: list[InputChannelQueue],
        *,
        max_buffered_bytes: int = -1,
    ) -> None:
        super().__init__(aligner, channels)
        self.aligner = aligner
        self.max_buffered_bytes = max_buffered_bytes
        self._pending: list[tuple[int, Entry]] = []
        self._pending_bytes = 0
        self._replay: deque[deque[tuple[int, Entry]]] = deque()
        self._replay_bytes: deque[int] = deque()
        #: bytes buffered by the alignment that ended last
        self.last_buffered_bytes = 0

    @property
    def replay_pending(self) -> bool:
        return bool(self._replay)

    def blocked(self) -> list[int]:
        return self.aligner.blocked_channels

    def poll(self, channel: int, now: int) -> GatePoll:
        return self._process(channel, self.channels[channel].poll(), now)

    def poll_replay(self, now: int) -> GatePoll:
        sequence = self._replay[0]
        channel, entry = sequence.popleft()
        if not sequence:
            self._replay.popleft()
            self._replay_bytes.popleft()
        return self._process(channel, entry, now)

    def _process(self, channel: int, entry: Entry, now: int) -> GatePoll:
        item = entry.item
        result = GatePoll(entry, channel)
        if self.aligner.is_blocked(channel):
            result.buffered = True
            self._pending.append((channel, entry))
            if isinstance(item, Buffer):
                self._pending_bytes += item.size
            if 0 < self.max_buffered_bytes < self._pending_bytes + sum(self._replay_bytes):
                result.effects = self.aligner.checkpoint_size_limit_exceeded(now)
                self._roll_over()
            return result
        if isinstance(item, Buffer):
            self.aligner.add_processed_bytes(item.size)
            result.delivered = entry
            return result
        msg: HandlerMessage
        if isinstance(item, CheckpointBarrier):
            msg = BarrierReceived(channel=channel, barrier=item)
        elif isinstance(item, CancelCheckpointMarker):
            msg = CancelMarkerReceived(channel=channel, checkpoint_id=item.checkpoint_id)
        elif isinstance(item, EndOfPartition):
            msg = EndOfPartitionReceived(channel=channel)
            result.delivered = entry
        else:
            return result  # announcements do not exist before Flink 1.12
        result.effects = self.aligner.handle(msg, now)
        if self.aligner.take_release():
            self._roll_over()
        return result

    def _roll_over(self) -> None:
        self.aligner.take_release()
        self.last_buffered_bytes = self._pending_bytes
        if self._pending:
            # the newest sequence is replayed first; an unfinished replay continues after it
            self._replay.appendleft(deque(self._pending))
            self._replay_bytes.appendleft(self._pending_bytes)
        self._pending = []
        self._pending_bytes = 0


def make_gate(
    mode: str,
    num_channels: int,
    *,
    eop_counts_as_aligned: bool = True,
    local_channels: frozenset[int] = frozenset(),
    max_buffered_bytes: int = -1,
) -> CheckpointedInputGate:
    """A gate for one of the conformance modes (see ``GATE_MODES``)."""
    if mode not in GATE_MODES:
        raise ValueError(f"unknown gate mode {mode!r}; one of: {', '.join(GATE_MODES)}")
    legacy = mode == "legacy_buffered"
    channels = [
        InputChannelQueue(i, remote=i not in local_channels, pause_on_aligned_barrier=not legacy)
        for i in range(num_channels)
    ]
    flag = eop_counts_as_aligned
    if legacy:
        return LegacyCheckpointedInputGate(
            CheckpointBarrierAligner(num_channels, checkpoints_after_tasks_finish=flag),
            channels,
            max_buffered_bytes=max_buffered_bytes,
        )
    handler: CheckpointBarrierHandler
    if mode == "at_least_once":
        handler = CheckpointBarrierTracker(num_channels, checkpoints_after_tasks_finish=flag)
    else:
        handler_mode = {"aligned_with_timeout": "alternating"}.get(mode, mode)
        handler = SingleCheckpointBarrierHandler(
            num_channels,
            mode=handler_mode,
            checkpoints_after_tasks_finish=flag,
            inputs=ChannelInputs(channels),
        )
    return CheckpointedInputGate(handler, channels)
