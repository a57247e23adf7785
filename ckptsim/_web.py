"""Flink's REST API over HTTP, the web page and the job archives: the live view of jobs that
run in this process (``ckptsim run --web``) and of archived jobs (``ckptsim serve``).

The bodies are ``runtime.rest``'s; this module only gathers a job's state and serves it. The
server runs on its own threads, outside the actor system: it asks the JobMaster (and through
the refs it answers with, the tasks and the coordinator) as the progress reporter in
``actors.launcher`` does, with a timeout, and never from inside an actor. Control calls
(cancel, savepoint, stop-with-savepoint, checkpoint) are messages to the JobMaster; their
outcome comes back on a future.

A job on the deterministic simulation runs on the calling thread alone, so it cannot be asked
while it runs (that would change its schedule): it is served once it has ended.
"""

from __future__ import annotations

import contextlib
import dataclasses
import http.client
import io
import ipaddress
import json
import mimetypes
import os
import re
import socket
import sys
import threading
import time
import traceback
import uuid
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qsl, urlsplit

import pykka

from actors.archive import describe_process
from actors.logs import get_logger
from actors.protocol import CancelJob, QueryJob, SnapshotOutcome, SnapshotRequest
from actors.stream_task import read_progress
from runtime import rest
from runtime.config import CheckpointConfig, Configuration, local_path
from runtime.graph import JobGraph
from runtime.job import JobResult
from runtime.timeline import build_timeline

log = get_logger(__name__)

#: how long the server waits for an actor's answer
ASK_TIMEOUT_S = 2.0
#: a live view is gathered at most this often (requests in between share it)
REFRESH_S = 0.25


# --- jobs: live and archived -----------------------------------------------------------------


@dataclasses.dataclass
class _Operation:
    kind: str  # "savepoint" | "checkpoint"
    future: pykka.Future[Any]
    #: a savepoint's format as asked for (Flink's formatType: CANONICAL or NATIVE)
    savepoint_format: str = "CANONICAL"


class LiveJob:
    """A job running in this process: its graph and configuration, its JobMaster."""

    def __init__(
        self,
        *,
        job: JobGraph,
        conf: Configuration,
        job_id: str,
        master: pykka.ActorRef[Any],
        runtime: Any,
        restart_strategy: str = "",
    ) -> None:
        self.job = job
        self.job_id = job_id
        self.checkpoint_config = CheckpointConfig.from_configuration(conf)
        self.configuration = rest.configuration_items(conf)
        self.parallelism = int(conf["parallelism.default"])
        self.restart_strategy = restart_strategy
        self.master = master
        self.runtime = runtime
        self.askable = not getattr(runtime, "deterministic", False)
        self.epoch_ms: int = int(getattr(runtime, "epoch_ms", 0))
        self.result: JobResult | None = None
        self.operations: dict[str, _Operation] = {}
        self._lock = threading.Lock()
        self._view: rest.JobView | None = None
        self._gathered = 0.0
        #: each task's last answered metrics with the attempt that answered: a task busy
        #: with a long buffer does not answer in time, and its last values beat none
        self._last_metrics: dict[Any, tuple[int, dict[str, Any]]] = {}

    # views

    def savepoint_formats(self) -> dict[int, str]:
        """The format of each savepoint asked for in another than the canonical one, by
        checkpoint id (once it completed)."""
        formats: dict[int, str] = {}
        for operation in list(self.operations.values()):
            if operation.savepoint_format == "CANONICAL":
                continue
            with contextlib.suppress(pykka.Timeout):
                outcome: SnapshotOutcome = operation.future.get(timeout=0)
                if outcome.checkpoint_id is not None:
                    formats[outcome.checkpoint_id] = operation.savepoint_format
        return formats

    def finish(self, result: JobResult) -> None:
        view = rest.view_of_result(
            self.job,
            self.checkpoint_config,
            result,
            parallelism=self.parallelism,
            restart_strategy=self.restart_strategy,
            savepoint_formats=self.savepoint_formats(),
            configuration=self.configuration,
            process=describe_process(),
        )
        with self._lock:
            self.result = result
            self._view = view

    def view(self) -> rest.JobView:
        with self._lock:
            if self.result is not None and self._view is not None:
                return self._view
            fresh = time.monotonic() - self._gathered < REFRESH_S
            if self._view is not None and fresh:
                return self._view
            view = self._gather() if self.askable else None
            if view is None:
                view = self._view or self._placeholder()
            self._view, self._gathered = view, time.monotonic()
            return view

    def _placeholder(self) -> rest.JobView:
        """Before the JobMaster answers (or while a simulation runs): the job, created."""
        return rest.job_view(
            self.job,
            self.checkpoint_config,
            job_id=self.job_id,
            status="CREATED" if self.askable else "RUNNING",
            now=0,
            epoch_ms=self.epoch_ms,
            status_history=[("CREATED", 0)],
            task_states={},
            task_metrics={},
            attempt=0,
            checkpoints={},
            details={},
            parallelism=self.parallelism,
            restart_strategy=self.restart_strategy,
            configuration=self.configuration,
            process=describe_process(),
        )

    def _gather(self) -> rest.JobView | None:
        """Ask the JobMaster, its tasks and the coordinator (None: they did not answer)."""
        try:
            info: dict[str, Any] = self.master.ask(QueryJob(), block=True, timeout=ASK_TIMEOUT_S)
            metrics = dict(info["task_metrics"])
            # read off each task's own counters, not through its mailbox (a remote task's
            # TaskManager reads them so): a task busy with a long buffer answers too
            futures = {t: read_progress(ref) for t, ref in info["tasks"].items()}
            # one deadline for all the tasks (asked at once): a scrape waits ASK_TIMEOUT_S at
            # most, however many tasks are busy
            deadline = time.monotonic() + ASK_TIMEOUT_S
            attempt = info["attempt"]
            for task, future in futures.items():
                left = max(deadline - time.monotonic(), 0.001)
                with contextlib.suppress(pykka.ActorDeadError, pykka.Timeout):
                    self._last_metrics[task] = (attempt, future.get(timeout=left)["io"])
                answered, last = self._last_metrics.get(task, (-1, {}))
                if answered == attempt:
                    metrics[task] = last
            checkpoints: dict[str, Any] = {}
            details: dict[int, dict[str, Any]] = {}
            coordinator = info["coordinator"]
            if coordinator is not None:
                proxy = coordinator.proxy()
                summary, all_details = proxy.summary(), proxy.details()
                checkpoints = summary.get(timeout=ASK_TIMEOUT_S)["stats"]
                details = all_details.get(timeout=ASK_TIMEOUT_S)
        except (pykka.ActorDeadError, pykka.Timeout, KeyError):
            return None
        return rest.job_view(
            self.job,
            self.checkpoint_config,
            job_id=self.job_id,
            status=info["status"],
            now=info["now"],
            epoch_ms=info["epoch_ms"],
            status_history=info["status_history"],
            task_states=info["task_states"],
            task_metrics=metrics,
            attempt=info["attempt"],
            checkpoints=checkpoints,
            details=details,
            failures=info["failures"],
            failure_causes=info["failure_causes"],
            parallelism=self.parallelism,
            restart_strategy=self.restart_strategy,
            savepoint_formats=self.savepoint_formats(),
            configuration=self.configuration,
            process=describe_process(),
        )

    # control

    def check_controllable(self) -> None:
        if self.result is not None:
            raise rest.RestError(
                409, f"Job {self.job_id} has already reached the state {self.result.status.value}."
            )
        if not self.askable:
            raise rest.RestError(
                409, "a job on the deterministic simulation cannot be controlled from outside"
            )

    def cancel(self) -> None:
        self.check_controllable()
        with contextlib.suppress(pykka.ActorDeadError):
            self.master.tell(CancelJob())

    @property
    def savepoint_dir(self) -> str | None:
        """``execution.checkpointing.savepoint-dir``: where a savepoint goes when the request
        names no directory (None: such a request is refused, as Flink refuses it)."""
        return self.checkpoint_config.savepoint_dir

    def trigger(
        self,
        kind: str,
        directory: str | None,
        *,
        savepoint_format: str = "CANONICAL",
        trigger_id: str | None = None,
        drain: bool = False,
    ) -> str:
        """Start a savepoint (``savepoint``, ``stop``: with ``drain``, the sources first
        advance to the end of event time) or checkpoint (``checkpoint``,
        ``full_checkpoint``); returns the trigger id for its status. A ``trigger_id`` the
        client chose (Flink's ``triggerId``) that is known already names the same operation:
        nothing is triggered again."""
        self.check_controllable()
        group = "checkpoint" if kind.endswith("checkpoint") else "savepoint"
        if trigger_id is not None:
            known = self.operations.get(trigger_id)
            if known is not None and known.kind == group:
                return trigger_id
        future: pykka.Future[Any] = pykka.ThreadingFuture()
        trigger_id = trigger_id or uuid.uuid4().hex
        self.operations[trigger_id] = _Operation(group, future, savepoint_format)
        try:
            self.master.tell(
                SnapshotRequest(kind=kind, directory=directory, reply=future, drain=drain)
            )
        except pykka.ActorDeadError:
            future.set(SnapshotOutcome(failure="the job has ended"))
        return trigger_id

    def operation(self, group: str, trigger_id: str) -> rest.JsonDict:
        operation = self.operations.get(trigger_id)
        if operation is None or operation.kind != group:
            raise rest.unknown_operation(group, trigger_id, self.job_id)
        try:
            outcome: SnapshotOutcome = operation.future.get(timeout=0)
        except pykka.Timeout:
            return rest.operation_body(done=False)
        self._gathered = 0.0  # what it changed shows at the next request
        if group == "checkpoint":
            return rest.operation_body(
                done=True, checkpoint_id=outcome.checkpoint_id, failure=outcome.failure
            )
        return rest.operation_body(done=True, location=outcome.path, failure=outcome.failure)


class ArchivedJob:
    """A job from an archive: its bodies by path, served as they are."""

    def __init__(self, bodies: Mapping[str, rest.Body], *, source: str) -> None:
        overview = bodies.get("/jobs/overview")
        jobs = overview.get("jobs") if isinstance(overview, dict) else None
        if not jobs:
            raise rest.ArchiveFormatError(f"{source} has no /jobs/overview entry naming its job")
        if (
            not isinstance(jobs, list)
            or not isinstance(jobs[0], dict)
            or not isinstance(jobs[0].get("jid"), str)
            or not all(isinstance(jobs[0].get(k), str) for k in ("name", "state"))
            or not all(
                isinstance(jobs[0].get(k), int) and not isinstance(jobs[0].get(k), bool)
                for k in ("start-time", "end-time", "duration")
            )
        ):
            raise rest.ArchiveFormatError(
                f"{source}: /jobs/overview names its job in another shape than Flink's "
                '({"jobs": [{"jid": ..., "name": ..., "state": ..., "start-time": ..., '
                '"end-time": ..., "duration": ..., ...}]})'
            )
        self.overview: rest.JsonDict = jobs[0]
        self.job_id: str = self.overview["jid"]
        self.bodies = dict(bodies)
        self.source = source

    def body(self, path: str) -> rest.Body | None:
        return self.bodies.get(path)

    def application_bodies(self) -> dict[str, rest.Body]:
        """The application's paths of an archive written without them (one application per
        job, as Flink's ``SingleJobApplication``)."""
        app = f"/applications/{self.job_id}"
        job = self.bodies.get(f"/jobs/{self.job_id}")
        timestamps = job.get("timestamps") if isinstance(job, dict) else None
        if not isinstance(timestamps, dict):  # a body of another shape: none known
            timestamps = {}
        return {
            app: {
                "id": self.job_id,
                "name": f"SingleJobApplication({self.overview.get('name', '')})",
                "status": rest.application_status(self.overview.get("state", "")),
                "start-time": self.overview.get("start-time", -1),
                "end-time": self.overview.get("end-time", -1),
                "duration": self.overview.get("duration", -1),
                "timestamps": {
                    s: timestamps.get(s, 0)
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
                "jobs": [self.overview],
            },
            f"{app}/exceptions": {"exceptionHistory": {"entries": []}},
            f"{app}/jobmanager/config": self.bodies.get(
                f"/jobs/{self.job_id}/jobmanager/config", []
            ),
        }


def load_archives(paths: Iterable[str]) -> list[ArchivedJob]:
    """Jobs from archive files, or from every archive file under a directory (Flink 2.3's
    layout ``<cluster>/applications/<app>/jobs/<job>`` included). A symbolic link under a
    directory is followed only when it stays inside that directory."""
    jobs: list[ArchivedJob] = []
    for raw in paths:
        try:
            path = Path(local_path(raw))  # a file: URI is a path as well
        except ValueError:
            raise FileNotFoundError(raw) from None
        if path.is_dir():
            for file in _files_inside(path):
                if file.name == "application-summary":
                    continue
                with contextlib.suppress(rest.ArchiveFormatError, OSError, ValueError):
                    jobs.append(_load(file))
        elif path.is_file():
            jobs.append(_load(path))
        else:
            raise FileNotFoundError(raw)
    return jobs


def _files_inside(directory: Path) -> list[Path]:
    """The regular files under ``directory`` (sorted), symbolic links included only when they
    resolve to a file inside it; linked directories are not entered."""
    root = directory.resolve()
    files: list[Path] = []
    for folder, _dirs, names in os.walk(directory, followlinks=False):
        for name in names:
            file = Path(folder, name)
            with contextlib.suppress(OSError, RuntimeError):  # a dangling link, a link loop
                target = file.resolve(strict=True)
                if target.is_file() and target.is_relative_to(root):
                    files.append(file)
    return sorted(files)


def _load(path: Path) -> ArchivedJob:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        hint = (
            " (it looks like a --trace file, one JSON event per line; this takes a job's "
            "archive, written by --stats FILE)"
            if isinstance(error, json.JSONDecodeError) and error.msg == "Extra data"
            else ""
        )
        raise rest.ArchiveFormatError(f"{path} is not JSON: {error}{hint}") from None
    return ArchivedJob(rest.read_archive(document, source=str(path)), source=str(path))


# --- the registry the launcher reports to ----------------------------------------------------------


class JobRegistry:
    """The jobs one server shows: those run in this process (``job_started``/``job_ended``,
    called by ``actors.launcher``) and archived ones."""

    def __init__(self, archived: Sequence[ArchivedJob] = ()) -> None:
        self.live: dict[str, LiveJob] = {}
        self.archived: dict[str, ArchivedJob] = {j.job_id: j for j in archived}
        self._lock = threading.Lock()
        self.changed = threading.Condition(self._lock)

    def job_started(
        self,
        *,
        job: JobGraph,
        conf: Configuration,
        job_id: str,
        master: pykka.ActorRef[Any],
        runtime: Any,
        restart_strategy: str,
    ) -> None:
        live = LiveJob(
            job=job,
            conf=conf,
            job_id=job_id,
            master=master,
            runtime=runtime,
            restart_strategy=restart_strategy,
        )
        with self.changed:
            self.live[job_id] = live
            self.changed.notify_all()

    def job_ended(self, job_id: str, result: JobResult) -> None:
        live = self.live.get(job_id)
        if live is not None:
            live.finish(result)
        with self.changed:
            self.changed.notify_all()

    def finished_views(self) -> list[rest.JobView]:
        return [j.view() for j in self.live.values() if j.result is not None]

    @property
    def history(self) -> bool:
        return not self.live

    # GET

    def get(self, path: str, query: Mapping[str, str]) -> rest.Body:
        """A REST body; ``RestError`` as Flink would refuse."""
        live = list(self.live.values())
        views = {j.job_id: j.view() for j in live}
        archived_jobs = [a.overview for a in self.archived.values()]
        if path == "/config":
            return rest.config_body(history=self.history)
        if path == "/overview":
            return rest.overview_body(list(views.values()), archived=archived_jobs)
        if path == "/jobs/overview":
            entries = [rest.job_overview_entry(v) for v in views.values()]
            return {"jobs": entries + archived_jobs}
        if path == "/applications/overview":
            entries = [rest.job_overview_entry(v) for v in views.values()]
            return rest.applications_overview_body(entries + archived_jobs)
        if path == "/jobs/metrics":
            return rest.jobs_metrics_body(list(views.values()), query)
        if path == "/jobs":
            statuses = [{"id": v.job_id, "status": v.status} for v in views.values()]
            statuses += [{"id": a["jid"], "status": a["state"]} for a in archived_jobs]
            return {"jobs": statuses}
        cluster = self._cluster_body(path, query, list(views.values()))
        if cluster is not None:
            return cluster
        archived = self._archived_body(path)
        if archived is not None:
            return archived
        routed = rest.route_job(views, path, query)
        if routed is not None:
            return routed[1]
        raise rest.not_found(path)

    def _cluster_body(
        self, path: str, query: Mapping[str, str], views: Sequence[rest.JobView]
    ) -> rest.Body | None:
        """The task managers (one per job run in this process, as Flink's MiniCluster), the job
        manager (this process), and the applications (one per job); None: not such a path."""
        parts = path.split("/")[1:]
        if parts[-1] == "profiler" and parts[0] in ("jobmanager", "taskmanagers"):
            raise rest.RestError(404, rest.FILE_NOT_FOUND)  # ckptsim has no profiler
        if parts[0] == "taskmanagers":
            if len(parts) == 1:
                return rest.taskmanagers_body(views)
            if parts[1:] == ["metrics"]:
                return rest.taskmanagers_metrics_body(views, query)
            index, view = self._taskmanager(parts[1], views)
            what = "/".join(parts[2:])
            bodies: dict[str, Callable[[], rest.Body]] = {
                "": lambda: rest.taskmanager_body(view, index),
                "metrics": lambda: rest.metrics_body(rest.process_metrics(view.process), query),
                "logs": rest.logs_body,
                "thread-dump": lambda: rest.thread_dump_body(thread_dump()),
            }
            if what in bodies:
                return bodies[what]()
            return None
        if parts[0] == "jobmanager" and len(parts) == 2:
            latest = views[-1] if views else None
            process = latest.process if latest is not None else describe_process()
            jobmanager: dict[str, Callable[[], rest.Body]] = {
                "config": lambda: rest.configuration_body(
                    latest.configuration if latest is not None else ()
                ),
                "environment": lambda: rest.environment_body(process),
                "metrics": lambda: rest.metrics_body(
                    rest.jobmanager_metrics(views, describe_process()), query
                ),
                "logs": rest.logs_body,
                "thread-dump": lambda: rest.thread_dump_body(thread_dump()),
            }
            return jobmanager[parts[1]]() if parts[1] in jobmanager else None
        if parts[0] == "applications" and len(parts) >= 2 and parts[1] != "overview":
            live = {v.job_id: v for v in views}.get(parts[1])
            if live is not None:
                return dict(rest.application_archive(live)).get(path)
            job = self.archived.get(parts[1])
            if job is None:
                raise rest.RestError(404, f"{rest._NOT_FOUND}: Application {parts[1]} not found")
            return job.body(path) or job.application_bodies().get(path)
        return None

    @staticmethod
    def _taskmanager(
        taskmanager_id: str, views: Sequence[rest.JobView]
    ) -> tuple[int, rest.JobView]:
        for index, view in enumerate(views):
            if view.taskmanager_id == taskmanager_id:
                return index, view
        raise rest.RestError(
            404,
            f"{rest._REST_EXCEPTION}: Could not find TaskExecutor {taskmanager_id}.",
        )

    def _archived_body(self, path: str) -> rest.Body | None:
        parts = path.split("/")
        if len(parts) >= 3 and parts[1] == "jobs":
            job = self.archived.get(parts[2])
            if job is not None:
                body = job.body(path)
                if body is None and path.endswith(("/watermarks", "/subtasks/metrics")):
                    return []  # as Flink answers for metrics it does not have
                if body is None:
                    raise rest.not_found(path)
                return body
        return None

    def body_getter(self, job_id: str) -> Callable[[str], Any]:
        """``path -> body or None`` for one job (the timeline reads through it)."""
        if job_id in self.live:
            views = {job_id: self.live[job_id].view()}

            def get_live(path: str) -> Any:
                with contextlib.suppress(rest.RestError):
                    routed = rest.route_job(views, path, {})
                    return routed[1] if routed is not None else None
                return None

            return get_live
        if job_id in self.archived:
            return self.archived[job_id].body
        raise rest.unknown_job(job_id)

    def timeline(self, job_id: str) -> rest.JsonDict:
        """The job's checkpoint timeline and its plotly figure (the page draws it as is)."""
        import plotly.io as pio  # noqa: PLC0415

        from ckptsim._timeline_plot import plotly_figure  # noqa: PLC0415

        try:
            timeline = build_timeline(job_id, self.body_getter(job_id))
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as error:
            archived = self.archived.get(job_id)
            if archived is None or job_id in self.live:
                raise  # a live job's bodies are ckptsim's own: a bug
            # as Flink's HistoryServer, which serves no archive it cannot process: not found
            raise rest.RestError(
                404,
                f"{rest._NOT_FOUND}: the timeline of job {job_id} cannot be drawn: "
                f"{archived.source} holds a body of another shape than Flink's "
                f"({type(error).__name__}: {error}); serve the archive ckptsim run --stats "
                "or Flink's jobmanager.archive.fs.dir wrote, unchanged",
            ) from None
        figure = json.loads(pio.to_json(plotly_figure(timeline), validate=False))
        return {"timeline": timeline.to_json(), "figure": figure}

    # control

    def job(self, job_id: str) -> LiveJob:
        rest.parse_job_id(job_id)
        live = self.live.get(job_id)
        if live is None:
            if job_id in self.archived:
                raise rest.RestError(409, f"Job {job_id} is archived: it cannot be controlled.")
            raise rest.unknown_job(job_id)
        return live


# --- HTTP -----------------------------------------------------------------------------------------

_JOB_CONTROL = (
    ("/savepoints", "savepoint"),
    ("/stop", "stop"),
    ("/checkpoints", "checkpoint"),
)


def _static_root() -> Any:
    return resources.files("ckptsim") / "web_static"


def plotly_js() -> bytes:
    """plotly.js as the plotly package ships it (never fetched from the internet)."""
    return (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()


class FlinkDashboard:
    """The static files of Flink's web dashboard, read from the ``web/`` folder of the
    ``flink-dist`` jar of an installed ``apache-flink`` (PyFlink); never copied anywhere."""

    def __init__(self, jar: Path) -> None:
        self.jar = jar
        self._zip = zipfile.ZipFile(jar)
        self._names = set(self._zip.namelist())
        self._lock = threading.Lock()

    @classmethod
    def find(cls) -> FlinkDashboard:
        """The dashboard of PyFlink (``apache-flink``) in this interpreter, or else of the
        Flink installation ``FLINK_HOME`` names (a Flink distribution, or PyFlink's folder in
        another environment)."""
        home = os.environ.get("FLINK_HOME")
        try:
            import pyflink  # noqa: PLC0415

            lib = Path(str(pyflink.__file__)).parent / "lib"
        except ImportError:
            if not home:
                raise FileNotFoundError(
                    "--flink-dashboard needs Flink's web dashboard, which comes with PyFlink: "
                    "pip install apache-flink (or pip install 'ckptsim[flink-dashboard]'), or "
                    "FLINK_HOME=<a Flink installation>"
                ) from None
            lib = Path(home) / "lib"
        jars = sorted(lib.glob("flink-dist*.jar"))
        if not jars:
            raise FileNotFoundError(f"no flink-dist jar in {lib}: reinstall apache-flink")
        return cls(jars[-1])

    def read(self, path: str) -> tuple[bytes, str] | None:
        name = "web" + (path if path != "/" else "/index.html")
        if name not in self._names:
            return None
        with self._lock:
            data = self._zip.read(name)
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        return data, kind


#: Flink's REST API version: every REST path is served under it as well (``/v1/jobs/overview``)
VERSION_PREFIX = "/v1"
#: connections the kernel queues while the server thread accepts (the stdlib's 5 drops bursts)
LISTEN_BACKLOG = 1024
#: how long one request may take to arrive, head and body together, however its bytes trickle
#: in; also how long an idle kept-alive connection stays open, and how long an answer may take
#: to be written
READ_TIMEOUT_S = 30.0
#: the largest request head (request line and headers), and the largest request body (Flink's
#: rest.server.max-content-length is 100 MiB; ckptsim's bodies are a few bytes of JSON)
MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 1024 * 1024
#: how long a closing connection's unread bytes are drained at most
LINGER_S = 2.0
#: host names that always mean this machine (besides loopback IP addresses)
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost", "ip6-loopback"})
_FORBIDDEN = "Forbidden"


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _netloc(value: str) -> tuple[str, int | None] | None:
    """``(host, port)`` of a ``Host`` header or of an origin's authority; None: malformed."""
    text = value.strip()
    if not text or any(c in text for c in "/?#@\\ \t"):
        return None
    if not _AUTHORITY.fullmatch(text):  # e.g. "[::1]]", which urlsplit reads as [::1]
        return None
    try:
        parts = urlsplit("//" + text)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    return (host, port) if host else None


#: host[:port] of a Host header or an authority: a name or IPv4 address, or [IPv6]
_AUTHORITY = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[^\[\]:]+)(?::[0-9]*)?")


def _is_json(content_type: str | None) -> bool:
    return (content_type or "").split(";", 1)[0].strip().lower() == "application/json"


def _no_constant(name: str) -> Any:
    """``NaN``, ``Infinity``: Python's JSON reader takes them, JSON (and Flink's) does not."""
    raise ValueError(f"{name} is not JSON")


#: an HTTP method is a token (RFC 9110, section 5.6.2)
_METHOD_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def _target(raw: str) -> tuple[str | None, str, str] | None:
    """A request target as ``(authority, path, query)``: origin form (``/path?query``; the
    authority None: the ``Host`` header names it) or absolute form (``http://host/path``,
    whose authority is the host asked for); None for any other (a path not starting with
    ``/``, another scheme, a URL without a host). ``//name/path`` is a path, not a host."""
    if raw.startswith("/"):
        path, _, query = raw.partition("?")
        return None, path, query
    if raw[:7].lower() == "http://" or raw[:8].lower() == "https://":
        try:
            parts = urlsplit(raw)
        except ValueError:  # a malformed host ("http://[::1/jobs")
            return None
        if not parts.netloc or "@" in parts.netloc:
            return None
        return parts.netloc, parts.path or "/", parts.query
    return None


class _Refused(Exception):
    """A request the server answers with an error and then closes the connection (its
    framing cannot be trusted, or its body was left unread)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.error = rest.RestError(status, message)


class _HeadTooLarge(http.client.HTTPException):
    """The request line and headers are over ``MAX_HEAD_BYTES``."""


class _Reader:
    """A connection's request bytes, read against a deadline: the head and body of one request
    must arrive within the read timeout however slowly they trickle in (a socket timeout alone
    bounds each read, not the request), and the head within ``MAX_HEAD_BYTES``."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = bytearray()
        self._eof = False
        self.deadline = 0.0
        self.head_budget: int | None = None
        self.started = False  # a byte of the current request has arrived

    def arm(self, timeout: float) -> None:
        """A new request: its deadline, its head budget."""
        self.deadline = time.monotonic() + timeout
        self.head_budget = MAX_HEAD_BYTES
        self.started = bool(self._buffer)

    def _fill(self) -> bool:
        if self._eof:
            return False
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the request did not arrive within the read timeout")
        self._sock.settimeout(remaining)
        data = self._sock.recv(65536)
        if not data:
            self._eof = True
            return False
        self._buffer += data
        self.started = True
        return True

    def _take(self, n: int) -> bytes:
        data = bytes(self._buffer[:n])
        del self._buffer[:n]
        if self.head_budget is not None:
            self.head_budget -= len(data)
            if self.head_budget < 0:
                raise _HeadTooLarge(f"the request head is over {MAX_HEAD_BYTES} bytes")
        return data

    def readline(self, limit: int = -1) -> bytes:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0 and (limit < 0 or end < limit):
                return self._take(end + 1)
            if 0 <= limit <= len(self._buffer):
                return self._take(limit)
            if not self._fill():
                return self._take(len(self._buffer))

    def read(self, n: int) -> bytes:
        while len(self._buffer) < n and self._fill():
            pass
        return self._take(min(n, len(self._buffer)))

    def close(self) -> None:
        self._buffer.clear()


class _HTTPServer(ThreadingHTTPServer):
    """A thread per connection, a real listen backlog, and no tracebacks on stderr for
    connections that break (a handler answers every request it can read)."""

    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("http_connection_failed", client=str(client_address), exc_info=True)


class WebServer:
    """Serves ``registry`` on ``host:port`` (port 0: a free one) from a daemon thread, a thread
    per connection.

    Only its user can drive it (docs/rest-security.md): while it is bound to a loopback
    address it answers only requests whose ``Host`` is a loopback name or address (DNS
    rebinding), and a request that changes anything (every method but GET, HEAD and OPTIONS)
    must carry ``Content-Type: application/json`` and come from the server's own origin (no
    ``Origin``, or the one the request was sent to), or from ``allow_origin``
    (``web.access-control-allow-origin``), which also turns on the CORS headers as Flink sends
    them. ``read_timeout_s`` bounds how long a request may take to arrive."""

    def __init__(
        self,
        registry: JobRegistry,
        *,
        host: str = "localhost",
        port: int = 8081,
        dashboard: FlinkDashboard | None = None,
        allow_origin: str | None = None,
        read_timeout_s: float = READ_TIMEOUT_S,
    ) -> None:
        if not 0 <= port <= 65535:
            raise ValueError(f"a port is a number from 0 to 65535 (0: a free one), got {port}")
        self.registry = registry
        self.dashboard = dashboard
        self.allow_origin = allow_origin or None
        self.read_timeout_s = read_timeout_s
        handler = type("Handler", (_Handler,), {"server_state": self})
        self.httpd = _HTTPServer((host, port), handler)
        self.host = host
        self.port = int(self.httpd.server_address[1])
        bound = str(self.httpd.server_address[0])
        self.loopback = _is_loopback(bound)
        self._names = frozenset({host.strip("[]").lower(), bound.lower()})
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, args=(0.05,), name="ckptsim-web", daemon=True
        )

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    @property
    def page_url(self) -> str:
        return self.url + ("ckptsim/" if self.dashboard is not None else "")

    def start(self) -> WebServer:
        self._thread.start()
        log.info("web_server_started", url=self.url)
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> WebServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # who may ask

    def host_refused(self, host: str | None) -> str | None:
        """Why a request to ``Host: host`` is refused (None: it is not)."""
        if not self.loopback or host is None:
            return None
        netloc = _netloc(host)
        if netloc is not None:
            name = netloc[0]
            if name in _LOOPBACK_NAMES or name in self._names or _is_loopback(name):
                return None
        return (
            f"{_FORBIDDEN}: Host {host!r} is not this server's address. Bound to a loopback "
            "address, it answers requests to localhost, 127.0.0.1 or [::1] only (a guard "
            "against DNS rebinding); to be reached by another name, bind it to that address "
            "(rest.bind-address, or ckptsim serve --address)."
        )

    def change_refused(
        self, origin: str | None, host: str | None, content_type: str | None
    ) -> str | None:
        """Why a request that changes anything is refused (None: it is not)."""
        if origin is not None and not self._origin_allowed(origin, host):
            own = f"http://{host}" if host else self.url.rstrip("/")
            return (
                f"{_FORBIDDEN}: a request that changes anything must come from this server's "
                f"own page or a client that is no web page (Origin {origin!r} is not {own}); "
                "web.access-control-allow-origin allows one other origin."
            )
        if not _is_json(content_type):
            got = f"{content_type!r}" if content_type else "none"
            return (
                f"{_FORBIDDEN}: a request that changes anything must have Content-Type: "
                f"application/json (got {got})."
            )
        return None

    def _origin_allowed(self, origin: str, host: str | None) -> bool:
        if self.allow_origin is not None and self.allow_origin in ("*", origin):
            return True
        try:
            parts = urlsplit(origin.strip())
            origin_netloc = (parts.hostname, parts.port or 80)
        except ValueError:
            return False
        if parts.scheme != "http" or parts.path not in ("", "/") or not parts.hostname:
            return False
        target = _netloc(host) if host is not None else (self.host.strip("[]"), self.port)
        return target is not None and origin_netloc == (target[0].lower(), target[1] or 80)


class _Handler(BaseHTTPRequestHandler):
    server_state: WebServer
    protocol_version = "HTTP/1.1"
    reader: _Reader
    request_body = b""
    #: the request's path began with /v1 (``_request``)
    versioned = False

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http_request", line=format % args)

    # the connection: framing, deadlines, bounds

    def setup(self) -> None:
        super().setup()
        self.rfile.close()
        self.reader = _Reader(self.connection)
        self.rfile = cast(io.BufferedIOBase, self.reader)

    def handle(self) -> None:
        try:
            super().handle()  # requests until one closes the connection
        finally:
            self._linger()

    def _linger(self) -> None:
        """End the connection gracefully: the answer is sent, then the client's unread bytes
        (a refused body, a head over the bound) are drained for a bounded while, so that closing
        with them unread does not reset the connection before the client has read the answer."""
        with contextlib.suppress(OSError):
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(min(self.server_state.read_timeout_s, LINGER_S))
            drained = 0
            while drained < MAX_BODY_BYTES:
                data = self.connection.recv(65536)
                if not data:
                    break
                drained += len(data)

    def handle_one_request(self) -> None:
        """One request: its head and body read within the deadline and the bounds (or an error
        answered and the connection closed), then answered."""
        state = self.server_state
        self.reader.arm(state.read_timeout_s)
        self.request_body = b""
        self.versioned = False
        self.target: tuple[str | None, str, str] | None = None
        self.command, self.request_version, self.requestline = "", "HTTP/1.1", ""
        try:
            try:
                self.raw_requestline = self.reader.readline(65537)
            except _HeadTooLarge:
                self.raw_requestline = b"x" * 65537
            if not self.raw_requestline:
                self.close_connection = True
                return
            if len(self.raw_requestline) > 65536:
                self.send_error(414, "Request-URI Too Long")
                return
            if not self.parse_request():  # it answered the error
                self.close_connection = True
                return
            self.reader.head_budget = None
            try:
                self.request_body = self._read_body()
            except _Refused as refused:
                self.close_connection = True
                self._error(refused.error)
                return
            self.connection.settimeout(state.read_timeout_s)  # to write the answer
            self._answer()
            self.wfile.flush()
        except TimeoutError:
            self.close_connection = True
            if self.reader.started:  # part of a request came, not all of it in time
                with contextlib.suppress(OSError):
                    self.connection.settimeout(1.0)
                    self.request_version = "HTTP/1.1"
                    self.send_error(408, "Request Timeout")
        except OSError:  # the client went away
            self.close_connection = True

    def _check_head(self) -> None:
        """``_Refused`` (400) for a head a proxy and this server could read differently: a
        method that is not an HTTP token, a header line without a colon, more than one
        ``Host``."""
        if not _METHOD_TOKEN.fullmatch(self.command):
            raise _Refused(400, f"Bad request: invalid method {self.command[:40]!r}.")
        if any("Missing" in type(d).__name__ for d in getattr(self.headers, "defects", [])):
            raise _Refused(400, "Bad request: a header line without a colon.")
        if len(self.headers.get_all("Host") or []) > 1:
            raise _Refused(400, "Bad request: more than one Host header.")
        self.target = _target(self.path)
        if self.target is None:
            raise _Refused(
                400,
                f"Bad request: invalid request target {self.path[:80]!r} (a path starting "
                "with '/', or an absolute http:// URL).",
            )
        if (
            self.target[0] is None
            and self.request_version != "HTTP/1.0"
            and self.headers.get("Host") is None
        ):
            raise _Refused(400, "Bad request: an HTTP/1.1 request without a Host header.")

    def _read_body(self) -> bytes:
        """The request's body by its framing (Content-Length, or chunked as Flink's server
        reads it); ``_Refused`` for framing that cannot be trusted or a body over the bound."""
        self._check_head()
        encodings = self.headers.get_all("Transfer-Encoding") or []
        lengths = self.headers.get_all("Content-Length") or []
        if encodings:
            codings = [c.strip().lower() for e in encodings for c in e.split(",") if c.strip()]
            if lengths:
                raise _Refused(400, "Bad request: both Transfer-Encoding and Content-Length.")
            if codings != ["chunked"]:
                raise _Refused(400, f"Bad request: unsupported Transfer-Encoding {codings}.")
            return self._read_chunked()
        if not lengths:
            return b""
        values = {v.strip() for v in lengths}
        value = values.pop()
        if values or not re.fullmatch(r"[0-9]+", value):
            raise _Refused(400, f"Bad request: invalid Content-Length {', '.join(lengths)!r}.")
        digits = value.lstrip("0") or "0"
        if len(digits) > 18 or int(digits) > MAX_BODY_BYTES:
            raise _Refused(413, f"Request entity too large: over {MAX_BODY_BYTES} bytes.")
        length = int(digits)
        body = self.reader.read(length)
        if len(body) < length:
            raise ConnectionResetError("the request body ended early")
        return body

    def _read_chunked(self) -> bytes:
        body = bytearray()
        while True:
            line = self.reader.readline(1024)
            if not line:
                raise ConnectionResetError("the request body ended early")
            size_text = line.split(b";", 1)[0].strip()
            if not line.endswith(b"\n") or not re.fullmatch(rb"[0-9A-Fa-f]{1,16}", size_text):
                raise _Refused(400, "Bad request: invalid chunk size in a chunked body.")
            size = int(size_text, 16)
            if len(body) + size > MAX_BODY_BYTES:
                raise _Refused(413, f"Request entity too large: over {MAX_BODY_BYTES} bytes.")
            if size == 0:
                break
            chunk = self.reader.read(size)
            end = self.reader.readline(3)
            if len(chunk) < size or not end:
                raise ConnectionResetError("the request body ended early")
            if end.strip(b"\r\n"):
                raise _Refused(400, "Bad request: a chunk is longer than its size.")
            body += chunk
        for _ in range(64):  # trailers, up to the empty line
            line = self.reader.readline(8192)
            if not line:
                raise ConnectionResetError("the request body ended early")
            if not line.strip(b"\r\n"):
                return bytes(body)
        raise _Refused(400, "Bad request: too many trailers in a chunked body.")

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The stdlib's errors (a malformed request line or head), as Flink's JSON."""
        self.close_connection = True
        if self.request_version == "HTTP/0.9":  # what it took for one: answer with a status
            self.request_version = "HTTP/1.1"
        text = message or self.responses.get(code, ("Error",))[0]
        if explain and explain != text:
            text = f"{text}: {explain}"
        self._json(code, {"errors": [text]})

    # plumbing

    def _send(self, status: int, payload: bytes, content_type: str | None) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        if status != 204:
            self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "no-store")
        allow_origin = self.server_state.allow_origin
        if allow_origin is not None:  # as Flink: on every answer
            self.send_header("Access-Control-Allow-Origin", allow_origin)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD" and status != 204:
            self.wfile.write(payload)

    def _json(self, status: int, body: Any) -> None:
        payload = json.dumps(body, separators=(",", ":")).encode("utf-8")
        self._send(status, payload, "application/json; charset=UTF-8")

    def _error(self, error: rest.RestError) -> None:
        self._json(error.status, error.body())

    def _request(self) -> tuple[str, dict[str, str]]:
        """The path (without the ``/v1`` of a versioned REST path: Flink's REST server serves
        every path under ``/v1/`` as well, and Flink's own client asks there) and the query."""
        _, target, query = self.target or (None, "/", "")
        path = target.rstrip("/") or "/"
        self.versioned = path == VERSION_PREFIX or path.startswith(VERSION_PREFIX + "/")
        if self.versioned:
            path = path[len(VERSION_PREFIX) :] or "/"
        return path, dict(parse_qsl(query))

    def _shown(self, path: str) -> str:
        """``path`` as the client asked for it (with its ``/v1``), for error messages."""
        if not self.versioned:
            return path
        return VERSION_PREFIX + (path if path != "/" else "")

    def _not_found(self, path: str) -> rest.RestError:
        return rest.not_found(self._shown(path))

    def _body(self, message: str) -> dict[str, Any]:
        raw = self.request_body
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw, parse_constant=_no_constant)
        except (ValueError, RecursionError):  # not JSON (NaN too), not UTF-8, or nested too deep
            body = None
        if not isinstance(body, dict):
            raise rest.RestError(400, f"{rest._REST_EXCEPTION}: {message}")
        return body

    def _answer(self) -> None:
        """Who may ask (Host; for a change, Origin and Content-Type), then the method."""
        state = self.server_state
        headers = self.headers
        # an absolute-form target names the host itself (RFC 9112: Host is then ignored)
        authority = self.target[0] if self.target is not None else None
        host = authority if authority is not None else headers.get("Host")
        refused = state.host_refused(host)
        if refused is None and self.command not in ("GET", "HEAD", "OPTIONS"):
            refused = state.change_refused(headers.get("Origin"), host, headers.get("Content-Type"))
        if refused is not None:
            log.info("http_request_refused", method=self.command, path=self.path, why=refused)
            self._error(rest.RestError(403, refused))
            return
        handlers: dict[str, Callable[[str, dict[str, str]], None]] = {
            "GET": self._get,
            "HEAD": self._get,
            "PATCH": self._patch,
            "POST": self._post,
            "OPTIONS": self._options,
        }
        handler = handlers.get(self.command, lambda path, query: self._error(self._not_found(path)))
        try:
            path, query = self._request()
            handler(path, query)
        except rest.RestError as error:
            self._error(error)
        except OSError:
            raise  # the client went away, or a write timed out: the connection ends
        except Exception as error:  # a bug: Flink answers 500 with the error
            log.exception("http_handler_failed", path=self.path)
            self._json(500, {"errors": [f"Internal server error: {type(error).__name__}: {error}"]})

    # methods

    def _options(self, path: str, query: dict[str, str]) -> None:
        """What may be asked; a CORS preflight is answered only when
        web.access-control-allow-origin is set (without it, a browser refuses the request)."""
        self.send_response(204)
        self.send_header("Allow", "GET, HEAD, POST, PATCH, OPTIONS")
        allow_origin = self.server_state.allow_origin
        if allow_origin is not None:
            self.send_header("Access-Control-Allow-Origin", allow_origin)
            if self.headers.get("Access-Control-Request-Method") is not None:
                self.send_header("Access-Control-Allow-Methods", "GET, HEAD, POST, PATCH")
                self.send_header("Access-Control-Allow-Headers", "Content-Type")
                self.send_header("Access-Control-Max-Age", "600")
        self.end_headers()

    def _get(self, path: str, query: dict[str, str]) -> None:
        state = self.server_state
        registry = state.registry
        page_root = "/ckptsim" if state.dashboard is not None else ""
        if self.versioned:  # the REST API only: no page, no dashboard file under /v1
            self._rest_get(path, query)
            return
        if path == "/ckptsim/static/plotly.min.js":
            self._send(200, plotly_js(), "application/javascript; charset=UTF-8")
            return
        if path.startswith("/ckptsim/static/"):
            self._static(path.removeprefix("/ckptsim/static/"))
            return
        if path.startswith("/ckptsim/jobs/") and path.endswith("/timeline"):
            job_id = path.removeprefix("/ckptsim/jobs/").removesuffix("/timeline")
            rest.parse_job_id(job_id)
            self._json(200, registry.timeline(job_id))
            return
        if path in (page_root or "/", "/ckptsim", "/ckptsim/index.html"):
            self._static("index.html")
            return
        self._rest_get(path, query)

    def _rest_get(self, path: str, query: dict[str, str]) -> None:
        """A GET of the REST API; a path it does not know is a file of Flink's dashboard (with
        --flink-dashboard), else Flink's 404."""
        state = self.server_state
        registry = state.registry
        parts = path.split("/")[1:]
        if parts[-1] in ("log", "stdout") and (
            (parts[:1] == ["jobmanager"] and len(parts) == 2)
            or (parts[:1] == ["taskmanagers"] and len(parts) == 3)
        ):  # ckptsim logs to its own streams: no log file to show
            if parts[0] == "taskmanagers":
                registry._taskmanager(parts[1], [j.view() for j in registry.live.values()])
            self._send(200, b"", "text/plain; charset=UTF-8")
            return
        if parts[0] == "jobs" and len(parts) == 3 and parts[2] == "yarn-cancel":
            raise rest.RestError(
                403,
                f"{_FORBIDDEN}: ckptsim does not cancel a job on a GET (any web page could make "
                "a browser send one): cancel with ckptsim cancel JOBID, flink cancel -m "
                "HOST:PORT JOBID, or PATCH /jobs/JOBID?mode=cancel as JSON.",
            )
        if parts[-1] == "log-url" and parts[0] == "jobs" and len(parts) in (4, 5):
            if parts[1] in registry.archived:  # no log of an archived job (Flink's
                raise rest.RestError(404, rest.FILE_NOT_FOUND)  # HistoryServer without patterns)
            job = registry.job(parts[1])
            where = "job-manager/logs" if len(parts) == 4 else f"task-manager/{parts[3]}/logs"
            if len(parts) == 5 and parts[3] != job.view().taskmanager_id:
                raise self._not_found(path)
            host = self.headers.get("Host") or f"{state.host}:{state.port}"
            self._json(200, {"url": f"http://{host}/#/{where}"})
            return
        operation = _operation_path(path)
        if operation is not None:
            job_id, group, trigger_id = operation
            self._json(200, registry.job(job_id).operation(group, trigger_id))
            return
        try:
            body = registry.get(path, query)
        except rest.RestError as error:
            if error.status != 404 or error.message == rest.FILE_NOT_FOUND:
                raise
            if state.dashboard is not None and not self.versioned:
                found = state.dashboard.read(path)
                if found is not None:
                    self._send(200, *found)
                    return
            if not path.startswith("/jobs"):
                shown = self._shown(path)
                raise rest.RestError(404, f"Unable to load requested file {shown}.") from None
            if error.message == rest.not_found(path).message:
                raise self._not_found(path) from None
            raise
        self._json(200, body)

    def _static(self, name: str) -> None:
        resource = _static_root() / name
        if "/" in name or not resource.is_file():
            raise rest.RestError(404, f"Unable to load requested file /ckptsim/static/{name}.")
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        self._send(200, resource.read_bytes(), f"{kind}; charset=UTF-8")

    def _patch(self, path: str, query: dict[str, str]) -> None:
        parts = path.split("/")
        if len(parts) != 3 or parts[1] != "jobs" or parts[2] == "overview":
            raise self._not_found(path)
        raw_query = self.target[2] if self.target is not None else ""
        given = dict(parse_qsl(raw_query, keep_blank_values=True))  # (query drops mode=)
        mode = given.get("mode", "cancel")
        if mode not in ("cancel", "stop"):  # mode= too: Flink refuses it, and cancels nothing
            raise rest.bad_parameter("query", "mode", mode)
        job = self.server_state.registry.job(parts[2])
        job.cancel()
        self._json(202, {})

    def _post(self, path: str, query: dict[str, str]) -> None:
        parts = path.split("/")
        if len(parts) != 4 or parts[1] != "jobs":
            raise self._not_found(path)
        suffix = "/" + parts[3]
        kinds = dict(_JOB_CONTROL)
        if suffix not in kinds:
            raise self._not_found(path)
        rest.parse_job_id(parts[2])
        kind = kinds[suffix]
        savepoint_format = "CANONICAL"
        if kind in ("savepoint", "stop"):
            # Flink's SavepointTriggerRequestBody / StopWithSavepointRequestBody, as Flink's
            # CLI sends them: {"target-directory"|"targetDirectory", "cancel-job"|"drain",
            # "formatType", "triggerId"}
            what = (
                "SavepointTriggerRequestBody"
                if kind == "savepoint"
                else ("StopWithSavepointRequestBody")
            )
            key = "target-directory" if kind == "savepoint" else "targetDirectory"
            flag = "cancel-job" if kind == "savepoint" else "drain"
            body = self._body(f"Request did not match expected format {what}.")
            directory = body.get(key)
            savepoint_format = body.get("formatType") or "CANONICAL"
            malformed = (
                not isinstance(body.get(flag, False) or False, bool)
                or savepoint_format not in rest.SAVEPOINT_FORMATS
                or not isinstance(body.get("triggerId") or "", str)
            )
            if malformed:
                raise rest.RestError(
                    400, f"{rest._REST_EXCEPTION}: Request did not match expected format {what}."
                )
            if body.get("cancel-job"):
                raise rest.RestError(
                    400,
                    f"{rest._REST_EXCEPTION}: cancel-job is not supported by ckptsim: "
                    "use POST /jobs/:jobid/stop (stop-with-savepoint).",
                )
        else:
            body = self._body("Request did not match expected format CheckpointTriggerRequestBody.")
            directory = None
            key = ""
            checkpoint_type = str(body.get("checkpointType", "CONFIGURED")).upper()
            if checkpoint_type not in ("CONFIGURED", "FULL", "INCREMENTAL"):
                raise rest.RestError(
                    400,
                    f"{rest._REST_EXCEPTION}: Request did not match expected format "
                    "CheckpointTriggerRequestBody.",
                )
            kind = "full_checkpoint" if checkpoint_type == "FULL" else "checkpoint"
        if directory is not None and not isinstance(directory, str):
            raise rest.RestError(400, f"{rest._REST_EXCEPTION}: the target directory is a path")
        if isinstance(directory, str):
            try:
                directory = local_path(directory)
            except ValueError as error:
                raise rest.RestError(400, f"{rest._REST_EXCEPTION}: {error}") from None
        job = self.server_state.registry.job(parts[2])  # the body first, as Flink's handlers
        job.check_controllable()
        if kind in ("savepoint", "stop") and not directory and not job.savepoint_dir:
            raise rest.RestError(
                400,
                f"{rest._REST_EXCEPTION}: Config key [execution.checkpointing.savepoint-dir] is "
                f"not set. Property [{key}] must be provided.",
            )
        requested = body.get("triggerId") or None
        trigger_id = job.trigger(
            kind,
            directory or None,
            savepoint_format=savepoint_format,
            trigger_id=requested,
            drain=kind == "stop" and bool(body.get("drain")),
        )
        self._json(202, rest.trigger_body(trigger_id))


def _operation_path(path: str) -> tuple[str, str, str] | None:
    """``/jobs/:jobid/savepoints/:triggerid`` or ``/jobs/:jobid/checkpoints/:triggerid``."""
    parts = path.split("/")
    if len(parts) == 5 and parts[1] == "jobs" and parts[3] in ("savepoints", "checkpoints"):
        if parts[3] == "checkpoints" and parts[4] == "config":
            return None
        group = "savepoint" if parts[3] == "savepoints" else "checkpoint"
        return parts[2], group, parts[4]
    return None


def thread_dump() -> list[tuple[str, str]]:
    """Every thread of this process with its stack, as Flink's thread dump lists a JVM's."""
    frames = sys._current_frames()
    out = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1)
        state = "RUNNABLE" if thread.is_alive() else "TERMINATED"
        head = f'"{thread.name}" Id={thread.ident} {state}{" (daemon)" if thread.daemon else ""}\n'
        stack = (
            "".join(f"\tat {line.strip()}\n" for line in traceback.format_stack(frame)[::-1])
            if frame
            else ""
        )
        out.append((thread.name, head + stack + "\n"))
    return out


__all__ = [
    "ArchivedJob",
    "FlinkDashboard",
    "JobRegistry",
    "LiveJob",
    "WebServer",
    "load_archives",
]
