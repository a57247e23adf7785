"""``StreamInputProcessor``: a task's input side (Flink's ``StreamInputProcessor`` over its
``CheckpointedInputGate``).

It owns the task's input gate (``runtime.barrier.make_gate``: the very gate the conformance
scenarios drive), puts what the network delivers into the gate's channels, and polls the gate
for the task: priority events first (a mail of their own, as Flink's
``processPriorityEvents``), then input in arrival order. It keeps the consumer's side of
credit-based flow control (a credit back to the producer for every buffer taken, except the
recovered in-flight data, which did not come through the channel), the records consumed per
channel (the consumer's side of a checkpoint's cut), and which channels ended their data and
their partition.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from runtime.barrier.gate import CheckpointedInputGate, GatePoll, make_gate
from runtime.barrier.mode import GateMode
from runtime.effects import (
    AcknowledgeAllRecordsProcessed,
    AnnounceCredit,
    GateEffect,
    TaskEffect,
    Traced,
)
from runtime.network import (
    Buffer,
    ChannelItem,
    CheckpointBarrier,
    EndOfData,
    EndOfPartition,
    Watermark,
    WatermarkStatus,
)
from runtime.watermarks import StatusWatermarkValve


@dataclass(slots=True)
class InputPoll:
    """One item taken from the gate: what reaches the task (a buffer, end of data or end of
    partition; None for checkpoint events), the gate's effects and the bookkeeping effects
    (credit, acknowledgements, trace facts)."""

    channel: int
    delivered: Buffer | EndOfData | EndOfPartition | Watermark | WatermarkStatus | None
    gate_effects: list[GateEffect]
    effects: list[TaskEffect] = field(default_factory=list)
    #: the logical input (0, or 1 for the second input of a two-input operator) of the channel
    input_index: int = 0
    #: a watermark or a watermark status arrived: the input's combined watermark when it
    #: advanced, and its idleness when that changed
    watermark: int | None = None
    idle: bool | None = None


class StreamInputProcessor:
    def __init__(
        self,
        num_channels: int,
        mode: GateMode | str,
        *,
        checkpoints_after_tasks_finish: bool = True,
        max_buffered_bytes: int = -1,
        local_channels: frozenset[int] = frozenset(),
        channel_inputs: tuple[int, ...] = (),
    ) -> None:
        self.gate: CheckpointedInputGate = make_gate(
            mode,
            num_channels,
            eop_counts_as_aligned=checkpoints_after_tasks_finish,
            local_channels=local_channels,
            max_buffered_bytes=max_buffered_bytes,
        )
        self.num_channels = num_channels
        #: records the task took from each channel (the consumer's side of a cut)
        self.consumed = [0] * num_channels
        #: buffers of recovered in-flight data still queued per channel (no credit back)
        self._recovered = [0] * num_channels
        self.data_ended: set[int] = set()
        self.partitions_ended: set[int] = set()
        #: the logical input of each channel, and each channel's index within its input
        self.channel_inputs = channel_inputs or (0,) * num_channels
        self._local_index: list[int] = []
        sizes: dict[int, int] = {}
        for input_index in self.channel_inputs:
            self._local_index.append(sizes.get(input_index, 0))
            sizes[input_index] = sizes.get(input_index, 0) + 1
        #: one valve per logical input: the input's watermark over its channels
        self.valves = [StatusWatermarkValve(sizes.get(i, 0)) for i in range(max(sizes) + 1)]

    # --- arrival ------------------------------------------------------------------------------

    def queued_buffers(self) -> int:
        """Buffers queued in the input channels, not yet taken (Flink's ``inputQueueLength``)."""
        return sum(1 for c in self.gate.channels for e in c.queued() if isinstance(e.item, Buffer))

    def receive(self, channel: int, item: ChannelItem) -> None:
        """The network delivered ``item`` (Flink: ``onBuffer`` of the input channel)."""
        self.gate.push(channel, item)

    def restore(self, recovered: dict[int, list[Buffer]]) -> None:
        """Recovered in-flight data: queued first, before anything the channel delivers."""
        for channel, buffers in sorted(recovered.items()):
            for buffer in buffers:
                self.gate.push(channel, buffer)
            self._recovered[channel] += len(buffers)

    # --- views --------------------------------------------------------------------------------

    @property
    def has_priority_event(self) -> bool:
        return self.gate.has_priority_event

    @property
    def is_available(self) -> bool:
        """Some input can be polled now."""
        return self.gate.replay_pending or self.gate.has_input()

    @property
    def all_data_ended(self) -> bool:
        return len(self.data_ended) == self.num_channels

    @property
    def all_partitions_ended(self) -> bool:
        return len(self.partitions_ended) == self.num_channels

    # --- polling ------------------------------------------------------------------------------

    def poll_priority(self, now: int) -> InputPoll | None:
        result = self.gate.poll_priority(now)
        return None if result is None else self._account(result)

    def poll_next(self, now: int) -> InputPoll | None:
        result = self.gate.poll_next(now)
        return None if result is None else self._account(result)

    def _account(self, result: GatePoll) -> InputPoll:
        channel = result.channel
        polled = result.polled.item
        delivered = result.delivered.item if result.delivered is not None else None
        poll = InputPoll(channel, None, result.effects)
        if isinstance(delivered, Buffer):
            self.consumed[channel] += len(delivered.records)
            if self._recovered[channel]:
                self._recovered[channel] -= 1
            else:
                poll.effects.append(AnnounceCredit(channel=channel))
            poll.delivered = delivered
            poll.input_index = self.channel_inputs[channel]
        elif isinstance(delivered, EndOfData):
            self.data_ended.add(channel)
            poll.effects.append(AcknowledgeAllRecordsProcessed(channel=channel))
            poll.effects.append(
                Traced(
                    event="end_of_data_received",
                    fields={"channel": channel, "consumed": self.consumed[channel]},
                )
            )
            poll.delivered = delivered
        elif isinstance(delivered, Watermark):
            poll.input_index = self.channel_inputs[channel]
            valve = self.valves[poll.input_index]
            poll.watermark = valve.input_watermark(self._local_index[channel], delivered.timestamp)
            poll.delivered = delivered
        elif isinstance(delivered, WatermarkStatus):
            poll.input_index = self.channel_inputs[channel]
            valve = self.valves[poll.input_index]
            poll.watermark, poll.idle = valve.input_idle(self._local_index[channel], delivered.idle)
            poll.delivered = delivered
        elif isinstance(delivered, EndOfPartition):
            self.partitions_ended.add(channel)
            self.data_ended.add(channel)  # an end of partition ends the data too
            poll.effects.insert(
                0,
                Traced(
                    event="end_of_partition_received",
                    fields={"channel": channel, "consumed": self.consumed[channel]},
                ),
            )
            poll.delivered = delivered
        elif isinstance(polled, CheckpointBarrier) and not result.buffered:
            overtaken = 0
            if result.priority:
                overtaken = len(self.gate.channels[channel].buffers_before(result.polled.seq))
            poll.effects.insert(
                0,
                self._barrier_fact(channel, polled, priority=result.priority, overtaken=overtaken),
            )
        return poll

    def _barrier_fact(
        self, channel: int, barrier: CheckpointBarrier, *, priority: bool, overtaken: int
    ) -> Traced:
        return Traced(
            event="barrier_received",
            fields={
                "checkpoint_id": barrier.checkpoint_id,
                "channel": channel,
                "unaligned": barrier.is_unaligned,
                "priority": priority,
                "overtaken": overtaken,
                "consumed": self.consumed[channel],
            },
        )

    # --- checkpoints --------------------------------------------------------------------------

    def on_timer(self, key: Hashable, now: int) -> list[GateEffect]:
        return self.gate.on_timer(key, now)

    def trigger_unfinished_channels(
        self, barrier: CheckpointBarrier, now: int
    ) -> tuple[list[TaskEffect], list[GateEffect]]:
        """Triggered directly although it has inputs (FLIP-147: every upstream task finished):
        the barrier counts as received on every channel whose partition has not ended."""
        facts: list[TaskEffect] = []
        effects: list[GateEffect] = []
        for channel in range(self.num_channels):
            if channel not in self.partitions_ended:
                facts.append(self._barrier_fact(channel, barrier, priority=False, overtaken=0))
                effects.extend(self.gate.rpc_barrier(channel, barrier, now))
        return facts, effects

    def take_inflight(self, checkpoint_id: int) -> dict[int, list[Buffer]]:
        return self.gate.take_inflight(checkpoint_id)

    def discard_inflight(self, checkpoint_id: int) -> None:
        self.gate.discard_inflight(checkpoint_id)
