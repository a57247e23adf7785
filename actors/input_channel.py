"""``InputChannel``: one actor per channel (upstream subtask -> downstream subtask).

It holds the channel's FIFO (``runtime.barrier.InputChannelQueue``): buffers and events from
the producer, priority events ahead of buffers, the pause after an aligned barrier until the
consumer resumes it. It hands its consumer at most ``WINDOW`` ordinary items at a time and one
credit goes back to the producer for every buffer the consumer took (credit-based flow control:
with no credit the producer stops, and back-pressure travels upstream); once the consumer has
processed the end of partition, the producer hears that all its data was processed. A priority barrier is
handed on at once, with the buffers it overtook in the queue.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import pykka

from actors.execution import ActorRuntime
from actors.faults import StallChannel
from actors.inline import InlineActor
from actors.logs import get_logger
from actors.protocol import Consumed, Deliver, Prioritize, Resume, WireChannel
from runtime.barrier.channel import InputChannelQueue
from runtime.messages import AllDataProcessed, InputItem, OutputCredit, TimerFired
from runtime.network import Buffer, CheckpointBarrier, EndOfPartition

log = get_logger(__name__)

#: ordinary items handed to the consumer and not yet taken
WINDOW = 2


@dataclass(frozen=True)
class _Stall:
    """Timer key: an injected stall begins or ends."""

    fault: StallChannel
    begins: bool


class InputChannel(pykka.ThreadingActor):
    """One channel on its own thread (``InlineInputChannel``: on the threads it connects)."""

    def __init__(
        self,
        *,
        channel_id: int,
        input_index: int,
        output_index: int,
        consumer: pykka.ActorRef[Any],
        producer_name: str,
        consumer_name: str,
        runtime: ActorRuntime | None = None,
    ) -> None:
        super().__init__()
        self.runtime = runtime
        self.stalls = 0
        self.channel_id = channel_id
        self.input_index = input_index
        self.output_index = output_index
        self.consumer = consumer
        self.producer: pykka.ActorRef[Any] | None = None
        self.queue = InputChannelQueue(input_index)
        self._handed: deque[type] = deque()  # the type of each ordinary item handed on
        self.names = (producer_name, consumer_name)

    def on_start(self) -> None:
        self.log = log.bind(channel=self.channel_id, producer=self.names[0], consumer=self.names[1])
        if self.runtime is not None and self.runtime.faults:
            for stall in self.runtime.faults.stalls(*self.names):
                self.runtime.schedule(self.actor_ref, _Stall(stall, True), stall.at_ms)
                self.runtime.schedule(
                    self.actor_ref, _Stall(stall, False), stall.at_ms + stall.for_ms
                )

    def on_receive(self, message: Any) -> None:
        match message:
            case WireChannel(producer=producer):
                self.producer = producer
            case Deliver(item=item):
                seq = self.queue.push(item)
                if isinstance(item, CheckpointBarrier) and item.is_unaligned:
                    self.log.debug(
                        "priority_barrier_arrived", checkpoint_id=item.checkpoint_id, seq=seq
                    )
                self._hand_on()
            case Consumed():
                kind = self._handed.popleft()
                if self.producer is not None:
                    if kind is Buffer:
                        self.producer.tell(OutputCredit(channel=self.output_index, credits=1))
                    elif kind is EndOfPartition:
                        self.producer.tell(AllDataProcessed(channel=self.output_index))
                self._hand_on()
            case Resume():
                self.queue.resume()
                self._hand_on()
            case TimerFired(key=_Stall(fault=fault, begins=begins)):
                self.stalls += 1 if begins else -1  # stalls may overlap
                if begins:
                    assert self.runtime is not None
                    self.runtime.faults.stall_began(fault)
                    self.log.info("fault_injected", fault=repr(fault))
                else:
                    self._hand_on()
            case Prioritize(sequence_number=seq):
                if self.queue.convert_to_priority(seq):
                    self.log.debug("barrier_prioritized", seq=seq)
                    self._hand_on()
            case _:
                raise TypeError(f"InputChannel cannot handle {message!r}")

    def _hand_on(self) -> None:
        if self.stalls:
            return
        queue = self.queue
        while queue.can_poll():
            if queue.head_is_priority():
                entry = queue.poll()
                overtaken: tuple[Buffer, ...] = ()
                if isinstance(entry.item, CheckpointBarrier):
                    overtaken = tuple(queue.buffers_before(entry.seq))
                self.consumer.tell(
                    InputItem(
                        channel=self.input_index,
                        seq=entry.seq,
                        item=entry.item,
                        priority=True,
                        overtaken=overtaken,
                    )
                )
                continue
            if len(self._handed) >= WINDOW:
                return
            entry = queue.poll()
            self._handed.append(type(entry.item))
            self.consumer.tell(InputItem(channel=self.input_index, seq=entry.seq, item=entry.item))


class InlineInputChannel(InlineActor, InputChannel):
    """The channel as a call-through actor: it runs on the producer's and consumer's threads."""
