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
    """One poll of the gate: what reached the operator (a buffer or end of partition, with its
    channel and sequence number), and the effects for the task."""

    delivered: Entry | None = None
    channel: int = -1
    effects: list[Effect] = field(default_factory=list)


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
        result = GatePoll(channel=channel)
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
        """Carry out the effects on channels; return the ones for the task."""
        for_task: list[Effect] = []
        for effect in effects:
            match effect:
                case ResumeConsumption(channel=channel):
                    self.channels[channel].resume()
                case CheckpointStarted(barrier=barrier):
                    for c in self.channels:
                        c.checkpoint_started(barrier)
                case CheckpointStopped(checkpoint_id=checkpoint_id):
                    for c in self.channels:
                        c.checkpoint_stopped(checkpoint_id)
                case ConvertToPriorityEvent(channel=channel, sequence_number=seq):
                    self.channels[channel].convert_to_priority(seq)
                case AbortCheckpointOnBarrier(checkpoint_id=checkpoint_id):
                    for c in self.channels:
                        c.discard_persisted(checkpoint_id)
                    for_task.append(effect)
                case _:
                    for_task.append(effect)
        return for_task


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
        result = GatePoll(channel=channel)
        if self.aligner.is_blocked(channel):
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
    flag = {"checkpoints_after_tasks_finish": eop_counts_as_aligned}
    if legacy:
        return LegacyCheckpointedInputGate(
            CheckpointBarrierAligner(num_channels, **flag),
            channels,
            max_buffered_bytes=max_buffered_bytes,
        )
    handler: CheckpointBarrierHandler
    if mode == "at_least_once":
        handler = CheckpointBarrierTracker(num_channels, **flag)
    elif mode == "aligned":
        handler = SingleCheckpointBarrierHandler.aligned(num_channels, **flag)
    elif mode == "unaligned":
        handler = SingleCheckpointBarrierHandler.unaligned(num_channels, **flag)
    else:
        handler = SingleCheckpointBarrierHandler.alternating(num_channels, **flag)
    return CheckpointedInputGate(handler, channels)
