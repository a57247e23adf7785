"""``InputChannel``: the network between two tasks, one actor per channel (upstream subtask ->
downstream subtask).

It delivers what the producer sends to the consumer, in order (``InputItem``: the item lands in
the consumer's input gate, in the queue of that input channel, where pausing, priority
overtaking, announcements and in-flight persisting happen); it passes the consumer's credits
back to the producer (``OutputCredit``: Flink's credit-based flow control, the producer sends a
buffer only against a credit) and the consumer's acknowledgement of the end of data
(``AllDataProcessed``, FLIP-147). An injected ``StallChannel`` holds deliveries back for a
while (a slow link), in order.

A channel outlives the tasks it connects by a little: when one of them crashes or is cancelled,
the JobMaster fails the job over and stops the channel, but mail already on its way still
arrives. What the channel would pass on to a task that is already dead is dropped, as Flink's
network stack drops buffers for a released partition (``_tell``); the dead task's failure is
the JobMaster's to handle, not the channel's.
"""

from __future__ import annotations

import contextlib
from collections import deque
from dataclasses import dataclass
from typing import Any, assert_never

import pykka

from actors.actor_runtime import ActorRuntime
from actors.faults import StallChannel
from actors.inline import InlineActor
from actors.logs import get_logger
from actors.protocol import AllRecordsProcessed, Credit, Deliver, WireChannel
from actors.trace import EventLog
from runtime.messages import AllDataProcessed, InputItem, OutputCredit, TimerFired
from runtime.network import ChannelItem, CheckpointBarrier

log = get_logger(__name__)


@dataclass(frozen=True)
class _Stall:
    """Timer key: an injected stall begins or ends."""

    fault: StallChannel
    begins: bool


ChannelMessage = WireChannel | Deliver | Credit | AllRecordsProcessed | TimerFired


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
        #: deliveries held back by a stall, in order
        self._held: deque[ChannelItem] = deque()
        self.names = (producer_name, consumer_name)

    def on_start(self) -> None:
        rt = self.runtime
        events = EventLog(log, None) if rt is None else EventLog(log, rt.tracer, rt.stamp)
        self.log = events.bind(
            channel=self.channel_id, producer=self.names[0], consumer=self.names[1]
        )
        if self.runtime is not None and self.runtime.faults:
            for stall in self.runtime.faults.stalls(*self.names):
                self.runtime.schedule(self.actor_ref, _Stall(stall, True), stall.at_ms)
                self.runtime.schedule(
                    self.actor_ref, _Stall(stall, False), stall.at_ms + stall.for_ms
                )

    def on_receive(self, message: Any) -> None:
        if not isinstance(message, (WireChannel, Deliver, Credit, AllRecordsProcessed, TimerFired)):
            raise TypeError(f"InputChannel cannot handle {message!r}")
        msg: ChannelMessage = message
        match msg:
            case Deliver(item=item):
                if self.stalls or self._held:
                    self._held.append(item)
                else:
                    self._deliver(item)
            case Credit(credits=credits):
                assert self.producer is not None, "a channel is wired before it carries data"
                _tell(self.producer, OutputCredit(channel=self.output_index, credits=credits))
            case AllRecordsProcessed():
                assert self.producer is not None, "a channel is wired before it carries data"
                _tell(self.producer, AllDataProcessed(channel=self.output_index))
            case WireChannel(producer=producer):
                self.producer = producer
            case TimerFired(key=key):
                assert isinstance(key, _Stall), f"unknown channel timer {key!r}"
                self.stalls += 1 if key.begins else -1  # stalls may overlap
                if key.begins:
                    assert self.runtime is not None
                    self.runtime.faults.stall_began(key.fault)
                    self.log.info("fault_injected", fault=repr(key.fault))
                else:
                    while self._held and not self.stalls:
                        self._deliver(self._held.popleft())
            case _:
                assert_never(msg)

    def _deliver(self, item: ChannelItem) -> None:
        if isinstance(item, CheckpointBarrier) and item.is_unaligned:
            self.log.debug("priority_barrier_sent", checkpoint_id=item.checkpoint_id)
        _tell(self.consumer, InputItem(channel=self.input_index, item=item))


def _tell(task: pykka.ActorRef[Any], message: Any) -> None:
    """Tell a task the channel connects; if it is dead already (it crashed or was cancelled:
    the job fails over), drop the message."""
    with contextlib.suppress(pykka.ActorDeadError):
        task.tell(message)


class InlineInputChannel(InlineActor, InputChannel):
    """The channel as a call-through actor: it runs on the producer's and consumer's threads."""
