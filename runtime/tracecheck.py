"""Offline checking of a run's JSON trace against the protocol's invariants.

A trace is the list of protocol events a run logged (``ckptsim run --trace``, either
runtime). ``check_trace`` replays it and returns the first violation, with the events that
show it, or a summary. What it checks:

Coordinator
  - checkpoint ids increase as they are triggered, and as they complete;
  - never more checkpoints pending than ``max-concurrent-checkpoints`` (savepoints aside);
  - every triggered checkpoint ends exactly once (completed or aborted), and only a pending
    one ends; none is left pending when the job has finished; a completed checkpoint holds a
    snapshot and an acknowledgement of every task that had not finished;
  - abort and decline reasons are ``CheckpointFailureReason`` names.
Tasks
  - a task takes only checkpoints that were triggered, in increasing order, and acknowledges
    only what it took;
  - exactly-once and at-least-once: a task with inputs takes an aligned checkpoint only
    after checkpoint n's barrier (or the end of the partition) came in on every input, and
    an unaligned one only after a first barrier (a task whose every input ended is
    triggered directly, as a source is);
  - exactly-once, aligned: no record is consumed from a channel between its barrier and the
    snapshot (the channel is blocked);
  - a task that waits for its final checkpoint (FLIP-147) finishes only after a later
    checkpoint completed.
Restarts
  - a job restarts only after a failure (``job_failover``) since its last deployment;
  - a restart restores the latest completed checkpoint, or an older one only when the trace
    says why each newer one was skipped (``checkpoint_unusable``); never one that was aborted
    or never completed in this run (a run started from a path may restore that one);
  - every task of a deployment that restores a checkpoint restores it (``task_restored``)
    before it does anything else (a task that starts from scratch replays its input), and
    the in-flight records it recovers are the ones its snapshot persisted (none after an
    aligned checkpoint);
  - after a redeployment no task acknowledges or takes a checkpoint with an earlier attempt's
    number (a stale message of a cancelled task);
  - after a restart from checkpoint n (none: 0), or a run restored from checkpoint n that an
    earlier job of the trace took, every sink subtask that committed output for a checkpoint
    after n in the trace (``sink_committed``; at its end without a final checkpoint: after
    any) retracts it (``sink_output_retracted`` with ``after_checkpoint`` n) before it commits
    again or finishes: its records are replayed, and would be committed twice.
The end
  - a job that finished (``FINISHED``) finished every task of its last deployment.
Every completed exactly-once checkpoint is a consistent cut
  - for every channel, the records its producer emitted before its snapshot equal the records
    its consumer took before its own snapshot, plus the in-flight records the consumer
    persisted and the unsent ones the producer persisted (unaligned checkpoints); a producer
    that finished before the checkpoint counts everything it emitted.

A trace that lacks what these checks need (no ``job_submitted`` with the checkpointing
settings, no ``job_deployed`` with the topology, no ``job_finished`` at the end) is
*incomplete*: that is reported as such, naming the first event that needed the missing one,
never passed. Events the checker does not know, and fields it does not read, are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
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
        problem = _shape_problem(event)
        if problem is not None:
            raise TraceFormatError(
                f"line {number}: {problem}: not a trace ckptsim wrote (give the file ckptsim "
                "run --trace wrote, unchanged)"
            )
        event.setdefault("seq", number)
        events.append(event)
    return events


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _counts(value: object) -> bool:
    """``{"0": 12, ...}``: channel numbers to counts, as ``consumed`` and ``emitted`` are."""
    return isinstance(value, dict) and all(
        isinstance(k, str) and k.lstrip("-").isdigit() and _whole(v) for k, v in value.items()
    )


def _named_counts(value: object) -> bool:
    return isinstance(value, dict) and all(_whole(v) for v in value.values())


#: the fields the checks read, and the shape ckptsim writes them in
_SHAPES: dict[str, tuple[Callable[[object], bool], str]] = {
    "event": (lambda v: isinstance(v, str), "a string"),
    "task": (lambda v: isinstance(v, str), "a string"),
    "type": (lambda v: isinstance(v, str), "a string"),
    "reason": (lambda v: v is None or isinstance(v, str), "a string"),
    "status": (lambda v: isinstance(v, str), "a string"),
    "checkpoint_id": (_whole, "a whole number"),
    "channel": (_whole, "a whole number"),
    "attempt": (_whole, "a whole number"),
    "after_checkpoint": (lambda v: v is None or _whole(v), "a whole number"),
    "consumed": (lambda v: _whole(v) or _counts(v), "a count or counts by channel"),
    "emitted": (lambda v: v is None or _counts(v), "counts by channel"),
    "input": (lambda v: v is None or _counts(v), "counts by channel"),
    "output": (lambda v: v is None or _counts(v), "counts by channel"),
    "timers": (lambda v: v is None or _named_counts(v), "counts by operator"),
    "state_entries": (lambda v: v is None or _named_counts(v), "counts by operator"),
    "checkpointing": (lambda v: isinstance(v, dict), "an object"),
    "topology": (
        lambda v: (
            isinstance(v, dict)
            and isinstance(v.get("sources", []), list)
            and all(isinstance(s, str) for s in v.get("sources", []))
            and isinstance(v.get("channels", []), list)
            and all(
                isinstance(c, list)
                and len(c) == 4
                and isinstance(c[0], str)
                and _whole(c[1])
                and isinstance(c[2], str)
                and _whole(c[3])
                for c in v.get("channels", [])
            )
        ),
        "an object of sources (task names) and channels ([producer, output, consumer, input])",
    ),
}


def _shape_problem(event: dict[str, Any]) -> str | None:
    """What in ``event`` has another shape than ckptsim writes (None: nothing)."""
    for key, (fits, shape) in _SHAPES.items():
        if key in event and not fits(event[key]):
            return f"field {key!r} must be {shape}, got {json.dumps(event[key])[:60]}"
    return None


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str
    event: Event
    context: tuple[Event, ...] = ()
    #: the trace lacks what a check needs (an error in the input, not in the run)
    incomplete: bool = False

    def render(self) -> str:
        head = "INCOMPLETE TRACE" if self.incomplete else f"VIOLATION {self.rule}"
        lines = [f"{head}: {self.message}", f"  at {_show(self.event)}"]
        lines += [f"  see {_show(e)}" for e in self.context]
        return "\n".join(lines)


@dataclass
class TraceReport:
    """What ``check_trace`` found: the first ``violation`` (None when the trace passed; an
    incomplete trace is one too), and counts of what was checked (events, jobs, tasks,
    channels, checkpoints triggered, completed, aborted and declined by reason, consistent cuts
    and restores verified). ``summary()`` is what ``ckptsim check`` prints."""

    events: int = 0
    #: the first violation, or what makes the trace incomplete (``violation.incomplete``)
    violation: Violation | None = None
    jobs: int = 0
    triggered: int = 0
    completed: int = 0
    aborted: dict[str, int] = field(default_factory=dict)
    declined: dict[str, int] = field(default_factory=dict)
    cuts_checked: int = 0
    restores_checked: int = 0
    #: the most checkpoints (not savepoints) pending at once
    max_pending: int = 0
    channels: int = 0
    tasks: int = 0

    @property
    def ok(self) -> bool:
        return self.violation is None

    @property
    def incomplete(self) -> bool:
        return self.violation is not None and self.violation.incomplete

    def summary(self) -> str:
        aborted = ", ".join(f"{k} {v}" for k, v in sorted(self.aborted.items())) or "none"
        declined = sum(self.declined.values())
        jobs = f"{self.jobs} jobs, " if self.jobs > 1 else ""
        lines = [
            f"trace OK: {self.events} events, {jobs}{self.tasks} tasks, {self.channels} channels",
            f"  checkpoints: {self.triggered} triggered, {self.completed} completed, "
            f"{sum(self.aborted.values())} aborted ({aborted}); {declined} declines",
            f"  consistent cuts verified: {self.cuts_checked} checkpoints x {self.channels} channels",
        ]
        if self.restores_checked:
            lines.append(f"  restores verified: {self.restores_checked}")
        return "\n".join(lines)


class _Found(Exception):
    def __init__(self, violation: Violation) -> None:
        self.violation = violation


def check_trace(events: Iterable[Event]) -> TraceReport:
    """Replay ``events`` in order; the report holds the first violation, if any, or what
    makes the trace incomplete."""
    trace = list(events)
    checker = _Checker(trace)
    try:
        for event in trace:
            checker.report.events += 1
            checker.see(event)
        checker.finish(trace[-1] if trace else None)
    except _Found as found:
        checker.report.violation = found.violation
    return checker.report


def _show(event: Event) -> str:
    fields = {k: v for k, v in event.items() if k not in ("level", "job", "role", "attempt")}
    return f"#{event.get('seq', '?')} " + json.dumps(fields, sort_keys=True, default=str)


def _add_keyed_counts(into: dict[tuple[str, str], int], e: Event) -> None:
    """Add an event's pending timers and keyed state entries per operator to ``into``."""
    for kind in ("timers", "state_entries"):
        for uid, count in _str_counts(e.get(kind)).items():
            into[(uid, kind)] = into.get((uid, kind), 0) + count


def _str_counts(value: Any) -> dict[str, int]:
    """``{name: count}`` from a trace field (absent in older traces: nothing)."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): int(v) for k, v in value.items()}


def _int_keys(mapping: Any) -> dict[int, int]:
    return {int(k): int(v) for k, v in (mapping or {}).items()}


#: events that may come before the job's submission (logged by the launcher first)
_BEFORE_SUBMISSION = frozenset({"job_restoring", "setting_has_no_effect"})
#: what a task does once it runs: a task that restores a checkpoint restores it before any
_TASK_WORK = frozenset(
    {
        "barrier_received",
        "barrier_sent",
        "channel_state_captured",
        "checkpoint_acknowledged",
        "checkpoint_taken",
        "end_of_data_sent",
        "end_of_partition_sent",
        "output_ended",
        "task_finished",
        "waiting_for_final_checkpoint",
    }
)
#: what a task of an earlier attempt must not do once the job was deployed again
_ATTEMPT_BOUND = frozenset({"checkpoint_acknowledged", "checkpoint_taken"})
#: events of the job master that need no deployment (a job may fail before it deploys)
_WITHOUT_DEPLOYMENT = frozenset(
    {"job_submitted", "job_deployed", "job_finished", "job_restarting", "checkpoint_unusable"}
)


class _Checker:
    def __init__(self, trace: list[Event]) -> None:
        self.report = TraceReport()
        # what the whole trace holds, for facts that two threads may log in either order: a
        # task logs its acknowledgement after sending it (the coordinator may log the
        # completion first), and the coordinator its trigger after sending it
        self.triggered_anywhere = {
            int(e["checkpoint_id"]) for e in trace if e.get("event") == "checkpoint_triggered"
        }
        self.acked_anywhere = {
            (str(e["task"]), int(e["checkpoint_id"]))
            for e in trace
            if e.get("event") == "checkpoint_acknowledged"
        }
        self.submitted: Event | None = None
        self.next_restore: tuple[int | None, Event] | None = None
        self._new_job()

    def _new_job(self) -> None:
        self.mode: str | None = None
        self.max_concurrent: int | None = None
        self.deployed: Event | None = None
        self.sources: set[str] = set()
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
        #: checkpoint (not savepoint) id -> its checkpoint_completed event
        self.completed_checkpoints: dict[int, Event] = {}
        self.aborted: dict[int, Event] = {}
        self.savepoints: set[int] = set()
        #: synchronous savepoints (stop-with-savepoint) triggered, and those that completed
        #: (the tasks stop then, whether or not they wait for a final checkpoint)
        self.synchronous: set[int] = set()
        self.completed_synchronous: set[int] = set()
        #: the checkpoint or savepoint the run started from (``--from-checkpoint``), if any
        self.initial_restore: int | None = None
        #: checkpoint id -> the checkpoint_unusable event since the last restart
        self.unusable: dict[int, Event] = {}
        #: the checkpoint the current deployment restores (None: none), and the event saying so
        self.restoring: tuple[int | None, Event | None] = (None, None)
        #: task -> the waiting_for_final_checkpoint event (FLIP-147), this deployment
        self.waiting_final: dict[str, Event] = {}
        #: the restore of this deployment from a checkpoint of this trace: the pending timers
        #: and keyed state entries its snapshots held per operator, and those the tasks
        #: restored (and which tasks did)
        self.keyed_restore: tuple[int, dict[tuple[str, str], int], Event] | None = None
        self.keyed_restored: dict[tuple[str, str], int] = {}
        self.tasks_restored: set[str] = set()
        #: the attempt of the current deployment, and the failure since it (job_failover)
        self.attempt: int | None = None
        self.failed_over: Event | None = None
        #: (task, sink) -> its sink_committed events whose output is still committed (not
        #: retracted since), by checkpoint id (None: at the end without a final checkpoint)
        self.sink_commits: dict[tuple[str, str], dict[int | None, Event]] = {}
        #: (task, sink) -> the restored checkpoint it must retract after, and the restart
        self.must_retract: dict[tuple[str, str], tuple[int, Event]] = {}

    def fail(self, rule: str, message: str, event: Event, *context: Event | None) -> None:
        raise _Found(Violation(rule, message, event, tuple(c for c in context if c is not None)))

    def incomplete(self, message: str, event: Event, *context: Event | None) -> None:
        raise _Found(
            Violation(
                "incomplete-trace",
                message,
                event,
                tuple(c for c in context if c is not None),
                incomplete=True,
            )
        )

    # --- dispatch ---------------------------------------------------------------------------------

    def see(self, e: Event) -> None:
        name = str(e["event"])
        if name in _TASK_WORK and self.deployed is not None:
            self.check_task_attempt(name, e)
        handler = getattr(self, "on_" + name, None)
        if handler is None:
            return  # an event the checker does not read
        if name in _BEFORE_SUBMISSION:
            handler(e)
            return
        if self.submitted is None and name != "job_submitted":
            self.incomplete(
                f"{name} comes before any job_submitted event: without the job's checkpointing "
                "settings (mode, max-concurrent-checkpoints) the trace cannot be checked. Give "
                "the whole trace of a run (ckptsim run --trace FILE)",
                e,
            )
        if self.deployed is None and name not in _WITHOUT_DEPLOYMENT:
            self.incomplete(
                f"{name} comes before any job_deployed event with the job's topology: without "
                "its tasks and channels the trace cannot be checked",
                e,
                self.submitted,
            )
        handler(e)

    def on_job_restoring(self, e: Event) -> None:
        """The next job starts from a checkpoint or savepoint (logged before its submission)."""
        cid = e.get("checkpoint_id")
        self.next_restore = (None if cid is None else int(cid), e)

    def on_job_submitted(self, e: Event) -> None:
        if self.submitted is not None:  # the trace of a script that runs several jobs
            if self.job_finished is None:
                self.incomplete(
                    "a second job_submitted before the first job's job_finished: the trace "
                    "mixes two jobs, or lost the first one's end",
                    e,
                    self.submitted,
                )
            # what the earlier job's sinks committed stays committed for a job that restores
            # one of its checkpoints (the same sinks: their output goes on)
            commits = self.sink_commits
            self._new_job()
            if self.next_restore is not None:
                self.sink_commits = commits
        if self.next_restore is not None:
            self.initial_restore, said = self.next_restore
            self.restoring = self.next_restore
            self.next_restore = None
            if self.initial_restore is not None:
                self._sinks_must_retract(self.initial_restore, said)
        self.submitted = e
        self.report.jobs += 1
        config = e.get("checkpointing")
        if not isinstance(config, Mapping) or not config.get("mode"):
            self.incomplete(
                "job_submitted carries no checkpointing settings (checkpointing.mode): the "
                "trace was not written by this version of ckptsim",
                e,
            )
            return
        self.mode = str(config["mode"])
        self.max_concurrent = config.get("max_concurrent")

    def check_task_attempt(self, name: str, e: Event) -> None:
        """A task's work in this deployment: of this deployment's attempt, and after its
        restore when the deployment restores a checkpoint."""
        task = e.get("task")
        if task is None or str(task) not in self.all_tasks:
            return
        task = str(task)
        attempt = e.get("attempt")
        if (
            name in _ATTEMPT_BOUND
            and attempt is not None
            and self.attempt is not None
            and int(attempt) < self.attempt
        ):
            self.fail(
                "stale-attempt",
                f"{task} of attempt {attempt} {name.replace('_', ' ')} after the job was "
                f"deployed again as attempt {self.attempt}",
                e,
                self.deployed,
            )
        cid, said = self.restoring
        if cid is not None and task not in self.tasks_restored:
            self.fail(
                "restore-every-task",
                f"{task} ran ({name}) without restoring checkpoint {cid}, which its deployment "
                "restores (no task_restored): it started from scratch",
                e,
                said,
            )

    def on_job_failover(self, e: Event) -> None:
        self.failed_over = e

    def on_job_deployed(self, e: Event) -> None:
        # a (re)deployment: every task starts afresh (its counts too); checkpoints go on
        raw_attempt = e.get("attempt")
        self.attempt = None if raw_attempt is None else int(raw_attempt)
        self.failed_over = None
        self.last_taken.clear()
        self.barriers.clear()
        self.ended_inputs.clear()
        self.output_ended.clear()
        self.restored_input.clear()
        self.finished_tasks.clear()
        self.waiting_final.clear()
        topology = e.get("topology")
        if not isinstance(topology, Mapping) or not isinstance(topology.get("channels"), list):
            self.incomplete(
                "job_deployed carries no topology (its sources and channels): the trace was "
                "not written by this version of ckptsim",
                e,
            )
            return
        self.sources = {str(s) for s in topology.get("sources", [])}
        self.channels = [(str(u), int(o), str(d), int(i)) for u, o, d, i in topology["channels"]]
        self.inputs = {}
        for u, o, d, i in self.channels:
            self.inputs.setdefault(d, {})[i] = (u, o)
        self.all_tasks = self.sources | {c[0] for c in self.channels} | set(self.inputs)
        if not self.all_tasks:
            self.incomplete("job_deployed names no task: the topology is empty", e)
        self.deployed = e
        self.report.channels = len(self.channels)
        self.report.tasks = len(self.all_tasks)

    def on_job_finished(self, e: Event) -> None:
        self._check_restored_keyed_state(e)
        self.job_finished = e
        unfinished = sorted(self.all_tasks - self.finished_tasks)
        if e.get("status") == "FINISHED" and unfinished:
            self.fail(
                "finished-every-task",
                f"the job finished while {', '.join(unfinished)} never finished (no "
                "task_finished since the last deployment)",
                e,
                self.deployed,
            )
        if self.pending:
            cid = min(self.pending)
            self.fail(
                "ends-once",
                f"checkpoint {cid} never ended (the job finished with it pending)",
                e,
                self.pending[cid],
            )

    # --- restarts ---------------------------------------------------------------------------------

    def on_checkpoint_unusable(self, e: Event) -> None:
        if e.get("checkpoint_id") is not None:
            self.unusable[int(e["checkpoint_id"])] = e

    def on_job_restarting(self, e: Event) -> None:
        if self.deployed is not None and self.failed_over is None:
            self.fail(
                "restart-after-failure",
                "the job restarted with no failure (job_failover) since it was deployed",
                e,
                self.deployed,
            )
        raw = e.get("checkpoint_id")
        cid = None if raw is None else int(raw)
        if cid is not None and cid in self.aborted:
            self.fail(
                "restore-completed",
                f"the job restarted from checkpoint {cid}, which was aborted",
                e,
                self.aborted[cid],
            )
        if (
            cid is not None
            and cid not in self.completed_checkpoints
            and cid != self.initial_restore
        ):
            self.fail(
                "restore-completed",
                f"the job restarted from checkpoint {cid}, which never completed in this run "
                "(nor did the run start from it)",
                e,
            )
        skipped = sorted(c for c in self.completed_checkpoints if cid is None or c > cid)
        unexplained = [c for c in skipped if c not in self.unusable]
        if unexplained:
            latest = unexplained[-1]
            what = "without a checkpoint" if cid is None else f"from checkpoint {cid}"
            self.fail(
                "restore-latest",
                f"the job restarted {what} although checkpoint {latest} completed later, and "
                f"the trace gives no reason to skip checkpoint(s) {unexplained} (a fallback "
                "logs checkpoint_unusable for each checkpoint it skips)",
                e,
                self.completed_checkpoints[latest],
            )
        self.unusable.clear()
        self._check_restored_keyed_state(e)
        self._sinks_must_retract(0 if cid is None else cid, e)
        self.restoring = (cid, e)
        self.report.restores_checked += 1
        self.keyed_restored, self.tasks_restored = {}, set()
        self.keyed_restore = None
        if cid is not None and cid in self.completed_checkpoints:
            expected: dict[tuple[str, str], int] = {}
            for (_, taken_cid), taken in self.taken.items():
                if taken_cid == cid:
                    _add_keyed_counts(expected, taken)
            self.keyed_restore = (cid, expected, e)

    def _check_restored_keyed_state(self, e: Event) -> None:
        """When the deployment that restored a checkpoint ends: if every task restored, the
        pending timers and keyed state entries (window contents among them) restored per
        operator are those the checkpoint's snapshots held: none lost, none made up,
        whatever the new parallelism."""
        restore = self.keyed_restore
        if restore is None or not self.all_tasks <= self.tasks_restored:
            return
        cid, expected, said = restore
        self.keyed_restore = None
        for uid, kind in sorted(set(expected) | set(self.keyed_restored)):
            held = expected.get((uid, kind), 0)
            back = self.keyed_restored.get((uid, kind), 0)
            if held != back:
                rule, what = {
                    "timers": ("restore-timers", "pending timer(s)"),
                    "state_entries": ("restore-keyed-state", "keyed state entries"),
                }[kind]
                self.fail(
                    rule,
                    f"operator {uid} restored {back} {what} from checkpoint {cid}, whose "
                    f"snapshots held {held}",
                    e,
                    said,
                )

    # --- sinks: what a restart replays is retracted first ---------------------------------------

    def _sinks_must_retract(self, cid: int, restart: Event) -> None:
        self.must_retract = {
            key: (cid, restart)
            for key, commits in self.sink_commits.items()
            if any(k is None or k > cid for k in commits)
        }

    def on_sink_committed(self, e: Event) -> None:
        key = (str(e["task"]), str(e.get("sink")))
        self._check_retracted(key, e, "committed output again")
        raw = e.get("checkpoint_id")
        self.sink_commits.setdefault(key, {})[None if raw is None else int(raw)] = e

    def on_sink_output_retracted(self, e: Event) -> None:
        task, after = str(e["task"]), int(e["after_checkpoint"])
        sink = e.get("sink")
        for key in [k for k in self.sink_commits if k[0] == task and sink in (None, k[1])]:
            commits = self.sink_commits[key]
            for k in [k for k in commits if k is None or k > after]:
                del commits[k]
            owed = self.must_retract.get(key)
            if owed is not None and owed[0] == after:
                del self.must_retract[key]

    def _check_retracted(self, key: tuple[str, str], e: Event, what: str) -> None:
        owed = self.must_retract.get(key)
        if owed is None:
            return
        cid, restart = owed
        commits = self.sink_commits.get(key, {})
        later = sorted((k for k in commits if k is not None and k > cid), key=int)
        shown = ", ".join(map(str, later)) or "none"
        at_end = " and at its end" if None in commits else ""
        self.fail(
            "retract-after-restore",
            f"{key[0]} ({what}) without retracting the output its sink {key[1]} committed "
            f"for checkpoint(s) after checkpoint {cid} (checkpoints {shown}{at_end}), which "
            f"the job restarted from (no sink_output_retracted with after_checkpoint {cid}): "
            "the replay commits those records twice",
            e,
            restart,
            *[commits[k] for k in later[:1]],
        )

    def on_task_restored(self, e: Event) -> None:
        task = str(e["task"])
        cid, said = self.restoring
        restored = None if e.get("checkpoint_id") is None else int(e["checkpoint_id"])
        if restored != cid:
            self.fail(
                "restore-completed",
                f"{task} restored checkpoint {restored} while the job restores checkpoint {cid}",
                e,
                said,
            )
        inputs, outputs = _int_keys(e.get("input")), _int_keys(e.get("output"))
        for channel, records in inputs.items():
            self.restored_input[(task, channel)] = records
        self.tasks_restored.add(task)
        _add_keyed_counts(self.keyed_restored, e)
        if cid is None or cid not in self.completed_checkpoints:
            return  # restored from outside this trace: what it persisted is not known here
        captured = self.captured.get((task, cid), {})
        for side, recovered in (("input", inputs), ("output", outputs)):
            persisted = _int_keys(captured.get(side))
            for channel in sorted(set(recovered) | set(persisted)):
                if recovered.get(channel, 0) != persisted.get(channel, 0):
                    self.fail(
                        "restore-in-flight",
                        f"{task} recovered {recovered.get(channel, 0)} in-flight record(s) on "
                        f"{side} channel {channel} from checkpoint {cid}, whose snapshot "
                        f"persisted {persisted.get(channel, 0)} there",
                        e,
                        self.taken.get((task, cid)),
                        captured or None,
                    )

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
        if e.get("type", "CHECKPOINT") != "CHECKPOINT":
            self.savepoints.add(cid)
        if str(e.get("type", "")).startswith("SYNC_SAVEPOINT"):
            self.synchronous.add(cid)
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
        if cid not in self.savepoints:
            self.completed_checkpoints[cid] = e
        if cid in self.synchronous:
            self.completed_synchronous.add(cid)
        running = sorted(self.all_tasks - self.finished_tasks)
        missing = [t for t in running if (t, cid) not in self.taken]
        if missing:
            self.fail(
                "complete-snapshot",
                f"checkpoint {cid} completed without a snapshot of {', '.join(missing)}, "
                "which had not finished",
                e,
            )
        unacknowledged = [t for t in running if (t, cid) not in self.acked_anywhere]
        if unacknowledged:
            self.fail(
                "complete-acknowledged",
                f"checkpoint {cid} completed without an acknowledgement from "
                f"{', '.join(unacknowledged)}, which had not finished",
                e,
                self.taken.get((unacknowledged[0], cid)),
            )
        if self.mode == "EXACTLY_ONCE" and self.channels:
            self.check_cut(cid, e)

    def on_checkpoint_aborted(self, e: Event) -> None:
        reason = str(e.get("reason"))
        if reason not in REASONS:
            self.fail(
                "valid-reason", f"abort reason {reason!r} is not a CheckpointFailureReason", e
            )
        cid = self._end(e, "aborted")
        self.aborted[cid] = e
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

    def on_waiting_for_final_checkpoint(self, e: Event) -> None:
        self.waiting_final[str(e["task"])] = e

    def on_task_finished(self, e: Event) -> None:
        task = str(e["task"])
        for key in [k for k in self.must_retract if k[0] == task]:
            self._check_retracted(key, e, "finished")
        waiting = self.waiting_final.get(task)
        if waiting is not None and waiting.get("after_checkpoint") is not None:
            after = int(waiting["after_checkpoint"])
            # a completed stop-with-savepoint stops the tasks: they need no final checkpoint
            if not self.completed_synchronous and not any(
                c > after for c in self.completed_checkpoints
            ):
                self.fail(
                    "final-checkpoint",
                    f"{task} finished while waiting for its final checkpoint: no checkpoint "
                    f"after checkpoint {after} completed",
                    e,
                    waiting,
                )
        self.finished_tasks.add(task)

    def on_output_ended(self, e: Event) -> None:
        self.output_ended[str(e["task"])] = e

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
        if cid not in self.triggered_anywhere:
            self.fail(
                "taken-triggered",
                f"{task} took checkpoint {cid}, which was never triggered",
                e,
            )
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
        if not inputs:
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

    def finish(self, last: Event | None) -> None:
        if last is None:
            return
        if self.submitted is None:
            self.incomplete(
                "the trace has no job_submitted event: it cannot be checked. Give the whole "
                "trace of a run (ckptsim run --trace FILE)",
                last,
            )
        if self.job_finished is None:
            self.incomplete(
                "the trace ends before the job's job_finished event (the run was killed, or "
                "the trace was cut): it cannot show that every checkpoint ended",
                last,
                *[self.pending[c] for c in sorted(self.pending)[:1]],
            )
