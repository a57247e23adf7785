"""Runs ``@kind gate`` scenarios against one real input gate (channels + barrier handler).

Every observed value comes from what the implementation did: triggers and aborts are the
handler's effects, ``out`` is what the gate delivered, ``blocked`` is the channels' own pause
state, ``inflight`` is what the channels persisted. ``TaskHarness`` (``task_harness``) runs the
same scenarios through a running task's input path; both interpret the steps with
``GateScenarioHarness`` (``gate_scenario``).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import assert_never

from runtime.barrier.gate import CheckpointedInputGate, GatePoll, make_gate
from runtime.conformance.gate_scenario import GateScenarioHarness
from runtime.conformance.scenario import Scenario
from runtime.effects import (
    AbortCheckpointOnBarrier,
    AllBarriersReceived,
    CancelTimer,
    ConvertToPriorityEvent,
    GateEffect,
    ResumeConsumption,
    ScheduleTimer,
    TriggerCheckpointOnBarrier,
)
from runtime.network import ChannelItem

__all__ = ["GateHarness"]


class GateHarness(GateScenarioHarness):
    def __init__(self, scenario: Scenario) -> None:
        super().__init__(scenario)
        setup = self.setup
        self._gate: CheckpointedInputGate = make_gate(
            setup.mode,
            self.num_channels,
            eop_counts_as_aligned=setup.eop_counts_as_aligned,
            local_channels=setup.local_channels,
            max_buffered_bytes=setup.max_buffered_bytes,
        )
        #: what happened, in order: ("polled", arrival index, channel): handed to the handler;
        #: ("buffered", ...): stored by a Flink 1.10 gate for replay; ("out", arrival index,
        #: channel): reached the operator; ("trigger", id, unaligned); ("aligned", id, ms): all
        #: barriers of a triggered checkpoint are in; ("abort", id, reason name)
        self.log: list[tuple[str, int, object]] = []

    # --- facts ---------------------------------------------------------------------------------

    @property
    def triggered(self) -> list[str]:
        return [f"{e[1]}{'!' if e[2] else ''}" for e in self.log if e[0] == "trigger"]

    @property
    def aborted(self) -> list[str]:
        return [f"{e[1]}:{e[2]}" for e in self.log if e[0] == "abort"]

    @property
    def out(self) -> list[int]:
        return [e[1] for e in self.log if e[0] == "out"]

    @property
    def gate(self) -> CheckpointedInputGate:
        return self._gate

    def inflight(self, checkpoint_id: int) -> list[int]:
        return [e.seq for e in self._gate.inflight(checkpoint_id)]

    # --- the gate ------------------------------------------------------------------------------

    def _push(self, channel: int, item: ChannelItem, arrival: int) -> None:
        self._gate.push(channel, item, arrival)

    def _poll(self) -> bool:
        result = self._gate.poll_next(self.clock.now())
        if result is None:
            return False
        self._observe(result)
        return True

    def _fire_timer(self, key: Hashable) -> None:
        self._effects(self._gate.on_timer(key, self.clock.now()))

    def _observe(self, result: GatePoll) -> None:
        # the handler acts on an event before the gate hands it on (Flink's pollNext)
        kind = "buffered" if result.buffered else "polled"
        self.log.append((kind, result.polled.seq, result.channel))
        self._effects(result.effects)
        if result.delivered is not None:
            self.log.append(("out", result.delivered.seq, result.channel))

    def _effects(self, effects: list[GateEffect]) -> None:
        for effect in effects:
            match effect:
                case TriggerCheckpointOnBarrier(barrier=barrier, alignment_duration_ms=duration):
                    self.log.append(("trigger", barrier.checkpoint_id, barrier.is_unaligned))
                    if duration is not None:
                        self.log.append(("aligned", barrier.checkpoint_id, duration))
                case AllBarriersReceived(
                    checkpoint_id=checkpoint_id, alignment_duration_ms=duration
                ):
                    self.log.append(("aligned", checkpoint_id, duration))
                case AbortCheckpointOnBarrier(checkpoint_id=checkpoint_id, reason=reason):
                    self.log.append(("abort", checkpoint_id, reason.name))
                case ScheduleTimer(key=key, due=due):
                    self.timers.schedule(key, due)
                case CancelTimer(key=key):
                    self.timers.cancel(key)
                case ResumeConsumption() | ConvertToPriorityEvent():
                    pass  # the gate did that to its channels: seen in ``blocked`` and ``out``
                case _:
                    assert_never(effect)
