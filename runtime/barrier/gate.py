"""A task's input gate as one pure object: its input channels and its barrier handler.

The channels (``InputChannelQueue``) are the queues of buffers and events the network
delivered, as Flink's input channels live in its ``SingleInputGate``. ``CheckpointedInputGate``
(Flink 1.11+) hands events to the handler, which drives the gate's own channels (pause after an
aligned barrier, resume, move announced barriers to the front, persist in-flight data); what
concerns the task (trigger, abort, alignment metrics, timers, and for information the channels
resumed or prioritised) is returned. ``LegacyCheckpointedInputGate`` is Flink 1.10's: the gate
buffers what blocked channels deliver and replays it after the alignment.

One gate serves the conformance harness, the property tests and every running task (its
``StreamInputProcessor``): the code the scenarios verify is the code jobs run.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from heapq import heappop

from runtime.barrier.base import CheckpointBarrierHandler
from runtime.barrier.channel import Entry, InputChannelQueue
from runtime.barrier.handler import SingleCheckpointBarrierHandler
from runtime.barrier.legacy import CheckpointBarrierAligner
from runtime.barrier.mode import GateMode
from runtime.barrier.tracker import CheckpointBarrierTracker
from runtime.effects import AbortCheckpointOnBarrier, ConvertToPriorityEvent, GateEffect
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
    EndOfData,
    EndOfPartition,
    EventAnnouncement,
    Watermark,
    WatermarkStatus,
)


@dataclass(slots=True)
class GatePoll:
    """One poll of the gate: the entry taken from the channel, what reached the task (a buffer,
    end of data or end of partition; ``None`` for checkpoint events and buffered data), and the
    effects for the task."""

    polled: Entry
    channel: int
    delivered: Entry | None = None
    effects: list[GateEffect] = field(default_factory=list)
    #: Flink 1.10: the item came from a blocked channel and was buffered for replay
    buffered: bool = False
    #: the item came from the priority section of its channel (it overtook queued buffers)
    priority: bool = False


class CheckpointedInputGate:
    def __init__(
        self,
        handler: CheckpointBarrierHandler,
        channels: list[InputChannelQueue],
    ) -> None:
        self.handler = handler
        self.channels = channels
        #: arrival order over all channels: the sequence number of the next item
        self._next_seq = 0
        #: a priority item may be queued (set on arrival or conversion, cleared when none is)
        self._priority_pending = False
        #: (sequence number, channel) of the channels' queue heads, a heap: each channel puts
        #: its head here whenever it may be polled (``InputChannelQueue.heads``); an entry
        #: that no longer holds (polled since, or the channel paused) is dropped when met. So
        #: finding the next head in arrival order does not visit every channel.
        self._heads: list[tuple[int, int]] = []
        for position, queue in enumerate(channels):
            assert queue.index == position, "a gate's channels are in index order"
            queue.heads = self._heads
            queue.offer_head()

    # --- arrival and delivery ---------------------------------------------------------------

    def push(self, channel: int, item: ChannelItem, seq: int | None = None) -> int:
        """The network delivers ``item`` on ``channel``; ``seq`` (default: the next in arrival
        order over the gate) numbers it. Returns its sequence number."""
        if seq is None:
            seq = self._next_seq
        queue = self.channels[channel]
        seq = queue.push(item, seq)
        self._next_seq = max(self._next_seq, seq + 1)
        if queue.head_is_priority():
            self._priority_pending = True
        return seq

    def can_poll(self, channel: int) -> bool:
        return self.channels[channel].can_poll()

    def pollable(self) -> list[int]:
        return [c.index for c in self.channels if c.can_poll()]

    def has_input(self) -> bool:
        """Some channel can deliver now (a priority item, or a queue head that is not held
        back by a pause)."""
        return self.has_priority_event or self._next_head() is not None

    def _next_head(self) -> int | None:
        """The channel whose pollable (non-priority) head came first in arrival order: the
        smallest sequence number, the lowest channel index on a tie."""
        heads, channels = self._heads, self.channels
        while heads:
            seq, index = heads[0]
            if channels[index].offers(seq):
                return index
            heappop(heads)  # polled since, or its channel paused: met again when it resumes
        return None

    @property
    def has_priority_event(self) -> bool:
        """Some channel holds a priority item (an unaligned barrier, an announcement, a barrier
        moved to the front): the task processes these before its next input."""
        if self._priority_pending:
            self._priority_pending = any(c.head_is_priority() for c in self.channels)
        return self._priority_pending

    def poll_next(self, now: int) -> GatePoll | None:
        """Hand on the next item: a priority item first (as Flink's gate queues a channel with
        a priority event ahead of the others), else the pollable head with the smallest
        sequence number (arrival order); None when no channel can deliver."""
        if self.has_priority_event:
            return self.poll_priority(now)
        index = self._next_head()
        if index is None:
            return None
        heappop(self._heads)  # polling puts the channel's next head in
        return self.poll(index, now)

    def poll_priority(self, now: int) -> GatePoll | None:
        """Hand on the priority head with the smallest sequence number, if any."""
        best: InputChannelQueue | None = None
        best_seq = 0
        for queue in self.channels:
            if queue.head_is_priority():
                head = queue.head()
                assert head is not None
                if best is None or head.seq < best_seq:
                    best, best_seq = queue, head.seq
        if best is None:
            self._priority_pending = False
            return None
        return self.poll(best.index, now)

    def poll(self, channel: int, now: int) -> GatePoll:
        queue = self.channels[channel]
        priority = queue.head_is_priority()
        entry = queue.poll()
        item = entry.item
        result = GatePoll(entry, channel, priority=priority)
        if isinstance(item, Buffer):
            self.handler.add_processed_bytes(item.size)
            result.delivered = entry
            return result
        if isinstance(item, (EndOfData, Watermark, WatermarkStatus)):
            result.delivered = entry  # for the task; barrier handling does not see it
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

    def on_timer(self, key: Hashable, now: int) -> list[GateEffect]:
        return self._apply(self.handler.handle(TimerFired(key=key), now))

    def rpc_barrier(self, channel: int, barrier: CheckpointBarrier, now: int) -> list[GateEffect]:
        """The barrier counts as received on ``channel`` without passing through it: the task
        was triggered directly because its upstream finished (Flink's
        ``triggerUnfinishedChannelsCheckpoint``)."""
        return self._apply(
            self.handler.handle(BarrierReceived(channel=channel, barrier=barrier), now)
        )

    # --- views ------------------------------------------------------------------------------

    def blocked(self) -> list[int]:
        return [c.index for c in self.channels if c.paused]

    def inflight(self, checkpoint_id: int) -> list[Entry]:
        return [e for c in self.channels for e in c.persisted.get(checkpoint_id, [])]

    def take_inflight(self, checkpoint_id: int) -> dict[int, list[Buffer]]:
        """The in-flight buffers persisted for ``checkpoint_id``, by channel (taken out: they
        go into the checkpoint's input channel state)."""
        taken: dict[int, list[Buffer]] = {}
        for c in self.channels:
            entries = c.persisted.pop(checkpoint_id, None)
            if entries:
                taken[c.index] = [e.item for e in entries if isinstance(e.item, Buffer)]
        return taken

    def discard_inflight(self, checkpoint_id: int) -> None:
        for c in self.channels:
            c.discard_persisted(checkpoint_id)

    @property
    def replay_pending(self) -> bool:
        return False

    # --- effects ----------------------------------------------------------------------------

    def _apply(self, effects: list[GateEffect]) -> list[GateEffect]:
        """The handler drove the channels directly (``ChannelInputs``); the effects are for the
        task. An aborted checkpoint's persisted in-flight data is dropped; a barrier moved to
        the front of its channel is a priority event to process."""
        for effect in effects:
            if isinstance(effect, AbortCheckpointOnBarrier):
                self.discard_inflight(effect.checkpoint_id)
            elif isinstance(effect, ConvertToPriorityEvent):
                self._priority_pending = True
        return effects


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

    def poll_next(self, now: int) -> GatePoll | None:
        """The replay of what an alignment buffered comes first, then arrival order."""
        if self._replay:
            return self.poll_replay(now)
        return super().poll_next(now)

    def rpc_barrier(self, channel: int, barrier: CheckpointBarrier, now: int) -> list[GateEffect]:
        effects = self.aligner.handle(BarrierReceived(channel=channel, barrier=barrier), now)
        if self.aligner.take_release():
            self._roll_over()
        return effects

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
            if 0 < self.max_buffered_bytes < self._pending_bytes + self._queued_bytes():
                result.effects = self.aligner.checkpoint_size_limit_exceeded(now)
                self._roll_over()
            return result
        if isinstance(item, Buffer):
            self.aligner.add_processed_bytes(item.size)
            result.delivered = entry
            return result
        if isinstance(item, (EndOfData, Watermark, WatermarkStatus)):
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

    def _queued_bytes(self) -> int:
        """Bytes of the buffered sequences waiting behind the one being replayed (Flink's
        rolled bytes: the sequence being replayed no longer counts against the limit)."""
        return sum(self._replay_bytes) - (self._replay_bytes[0] if self._replay_bytes else 0)

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
    mode: GateMode | str,
    num_channels: int,
    *,
    eop_counts_as_aligned: bool = True,
    local_channels: frozenset[int] = frozenset(),
    max_buffered_bytes: int = -1,
) -> CheckpointedInputGate:
    """A gate handling barriers by ``mode`` (``GateMode``, or its name)."""
    mode = GateMode.parse(mode)
    legacy = mode is GateMode.LEGACY_BUFFERED
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
    if mode is GateMode.AT_LEAST_ONCE:
        handler = CheckpointBarrierTracker(num_channels, checkpoints_after_tasks_finish=flag)
    else:
        handler = SingleCheckpointBarrierHandler(
            num_channels,
            mode=mode,
            checkpoints_after_tasks_finish=flag,
            inputs=ChannelInputs(channels),
        )
    return CheckpointedInputGate(handler, channels)
