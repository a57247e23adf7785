"""Runs ``@kind gate`` scenarios through a running task's input path
(``ckptsim conformance --through-task``).

The scenario's channel events are delivered to a ``StreamTaskCore`` as the network delivers
them to a task (``InputItem``); the task's mailbox runs as in a job: a step handles the
pending priority events, else runs the default action (one input item). Its chain is one
pass-through ``map_batch`` whose function notes what it receives. The facts are what the task
did:

- ``out``: the buffers the chain received, and the ends of partition the task processed;
- ``triggered``: the checkpoints the task took (``!``: unaligned); ``aborted``: the checkpoints
  it declined, with their reasons;
- ``blocked``, ``latest``, ``pending``, ``alignment_ms``: its gate's channels and handler;
- ``inflight``: what its gate persisted for the checkpoint, or (once written) the input
  channel state of the task's snapshot; ``buffered_bytes``: what its Flink 1.10 gate buffered.

``hold`` stops running the mailbox (network deliveries still arrive); ``poll`` runs one step;
``advance`` fires the task's timers as mails.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime.barrier.base import CheckpointBarrierHandler
from runtime.barrier.gate import LegacyCheckpointedInputGate
from runtime.checkpoint import TaskId
from runtime.clock import ManualClock, TimerQueue
from runtime.conformance.gate_harness import GateFacts, GateSetup, scenario_item
from runtime.conformance.scenario import (
    Scenario,
    ScenarioError,
    Step,
    channel_index,
    parse_int,
)
from runtime.descriptors import MapBatchDescriptor
from runtime.effects import (
    CancelTimer,
    CheckpointTakenOnTask,
    RequestDefaultAction,
    ScheduleTimer,
    Send,
    TaskEffect,
    Traced,
    WriteSnapshot,
)
from runtime.graph import StreamNode
from runtime.messages import (
    DeclineCheckpoint,
    InputItem,
    RunDefaultAction,
    StartTask,
    TaskMessage,
    TimerFired,
)
from runtime.network import ChannelItem, EndOfPartition
from runtime.task import StreamTaskCore, TaskSpec

TASK = TaskId("task", 0)


class TaskHarness(GateFacts):
    def __init__(self, scenario: Scenario) -> None:
        setup = GateSetup.of(scenario)
        self.mode = setup.mode
        self.num_channels = setup.num_channels
        chain = StreamNode(1, "through", "map_batch-1", 1, MapBatchDescriptor(fn=self._receive))
        self.core = StreamTaskCore(
            TaskSpec(
                task=TASK,
                name="conformance task",
                operators=[chain],
                parallelism=1,
                num_inputs=self.num_channels,
                local_inputs=setup.local_channels,
                gate_mode=setup.mode,
                checkpoints_after_tasks_finish=setup.eop_counts_as_aligned,
                max_buffered_bytes=setup.max_buffered_bytes,
            )
        )
        self.clock = ManualClock()
        self.timers = TimerQueue()
        self.arrivals = 0
        self.holding = False
        #: a ``RunDefaultAction`` is in the task's mailbox
        self.requested = False
        self.items: dict[int, tuple[int, ChannelItem]] = {}
        self._triggered: list[str] = []
        self._aborted: list[str] = []
        self._out: list[int] = []
        #: input channel state of the snapshots the task wrote, by checkpoint id
        self._written: dict[int, list[int]] = {}
        self._deliver(StartTask())

    # --- the task ---------------------------------------------------------------------------

    def _receive(self, records: Sequence[Any]) -> Sequence[Any]:
        """The chain's pass-through function: a scenario's data buffer holds its arrival index."""
        self._out.extend(records)
        return records

    def _deliver(self, msg: TaskMessage) -> None:
        for effect in self.core.handle(msg, self.clock.now()):
            self._observe(effect)

    def _observe(self, effect: TaskEffect) -> None:
        match effect:
            case RequestDefaultAction():
                self.requested = True
            case CheckpointTakenOnTask(checkpoint_id=cid, unaligned=unaligned):
                self._triggered.append(f"{cid}{'!' if unaligned else ''}")
            case Send(message=DeclineCheckpoint(checkpoint_id=cid, reason=reason)):
                self._aborted.append(f"{cid}:{reason.name}")
            case WriteSnapshot(snapshot=snapshot):
                self._written[snapshot.checkpoint_id] = [
                    r
                    for buffers in snapshot.input_channels.values()
                    for b in buffers
                    for r in b.records
                ]
            case Traced(event="end_of_partition_received", fields=fields):
                channel = int(fields["channel"])
                self._out.extend(
                    index
                    for index, (c, item) in self.items.items()
                    if c == channel and isinstance(item, EndOfPartition)
                )
            case ScheduleTimer(key=key, due=due):
                self.timers.schedule(key, due)
            case CancelTimer(key=key):
                self.timers.cancel(key)
            case _:
                pass  # sends, credits, acknowledgements, other trace facts: not observed here

    def _step(self) -> bool:
        """One mailbox step, if the task asked for one."""
        if not self.requested:
            return False
        self.requested = False
        self._deliver(RunDefaultAction())
        return True

    def _drain(self) -> None:
        while self._step():
            pass

    # --- actions ----------------------------------------------------------------------------

    def act(self, step: Step) -> None:
        channel = channel_index(step.name)
        if channel is not None:
            if channel >= self.num_channels:
                raise ScenarioError(
                    step.line, f"channel {channel} does not exist (@channels {self.num_channels})"
                )
            item = scenario_item(
                step, step.args[0], arrival=self.arrivals, now=self.clock.now(), mode=self.mode
            )
            self.items[self.arrivals] = (channel, item)
            self.arrivals += 1
            self._deliver(InputItem(channel=channel, item=item))
        elif step.name == "hold":
            self.holding = True
        elif step.name == "drain":
            self.holding = False
            self._drain()
        elif step.name == "poll":
            count = parse_int(step, step.args[0], "poll count") if step.args else 1
            for _ in range(count):
                if not self._step():
                    raise ScenarioError(step.line, "poll: no channel can be polled")
            return
        elif step.name in ("advance", "advance!"):
            if len(step.args) != 1:
                raise ScenarioError(step.line, f"{step.name} takes one duration in ms")
            millis = parse_int(step, step.args[0], "duration")
            if millis < 0:
                raise ScenarioError(step.line, "the clock cannot go back")
            target = self.clock.now() + millis
            if step.name == "advance":
                while (due := self.timers.pop_due(target)) is not None:
                    key, when = due
                    self.clock.set(max(when, self.clock.now()))
                    self._deliver(TimerFired(key=key))
                    if not self.holding:
                        self._drain()
            self.clock.set(target)
        if not self.holding:
            self._drain()

    # --- facts ------------------------------------------------------------------------------

    @property
    def triggered(self) -> list[str]:
        return list(self._triggered)

    @property
    def aborted(self) -> list[str]:
        return list(self._aborted)

    @property
    def out(self) -> list[int]:
        return list(self._out)

    @property
    def handler(self) -> CheckpointBarrierHandler:
        assert self.core.inputs is not None
        return self.core.inputs.gate.handler

    def blocked(self) -> list[int]:
        assert self.core.inputs is not None
        return self.core.inputs.gate.blocked()

    def inflight(self, checkpoint_id: int) -> list[int]:
        assert self.core.inputs is not None
        persisted = [
            r
            for entry in self.core.inputs.gate.inflight(checkpoint_id)
            for r in entry.item.records  # type: ignore[union-attr]
        ]
        return persisted + self._written.get(checkpoint_id, [])

    def buffered_bytes(self, step: Step) -> int:
        assert self.core.inputs is not None
        gate = self.core.inputs.gate
        if not isinstance(gate, LegacyCheckpointedInputGate):
            raise ScenarioError(step.line, "? buffered_bytes is for legacy_buffered gates")
        return gate.last_buffered_bytes
