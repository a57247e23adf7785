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

from collections.abc import Hashable, Sequence
from typing import Any

from runtime.barrier.gate import CheckpointedInputGate
from runtime.checkpoint import TaskId
from runtime.conformance.gate_scenario import GateScenarioHarness
from runtime.conformance.scenario import Scenario
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


class TaskHarness(GateScenarioHarness):
    def __init__(self, scenario: Scenario) -> None:
        super().__init__(scenario)
        setup = self.setup
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
        #: a ``RunDefaultAction`` is in the task's mailbox
        self.requested = False
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

    def _push(self, channel: int, item: ChannelItem, arrival: int) -> None:
        self._deliver(InputItem(channel=channel, item=item))

    def _poll(self) -> bool:
        """One mailbox step, if the task asked for one."""
        if not self.requested:
            return False
        self.requested = False
        self._deliver(RunDefaultAction())
        return True

    def _fire_timer(self, key: Hashable) -> None:
        self._deliver(TimerFired(key=key))

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
    def gate(self) -> CheckpointedInputGate:
        assert self.core.inputs is not None
        return self.core.inputs.gate

    def inflight(self, checkpoint_id: int) -> list[int]:
        persisted = [
            r
            for entry in self.gate.inflight(checkpoint_id)
            for r in entry.item.records  # type: ignore[union-attr]
        ]
        return persisted + self._written.get(checkpoint_id, [])
