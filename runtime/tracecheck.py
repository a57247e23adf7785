"""Offline checking of a run's JSON trace against the protocol's invariants.

A trace is the list of protocol events a run logged (``ckptsim run --trace``, either
runtime). ``check_trace`` replays it and returns the first violation, with the events that
show it, or a summary. What it checks:

Coordinator
  - checkpoint ids increase as they are triggered, and as they complete;
  - never more checkpoints pending than ``max-concurrent-checkpoints`` (savepoints aside);
  - every triggered checkpoint ends exactly once (completed or aborted), and only a pending
    one ends; none is left pending when the job has finished; a completed checkpoint holds a
    snapshot of every task that had not finished;
  - abort and decline reasons are ``CheckpointFailureReason`` names.
Tasks
  - a task takes checkpoints in increasing order, and acknowledges only what it took;
  - exactly-once and at-least-once: a task with inputs takes an aligned checkpoint only
    after checkpoint n's barrier (or the end of the partition) came in on every input, and
    an unaligned one only after a first barrier (a task whose every input ended is
    triggered directly, as a source is);
  - exactly-once, aligned: no record is consumed from a channel between its barrier and the
    snapshot (the channel is blocked).
Every completed exactly-once checkpoint is a consistent cut
  - for every channel, the records its producer emitted before its snapshot equal the records
    its consumer took before its own snapshot, plus the in-flight records the consumer
    persisted and the unsent ones the producer persisted (unaligned checkpoints); a producer
    that finished before the checkpoint counts everything it emitted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runtime.reasons import CheckpointFailureReason

REASONS = frozenset(r.name for r in CheckpointFailureReason)

Event = Mapping[str, Any]


class TraceFormatError(ValueError):
    """A line of the trace is not a JSON object."""


def parse_trace(lines: Iterable[str]) -> list[dict[str, Any]]:
    """JSON lines to events (blank lines skipped); a bad line is an error naming it."""
    events: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError as error:
            raise TraceFormatError(f"line {number}: not JSON ({error})") from None
        if not isinstance(event, dict) or "event" not in event:
            raise TraceFormatError(f"line {number}: not a trace event (no 'event' field)")
        event.setdefault("seq", number)
        events.append(event)
    return events


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str
    event: Event
    context: tuple[Event, ...] = ()

    def render(self) -> str:
        lines = [f"VIOLATION {self.rule}: {self.message}", f"  at {_show(self.event)}"]
        lines += [f"  see {_show(e)}" for e in self.context]
        return "\n".join(lines)


@dataclass
class TraceReport:
    events: int = 0
    violation: Violation | None = None
    triggered: int = 0
    completed: int = 0
    aborted: dict[str, int] = field(default_factory=dict)
    declined: dict[str, int] = field(default_factory=dict)
    cuts_checked: int = 0
    #: the most checkpoints (not savepoints) pending at once
    max_pending: int = 0
    channels: int = 0
    tasks: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.violation is None

    def summary(self) -> str:
        aborted = ", ".join(f"{k} {v}" for k, v in sorted(self.aborted.items())) or "none"
        declined = sum(self.declined.values())
        lines = [
            f"trace OK: {self.events} events, {self.tasks} tasks, {self.channels} channels",
            f"  checkpoints: {self.triggered} triggered, {self.completed} completed, "
            f"{sum(self.aborted.values())} aborted ({aborted}); {declined} declines",
            f"  consistent cuts verified: {self.cuts_checked} checkpoints x {self.channels} channels",
        ]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


class _Found(Exception):
    def __init__(self, violation: Violation) -> None:
        self.violation = violation


def check_trace(events: Iterable[Event]) -> TraceReport:
    """Replay ``events`` in order; the report holds the first violation, if any."""
    checker = _Checker()
    try:
        for event in events:
            checker.report.events += 1
            checker.see(event)
        checker.finish()
    except _Found as found:
        checker.report.violation = found.violation
    return checker.report


def _show(event: Event) -> str:
    fields = {k: v for k, v in event.items() if k not in ("level", "job", "role", "attempt")}
    return f"#{event.get('seq', '?')} " + json.dumps(fields, sort_keys=True, default=str)


def _int_keys(mapping: Any) -> dict[int, int]:
    return {int(k): int(v) for k, v in (mapping or {}).items()}


class _Checker:
    def __init__(self) -> None:
        self.report = TraceReport()
        self.mode: str | None = None
        self.max_concurrent: int | None = None
        self.sources: set[str] | None = None
        self.channels: list[tuple[str, int, str, int]] = []
        self.inputs: dict[str, dict[int, tuple[str, int]]] = {}  # consumer -> input -> producer
        self.pending: dict[int, Event] = {}
        self.ended: dict[int, Event] = {}
        self.last_triggered = 0
        self.last_completed = 0
        self.job_finished: Event | None = None
        self.last_taken: dict[str, Event] = {}
        self.taken: dict[tuple[str, int], Event] = {}
        self.captured: dict[tuple[str, int], Event] = {}
        self.barriers: dict[tuple[str, int], dict[int, Event]] = {}
        self.ended_inputs: dict[str, dict[int, Event]] = {}
        self.output_ended: dict[str, Event] = {}
        #: records of recovered in-flight input per (task, channel) since the last deployment:
        #: sent before the restore, consumed (or persisted again) after it
        self.restored_input: dict[tuple[str, int], int] = {}
        self.all_tasks: set[str] = set()
        self.finished_tasks: set[str] = set()

    def fail(self, rule: str, message: str, event: Event, *context: Event | None) -> None:
        raise _Found(Violation(rule, message, event, tuple(c for c in context if c is not None)))

    # --- dispatch ---------------------------------------------------------------------------------

    def see(self, e: Event) -> None:
        handler = getattr(self, "on_" + str(e["event"]), None)
        if handler is not None:
            handler(e)

    def on_job_submitted(self, e: Event) -> None:
        config = e.get("checkpointing") or {}
        self.mode = config.get("mode")
        self.max_concurrent = config.get("max_concurrent")

    def on_job_deployed(self, e: Event) -> None:
        # a (re)deployment: every task starts afresh (its counts too); checkpoints go on
        self.last_taken.clear()
        self.barriers.clear()
        self.ended_inputs.clear()
        self.output_ended.clear()
        self.restored_input.clear()
        self.finished_tasks.clear()
        topology = e.get("topology")
        if not topology:
            return
        self.sources = set(topology.get("sources", []))
        self.channels = [(str(u), int(o), str(d), int(i)) for u, o, d, i in topology["channels"]]
        self.inputs = {}
        for u, o, d, i in self.channels:
            self.inputs.setdefault(d, {})[i] = (u, o)
        self.all_tasks = self.sources | {c[0] for c in self.channels} | set(self.inputs)
        self.report.channels = len(self.channels)
        self.report.tasks = len(self.all_tasks)

    def on_job_finished(self, e: Event) -> None:
        self.job_finished = e

    # --- coordinator ------------------------------------------------------------------------------

    def on_checkpoint_triggered(self, e: Event) -> None:
        cid = int(e["checkpoint_id"])
        self.report.triggered += 1
        if cid <= self.last_triggered:
            self.fail(
                "ids-increase",
                f"checkpoint {cid} triggered after checkpoint {self.last_triggered}",
                e,
            )
        self.last_triggered = cid
        self.pending[cid] = e
        if self.max_concurrent is not None and e.get("type", "CHECKPOINT") == "CHECKPOINT":
            concurrent = [
                p for p in self.pending.values() if p.get("type", "CHECKPOINT") == "CHECKPOINT"
            ]
            self.report.max_pending = max(self.report.max_pending, len(concurrent))
            if len(concurrent) > self.max_concurrent:
                self.fail(
                    "max-concurrent",
                    f"{len(concurrent)} checkpoints pending at once "
                    f"(max-concurrent-checkpoints is {self.max_concurrent})",
                    e,
                    *concurrent[:-1],
                )

    def _end(self, e: Event, how: str) -> int:
        cid = int(e["checkpoint_id"])
        if cid in self.ended:
            self.fail("ends-once", f"checkpoint {cid} {how} after it had ended", e, self.ended[cid])
        if cid not in self.pending:
            self.fail("ends-once", f"checkpoint {cid} {how} but it was never triggered", e)
        del self.pending[cid]
        self.ended[cid] = e
        return cid

    def on_checkpoint_completed(self, e: Event) -> None:
        cid = self._end(e, "completed")
        self.report.completed += 1
        if cid <= self.last_completed:
            self.fail(
                "ids-increase",
                f"checkpoint {cid} completed after checkpoint {self.last_completed}",
                e,
            )
        self.last_completed = cid
        missing = sorted(
            t for t in self.all_tasks - self.finished_tasks if (t, cid) not in self.taken
        )
        if missing and self.mode is not None:
            self.fail(
                "complete-snapshot",
                f"checkpoint {cid} completed without a snapshot of {', '.join(missing)}, "
                "which had not finished",
                e,
            )
        if self.mode == "EXACTLY_ONCE" and self.channels:
            self.check_cut(cid, e)

    def on_checkpoint_aborted(self, e: Event) -> None:
        reason = str(e.get("reason"))
        if reason not in REASONS:
            self.fail(
                "valid-reason", f"abort reason {reason!r} is not a CheckpointFailureReason", e
            )
        self._end(e, "aborted")
        self.report.aborted[reason] = self.report.aborted.get(reason, 0) + 1

    def on_checkpoint_declined(self, e: Event) -> None:
        reason = str(e.get("reason"))
        if reason not in REASONS:
            self.fail(
                "valid-reason", f"decline reason {reason!r} is not a CheckpointFailureReason", e
            )
        self.report.declined[reason] = self.report.declined.get(reason, 0) + 1

    # --- tasks ------------------------------------------------------------------------------------

    def on_barrier_received(self, e: Event) -> None:
        self.barriers.setdefault((str(e["task"]), int(e["checkpoint_id"])), {})[
            int(e["channel"])
        ] = e

    def on_end_of_partition_received(self, e: Event) -> None:
        self.ended_inputs.setdefault(str(e["task"]), {})[int(e["channel"])] = e

    def on_task_finished(self, e: Event) -> None:
        self.finished_tasks.add(str(e["task"]))

    def on_output_ended(self, e: Event) -> None:
        self.output_ended[str(e["task"])] = e

    def on_task_restored(self, e: Event) -> None:
        for channel, records in _int_keys(e.get("input")).items():
            self.restored_input[(str(e["task"]), channel)] = records

    def on_channel_state_captured(self, e: Event) -> None:
        self.captured[(str(e["task"]), int(e["checkpoint_id"]))] = e

    def on_checkpoint_acknowledged(self, e: Event) -> None:
        task, cid = str(e["task"]), int(e["checkpoint_id"])
        if (task, cid) not in self.taken:
            self.fail(
                "ack-after-snapshot", f"{task} acknowledged checkpoint {cid} it never took", e
            )

    def on_checkpoint_taken(self, e: Event) -> None:
        task, cid = str(e["task"]), int(e["checkpoint_id"])
        previous = self.last_taken.get(task)
        if previous is not None and cid <= int(previous["checkpoint_id"]):
            self.fail(
                "task-order",
                f"{task} took checkpoint {cid} after checkpoint {previous['checkpoint_id']}",
                e,
                previous,
            )
        self.last_taken[task] = e
        self.taken[(task, cid)] = e
        inputs = self.inputs.get(task)
        if not inputs or self.mode is None:
            return
        barriers = self.barriers.get((task, cid), {})
        ended = self.ended_inputs.get(task, {})
        if len(ended) == len(inputs):
            return  # all its input ended: triggered like a source (FLIP-147 final checkpoint)
        if e.get("unaligned"):
            if not barriers:
                self.fail(
                    "trigger-after-barriers",
                    f"{task} took unaligned checkpoint {cid} before any of its barriers arrived",
                    e,
                )
            return
        missing = [i for i in sorted(inputs) if i not in barriers and i not in ended]
        if missing:
            self.fail(
                "trigger-after-barriers",
                f"{task} took aligned checkpoint {cid} before its barrier arrived on input "
                f"channel(s) {missing}",
                e,
                *barriers.values(),
            )
        if self.mode != "EXACTLY_ONCE":
            return
        consumed = _int_keys(e.get("consumed"))
        for channel, barrier in sorted(barriers.items()):
            at_barrier = int(barrier["consumed"])
            if consumed.get(channel, 0) != at_barrier:
                self.fail(
                    "blocked-channel",
                    f"{task} consumed {consumed.get(channel, 0) - at_barrier} record(s) from input "
                    f"channel {channel} after its barrier {cid} and before the aligned snapshot",
                    e,
                    barrier,
                )

    # --- the cut ----------------------------------------------------------------------------------

    def check_cut(self, cid: int, completed: Event) -> None:
        for producer, out, consumer, channel in self.channels:
            down = self.taken.get((consumer, cid))
            if down is None:
                continue  # the consumer had finished: it is not part of the checkpoint
            up = self.taken.get((producer, cid))
            if up is not None:
                emitted = _int_keys(up.get("emitted")).get(out, 0)
                up_state = self.captured.get((producer, cid))
                out_persisted = _int_keys(up_state.get("output") if up_state else {}).get(out, 0)
            elif producer in self.output_ended:
                up = self.output_ended[producer]
                emitted = _int_keys(up.get("emitted")).get(out, 0)
                out_persisted = 0
            else:
                self.fail(
                    "consistent-cut",
                    f"checkpoint {cid} completed without a snapshot of {producer}, which had "
                    "not finished",
                    completed,
                    down,
                )
                return
            down_state = self.captured.get((consumer, cid))
            consumed = _int_keys(down.get("consumed")).get(channel, 0)
            in_persisted = _int_keys(down_state.get("input") if down_state else {}).get(channel, 0)
            restored = self.restored_input.get((consumer, channel), 0)
            if emitted + restored != consumed + in_persisted + out_persisted:
                recovered = (
                    f" (+ {restored} recovered in flight at the restore)" if restored else ""
                )
                self.fail(
                    "consistent-cut",
                    f"checkpoint {cid} is not a consistent cut on {producer}[{out}] -> "
                    f"{consumer}[{channel}]: the producer emitted {emitted} record(s) before its "
                    f"snapshot{recovered} ({out_persisted} persisted as output), the consumer "
                    f"took {consumed} before its own and persisted {in_persisted} in flight "
                    f"({consumed} + {in_persisted} + {out_persisted} != {emitted + restored})",
                    completed,
                    up,
                    down,
                    down_state,
                )
        self.report.cuts_checked += 1

    def finish(self) -> None:
        if self.mode is None:
            self.report.notes.append(
                "no job_submitted event: alignment and cut checks were skipped"
            )
        if self.job_finished is not None and self.pending:
            cid = min(self.pending)
            self.fail(
                "ends-once",
                f"checkpoint {cid} never ended (the job finished with it pending)",
                self.job_finished,
                self.pending[cid],
            )
