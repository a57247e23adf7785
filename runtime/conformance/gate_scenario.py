"""A ``@kind gate`` scenario, interpreted once: its header, its channel tokens, its actions and
its facts (``tests/conformance/FORMAT.md``).

``GateScenarioHarness`` runs every step; a harness supplies only what differs: how a channel
item reaches the object under test, what one poll is, how a due timer fires, and where the
facts are read. ``GateHarness`` (``gate_harness``) drives a bare input gate,
``TaskHarness`` (``task_harness``) a running task's input path.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Hashable
from dataclasses import dataclass

from runtime.barrier.base import CheckpointBarrierHandler
from runtime.barrier.gate import CheckpointedInputGate, LegacyCheckpointedInputGate
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
    bool_header,
    channel_index,
    compare,
    int_header,
    one_value,
    parse_int,
    parse_ints,
)
from runtime.network import (
    Buffer,
    CancelCheckpointMarker,
    ChannelItem,
    CheckpointBarrier,
    EndOfPartition,
    EventAnnouncement,
)

__all__ = ["GateScenarioHarness", "GateSetup", "scenario_item"]


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
        num_channels = int_header(scenario, "channels")
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
            eop_counts_as_aligned=bool_header(scenario, "eop_counts_as_aligned", True),
            local_channels=local_channels,
            max_buffered_bytes=int_header(scenario, "max_buffered_bytes", -1),
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


class GateScenarioHarness(ABC):
    """Runs the steps of a gate scenario: ``act`` for an action, ``check`` for a fact.

    The harness keeps the manual clock (at 0 to start), the timers the object under test
    scheduled, the items put so far by arrival index, and whether it holds (``hold``: no
    draining after a line)."""

    def __init__(self, scenario: Scenario) -> None:
        setup = GateSetup.of(scenario)
        self.setup = setup
        self.num_channels = setup.num_channels
        self.clock = ManualClock()
        self.timers = TimerQueue()
        self.arrivals = 0
        self.holding = False
        #: every item put so far: arrival index -> (channel, item)
        self.items: dict[int, tuple[int, ChannelItem]] = {}

    # --- what a harness supplies: how the object under test is driven ------------------------

    @abstractmethod
    def _push(self, channel: int, item: ChannelItem, arrival: int) -> None:
        """The network delivers ``item`` (arrival index ``arrival``) on ``channel``."""

    @abstractmethod
    def _poll(self) -> bool:
        """Hand on the next item (``poll``); False when nothing can be handed on."""

    @abstractmethod
    def _fire_timer(self, key: Hashable) -> None:
        """The timer ``key`` is due (the clock is at its due time)."""

    # --- what a harness supplies: where the facts are read -----------------------------------

    @property
    @abstractmethod
    def triggered(self) -> list[str]:
        """The checkpoints taken, in order (``!``: with unaligned options)."""

    @property
    @abstractmethod
    def aborted(self) -> list[str]:
        """The checkpoints aborted, in order, as ``id:REASON``."""

    @property
    @abstractmethod
    def out(self) -> list[int]:
        """The arrival indices of the data and ends of partition delivered, in order."""

    @property
    @abstractmethod
    def gate(self) -> CheckpointedInputGate:
        """The input gate under test (its handler, its channels)."""

    @abstractmethod
    def inflight(self, checkpoint_id: int) -> list[int]:
        """Arrival indices of the data persisted as in-flight state of the checkpoint."""

    @property
    def handler(self) -> CheckpointBarrierHandler:
        return self.gate.handler

    def blocked(self) -> list[int]:
        return self.gate.blocked()

    def buffered_bytes(self, step: Step) -> int:
        gate = self.gate
        if not isinstance(gate, LegacyCheckpointedInputGate):
            raise ScenarioError(step.line, "? buffered_bytes is for legacy_buffered gates")
        return gate.last_buffered_bytes

    # --- actions -----------------------------------------------------------------------------

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
                if not self._poll():
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
        arrival = self.arrivals
        item = scenario_item(
            step, token, arrival=arrival, now=self.clock.now(), mode=self.setup.mode
        )
        self.items[arrival] = (channel, item)
        self.arrivals += 1
        self._push(channel, item, arrival)

    def _drain(self) -> None:
        while self._poll():
            pass

    def _fire_timers_until(self, target: int) -> None:
        while (due := self.timers.pop_due(target)) is not None:
            key, when = due
            self.clock.set(max(when, self.clock.now()))
            self._fire_timer(key)
            if not self.holding:
                self._drain()

    # --- facts -------------------------------------------------------------------------------

    def check(self, step: Step) -> None:
        name, args = step.name, step.args
        if name == "triggered":
            compare([] if args == ("-",) else list(args), self.triggered)
        elif name == "aborted":
            compare([] if args == ("-",) else list(args), self.aborted)
        elif name == "out":
            compare(parse_ints(step, args, "arrival index"), self.out)
        elif name == "blocked":
            compare(sorted(parse_ints(step, args, "channel")), sorted(self.blocked()))
        elif name == "inflight":
            if not args or not args[0].endswith(":"):
                raise ScenarioError(step.line, "inflight needs 'N:' then arrival indices or -")
            checkpoint_id = parse_int(step, args[0][:-1], "checkpoint id")
            expected = sorted(parse_ints(step, args[1:] or ("-",), "arrival index"))
            compare(expected, sorted(self.inflight(checkpoint_id)), prefix=f"{checkpoint_id}: ")
        elif name == "latest":
            compare(
                [parse_int(step, one_value(step), "checkpoint id")],
                [self.handler.latest_checkpoint_id],
            )
        elif name == "pending":
            handler = self.handler
            if not isinstance(handler, CheckpointBarrierTracker):
                raise ScenarioError(step.line, "? pending is for at_least_once gates")
            compare(parse_ints(step, args, "checkpoint id"), handler.pending_checkpoint_ids)
        elif name == "alignment_ms":
            value = parse_int(step, one_value(step), "duration")
            compare([value], [self.handler.last_alignment_duration_ms])
        elif name == "buffered_bytes":
            compare([parse_int(step, one_value(step), "bytes")], [self.buffered_bytes(step)])
