"""Flink's REST API, rendered: the bodies a Flink 2.x JobManager (and its HistoryServer)
returns for a job, built from a ``JobView`` of a ckptsim job. Pure: no I/O, no clock.

Values follow Flink's (checked key for key and type for type against bodies a Flink 2.3.0
returned, ``tests/rest/flink``): timestamps are epoch milliseconds (``JobView.epoch_ms`` is
the job clock's 0), vertex ids are 32 hex digits derived from the job graph
(``vertex_ids``), ``-1`` stands for "not yet". Where ckptsim differs on purpose, the README
says so (for instance ``external_path`` is a ``file:`` path: ckptsim always writes
checkpoints to files).

``route(jobs, method, path, query)`` answers a GET; ``archive(view)`` lists every path of
a job with its body, Flink's job-archive format (``{"archive": [{"path", "json"}]}``), which
Flink's HistoryServer and ``ckptsim serve`` read.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runtime.config import (
    CheckpointConfig,
    Configuration,
    setting_text,
)
from runtime.failure import TaskFailure
from runtime.graph import JobGraph, JobVertex, flink_operator_name, flink_operator_names
from runtime.job import JobResult
from runtime.partition import Partitioner

JsonDict = dict[str, Any]
Body = JsonDict | list[Any]

#: the Flink REST API version whose bodies ckptsim renders
FLINK_VERSION = "2.3.0"
CKPTSIM_REVISION = "ckptsim"

JOB_STATUSES = (
    "INITIALIZING",
    "CREATED",
    "RUNNING",
    "FAILING",
    "FAILED",
    "CANCELLING",
    "CANCELED",
    "FINISHED",
    "RESTARTING",
    "SUSPENDED",
    "RECONCILING",
)
EXECUTION_STATES = (
    "CREATED",
    "SCHEDULED",
    "DEPLOYING",
    "INITIALIZING",
    "RUNNING",
    "FINISHED",
    "CANCELING",
    "CANCELED",
    "FAILED",
    "RECONCILING",
)
TERMINAL_JOB_STATUSES = frozenset({"FINISHED", "CANCELED", "FAILED"})
#: the keys of checkpoint statistics that hold a timestamp
TIMESTAMP_KEYS = frozenset(
    {
        "trigger_timestamp",
        "latest_ack_timestamp",
        "failure_timestamp",
        "ack_timestamp",
        "restore_timestamp",
    }
)
SHIP_STRATEGIES = {
    Partitioner.FORWARD: "FORWARD",
    Partitioner.REBALANCE: "REBALANCE",
    Partitioner.HASH: "HASH",
    Partitioner.BROADCAST: "BROADCAST",
    Partitioner.SHUFFLE: "SHUFFLE",
    Partitioner.RESCALE: "RESCALE",
    Partitioner.CUSTOM: "CUSTOM",
}
#: a task's endpoint as Flink's MiniCluster shows it (its task manager runs in the process)
ENDPOINT = "localhost:-1"
#: Flink's savepoint formats (``formatType`` of a savepoint or stop-with-savepoint request)
SAVEPOINT_FORMATS = ("CANONICAL", "NATIVE")
#: Flink's back-pressure levels: ratio <= 0.10 ok, <= 0.5 low, above high
BACKPRESSURE_LOW, BACKPRESSURE_HIGH = 0.10, 0.5


# --- the view ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SubtaskView:
    index: int
    state: str
    attempt: int = 0
    #: ``runtime.metrics.TaskIOMetrics.snapshot`` (job clock); empty: none reported yet
    metrics: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class VertexView:
    id: str
    #: ckptsim's vertex id (``source-1``): the key of checkpoint statistics
    key: str
    name: str
    parallelism: int
    max_parallelism: int
    operators: tuple[str, ...]
    #: (upstream vertex id, ship strategy)
    inputs: tuple[tuple[str, str], ...]
    subtasks: tuple[SubtaskView, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExceptionView:
    """One failure of the job (Flink's exception history entry); job clock."""

    timestamp: int
    exception: str
    stacktrace: str
    task: str | None = None
    #: Flink's failure labels (from its failure enrichers): here the failing operator
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessView:
    """The process a job runs in, as Flink shows its JobManager's and TaskManager's JVM (the
    actors side gathers it: ``actors.archive.describe_process``)."""

    #: the interpreter, e.g. ``CPython 3.11.7``
    version: str = "CPython"
    arch: str = ""
    #: the command line (Flink: the JVM's options)
    options: tuple[str, ...] = ()
    #: the module search path (Flink: the classpath)
    classpath: tuple[str, ...] = ()
    cpu_cores: int = 0
    physical_memory: int = 0
    free_memory: int = 0
    #: the process's resident memory now, and at most so far (bytes)
    memory_used: int = 0
    memory_max: int = 0
    threads: int = 0
    #: (name, collections, collected) of each garbage collector generation
    gc: tuple[tuple[str, int, int], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class JobView:
    """A job as the REST API shows it, at ``now`` (job clock ms; ``epoch_ms`` is its 0)."""

    job_id: str
    name: str
    status: str
    now: int
    epoch_ms: int
    status_history: tuple[tuple[str, int], ...]
    vertices: tuple[VertexView, ...]
    checkpoint_config: CheckpointConfig
    #: ``CheckpointStatsTracker.to_json()`` (job clock, keyed by ckptsim vertex ids)
    checkpoints: Mapping[str, Any]
    #: details by checkpoint id, each with ``subtasks`` by ckptsim vertex id
    details: Mapping[int, Mapping[str, Any]]
    exceptions: tuple[ExceptionView, ...] = ()
    parallelism: int = 1
    restart_strategy: str = ""
    user_config: Mapping[str, str] = field(default_factory=dict)
    #: checkpoint id -> the format of a savepoint taken in another than the canonical one
    savepoint_formats: Mapping[int, str] = field(default_factory=dict)
    #: the job's configuration as Flink lists it (``/jobmanager/config``): (key, value) pairs
    configuration: tuple[tuple[str, str], ...] = ()
    process: ProcessView = field(default_factory=ProcessView)

    @property
    def taskmanager_id(self) -> str:
        """The resource id of the job's task manager (ckptsim runs each job as Flink's
        MiniCluster does: one task manager, a slot per parallel subtask of a slot sharing
        group), a UUID as the MiniCluster's."""
        digest = hashlib.md5(f"taskmanager:{self.job_id}".encode(), usedforsecurity=False)
        return str(uuid.UUID(hex=digest.hexdigest()))

    @property
    def slots(self) -> int:
        """Slots as Flink's slot sharing counts them: every vertex shares the default group, so
        the job needs as many slots as its largest parallelism."""
        return max((v.parallelism for v in self.vertices), default=0)

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_JOB_STATUSES

    def epoch(self, t: int) -> int:
        return self.epoch_ms + t if t >= 0 else -1

    @property
    def start_time(self) -> int:
        return self.epoch(self.status_history[0][1]) if self.status_history else self.epoch_ms

    @property
    def end_time(self) -> int:
        if self.is_terminal and self.status_history:
            return self.epoch(self.status_history[-1][1])
        return -1

    @property
    def duration(self) -> int:
        end = self.end_time if self.end_time >= 0 else self.epoch(self.now)
        return max(0, end - self.start_time)

    def vertex(self, vertex_id: str) -> VertexView | None:
        for v in self.vertices:
            if v.id == vertex_id:
                return v
        return None

    def vertex_by_key(self, key: str) -> VertexView | None:
        for v in self.vertices:
            if v.key == key:
                return v
        return None


def vertex_ids(job: JobGraph) -> dict[str, str]:
    """Flink's ``JobVertexID``s: 32 hex digits from a hash of each vertex's operator uids and
    its inputs' ids (as Flink hashes the stream graph), so the same script gets the same ids
    in every run; a vertex keeps its id while its uids and upstream topology stay."""
    ids: dict[str, str] = {}
    for vertex in job.vertices:  # topological order: inputs come first
        inputs = sorted(
            f"{ids[e.source.vertex_id]}:{e.partitioner.value}" for e in job.inputs(vertex)
        )
        text = "|".join(vertex.uids) + "<-" + ",".join(inputs)
        ids[vertex.vertex_id] = hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()
    return ids


def job_view(
    job: JobGraph,
    checkpoint_config: CheckpointConfig,
    *,
    job_id: str,
    status: str,
    now: int,
    epoch_ms: int,
    status_history: Sequence[tuple[str, int]],
    task_states: Mapping[str, str],
    task_metrics: Mapping[str, Mapping[str, Any]],
    attempt: int,
    checkpoints: Mapping[str, Any],
    details: Mapping[int, Mapping[str, Any]],
    failures: Sequence[str] = (),
    failure_causes: Sequence[TaskFailure | None] = (),
    parallelism: int = 1,
    restart_strategy: str = "",
    savepoint_formats: Mapping[int, str] | None = None,
    configuration: Sequence[tuple[str, str]] = (),
    process: ProcessView | None = None,
) -> JobView:
    """Put a job's pieces (its graph, the JobMaster's and coordinator's state) together.
    ``task_states`` and ``task_metrics`` are keyed by ``str(TaskId)``."""
    ids = vertex_ids(job)
    vertices = []
    for vertex in job.vertices:
        subtasks = tuple(
            SubtaskView(
                index=i,
                state=task_states.get(f"{vertex.vertex_id}#{i}", "CREATED"),
                attempt=attempt,
                metrics=_operators_named(vertex, task_metrics.get(f"{vertex.vertex_id}#{i}", {})),
            )
            for i in range(vertex.parallelism)
        )
        operators = flink_operator_names(vertex)
        vertices.append(
            VertexView(
                id=ids[vertex.vertex_id],
                key=vertex.vertex_id,
                name=" -> ".join(operators),
                parallelism=vertex.parallelism,
                max_parallelism=job.max_parallelism,
                operators=operators,
                inputs=tuple(
                    (ids[e.source.vertex_id], SHIP_STRATEGIES[e.partitioner])
                    for e in job.inputs(vertex)
                ),
                subtasks=subtasks,
            )
        )
    return JobView(
        job_id=job_id,
        name=job.name,
        status=status,
        now=now,
        epoch_ms=epoch_ms,
        status_history=tuple(status_history),
        vertices=tuple(vertices),
        checkpoint_config=checkpoint_config,
        checkpoints=checkpoints,
        details=details,
        exceptions=exceptions_from(failures, status_history, job, ids, failure_causes),
        parallelism=parallelism,
        restart_strategy=restart_strategy,
        savepoint_formats=dict(savepoint_formats or {}),
        configuration=tuple(configuration),
        process=process or ProcessView(),
    )


def configuration_items(conf: Configuration) -> tuple[tuple[str, str], ...]:
    """The settings a job was given, as Flink's ``/jobmanager/config`` lists them: the key and
    the value as text (``runtime.config.setting_text``)."""
    return tuple(sorted((key, setting_text(key, value)) for key, value in conf.explicit().items()))


_TASK_FAILURE = re.compile(
    r"^task (?P<vertex>[^#\s]+)#(?P<subtask>\d+) failed: (?P<text>.*)$", re.S
)
_EXCEPTION_NAME = re.compile(r"^(?P<name>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))\b")


def exceptions_from(
    failures: Sequence[str],
    status_history: Sequence[tuple[str, int]],
    job: JobGraph,
    ids: Mapping[str, str],
    causes: Sequence[TaskFailure | None] = (),
) -> tuple[ExceptionView, ...]:
    """The exception history from ``JobResult.failures`` (in order), each timed by the
    RESTARTING or FAILING transition it caused. A failure in user code (``causes``, same
    order as ``failures``) gives its exception's name, the user's traceback as the stack
    trace and the failing operator as a failure label; another failure's text
    (``task reduce-2#0 failed: injected fault ...``) is parsed.
    """
    times = [t for s, t in status_history if s in ("RESTARTING", "FAILING")]
    out: list[ExceptionView] = []
    numbered = [
        (text, causes[i] if i < len(causes) else None)
        for i, text in enumerate(failures)
        if not text.startswith("savepoint failed")
    ]
    for n, (text, cause) in enumerate(numbered):
        when = times[n] if n < len(times) else (status_history[-1][1] if status_history else 0)
        task_name = None
        body = text
        match = _TASK_FAILURE.match(text)
        if match:
            body = match.group("text")
            try:
                vertex = job.vertex(match.group("vertex"))
            except KeyError:
                vertex = None
            if vertex is not None:  # each failure restarted every task: attempt n failed
                task_name = _task_name(vertex, int(match.group("subtask")), attempt=n)
        if cause is not None:
            out.append(
                ExceptionView(
                    timestamp=when,
                    exception=cause.exception,
                    stacktrace=cause.traceback or f"{cause.exception}: {cause.message}",
                    task=task_name,
                    labels={"operator": cause.operator},
                )
            )
            continue
        out.append(
            ExceptionView(
                timestamp=when, exception=_exception_name(body), stacktrace=body, task=task_name
            )
        )
    return tuple(out)


#: what a failure that is not the user's own exception is named (Flink's class where Flink has
#: the failure, ckptsim's own name otherwise)
_FAILURE_NAMES = (
    (
        "Exceeded checkpoint tolerable failure threshold",
        "org.apache.flink.util.FlinkRuntimeException",
    ),
    ("injected fault", "ckptsim.InjectedFault"),
)


def _exception_name(text: str) -> str:
    for start, name in _FAILURE_NAMES:
        if text.startswith(start):
            return name
    match = _EXCEPTION_NAME.match(text)
    return match.group("name") if match else "ckptsim.JobFailure"


def _task_name(vertex: JobVertex, subtask: int, *, attempt: int) -> str:
    """Flink's name of a subtask's execution: ``CHAIN (i/n) - execution #attempt``."""
    name = " -> ".join(flink_operator_names(vertex))
    return f"{name} ({subtask + 1}/{vertex.parallelism}) - execution #{attempt}"


# --- timestamps and ids in checkpoint statistics --------------------------------------------------


def _flink_stats(body: Any, view: JobView) -> Any:
    """Checkpoint statistics as Flink shows them: epoch timestamps, vertex ids in hex,
    ``file:`` paths."""
    if isinstance(body, list):
        return [_flink_stats(v, view) for v in body]
    if not isinstance(body, dict):
        return body
    out: JsonDict = {}
    for key, value in body.items():
        if key in TIMESTAMP_KEYS and isinstance(value, int) and not isinstance(value, bool):
            out[key] = view.epoch(value)
        elif key == "external_path":
            out[key] = _file_uri(value)
        elif key == "tasks" and isinstance(value, dict):
            out[key] = {_hex(view, k): _flink_stats(v, view) for k, v in value.items()}
        else:
            out[key] = _flink_stats(value, view)
    if out.get("savepointFormat") and out.get("id") in view.savepoint_formats:
        out["savepointFormat"] = view.savepoint_formats[out["id"]]
    return out


def _hex(view: JobView, key: str) -> str:
    vertex = view.vertex_by_key(key)
    return vertex.id if vertex is not None else key


def _file_uri(path: Any) -> Any:
    """Flink's pointer of a file-system checkpoint: ``file:/abs/path``."""
    if isinstance(path, str) and path.startswith("/"):
        return "file:" + path
    return path


# --- bodies -------------------------------------------------------------------------------------


def config_body(*, history: bool = False, refresh_interval: int = 3000) -> JsonDict:
    """``GET /config`` (the dashboard's settings)."""
    return {
        "refresh-interval": refresh_interval,
        "timezone-name": "Coordinated Universal Time",
        "timezone-offset": 0,
        "flink-version": FLINK_VERSION,
        "flink-revision": CKPTSIM_REVISION,
        "features": {
            "web-submit": False,
            # Flink's dashboard cancels with GET /jobs/:jobid/yarn-cancel, which ckptsim does
            # not act on (docs/rest-security.md): its Cancel button stays hidden
            "web-cancel": False,
            "web-rescale": False,
            "web-history": history,
        },
    }


def _task_counts(view: JobView) -> dict[str, int]:
    counts = dict.fromkeys(EXECUTION_STATES, 0)
    for v in view.vertices:
        for s in v.subtasks:
            counts[s.state] = counts.get(s.state, 0) + 1
    return counts


def overview_body(views: Sequence[JobView], *, archived: Sequence[JsonDict] = ()) -> JsonDict:
    """``GET /overview``: a task manager per job run in this process (Flink's MiniCluster),
    each with the slots the job's slot sharing needs; a job that ended frees its slots and
    its task manager stays (as a session cluster's)."""
    states = [v.status for v in views] + [j.get("state", "") for j in archived]
    return {
        "taskmanagers": len(views),
        "slots-total": sum(v.slots for v in views),
        "slots-available": sum(v.slots for v in views if v.is_terminal),
        "jobs-running": sum(1 for s in states if s not in TERMINAL_JOB_STATUSES),
        "jobs-finished": states.count("FINISHED"),
        "jobs-cancelled": states.count("CANCELED"),
        "jobs-failed": states.count("FAILED"),
        "flink-version": FLINK_VERSION,
        "flink-commit": CKPTSIM_REVISION,
    }


def job_overview_entry(view: JobView) -> JsonDict:
    counts = _task_counts(view)
    last = view.status_history[-1][1] if view.status_history else 0
    return {
        "jid": view.job_id,
        "name": view.name,
        "jobType": "STREAMING",
        "schedulerType": "Default",
        "start-time": view.start_time,
        "end-time": view.end_time,
        "duration": view.duration,
        "state": view.status,
        "last-modification": view.epoch(last),
        "tasks": {
            "running": counts["RUNNING"],
            "canceling": counts["CANCELING"],
            "canceled": counts["CANCELED"],
            "total": sum(counts.values()),
            "created": counts["CREATED"],
            "scheduled": counts["SCHEDULED"],
            "deploying": counts["DEPLOYING"],
            "reconciling": counts["RECONCILING"],
            "finished": counts["FINISHED"],
            "initializing": counts["INITIALIZING"],
            "failed": counts["FAILED"],
        },
        "pending-operators": 0,
    }


def jobs_overview_body(views: Sequence[JobView]) -> JsonDict:
    """``GET /jobs/overview``."""
    return {"jobs": [job_overview_entry(v) for v in views]}


def applications_overview_body(jobs: Sequence[JsonDict]) -> JsonDict:
    """``GET /applications/overview`` (Flink 2.3's dashboard asks; one application per job,
    as Flink's ``SingleJobApplication``)."""
    return {
        "applications": [
            {
                "id": j["jid"],
                "name": f"SingleJobApplication({j['name']})",
                "start-time": j["start-time"],
                "end-time": j["end-time"],
                "duration": j["duration"],
                "status": application_status(j["state"]),
                "jobs": {j["state"]: 1},
            }
            for j in jobs
        ]
    }


def application_body(view: JobView) -> JsonDict:
    """``GET /applications/:applicationid`` (the application of one job)."""
    entry = job_overview_entry(view)
    latest = {status: view.epoch(t) for status, t in view.status_history}
    return {
        "id": view.job_id,
        "name": f"SingleJobApplication({view.name})",
        "status": application_status(view.status),
        "start-time": view.start_time,
        "end-time": view.end_time,
        "duration": view.duration,
        "timestamps": {
            s: latest.get(s, 0)
            for s in (
                "CREATED",
                "FAILING",
                "FAILED",
                "RUNNING",
                "CANCELED",
                "CANCELING",
                "FINISHED",
            )
        },
        "jobs": [entry],
    }


def application_status(state: str) -> str:
    return state if state in ("FINISHED", "FAILED", "CANCELED", "RUNNING") else "RUNNING"


def _vertex_state(vertex: VertexView) -> str:
    """Flink's aggregate of the subtasks' states."""
    states = [s.state for s in vertex.subtasks]
    for state in ("FAILED", "CANCELING", "CANCELED", "RUNNING", "INITIALIZING", "DEPLOYING"):
        if state in states:
            return state
    if states and all(s == "FINISHED" for s in states):
        return "FINISHED"
    return "CREATED" if "CREATED" in states else (states[0] if states else "CREATED")


def _subtask_times(view: JobView, s: SubtaskView) -> tuple[int, int, int]:
    start = int(s.metrics.get("started_at", -1))
    end = int(s.metrics.get("ended_at", -1))
    start_ts, end_ts = view.epoch(start), view.epoch(end)
    duration = -1 if start < 0 else (end if end >= 0 else view.now) - start
    return start_ts, end_ts, duration


def _vertex_times(view: JobView, vertex: VertexView) -> tuple[int, int, int]:
    times = [_subtask_times(view, s) for s in vertex.subtasks]
    starts = [t[0] for t in times if t[0] >= 0]
    start = min(starts) if starts else -1
    ends = [t[1] for t in times]
    end = max(ends) if ends and all(e >= 0 for e in ends) else -1
    duration = -1 if start < 0 else (end if end >= 0 else view.epoch(view.now)) - start
    return start, end, duration


def _io(view: JobView, vertex: VertexView, s: SubtaskView) -> JsonDict:
    m = s.metrics
    return {
        "read-bytes": _read_bytes(view, vertex, s),
        "read-bytes-complete": True,
        "write-bytes": int(m.get("bytes_out", 0)),
        "write-bytes-complete": True,
        "read-records": int(m.get("records_in", 0)) if vertex.inputs else 0,
        "read-records-complete": True,
        "write-records": int(m.get("records_out", 0)),
        "write-records-complete": True,
        "accumulated-backpressured-time": int(m.get("backpressured_ms", 0)),
        "accumulated-idle-time": int(m.get("idle_ms", 0)),
        "accumulated-busy-time": float(m.get("busy_ms", 0)),
    }


def _read_bytes(view: JobView, vertex: VertexView, s: SubtaskView) -> int:
    """Bytes in, at the upstream vertices' average bytes per record written (a task counts
    the buffers it writes, not those it reads)."""
    if not vertex.inputs:
        return 0
    written = records = 0
    for upstream_id, _ in vertex.inputs:
        upstream = view.vertex(upstream_id)
        if upstream is None:
            continue
        for u in upstream.subtasks:
            written += int(u.metrics.get("bytes_out", 0))
            records += int(u.metrics.get("records_out", 0))
    return int(s.metrics.get("records_in", 0)) * written // records if records else 0


def _sum_io(rows: Sequence[JsonDict]) -> JsonDict:
    out: JsonDict = {}
    for key in (
        "read-bytes",
        "write-bytes",
        "read-records",
        "write-records",
        "accumulated-backpressured-time",
        "accumulated-idle-time",
        "accumulated-busy-time",
    ):
        total = sum(r[key] for r in rows)
        out[key] = total
        if not key.startswith("accumulated"):
            out[f"{key}-complete"] = True
    ordered = [
        "read-bytes",
        "read-bytes-complete",
        "write-bytes",
        "write-bytes-complete",
        "read-records",
        "read-records-complete",
        "write-records",
        "write-records-complete",
        "accumulated-backpressured-time",
        "accumulated-idle-time",
        "accumulated-busy-time",
    ]
    result = {k: out[k] for k in ordered}
    # Flink sums the back-pressured and idle times as longs, the busy time as a double
    result["accumulated-busy-time"] = float(result["accumulated-busy-time"])
    return result


def _state_counts(states: Sequence[str]) -> dict[str, int]:
    counts = dict.fromkeys(EXECUTION_STATES, 0)
    for s in states:
        counts[s] = counts.get(s, 0) + 1
    return counts


def job_details_body(view: JobView) -> JsonDict:
    """``GET /jobs/:jobid``."""
    latest: dict[str, int] = {}
    for status, t in view.status_history:
        latest[status] = view.epoch(t)
    if view.status_history:
        latest.setdefault("INITIALIZING", view.start_time)
    vertices = []
    all_states: list[str] = []
    for v in view.vertices:
        start, end, duration = _vertex_times(view, v)
        states = [s.state for s in v.subtasks]
        all_states += states
        vertices.append(
            {
                "id": v.id,
                "slotSharingGroupId": _slot_sharing_group(view),
                "name": v.name,
                "maxParallelism": v.max_parallelism,
                "parallelism": v.parallelism,
                "status": _vertex_state(v),
                "start-time": start,
                "end-time": end,
                "duration": duration,
                "tasks": _state_counts(states),
                "metrics": _sum_io([_io(view, v, s) for s in v.subtasks]),
            }
        )
    return {
        "jid": view.job_id,
        "application-id": view.job_id,
        "name": view.name,
        "isStoppable": False,
        "state": view.status,
        "job-type": "STREAMING",
        "schedulerType": "Default",
        "start-time": view.start_time,
        "end-time": view.end_time,
        "duration": view.duration,
        "maxParallelism": -1,
        "now": view.epoch(view.now),
        "timestamps": {status: latest.get(status, 0) for status in JOB_STATUSES},
        "vertices": vertices,
        "status-counts": _state_counts(all_states),
        "plan": _plan(view),
        "pending-operators": 0,
    }


def _slot_sharing_group(view: JobView) -> str:
    return hashlib.md5(f"slots:{view.job_id}".encode(), usedforsecurity=False).hexdigest()


def _plan(view: JobView) -> JsonDict:
    nodes = []
    for v in reversed(view.vertices):  # as Flink lists them: sinks first
        head, *chained = v.operators
        node: JsonDict = {
            "id": v.id,
            "operator": "",
            "parallelism": v.parallelism,
            "operator_strategy": "",
            "description": head + "<br/>" + "".join(f"+- {op}<br/>" for op in chained),
            "optimizer_properties": {},
        }
        if v.inputs:
            node["inputs"] = [
                {"id": up, "num": n, "exchange": "pipelined_bounded", "ship_strategy": ship}
                for n, (up, ship) in enumerate(v.inputs)
            ]
        nodes.append(node)
    return {"jid": view.job_id, "name": view.name, "type": "STREAMING", "nodes": nodes}


def job_plan_body(view: JobView) -> JsonDict:
    """``GET /jobs/:jobid/plan``."""
    return {"plan": _plan(view)}


def job_config_body(view: JobView) -> JsonDict:
    """``GET /jobs/:jobid/config``."""
    return {
        "jid": view.job_id,
        "name": view.name,
        "execution-config": {
            "restart-strategy": view.restart_strategy,
            "job-parallelism": view.parallelism,
            "object-reuse-mode": False,
            "user-config": dict(view.user_config),
        },
    }


def _aggregate(values: Sequence[int | float]) -> JsonDict:
    """Flink's ``AggregatedMetric`` over the subtasks (p25 ... p95, whole numbers)."""
    ordered = sorted(int(v) for v in values) or [0]

    def pct(p: float) -> int:
        # Flink: the value at rank ceil(p * n) (its ``DescriptiveStatistics``' nearest rank)
        index = max(0, min(len(ordered) - 1, -(-int(p * 100) * len(ordered) // 100) - 1))
        return ordered[index]

    return {
        "p25": pct(0.25),
        "min": ordered[0],
        "avg": sum(ordered) // len(ordered),
        "median": pct(0.5),
        "max": ordered[-1],
        "sum": sum(ordered),
        "p95": pct(0.95),
        "p75": pct(0.75),
    }


def _status_duration(view: JobView, s: SubtaskView) -> dict[str, int]:
    _, _, duration = _subtask_times(view, s)
    return {
        "DEPLOYING": 0,
        "RUNNING": max(duration, 0),
        "CREATED": 0,
        "SCHEDULED": 0,
        "INITIALIZING": 0,
    }


def subtask_body(view: JobView, vertex: VertexView, s: SubtaskView) -> JsonDict:
    """``GET /jobs/:jobid/vertices/:vertexid/subtasks/:subtaskindex`` (its current attempt;
    also ``.../attempts/:attempt`` for that attempt)."""
    start, end, duration = _subtask_times(view, s)
    return {
        "subtask": s.index,
        "status": s.state,
        "attempt": s.attempt,
        "endpoint": ENDPOINT,
        "start-time": start,
        "end-time": end,
        "duration": duration,
        "metrics": _io(view, vertex, s),
        "taskmanager-id": view.taskmanager_id,
        "status-duration": _status_duration(view, s),
        "start_time": start,
    }


_METRIC_KEYS = (
    "write-records",
    "accumulated-backpressured-time",
    "accumulated-idle-time",
    "write-bytes",
    "read-bytes",
    "read-records",
    "accumulated-busy-time",
)
_DURATIONS = ("CREATED", "RUNNING", "INITIALIZING", "SCHEDULED", "DEPLOYING")


def _aggregated(rows: Sequence[JsonDict]) -> JsonDict:
    return {
        "metrics": {k: _aggregate([r["metrics"][k] for r in rows]) for k in _METRIC_KEYS},
        "status-duration": {
            k: _aggregate([r["status-duration"][k] for r in rows]) for k in _DURATIONS
        },
    }


def vertex_details_body(view: JobView, vertex: VertexView) -> JsonDict:
    """``GET /jobs/:jobid/vertices/:vertexid``."""
    subtasks = [subtask_body(view, vertex, s) for s in vertex.subtasks]
    return {
        "id": vertex.id,
        "name": vertex.name,
        "parallelism": vertex.parallelism,
        "maxParallelism": vertex.max_parallelism,
        "now": view.epoch(view.now),
        "subtasks": subtasks,
        "aggregated": _aggregated(subtasks),
    }


def subtask_times_body(view: JobView, vertex: VertexView) -> JsonDict:
    """``GET /jobs/:jobid/vertices/:vertexid/subtasktimes``: when each subtask entered each
    execution state (0: not (yet)). ckptsim deploys a task and runs it at once: it is
    SCHEDULED, DEPLOYING, INITIALIZING and RUNNING from the moment it started."""
    created = view.epoch(view.status_history[0][1]) if view.status_history else 0
    subtasks = []
    for s in vertex.subtasks:
        start, end, duration = _subtask_times(view, s)
        timestamps = dict.fromkeys(EXECUTION_STATES, 0)
        timestamps["CREATED"] = created
        if start >= 0:
            for state in ("SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING"):
                timestamps[state] = start
        if end >= 0 and s.state in timestamps:
            timestamps[s.state] = end
        subtasks.append(
            {
                "subtask": s.index,
                "endpoint": ENDPOINT,
                "duration": duration,
                "timestamps": timestamps,
            }
        )
    return {
        "id": vertex.id,
        "name": vertex.name,
        "now": view.epoch(view.now),
        "subtasks": subtasks,
    }


def vertex_taskmanagers_body(view: JobView, vertex: VertexView) -> JsonDict:
    """``GET /jobs/:jobid/vertices/:vertexid/taskmanagers``: the vertex's subtasks by task
    manager (one: the job's)."""
    rows = [subtask_body(view, vertex, s) for s in vertex.subtasks]
    start, end, duration = _vertex_times(view, vertex)
    return {
        "id": vertex.id,
        "name": vertex.name,
        "now": view.epoch(view.now),
        "taskmanagers": [
            {
                "endpoint": ENDPOINT,
                "status": _vertex_state(vertex),
                "start-time": start,
                "end-time": end,
                "duration": duration,
                "metrics": _sum_io([r["metrics"] for r in rows]),
                "status-counts": _state_counts([s.state for s in vertex.subtasks]),
                "taskmanager-id": view.taskmanager_id,
                "aggregated": _aggregated(rows),
            }
        ],
    }


def job_accumulators_body(view: JobView) -> JsonDict:
    """``GET /jobs/:jobid/accumulators`` (ckptsim has no accumulators)."""
    return {
        "job-accumulators": [],
        "user-task-accumulators": [],
        "serialized-user-task-accumulators": {},
    }


def vertex_accumulators_body(vertex: VertexView) -> JsonDict:
    """``GET /jobs/:jobid/vertices/:vertexid/accumulators``."""
    return {"id": vertex.id, "user-accumulators": []}


def subtasks_accumulators_body(vertex: VertexView) -> JsonDict:
    """``GET /jobs/:jobid/vertices/:vertexid/subtasks/accumulators``."""
    return {
        "id": vertex.id,
        "parallelism": vertex.parallelism,
        "subtasks": [
            {
                "subtask": s.index,
                "attempt": s.attempt,
                "endpoint": ENDPOINT,
                "user-accumulators": [],
            }
            for s in vertex.subtasks
        ],
    }


def attempt_accumulators_body(view: JobView, vertex: VertexView, s: SubtaskView) -> JsonDict:
    """``GET .../subtasks/:subtaskindex/attempts/:attempt/accumulators``; ``id`` is Flink's
    execution attempt id (execution graph, vertex, subtask, attempt)."""
    graph = hashlib.md5(f"executiongraph:{view.job_id}".encode(), usedforsecurity=False)
    return {
        "subtask": s.index,
        "attempt": s.attempt,
        "id": f"{graph.hexdigest()}_{vertex.id}_{s.index}_{s.attempt}",
        "user-accumulators": [],
    }


def _subtask_rates(view: JobView, vertex: VertexView, s: SubtaskView) -> dict[str, float]:
    """A subtask's task metrics as Flink names them: counters, and their rates as Flink's
    ``MeterView`` s and ``TimerGauge`` s give them (``runtime.metrics``: over the last minute,
    sampled every 5 s of the job clock; a rate is a double, a time per second a whole number,
    busy time 1000 minus the others)."""
    io = _io(view, vertex, s)
    m = s.metrics
    records_in, records_out = float(io["read-records"]), float(io["write-records"])
    in_rate = float(m.get("records_in_per_s", 0.0)) if vertex.inputs else 0.0
    per_record = float(io["read-bytes"]) / records_in if records_in else 0.0
    bp = int(m.get("backpressured_ms_per_s", 0))
    idle = int(m.get("idle_ms_per_s", 0))
    return {
        "numRecordsIn": records_in,
        "numRecordsOut": records_out,
        "numBytesIn": float(io["read-bytes"]),
        "numBytesOut": float(io["write-bytes"]),
        "numBuffersOut": float(m.get("buffers_out", 0)),
        "numRecordsInPerSecond": in_rate,
        "numRecordsOutPerSecond": float(m.get("records_out_per_s", 0.0)),
        "numBytesInPerSecond": in_rate * per_record,
        "numBytesOutPerSecond": float(m.get("bytes_out_per_s", 0.0)),
        "numBuffersOutPerSecond": float(m.get("buffers_out_per_s", 0.0)),
        "mailboxMailsPerSecond": float(m.get("mails_per_s", 0.0)),
        "numFiredTimers": float(m.get("fired_timers", 0)),
        "numFiredTimersPerSecond": float(m.get("fired_timers_per_s", 0.0)),
        "backPressuredTimeMsPerSecond": bp,
        # a task here never blocks inside a record waiting for a buffer (Flink's hard
        # back-pressure): with no credit it stops taking input, Flink's soft back-pressure
        "softBackPressuredTimeMsPerSecond": bp,
        "hardBackPressuredTimeMsPerSecond": 0,
        "idleTimeMsPerSecond": idle,
        "busyTimeMsPerSecond": 1000.0 - min(bp + idle, 1000),
        "accumulateBackPressuredTimeMs": float(io["accumulated-backpressured-time"]),
        "accumulateIdleTimeMs": float(io["accumulated-idle-time"]),
        "accumulateBusyTimeMs": float(io["accumulated-busy-time"]),
    }


def _metric_text(value: float) -> str:
    """A metric's value as Flink's metric fetcher gives it: text, whole numbers without
    decimals."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def vertex_metrics(view: JobView, vertex: VertexView) -> dict[str, str]:
    """Every metric of a vertex's subtasks, ``<subtask>.<name>`` -> value
    (``GET /jobs/:jobid/vertices/:vertexid/metrics``): the task's, and its operators' as
    ``<subtask>.<operator>.<name>`` (the user's under their groups)."""
    out: dict[str, str] = {}
    for s in vertex.subtasks:
        for name, value in subtask_metric_values(view, vertex, s).items():
            out[f"{s.index}.{name}"] = _value_text(name, value)
    return out


def _value_text(name: str, value: float | int | str) -> str:
    """A metric's value as text: a rate (a meter's) as Flink's doubles (``0.0``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):  # a boolean gauge, as Java prints it
        return "true" if value else "false"
    if name.endswith(_TIMER_GAUGES):  # a TimerGauge's: a whole number (a long in Flink)
        return str(int(value))
    return repr(float(value)) if name.endswith("PerSecond") else _metric_text(value)


#: Flink's ``TimerGauge`` metrics (longs; the other ``...PerSecond`` are doubles)
_TIMER_GAUGES = (
    "backPressuredTimeMsPerSecond",
    "softBackPressuredTimeMsPerSecond",
    "hardBackPressuredTimeMsPerSecond",
    "idleTimeMsPerSecond",
)


def subtask_metric_values(
    view: JobView, vertex: VertexView, s: SubtaskView
) -> dict[str, float | int | str]:
    """A subtask's metrics by Flink's identifier below the subtask: the task's (``_subtask_rates``,
    its input watermark, the last checkpoint's alignment time and start delay), each
    operator's (``Map.numRecordsIn``, ``Map.currentInputWatermark``) and the user's
    (``Map.<groups>.<name>``: a counter's count, a gauge's value, a meter's rate, a
    distribution's text)."""
    values: dict[str, float | int | str] = dict(_subtask_rates(view, vertex, s))
    m = s.metrics
    if "backpressured" in m:
        values["isBackPressured"] = bool(m["backpressured"])
    if "mailboxQueueSize" in m:
        values["mailboxQueueSize"] = int(m["mailboxQueueSize"])
    for name, group in _BUFFER_METRICS.items():
        if name in m:
            values[f"{group}.{name}"] = m[name]
    names = ["checkpointStartDelayNanos"]
    if vertex.inputs:  # a task with network input: its input watermark, its alignment
        names += ["currentInputWatermark", "checkpointAlignmentTime"]
    for name in names:
        if name in m:
            values[name] = int(m[name])
    for operator, op in dict(m.get("operators", {})).items():
        scope = metric_scope_name(operator)
        for name in ("numRecordsIn", "numRecordsOut"):
            values[f"{scope}.{name}"] = int(op[name])
            # the task's MeterView of it (runtime.metrics), sampled with the task's own: a
            # view not sampled yet is 0.0, as the task's rates are (never count / run time)
            values[f"{scope}.{name}PerSecond"] = float(op.get(f"{name}PerSecond", 0.0))
        for name in _IF_REPORTED:
            if name in op:
                values[f"{scope}.{name}"] = int(op[name])
        for user in op.get("user", ()):
            parts = (scope, *map(metric_scope_name, (*user["scope"], user["name"])))
            values[".".join(parts)] = user_metric_value(user)
    return values


#: Flink's metrics of every operator (``subtask_metric_values``; a window operator's
#: ``numLateRecordsDropped`` too)
OPERATOR_METRICS = (
    "numRecordsIn",
    "numRecordsOut",
    "numRecordsInPerSecond",
    "numRecordsOutPerSecond",
    "currentInputWatermark",
    "currentOutputWatermark",
    "numLateRecordsDropped",
    "watermarkAlignmentDrift",
)

#: the operator metrics some operators have: the watermarks, a window's late records, an
#: aligned source's drift
_IF_REPORTED = (
    "currentInputWatermark",
    "currentOutputWatermark",
    "numLateRecordsDropped",
    "watermarkAlignmentDrift",
)

#: Flink's network buffer gauges of a task, by the group they are in
#: (``NettyShuffleMetricFactory``)
_BUFFER_METRICS = {
    "inPoolUsage": "Shuffle.Netty.Input.Buffers",
    "inputQueueLength": "Shuffle.Netty.Input.Buffers",
    "outPoolUsage": "Shuffle.Netty.Output.Buffers",
    "outputQueueLength": "Shuffle.Netty.Output.Buffers",
}

#: the task metrics in a group below the task (``Shuffle.Netty...``), not an operator's
TASK_GROUPS = tuple(sorted(set(_BUFFER_METRICS.values())))


def metric_scope_name(name: str) -> str:
    """A name in a metric's identifier as Flink's metric query service writes it (space,
    ``.``, ``:`` and ``,`` become ``_``: ``Source: src`` -> ``Source__src``)."""
    return re.sub(r"[ .:,]", "_", name)


def user_metric_value(user: Mapping[str, Any]) -> float | int | str:
    """A user metric's value as Flink's REST API gives it (``MetricGroup.snapshot`` entries)."""
    value = user["value"]
    if user["kind"] == "meter":  # its rate, a double
        return repr(float(value["rate"]))
    if user["kind"] == "distribution":
        return str(value["text"])
    if isinstance(value, bool):
        return str(value).lower()
    return value if isinstance(value, int | float | str) else str(value)


def _operators_named(vertex: JobVertex, metrics: Mapping[str, Any]) -> Mapping[str, Any]:
    """A task's metrics with its operators' keyed by their names in Flink's graph (not by
    uid); an operator Flink's graph has not is left out."""
    operators = metrics.get("operators")
    if not operators:
        return metrics
    names = {op.uid: flink_operator_name(op) for op in vertex.operators}
    named = {names[uid][:80]: m for uid, m in operators.items() if names.get(uid)}
    return {**metrics, "operators": named}


#: Flink's job metrics of the time spent in a state (the current stretch; ckptsim: 0)
_JOB_STATE_TIMES = (
    "created",
    "initializing",
    "deploying",
    "running",
    "restarting",
    "cancelling",
    "failing",
    "allSubTasksRunningOrFinished",
)


def job_metrics(view: JobView) -> dict[str, str]:
    """``GET /jobs/:jobid/metrics``: the job's checkpoint metrics and its availability, as
    Flink's JobManager job metric group has them."""
    stats = checkpoints_body(view) if view.checkpoints else {}
    counts = stats.get("counts", {})
    latest = stats.get("latest") or {}
    completed = latest.get("completed") or {}
    restored = latest.get("restored") or {}
    restarts = max(0, sum(1 for status, _ in view.status_history if status == "RESTARTING"))
    running = [t for status, t in view.status_history if status == "RUNNING"]
    uptime = view.now - running[-1] if running and view.status == "RUNNING" else 0
    values: dict[str, int | str] = {
        "numberOfCompletedCheckpoints": int(counts.get("completed", 0)),
        "numberOfFailedCheckpoints": int(counts.get("failed", 0)),
        "numberOfInProgressCheckpoints": int(counts.get("in_progress", 0)),
        "totalNumberOfCheckpoints": int(counts.get("total", 0)),
        "lastCompletedCheckpointId": int(completed.get("id", -1)),
        "lastCheckpointDuration": int(completed.get("end_to_end_duration", -1)),
        "lastCheckpointSize": int(completed.get("checkpointed_size", -1)),
        "lastCheckpointFullSize": int(completed.get("state_size", -1)),
        "lastCheckpointProcessedData": int(completed.get("processed_data", -1)),
        "lastCheckpointPersistedData": int(completed.get("persisted_data", -1)),
        "lastCheckpointExternalPath": str(completed.get("external_path", "n/a")),
        "lastCheckpointRestoreTimestamp": int(restored.get("restore_timestamp", -1)),
        "lastCheckpointCompletedTimestamp": int(completed.get("latest_ack_timestamp", -1)),
        "lastCheckpointMetadataSize": -1,
        "numRestarts": restarts,
        "numRescales": 0,
        "uptime": max(0, uptime),
        "downtime": 0,
        **{f"{state}Time": 0 for state in _JOB_STATE_TIMES},
    }
    return {k: v if isinstance(v, str) else _metric_text(v) for k, v in values.items()}


def metrics_body(available: Mapping[str, str], query: Mapping[str, str]) -> list[JsonDict]:
    """A metrics endpoint as Flink's: without ``get`` the ids of its metrics, with
    ``get=a,b`` the values of those it has (as text)."""
    names = query.get("get")
    if names is None:
        return [{"id": name} for name in available]
    return [
        {"id": name, "value": available[name]}
        for name in dict.fromkeys(n for n in names.split(",") if n)
        if name in available
    ]


def flamegraph_body(view: JobView) -> JsonDict:
    """``GET /jobs/:jobid/vertices/:vertexid/flamegraph``: none (Flink's answer while
    ``rest.flamegraph.enabled`` is off)."""
    return {"endTimestamp": -2}


def execution_result_body(view: JobView) -> JsonDict:
    """``GET /jobs/:jobid/execution-result``."""
    if not view.is_terminal:
        return {"status": {"id": "IN_PROGRESS"}}
    status = {"FINISHED": "SUCCEEDED", "CANCELED": "CANCELED", "FAILED": "FAILED"}[view.status]
    result: JsonDict = {
        "id": view.job_id,
        "application-status": status,
        "accumulator-results": {},
        "net-runtime": view.duration,
    }
    if view.status == "FAILED" and view.exceptions:
        last = view.exceptions[-1]
        result["failure-cause"] = {
            "class": last.exception,
            "stack-trace": last.stacktrace,
            "serialized-throwable": "",
        }
    return {"status": {"id": "COMPLETED"}, "job-execution-result": result}


def rescales_error(view: JobView, what: str) -> JsonDict:
    """The bodies Flink answers (404) for ``/jobs/:jobid/rescales/...`` of a job without the
    adaptive scheduler (and archives: the dashboard shows its Rescales tab only with it, so
    ckptsim's archives leave them out)."""
    if what == "config":
        return {"errors": [f"AdaptiveScheduler is not enabled for this job ({view.job_id})."]}
    return {
        "errors": [
            f"The job `{view.job_id}` has not enabled the `Adaptive` scheduler, or it has been "
            "enabled but the value of configuration option "
            "`web.adaptive-scheduler.rescale-history.size` has not been set to greater than `0`."
        ]
    }


# --- the task manager and the job manager (this process) -----------------------------------------


def _resources(cpu: float, memory: int) -> JsonDict:
    return {
        "cpuCores": cpu,
        "taskHeapMemory": memory,
        "taskOffHeapMemory": 0,
        "managedMemory": 0,
        "networkMemory": 0,
        "extendedResources": {},
    }


def _memory_configuration(process: ProcessView) -> JsonDict:
    """Flink's memory model of a task manager; ckptsim's one pool is the process's memory."""
    return {
        "frameworkHeap": 0,
        "taskHeap": process.physical_memory,
        "frameworkOffHeap": 0,
        "taskOffHeap": 0,
        "networkMemory": 0,
        "managedMemory": 0,
        "jvmMetaspace": 0,
        "jvmOverhead": 0,
        "totalFlinkMemory": process.physical_memory,
        "totalProcessMemory": process.physical_memory,
    }


def taskmanager_entry(view: JobView, index: int = 0) -> JsonDict:
    """A task manager in ``GET /taskmanagers``: the job's (``index``: its place in the list)."""
    process = view.process
    slots = view.slots
    free = slots if view.is_terminal else 0
    running = 0 if view.is_terminal else sum(len(v.subtasks) for v in view.vertices)
    return {
        "id": view.taskmanager_id,
        "path": f"ckptsim://localhost/taskmanager_{index}",
        "dataPort": -1,
        "jmxPort": -1,
        "timeSinceLastHeartbeat": view.epoch(view.now),
        "slotsNumber": slots,
        "freeSlots": free,
        "assignedTasks": running,
        "totalResource": _resources(float(process.cpu_cores), process.physical_memory),
        "freeResource": _resources(
            float(process.cpu_cores) if free else 0.0, process.physical_memory if free else 0
        ),
        "hardware": {
            "cpuCores": process.cpu_cores,
            "physicalMemory": process.physical_memory,
            "freeMemory": process.free_memory,
            "managedMemory": 0,
        },
        "memoryConfiguration": _memory_configuration(process),
    }


def taskmanagers_body(views: Sequence[JobView]) -> JsonDict:
    """``GET /taskmanagers``: a task manager per job run in this process."""
    return {"taskmanagers": [taskmanager_entry(v, i) for i, v in enumerate(views)]}


def taskmanager_body(view: JobView, index: int = 0) -> JsonDict:
    """``GET /taskmanagers/:taskmanagerid``."""
    process = view.process
    share = process.cpu_cores / view.slots if view.slots else 0.0
    allocated = (
        []
        if view.is_terminal
        else [
            {
                "jobId": view.job_id,
                "resource": _resources(share, 0),
                "assignedTasks": sum(1 for v in view.vertices if len(v.subtasks) > slot),
            }
            for slot in range(view.slots)
        ]
    )
    return {
        **taskmanager_entry(view, index),
        "allocatedSlots": allocated,
        "metrics": {
            "heapUsed": process.memory_used,
            "heapCommitted": process.memory_used,
            "heapMax": process.physical_memory,
            "nonHeapUsed": 0,
            "nonHeapCommitted": 0,
            "nonHeapMax": -1,
            "directCount": 0,
            "directUsed": 0,
            "directMax": 0,
            "mappedCount": 0,
            "mappedUsed": 0,
            "mappedMax": 0,
            "nettyShuffleMemorySegmentsAvailable": 0,
            "nettyShuffleMemorySegmentsUsed": 0,
            "nettyShuffleMemorySegmentsTotal": 0,
            "nettyShuffleMemoryAvailable": 0,
            "nettyShuffleMemoryUsed": 0,
            "nettyShuffleMemoryTotal": 0,
            "garbageCollectors": _garbage_collectors(process),
        },
    }


def _garbage_collectors(process: ProcessView) -> list[JsonDict]:
    gcs: list[JsonDict] = [
        {"name": name, "count": count, "time": 0} for name, count, _ in process.gc
    ]
    total: JsonDict = {"name": "All", "count": sum(count for _, count, _ in process.gc), "time": 0}
    return [total, *gcs]


def process_metrics(process: ProcessView, *, jobmanager: bool = False) -> dict[str, str]:
    """The ``Status.*`` metrics of this process (a task manager's, or with ``jobmanager`` the
    job manager's), name -> value, as the dashboard's Task Manager and Job Manager pages ask
    for them (the JVM's heap is the process's resident memory)."""
    values: dict[str, float] = {
        "Status.JVM.Memory.Heap.Used": process.memory_used,
        "Status.JVM.Memory.Heap.Committed": process.memory_used,
        "Status.JVM.Memory.Heap.Max": process.physical_memory,
        "Status.JVM.Memory.NonHeap.Used": 0,
        "Status.JVM.Memory.NonHeap.Committed": 0,
        "Status.JVM.Memory.NonHeap.Max": -1,
        "Status.JVM.Memory.Metaspace.Used": 0,
        "Status.JVM.Memory.Metaspace.Committed": 0,
        "Status.JVM.Memory.Metaspace.Max": -1,
        "Status.JVM.Memory.Direct.Count": 0,
        "Status.JVM.Memory.Direct.MemoryUsed": 0,
        "Status.JVM.Memory.Direct.TotalCapacity": 0,
        "Status.JVM.Memory.Mapped.Count": 0,
        "Status.JVM.Memory.Mapped.MemoryUsed": 0,
        "Status.JVM.Memory.Mapped.TotalCapacity": 0,
        "Status.JVM.Threads.Count": process.threads,
        "Status.JVM.CPU.Load": 0.0,
        "Status.JVM.CPU.Time": 0,
    }
    for collector in _garbage_collectors(process):
        prefix = f"Status.JVM.GarbageCollector.{collector['name']}"
        values[f"{prefix}.Count"] = collector["count"]
        values[f"{prefix}.Time"] = 0
        values[f"{prefix}.TimeMsPerSecond"] = 0
    if not jobmanager:
        for name in ("Shuffle.Netty.UsedMemory", "Shuffle.Netty.TotalMemory"):
            values[f"Status.{name}"] = 0
        values["Status.Flink.Memory.Managed.Used"] = 0
        values["Status.Flink.Memory.Managed.Total"] = 0
    return {name: _metric_text(value) for name, value in values.items()}


def jobmanager_metrics(views: Sequence[JobView], process: ProcessView) -> dict[str, str]:
    """``GET /jobmanager/metrics``: this process's, and the cluster's counts."""
    values = process_metrics(process, jobmanager=True)
    values["numRegisteredTaskManagers"] = str(len(views))
    values["numRunningJobs"] = str(sum(1 for v in views if not v.is_terminal))
    values["taskSlotsTotal"] = str(sum(v.slots for v in views))
    values["taskSlotsAvailable"] = str(sum(v.slots for v in views if v.is_terminal))
    return values


def configuration_body(configuration: Sequence[tuple[str, str]]) -> list[JsonDict]:
    """``GET /jobmanager/config`` and ``/jobs/:jobid/jobmanager/config``."""
    return [{"key": key, "value": value} for key, value in configuration]


def environment_body(process: ProcessView) -> JsonDict:
    """``GET /jobmanager/environment``: the interpreter (Flink: the JVM), its command line and
    module search path (Flink: the JVM's options and the classpath)."""
    return {
        "jvm": {
            "version": process.version,
            "arch": process.arch,
            "options": list(process.options),
        },
        "classpath": list(process.classpath),
    }


def thread_dump_body(threads: Sequence[tuple[str, str]]) -> JsonDict:
    """``GET /jobmanager/thread-dump``, ``/taskmanagers/:id/thread-dump``: (name, stack)."""
    return {
        "threadInfos": [
            {"threadName": name, "stringifiedThreadInfo": stack} for name, stack in threads
        ]
    }


def logs_body() -> JsonDict:
    """``GET /jobmanager/logs``, ``/taskmanagers/:id/logs``: ckptsim logs to its own streams
    (structlog), not to log files."""
    return {"logs": []}


def backpressure_ratio(view: JobView, s: SubtaskView) -> tuple[float, float, float]:
    """(back-pressured, idle, busy) shares of the subtask's running time so far."""
    m = s.metrics
    bp, idle, busy = (
        float(m.get("backpressured_ms", 0)),
        float(m.get("idle_ms", 0)),
        float(m.get("busy_ms", 0)),
    )
    total = bp + idle + busy
    if total <= 0:
        return 0.0, 0.0, 0.0
    return round(bp / total, 3), round(idle / total, 3), round(busy / total, 3)


def _level(ratio: float) -> str:
    if ratio <= BACKPRESSURE_LOW:
        return "ok"
    return "low" if ratio <= BACKPRESSURE_HIGH else "high"


def backpressure_body(view: JobView, vertex: VertexView) -> JsonDict:
    """``GET /jobs/:jobid/vertices/:vertexid/backpressure``: each subtask's share of time
    back-pressured (ckptsim measures it over the whole run, Flink over the last seconds)."""
    subtasks = []
    worst = 0.0
    for s in vertex.subtasks:
        ratio, idle, busy = backpressure_ratio(view, s)
        worst = max(worst, ratio)
        subtasks.append(
            {
                "subtask": s.index,
                "backpressureLevel": _level(ratio),
                "ratio": ratio,
                "idleRatio": idle,
                "busyRatio": busy,
                "backpressure-level": _level(ratio),
            }
        )
    return {
        "status": "ok",
        "backpressureLevel": _level(worst),
        "end-timestamp": view.epoch(view.now),
        "subtasks": subtasks,
        "backpressure-level": _level(worst),
    }


def exceptions_body(view: JobView, *, max_exceptions: int | None = None) -> JsonDict:
    """``GET /jobs/:jobid/exceptions``: newest first."""
    entries: list[JsonDict] = [
        {
            "exceptionName": e.exception,
            "stacktrace": e.stacktrace,
            "timestamp": view.epoch(e.timestamp),
            "failureLabels": dict(e.labels),
            "taskName": e.task,
            "endpoint": ENDPOINT if e.task else None,
            "taskManagerId": view.taskmanager_id if e.task else None,
            "concurrentExceptions": [],
        }
        for e in reversed(view.exceptions)
    ]
    limit = len(entries) if max_exceptions is None else max_exceptions
    return {"exceptionHistory": {"entries": entries[:limit], "truncated": len(entries) > limit}}


def checkpoints_body(view: JobView) -> JsonDict:
    """``GET /jobs/:jobid/checkpoints``."""
    body: JsonDict = _flink_stats(dict(view.checkpoints), view)
    return body


def checkpoint_config_body(view: JobView) -> JsonDict:
    """``GET /jobs/:jobid/checkpoints/config``."""
    c = view.checkpoint_config
    retention = c.externalized_retention.value
    return {
        "mode": c.mode.value.lower(),
        "interval": c.interval if c.interval is not None else 0x7FFFFFFFFFFFFFFF,
        "timeout": c.timeout,
        "min_pause": c.min_pause,
        "max_concurrent": c.max_concurrent,
        "externalization": {
            "enabled": retention != "NO_EXTERNALIZED_CHECKPOINTS",
            "delete_on_cancellation": retention != "RETAIN_ON_CANCELLATION",
        },
        "state_backend": "HashMapStateBackend",
        "checkpoint_storage": (
            "JobManagerCheckpointStorage"
            if dict(view.configuration).get("execution.checkpointing.storage") == "JOBMANAGER"
            else "FileSystemCheckpointStorage"
        ),
        "unaligned_checkpoints": c.unaligned,
        "tolerable_failed_checkpoints": c.tolerable_failures,
        "aligned_checkpoint_timeout": c.aligned_checkpoint_timeout,
        "checkpoints_after_tasks_finish": c.checkpoints_after_tasks_finish,
        "state_changelog_enabled": False,
        "changelog_periodic_materialization_interval": 600000,
        "changelog_storage": "memory",
    }


def checkpoint_details_body(view: JobView, checkpoint_id: int) -> JsonDict | None:
    """``GET /jobs/:jobid/checkpoints/details/:checkpointid`` (None: not in the history)."""
    details = view.details.get(checkpoint_id)
    if details is None:
        return None
    body: JsonDict = _flink_stats({k: v for k, v in details.items() if k != "subtasks"}, view)
    return body


def checkpoint_subtasks_body(
    view: JobView, checkpoint_id: int, vertex: VertexView
) -> JsonDict | None:
    """``GET /jobs/:jobid/checkpoints/details/:checkpointid/subtasks/:vertexid``."""
    details = view.details.get(checkpoint_id)
    if details is None:
        return None
    subtasks = details.get("subtasks", {}).get(vertex.key)
    if subtasks is None:
        return None
    body: JsonDict = _flink_stats(subtasks, view)
    return body


# --- operations (savepoints, checkpoints triggered through the API) -------------------------------


def trigger_body(trigger_id: str) -> JsonDict:
    """What ``POST /jobs/:jobid/savepoints``, ``/stop`` and ``/checkpoints`` answer (202)."""
    return {"request-id": trigger_id}


def operation_body(
    *,
    done: bool,
    location: str | None = None,
    checkpoint_id: int | None = None,
    failure: str | None = None,
) -> JsonDict:
    """An asynchronous operation's status: ``IN_PROGRESS`` (operation null), or
    ``COMPLETED`` with the savepoint's ``location``, the checkpoint's id (give no location)
    or the failure cause."""
    if not done:
        return {"status": {"id": "IN_PROGRESS"}, "operation": None}
    operation: JsonDict
    if failure is not None:
        operation = {
            "failure-cause": {
                "class": "org.apache.flink.runtime.checkpoint.CheckpointException",
                "stack-trace": f"org.apache.flink.runtime.checkpoint.CheckpointException: {failure}",
                "serialized-throwable": "",
            }
        }
    elif checkpoint_id is not None and location is None:
        operation = {"checkpointId": checkpoint_id}
    else:
        operation = {"location": _file_uri(location)}
    return {"status": {"id": "COMPLETED"}, "operation": operation}


# --- errors and routing -------------------------------------------------------------------------


class RestError(Exception):
    """A request Flink would refuse: ``status`` and Flink's message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def body(self) -> JsonDict:
        return {"errors": [self.message]}


_REST_EXCEPTION = "org.apache.flink.runtime.rest.handler.RestHandlerException"
#: what Flink's file handlers answer for a file they do not have (its dashboard shows no error
#: for it: a page whose feature is off, e.g. the profiler)
FILE_NOT_FOUND = "File not found."
_NOT_FOUND = "org.apache.flink.runtime.rest.NotFoundException"
_HEX32 = re.compile(r"^[0-9a-f]{32}$")


def bad_parameter(kind: str, name: str, value: str) -> RestError:
    return RestError(
        400,
        f"{_REST_EXCEPTION}: Bad request, could not parse parameters: Cannot resolve {kind} "
        f'parameter ({name}) from value "{value}".',
    )


def not_found(path: str) -> RestError:
    return RestError(404, f"Not found: {path}")


def parse_job_id(value: str) -> str:
    if not _HEX32.match(value):
        raise bad_parameter("path", "jobid", value)
    return value


def parse_vertex_id(value: str) -> str:
    if not _HEX32.match(value):
        raise bad_parameter("path", "vertexid", value)
    return value


#: the largest checkpoint id: Flink's ids are Java longs
_MAX_LONG = (1 << 63) - 1


def parse_checkpoint_id(value: str) -> int:
    if not value.isdigit() or int(value) > _MAX_LONG:  # what Long.parseLong cannot read
        raise bad_parameter("path", "checkpointid", value)
    return int(value)


def unknown_job(job_id: str) -> RestError:
    return RestError(404, f"{_NOT_FOUND}: Job {job_id} not found")


def unknown_vertex(vertex_id: str) -> RestError:
    return RestError(404, f"{_NOT_FOUND}: JobVertex {vertex_id} not found")


def unknown_checkpoint(checkpoint_id: int) -> RestError:
    return RestError(
        404,
        f"{_REST_EXCEPTION}: Could not find checkpointing statistics for checkpoint "
        f"{checkpoint_id}.",
    )


def unknown_operation(kind: str, trigger_id: str, job_id: str) -> RestError:
    return RestError(
        404,
        f"{_REST_EXCEPTION}: There is no {kind} operation with triggerId={trigger_id} for job "
        f"{job_id}.",
    )


Handler = Callable[[JobView, Mapping[str, str], Mapping[str, str]], Body]


def _vertex_of(view: JobView, params: Mapping[str, str]) -> VertexView:
    vertex = view.vertex(parse_vertex_id(params["vertexid"]))
    if vertex is None:
        raise unknown_vertex(params["vertexid"])
    return vertex


def _subtask_of(view: JobView, params: Mapping[str, str]) -> SubtaskView:
    raw = params["subtaskindex"]
    if not raw.isdigit():
        raise bad_parameter("path", "subtaskindex", raw)
    vertex = _vertex_of(view, params)
    if int(raw) >= len(vertex.subtasks):
        raise RestError(404, f"{_REST_EXCEPTION}: Invalid subtask index for vertex {vertex.id}")
    return vertex.subtasks[int(raw)]


def _attempt_of(view: JobView, params: Mapping[str, str]) -> SubtaskView:
    """The subtask's attempt ``params["attempt"]``: its current one (ckptsim keeps no
    earlier attempts' details)."""
    raw = params["attempt"]
    if not raw.isdigit():
        raise bad_parameter("path", "attempt", raw)
    subtask = _subtask_of(view, params)
    if int(raw) != subtask.attempt:
        raise RestError(
            404,
            f"{_REST_EXCEPTION}: Attempt {raw} of subtask {subtask.index} of vertex "
            f"{params['vertexid']} is not the current one ({subtask.attempt}).",
        )
    return subtask


def _rescales(view: JobView, params: Mapping[str, str], _q: Mapping[str, str]) -> Body:
    what = params["rescales"]
    (message,) = rescales_error(view, what)["errors"]
    prefix = f"{_REST_EXCEPTION}: " if what == "config" else ""
    raise RestError(404, prefix + message)


def _details(view: JobView, params: Mapping[str, str], _q: Mapping[str, str]) -> Body:
    cid = parse_checkpoint_id(params["checkpointid"])
    body = checkpoint_details_body(view, cid)
    if body is None:
        raise unknown_checkpoint(cid)
    return body


def _subtasks(view: JobView, params: Mapping[str, str], _q: Mapping[str, str]) -> Body:
    cid = parse_checkpoint_id(params["checkpointid"])
    vertex = _vertex_of(view, params)
    body = checkpoint_subtasks_body(view, cid, vertex)
    if body is None:
        raise unknown_checkpoint(cid)
    return body


def _exceptions(view: JobView, _p: Mapping[str, str], query: Mapping[str, str]) -> Body:
    raw = query.get("maxExceptions")
    if raw is not None and not raw.isdigit():
        raise bad_parameter("query", "maxExceptions", raw)
    return exceptions_body(view, max_exceptions=int(raw) if raw is not None else None)


#: per-job GET endpoints: (pattern after /jobs/:jobid, handler)
JOB_ROUTES: tuple[tuple[re.Pattern[str], Handler], ...] = tuple(
    (re.compile("^" + pattern + "$"), handler)
    for pattern, handler in (
        ("", lambda v, p, q: job_details_body(v)),
        ("/plan", lambda v, p, q: job_plan_body(v)),
        ("/config", lambda v, p, q: job_config_body(v)),
        ("/exceptions", _exceptions),
        ("/status", lambda v, p, q: {"status": v.status}),
        ("/checkpoints", lambda v, p, q: checkpoints_body(v)),
        ("/checkpoints/config", lambda v, p, q: checkpoint_config_body(v)),
        ("/checkpoints/details/(?P<checkpointid>[^/]+)", _details),
        (
            "/checkpoints/details/(?P<checkpointid>[^/]+)/subtasks/(?P<vertexid>[^/]+)",
            _subtasks,
        ),
        (
            "/vertices/(?P<vertexid>[^/]+)",
            lambda v, p, q: vertex_details_body(v, _vertex_of(v, p)),
        ),
        (
            "/vertices/(?P<vertexid>[^/]+)/backpressure",
            lambda v, p, q: backpressure_body(v, _vertex_of(v, p)),
        ),
        (
            "/vertices/(?P<vertexid>[^/]+)/watermarks",
            lambda v, p, q: (_vertex_of(v, p), [])[1],
        ),
        (
            "/vertices/(?P<vertexid>[^/]+)/subtasks/metrics",
            lambda v, p, q: subtask_metrics_body(
                v, _vertex_of(v, p), q.get("get"), q.get("agg", ""), q.get("subtasks", "")
            ),
        ),
        ("/accumulators", lambda v, p, q: job_accumulators_body(v)),
        ("/jobmanager/config", lambda v, p, q: configuration_body(v.configuration)),
        ("/jobmanager/environment", lambda v, p, q: environment_body(v.process)),
        ("/execution-result", lambda v, p, q: execution_result_body(v)),
        ("/rescales/(?P<rescales>config|overview|summary|history|details/[^/]+)", _rescales),
        (
            "/vertices/(?P<vertexid>[^/]+)/accumulators",
            lambda v, p, q: vertex_accumulators_body(_vertex_of(v, p)),
        ),
        (
            "/vertices/(?P<vertexid>[^/]+)/subtasks/accumulators",
            lambda v, p, q: subtasks_accumulators_body(_vertex_of(v, p)),
        ),
        (
            "/vertices/(?P<vertexid>[^/]+)/subtasktimes",
            lambda v, p, q: subtask_times_body(v, _vertex_of(v, p)),
        ),
        (
            "/vertices/(?P<vertexid>[^/]+)/taskmanagers",
            lambda v, p, q: vertex_taskmanagers_body(v, _vertex_of(v, p)),
        ),
        (
            "/vertices/(?P<vertexid>[^/]+)/metrics",
            lambda v, p, q: metrics_body(vertex_metrics(v, _vertex_of(v, p)), q),
        ),
        ("/metrics", lambda v, p, q: metrics_body(job_metrics(v), q)),
        (
            "/vertices/(?P<vertexid>[^/]+)/subtasks/(?P<subtaskindex>[^/]+)/metrics",
            lambda v, p, q: metrics_body(
                {
                    k: _value_text(k, x)
                    for k, x in subtask_metric_values(
                        v, _vertex_of(v, p), _subtask_of(v, p)
                    ).items()
                },
                q,
            ),
        ),
        (
            "/vertices/(?P<vertexid>[^/]+)/flamegraph",
            lambda v, p, q: (_vertex_of(v, p), flamegraph_body(v))[1],
        ),
        (
            "/vertices/(?P<vertexid>[^/]+)/subtasks/(?P<subtaskindex>[^/]+)",
            lambda v, p, q: subtask_body(v, _vertex_of(v, p), _subtask_of(v, p)),
        ),
        (
            "/vertices/(?P<vertexid>[^/]+)/subtasks/(?P<subtaskindex>[^/]+)"
            "/attempts/(?P<attempt>[^/]+)",
            lambda v, p, q: subtask_body(v, _vertex_of(v, p), _attempt_of(v, p)),
        ),
        (
            "/vertices/(?P<vertexid>[^/]+)/subtasks/(?P<subtaskindex>[^/]+)"
            "/attempts/(?P<attempt>[^/]+)/accumulators",
            lambda v, p, q: attempt_accumulators_body(v, _vertex_of(v, p), _attempt_of(v, p)),
        ),
    )
)

_JOB_PATH = re.compile(r"^/jobs/(?P<jobid>[^/]+)(?P<rest>(/.*)?)$")


def route_job(
    views: Mapping[str, JobView], path: str, query: Mapping[str, str]
) -> tuple[JobView, Body] | None:
    """Answer a GET under ``/jobs/:jobid`` (None: not such a path)."""
    match = _JOB_PATH.match(path)
    if match is None or match.group("jobid") == "overview":
        return None
    rest = match.group("rest")
    for pattern, handler in JOB_ROUTES:
        found = pattern.match(rest)
        if found is None:
            continue
        job_id = parse_job_id(match.group("jobid"))
        view = views.get(job_id)
        if view is None:
            raise unknown_job(job_id)
        return view, handler(view, found.groupdict(), query)
    return None


#: the aggregations of Flink's aggregating metrics handlers (``agg=``), in its order
AGGREGATIONS = ("min", "max", "avg", "sum", "skew")


def _subtask_filter(text: str) -> set[int] | None:
    """``subtasks=1,3,5-9`` (Flink's ``SubtasksFilterQueryParameter``): those indexes; none
    given: every subtask."""
    if not text:
        return None
    chosen: set[int] = set()
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        try:
            first = int(low)
            last = int(high) if dash else first
        except ValueError:
            raise bad_parameter("query", "subtasks", text) from None
        if first < 0 or last < first:
            raise bad_parameter("query", "subtasks", text)
        chosen.update(range(first, last + 1))
    return chosen


def _aggregation_modes(aggregations: str) -> list[str]:
    """``agg=min,SUM`` (Flink's ``MetricsAggregationParameter``, any case): those, in Flink's
    order; none given: every one; a name Flink does not know is its 400."""
    wanted = [a.strip().lower() for a in aggregations.split(",") if a.strip()]
    for a in wanted:
        if a not in AGGREGATIONS:
            raise bad_parameter("query", "agg", aggregations)
    return [a for a in AGGREGATIONS if a in wanted] if wanted else list(AGGREGATIONS)


def _number(value: Any) -> float | None:
    """A metric's value as the double Flink aggregates (its text parsed); None: not a number."""
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


def aggregated_metrics_body(
    stores: Sequence[Mapping[str, Any]], names: str | None, modes: Sequence[str]
) -> list[JsonDict]:
    """Flink's aggregating metrics handlers (``/jobs/metrics``, ``/taskmanagers/metrics``,
    ``.../subtasks/metrics``) over ``stores``, one metric map per job, task manager or
    subtask: without ``get`` (``names`` None) the ids any of them has; with ``get=a,b`` each
    aggregated over the stores that have it (a name whose value is not a number is left
    out), with the aggregations ``modes`` (``_aggregation_modes`` of ``agg=``). A name none
    of them has empties the whole answer, as Flink's handler answers then."""
    if names is None:
        return [{"id": name} for name in dict.fromkeys(n for store in stores for n in store)]
    out = []
    for name in dict.fromkeys(n for n in names.split(",") if n):
        numbers = [_number(store[name]) for store in stores if name in store]
        if not numbers:
            return []
        if None in numbers:
            continue
        vs = [v for v in numbers if v is not None]
        avg = sum(vs) / len(vs)
        every = {
            "min": min(vs),
            "max": max(vs),
            "avg": avg,
            "sum": sum(vs),
            "skew": (max(vs) - avg) / avg * 100 if avg else 0.0,
        }
        out.append({"id": name, **{mode: every[mode] for mode in modes}})
    return out


def subtask_metrics_body(
    view: JobView,
    vertex: VertexView,
    names: str | None,
    aggregations: str = "",
    subtasks: str = "",
) -> list[JsonDict]:
    """``GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics``, as Flink's aggregating
    handler (``aggregated_metrics_body``) over the subtasks' numeric metrics
    (``subtasks=0,2-3`` only those)."""
    modes = _aggregation_modes(aggregations)  # a wrong agg is refused before the filter
    chosen = _subtask_filter(subtasks)
    stores = [
        {
            name: value
            for name, value in subtask_metric_values(view, vertex, s).items()
            if isinstance(value, int | float)
        }
        for s in vertex.subtasks
        if chosen is None or s.index in chosen
    ]
    return aggregated_metrics_body(stores, names, modes)


def _ids_filter(text: str) -> list[str]:
    """A comma-separated ``jobs=`` / ``taskmanagers=`` filter; empty: none given."""
    return [part.strip() for part in text.split(",") if part.strip()]


def jobs_metrics_body(views: Sequence[JobView], query: Mapping[str, str]) -> list[JsonDict]:
    """``GET /jobs/metrics``: the jobs' metrics (``job_metrics``) aggregated over the jobs
    run in this process (``jobs=a,b``: those; an id of no such job is skipped, one that is
    not a job id is Flink's 400)."""
    modes = _aggregation_modes(query.get("agg", ""))  # Flink resolves agg before jobs
    wanted = _ids_filter(query.get("jobs", ""))
    for job_id in wanted:
        if not _HEX32.match(job_id.lower()):
            raise bad_parameter("query", "jobs", query["jobs"])
    chosen = {j.lower() for j in wanted}
    stores = [job_metrics(v) for v in views if not chosen or v.job_id in chosen]
    return aggregated_metrics_body(stores, query.get("get"), modes)


def taskmanagers_metrics_body(views: Sequence[JobView], query: Mapping[str, str]) -> list[JsonDict]:
    """``GET /taskmanagers/metrics``: the task managers' metrics (``process_metrics``, what
    ``/taskmanagers/:id/metrics`` serves) aggregated over the task managers, one per job run
    in this process (``taskmanagers=a,b``: those; an id of no task manager is skipped)."""
    modes = _aggregation_modes(query.get("agg", ""))
    chosen = set(_ids_filter(query.get("taskmanagers", "")))
    stores = [process_metrics(v.process) for v in views if not chosen or v.taskmanager_id in chosen]
    return aggregated_metrics_body(stores, query.get("get"), modes)


#: the metrics of a subtask (``_subtask_rates``), by name
SUBTASK_METRICS = (
    "numRecordsIn",
    "numRecordsOut",
    "numBytesIn",
    "numBytesOut",
    "numRecordsInPerSecond",
    "numRecordsOutPerSecond",
    "numBytesOutPerSecond",
    "backPressuredTimeMsPerSecond",
    "idleTimeMsPerSecond",
    "busyTimeMsPerSecond",
    "accumulateBackPressuredTimeMs",
    "accumulateIdleTimeMs",
    "accumulateBusyTimeMs",
)


def archived_metrics(view: JobView, vertex: VertexView) -> list[tuple[str, str, Body]]:
    """A vertex's metric paths for an archive, each with every metric it has (Flink's
    HistoryServer serves a file whatever the query, and the dashboard picks the metrics it
    asked for by id): (path suffix, the query that gives the same body live, body)."""
    names = ",".join(vertex_metrics(view, vertex))
    aggregated = ",".join(SUBTASK_METRICS)
    return [
        ("/metrics", names, metrics_body(vertex_metrics(view, vertex), {"get": names})),
        ("/subtasks/metrics", aggregated, subtask_metrics_body(view, vertex, aggregated)),
    ]


def archive(view: JobView, *, application: bool = True) -> list[tuple[str, Body]]:
    """Every path of the job with its body: what Flink 2.3's JobManager archives for its
    HistoryServer, and every other path its dashboard asks for a finished job (a vertex's
    back-pressure, accumulators and subtasks, its watermarks); with ``application`` the
    application's paths too (Flink writes those into the application's summary beside the
    job's archive: ``application_archive``)."""
    base = f"/jobs/{view.job_id}"
    entries: list[tuple[str, Body]] = [
        ("/jobs/overview", jobs_overview_body([view])),
        (base, job_details_body(view)),
        (f"{base}/plan", job_plan_body(view)),
        (f"{base}/config", job_config_body(view)),
        (f"{base}/exceptions", exceptions_body(view)),
        (f"{base}/accumulators", job_accumulators_body(view)),
        (f"{base}/jobmanager/config", configuration_body(view.configuration)),
        (f"{base}/jobmanager/environment", environment_body(view.process)),
        (f"{base}/checkpoints", checkpoints_body(view)),
        (f"{base}/checkpoints/config", checkpoint_config_body(view)),
    ]
    for cid in sorted(view.details):
        body = checkpoint_details_body(view, cid)
        if body is None:
            continue
        entries.append((f"{base}/checkpoints/details/{cid}", body))
        for vertex in view.vertices:
            sub = checkpoint_subtasks_body(view, cid, vertex)
            if sub is not None:
                entries.append((f"{base}/checkpoints/details/{cid}/subtasks/{vertex.id}", sub))
    for vertex in view.vertices:
        v = f"{base}/vertices/{vertex.id}"
        entries += [
            (v, vertex_details_body(view, vertex)),
            (f"{v}/subtasktimes", subtask_times_body(view, vertex)),
            (f"{v}/taskmanagers", vertex_taskmanagers_body(view, vertex)),
            (f"{v}/backpressure", backpressure_body(view, vertex)),
            (f"{v}/accumulators", vertex_accumulators_body(vertex)),
            (f"{v}/subtasks/accumulators", subtasks_accumulators_body(vertex)),
            (f"{v}/watermarks", []),
        ]
        entries += [(v + suffix, body) for suffix, _, body in archived_metrics(view, vertex)]
        for s in vertex.subtasks:
            attempt = f"{v}/subtasks/{s.index}/attempts/{s.attempt}"
            entries += [
                (f"{v}/subtasks/{s.index}", subtask_body(view, vertex, s)),
                (attempt, subtask_body(view, vertex, s)),
                (f"{attempt}/accumulators", attempt_accumulators_body(view, vertex, s)),
            ]
    if application:
        entries += application_archive(view)
    return entries


def application_archive(view: JobView) -> list[tuple[str, Body]]:
    """The application's paths of a job (Flink 2.3's ``application-summary``): one
    application per job, as Flink's ``SingleJobApplication``."""
    app = f"/applications/{view.job_id}"
    return [
        ("/applications/overview", applications_overview_body([job_overview_entry(view)])),
        (app, application_body(view)),
        (f"{app}/jobmanager/config", configuration_body(view.configuration)),
        (f"{app}/exceptions", application_exceptions_body(view)),
    ]


def application_exceptions_body(view: JobView) -> JsonDict:
    """``GET /applications/:applicationid/exceptions``: the application's own failures (a
    job's failures are the job's: ``/jobs/:jobid/exceptions``)."""
    return {"exceptionHistory": {"entries": []}}


def archive_document(view: JobView, *, application: bool = True) -> JsonDict:
    """Flink's job-archive file: ``{"archive": [{"path": ..., "json": "<body>"}, ...]}``."""
    return archive_file(archive(view, application=application))


def archive_file(entries: Sequence[tuple[str, Body]]) -> JsonDict:
    """Bodies by path as Flink's archive files hold them (a job's archive, an application's
    summary)."""
    return {
        "archive": [
            {"path": path, "json": json.dumps(body, separators=(",", ":"))}
            for path, body in entries
        ]
    }


class ArchiveFormatError(ValueError):
    """A file is not a Flink job archive; the message says what is wrong."""


def read_archive(document: Any, *, source: str = "archive") -> dict[str, Body]:
    """The bodies of a job archive by path (the reverse of ``archive_document``)."""
    if not isinstance(document, dict) or not isinstance(document.get("archive"), list):
        raise ArchiveFormatError(
            f'{source} is not a Flink job archive: expected {{"archive": [{{"path": ..., '
            '"json": ...}, ...]} (written by ckptsim run --stats, or by Flink\'s '
            "JobManager with jobmanager.archive.fs.dir)"
        )
    bodies: dict[str, Body] = {}
    for n, entry in enumerate(document["archive"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise ArchiveFormatError(f"{source}: entry {n} has no path")
        try:
            bodies[entry["path"]] = json.loads(entry.get("json", ""))
        except (TypeError, ValueError) as error:
            raise ArchiveFormatError(
                f"{source}: the body of {entry['path']} is not JSON: {error}"
            ) from None
    return bodies


def view_of_result(
    job: JobGraph,
    checkpoint_config: CheckpointConfig,
    result: JobResult,
    *,
    parallelism: int = 1,
    restart_strategy: str = "",
    savepoint_formats: Mapping[int, str] | None = None,
    configuration: Sequence[tuple[str, str]] = (),
    process: ProcessView | None = None,
) -> JobView:
    """The view of a job that ended, from its ``JobResult``."""
    fallback = "FINISHED" if result.status.value == "FINISHED" else "CANCELED"
    states = {
        str(t): str(result.task_metrics.get(str(t), {}).get("state", fallback)) for t in job.tasks()
    }
    end = result.status_history[-1][1] if result.status_history else result.duration_ms
    return job_view(
        job,
        checkpoint_config,
        job_id=result.job_id,
        status=result.status.value,
        now=end,
        epoch_ms=result.epoch_ms,
        status_history=result.status_history,
        task_states=states,
        task_metrics=result.task_metrics,
        attempt=result.restarts,
        checkpoints=result.checkpoints,
        details=result.checkpoint_details,
        # the failure that ended the job is among the failures, but for one that had no
        # restart to cause (a deployment that failed)
        failures=result.failures or ([result.failure] if result.failure else []),
        failure_causes=result.failure_causes,
        parallelism=parallelism,
        restart_strategy=restart_strategy,
        savepoint_formats=savepoint_formats,
        configuration=configuration,
        process=process,
    )
