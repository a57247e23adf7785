"""Runs ``@kind gate`` scenarios against one real input gate (channels + barrier handler).

Every observed value comes from what the implementation did: triggers and aborts are the
handler's effects, ``out`` is what the gate delivered, ``blocked`` is the channels' own pause
state, ``inflight`` is what the channels persisted. ``TaskHarness`` (``task_harness``) runs the
same scenarios through a running task's input path; both check facts with ``GateFacts``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import assert_never

from runtime.barrier.base import CheckpointBarrierHandler
from runtime.barrier.channel import Entry
from runtime.barrier.gate import (
    CheckpointedInputGate,
    GatePoll,
    LegacyCheckpointedInputGate,
    make_gate,
)
from runtime.barrier.mode import GATE_MODES, GateMode
from runtime.barrier.tracker import CheckpointBarrierTracker
from runtime.checkpoint import (
    NO_ALIGNED_CHECKPOINT_TIMEOUT,
    AlignmentType,
    CheckpointOptions,
    SnapshotType,
)
from runtime.clock import ManualClock, TimerQueue
from runtime.conformance.scenario import (
    Scenario,
    ScenarioError,
    Step,
    channel_index,
    parse_int,
    parse_ints,
)
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
from runtime.network import (
    Buffer,
    CancelCheckpointMarker,
    ChannelItem,
    CheckpointBarrier,
    EndOfPartition,
    EventAnnouncement,
)

__all__ = ["Entry", "GateFacts", "GateHarness", "GateSetup", "Mismatch", "scenario_item"]


class Mismatch(Exception):
    def __init__(self, expected: str, got: str) -> None:
        super().__init__(f"expected {expected}, got {got}")


def _bool(scenario: Scenario, key: str, default: bool) -> bool:
    value = scenario.headers.get(key)
    if value is None:
        return default
    if value not in ("true", "false"):
        raise ScenarioError(
            scenario.header_lines[key], f"@{key} must be true or false, got {value!r}"
        )
    return value == "true"


def _int_header(scenario: Scenario, key: str, default: int | None = None) -> int:
    value = scenario.headers.get(key)
    if value is None:
        if default is None:
            raise ScenarioError(1, f"missing header @{key}")
        return default
    try:
        return int(value)
    except ValueError:
        raise ScenarioError(
            scenario.header_lines[key], f"@{key} must be an integer, got {value!r}"
        ) from None


@dataclass(frozen=True, slots=True)
class GateSetup:
    """The header of a gate scenario."""

    mode: GateMode
    num_channels: int
    eop_counts_as_aligned: bool
    local_channels: frozenset[int]
    max_buffered_bytes: int

    @classmethod
    def of(cls, scenario: Scenario) -> GateSetup:
        mode = scenario.headers.get("mode")
        if mode not in GATE_MODES:
            line = scenario.header_lines.get("mode", 1)
            raise ScenarioError(line, f"@mode must be one of {', '.join(GATE_MODES)}, got {mode!r}")
        num_channels = _int_header(scenario, "channels")
        if num_channels < 1:
            raise ScenarioError(scenario.header_lines["channels"], "@channels must be >= 1")
        local = scenario.headers.get("local_channels", "")
        try:
            local_channels = frozenset(int(c) for c in local.split())
        except ValueError:
            raise ScenarioError(
                scenario.header_lines["local_channels"], "@local_channels lists channel numbers"
            ) from None
        return cls(
            mode=GateMode(mode),
            num_channels=num_channels,
            eop_counts_as_aligned=_bool(scenario, "eop_counts_as_aligned", True),
            local_channels=local_channels,
            max_buffered_bytes=_int_header(scenario, "max_buffered_bytes", -1),
        )


_DATA = re.compile(r"^d(\d*)$")
_BARRIER = re.compile(r"^([BP])(\d+)(!|~(\d+)(?:@(\d+))?)?$")
_OTHER = re.compile(r"^([AC])(\d+)$")


def scenario_item(step: Step, token: str, *, arrival: int, now: int, mode: GateMode) -> ChannelItem:
    """The channel item a scenario token stands for (a data buffer holds its arrival index)."""
    if token == "E":
        return EndOfPartition()
    data = _DATA.match(token)
    if data:
        size = int(data.group(1)) if data.group(1) else 1
        return Buffer((arrival,), size)
    barrier = _BARRIER.match(token)
    if barrier:
        letter, number, suffix, timeout, created = barrier.groups()
        checkpoint_id = int(number)
        if letter == "P":
            if suffix:
                raise ScenarioError(step.line, f"savepoint barrier {token!r} takes no suffix")
            options = CheckpointOptions(snapshot_type=SnapshotType.SAVEPOINT)
        elif suffix == "!":
            options = CheckpointOptions(alignment=AlignmentType.UNALIGNED)
        elif suffix:
            options = CheckpointOptions(
                alignment=AlignmentType.ALIGNED, aligned_checkpoint_timeout=int(timeout)
            )
            if created is not None:
                now = int(created)
        elif mode is GateMode.AT_LEAST_ONCE:
            options = CheckpointOptions(alignment=AlignmentType.AT_LEAST_ONCE)
        else:
            options = CheckpointOptions(aligned_checkpoint_timeout=NO_ALIGNED_CHECKPOINT_TIMEOUT)
        return CheckpointBarrier(checkpoint_id=checkpoint_id, timestamp=now, options=options)
    other = _OTHER.match(token)
    if other:
        letter, number = other.groups()
        if letter == "C":
            return CancelCheckpointMarker(int(number))
        # an explicit announcement of barrier n, pointing at the next barrier n queued on
        # its channel (the position is resolved when the channel converts it)
        announced = CheckpointBarrier(checkpoint_id=int(number), timestamp=now)
        return EventAnnouncement(barrier=announced, sequence_number=-1)
    raise ScenarioError(step.line, f"unknown channel token {token!r}")


class GateFacts:
    """The facts of a gate scenario, from views a harness provides."""

    num_channels: int

    @property
    def triggered(self) -> list[str]:
        raise NotImplementedError

    @property
    def aborted(self) -> list[str]:
        raise NotImplementedError

    @property
    def out(self) -> list[int]:
        raise NotImplementedError

    @property
    def handler(self) -> CheckpointBarrierHandler:
        raise NotImplementedError

    def blocked(self) -> list[int]:
        raise NotImplementedError

    def inflight(self, checkpoint_id: int) -> list[int]:
        """Arrival indices of the data persisted as in-flight state of the checkpoint."""
        raise NotImplementedError

    def buffered_bytes(self, step: Step) -> int:
        raise NotImplementedError

    def check(self, step: Step) -> None:
        name, args = step.name, step.args
        if name == "triggered":
            expected = [] if args == ("-",) else list(args)
            _compare(expected, self.triggered)
        elif name == "aborted":
            expected = [] if args == ("-",) else list(args)
            _compare(expected, self.aborted)
        elif name == "out":
            _compare(parse_ints(step, args, "arrival index"), self.out)
        elif name == "blocked":
            _compare(sorted(parse_ints(step, args, "channel")), sorted(self.blocked()))
        elif name == "inflight":
            if not args or not args[0].endswith(":"):
                raise ScenarioError(step.line, "inflight needs 'N:' then arrival indices or -")
            checkpoint_id = parse_int(step, args[0][:-1], "checkpoint id")
            expected_set = sorted(parse_ints(step, args[1:] or ("-",), "arrival index"))
            _compare(
                expected_set, sorted(self.inflight(checkpoint_id)), prefix=f"{checkpoint_id}: "
            )
        elif name == "latest":
            _compare(
                [parse_int(step, _one(step), "checkpoint id")],
                [self.handler.latest_checkpoint_id],
            )
        elif name == "pending":
            handler = self.handler
            if not isinstance(handler, CheckpointBarrierTracker):
                raise ScenarioError(step.line, "? pending is for at_least_once gates")
            _compare(parse_ints(step, args, "checkpoint id"), handler.pending_checkpoint_ids)
        elif name == "alignment_ms":
            value = parse_int(step, _one(step), "duration")
            _compare([value], [self.handler.last_alignment_duration_ms])
        elif name == "buffered_bytes":
            _compare([parse_int(step, _one(step), "bytes")], [self.buffered_bytes(step)])


class GateHarness(GateFacts):
    def __init__(self, scenario: Scenario) -> None:
        setup = GateSetup.of(scenario)
        self.mode = setup.mode.value
        self._mode = setup.mode
        self.num_channels = setup.num_channels
        self.gate: CheckpointedInputGate = make_gate(
            setup.mode,
            self.num_channels,
            eop_counts_as_aligned=setup.eop_counts_as_aligned,
            local_channels=setup.local_channels,
            max_buffered_bytes=setup.max_buffered_bytes,
        )
        self.clock = ManualClock()
        self.timers = TimerQueue()
        self.arrivals = 0
        self.holding = False
        #: what happened, in order: ("polled", arrival index, channel): handed to the handler;
        #: ("buffered", ...): stored by a Flink 1.10 gate for replay; ("out", arrival index,
        #: channel): reached the operator; ("trigger", id, unaligned); ("aligned", id, ms): all
        #: barriers of a triggered checkpoint are in; ("abort", id, reason name)
        self.log: list[tuple[str, int, object]] = []
        self.items: dict[int, tuple[int, ChannelItem]] = {}  # arrival index -> (channel, item)

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
    def handler(self) -> CheckpointBarrierHandler:
        return self.gate.handler

    def blocked(self) -> list[int]:
        return self.gate.blocked()

    def inflight(self, checkpoint_id: int) -> list[int]:
        return [e.seq for e in self.gate.inflight(checkpoint_id)]

    def buffered_bytes(self, step: Step) -> int:
        if not isinstance(self.gate, LegacyCheckpointedInputGate):
            raise ScenarioError(step.line, "? buffered_bytes is for legacy_buffered gates")
        return self.gate.last_buffered_bytes

    # --- actions ----------------------------------------------------------------------------

    def act(self, step: Step) -> None:
        channel = channel_index(step.name)
        if channel is not None:
            self._put(step, channel, step.args[0])
        elif step.name == "hold":
            self.holding = True
        elif step.name == "drain":
            self.holding = False
            self._drain()
        elif step.name == "poll":
            count = parse_int(step, step.args[0], "poll count") if step.args else 1
            for _ in range(count):
                if not self._poll_one():
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
                self._fire_timers_until(target)
            self.clock.set(target)
        if not self.holding:
            self._drain()

    def _put(self, step: Step, channel: int, token: str) -> None:
        if channel >= self.num_channels:
            raise ScenarioError(
                step.line, f"channel {channel} does not exist (@channels {self.num_channels})"
            )
        item = scenario_item(
            step, token, arrival=self.arrivals, now=self.clock.now(), mode=self._mode
        )
        self.gate.push(channel, item, self.arrivals)
        self.items[self.arrivals] = (channel, item)
        self.arrivals += 1

    # --- draining ------------------------------------------------------------------------------

    def _drain(self) -> None:
        while self._poll_one():
            pass

    def _poll_one(self) -> bool:
        result = self.gate.poll_next(self.clock.now())
        if result is None:
            return False
        self._observe(result)
        return True

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

    def _fire_timers_until(self, target: int) -> None:
        while (due := self.timers.pop_due(target)) is not None:
            key, when = due
            self.clock.set(max(when, self.clock.now()))
            self._effects(self.gate.on_timer(key, self.clock.now()))
            if not self.holding:
                self._drain()


def _one(step: Step) -> str:
    if len(step.args) != 1:
        raise ScenarioError(step.line, f"? {step.name} takes one value")
    return step.args[0]


def _render(values: list[int] | list[str], prefix: str = "") -> str:
    return prefix + (" ".join(str(v) for v in values) if values else "-")


def _compare(expected: list[int] | list[str], got: list[int] | list[str], prefix: str = "") -> None:
    if expected != got:
        raise Mismatch(_render(expected, prefix), _render(got, prefix))
