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
import json
import mimetypes
import threading
import time
import uuid
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pykka

from actors.logs import get_logger
from actors.protocol import CancelJob, QueryJob, SnapshotOutcome, SnapshotRequest
from runtime import rest
from runtime.config import CheckpointConfig, Configuration
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

    # views

    def finish(self, result: JobResult) -> None:
        view = rest.view_of_result(
            self.job,
            self.checkpoint_config,
            result,
            parallelism=self.parallelism,
            restart_strategy=self.restart_strategy,
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
        )

    def _gather(self) -> rest.JobView | None:
        """Ask the JobMaster, its tasks and the coordinator (None: they did not answer)."""
        try:
            info: dict[str, Any] = self.master.ask(QueryJob(), block=True, timeout=ASK_TIMEOUT_S)
            metrics = dict(info["task_metrics"])
            futures = {t: ref.proxy().progress() for t, ref in info["tasks"].items()}
            for task, future in futures.items():
                with contextlib.suppress(pykka.ActorDeadError, pykka.Timeout):
                    metrics[task] = future.get(timeout=ASK_TIMEOUT_S)["io"]
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
        )

    # control

    def _check_controllable(self) -> None:
        if self.result is not None:
            raise rest.RestError(
                409, f"Job {self.job_id} has already reached the state {self.result.status.value}."
            )
        if not self.askable:
            raise rest.RestError(
                409, "a job on the deterministic simulation cannot be controlled from outside"
            )

    def cancel(self) -> None:
        self._check_controllable()
        with contextlib.suppress(pykka.ActorDeadError):
            self.master.tell(CancelJob())

    def trigger(self, kind: str, directory: str | None) -> str:
        """Start a savepoint (``savepoint``, ``stop``) or checkpoint (``checkpoint``,
        ``full_checkpoint``); returns the trigger id for its status."""
        self._check_controllable()
        future: pykka.Future[Any] = pykka.ThreadingFuture()
        trigger_id = uuid.uuid4().hex
        group = "checkpoint" if kind.endswith("checkpoint") else "savepoint"
        self.operations[trigger_id] = _Operation(group, future)
        try:
            self.master.tell(SnapshotRequest(kind=kind, directory=directory, reply=future))
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
        self.overview: rest.JsonDict = jobs[0]
        self.job_id: str = self.overview["jid"]
        self.bodies = dict(bodies)
        self.source = source

    def body(self, path: str) -> rest.Body | None:
        return self.bodies.get(path)


def load_archives(paths: Iterable[str]) -> list[ArchivedJob]:
    """Jobs from archive files, or from every archive file under a directory (Flink 2.3's
    layout ``<cluster>/applications/<app>/jobs/<job>`` included)."""
    jobs: list[ArchivedJob] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            candidates = sorted(p for p in path.rglob("*") if p.is_file())
            for file in candidates:
                if file.name == "application-summary":
                    continue
                with contextlib.suppress(rest.ArchiveFormatError, OSError, ValueError):
                    jobs.append(_load(file))
        elif path.is_file():
            jobs.append(_load(path))
        else:
            raise FileNotFoundError(raw)
    return jobs


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
        if path == "/jobs":
            statuses = [{"id": v.job_id, "status": v.status} for v in views.values()]
            statuses += [{"id": a["jid"], "status": a["state"]} for a in archived_jobs]
            return {"jobs": statuses}
        archived = self._archived_body(path)
        if archived is not None:
            return archived
        routed = rest.route_job(views, path, query)
        if routed is not None:
            return routed[1]
        raise rest.not_found(path)

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

        timeline = build_timeline(job_id, self.body_getter(job_id))
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
        try:
            import pyflink  # noqa: PLC0415
        except ImportError:
            raise FileNotFoundError(
                "--flink-dashboard needs Flink's web dashboard, which comes with PyFlink: "
                "pip install apache-flink (or pip install 'ckptsim[flink-dashboard]')"
            ) from None
        lib = Path(pyflink.__file__).parent / "lib"
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


class WebServer:
    """Serves ``registry`` on ``host:port`` (port 0: a free one) from a daemon thread."""

    def __init__(
        self,
        registry: JobRegistry,
        *,
        host: str = "localhost",
        port: int = 8081,
        dashboard: FlinkDashboard | None = None,
    ) -> None:
        self.registry = registry
        self.dashboard = dashboard
        handler = type("Handler", (_Handler,), {"server_state": self})
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.host = host
        self.port = int(self.httpd.server_address[1])
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


class _Handler(BaseHTTPRequestHandler):
    server_state: WebServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http_request", line=format % args)

    # plumbing

    def _send(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _json(self, status: int, body: Any) -> None:
        payload = json.dumps(body, separators=(",", ":")).encode("utf-8")
        self._send(status, payload, "application/json; charset=UTF-8")

    def _error(self, error: rest.RestError) -> None:
        self._json(error.status, error.body())

    def _request(self) -> tuple[str, dict[str, str]]:
        parts = urlsplit(self.path)
        path = parts.path.rstrip("/") or "/"
        return path, dict(parse_qsl(parts.query))

    def _body(self, message: str) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise rest.RestError(400, f"{rest._REST_EXCEPTION}: {message}")
        return body

    def _dispatch(self, handler: Callable[[str, dict[str, str]], None]) -> None:
        path, query = self._request()
        try:
            handler(path, query)
        except rest.RestError as error:
            self._error(error)
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as error:  # a bug: Flink answers 500 with the error
            log.exception("http_handler_failed", path=self.path)
            self._json(500, {"errors": [f"Internal server error: {type(error).__name__}: {error}"]})

    # methods

    def do_GET(self) -> None:
        self._dispatch(self._get)

    def do_HEAD(self) -> None:
        self._dispatch(self._get)

    def do_PATCH(self) -> None:
        self._dispatch(self._patch)

    def do_POST(self) -> None:
        self._dispatch(self._post)

    def do_DELETE(self) -> None:
        self._dispatch(lambda path, query: self._error(rest.not_found(path)))

    def do_PUT(self) -> None:
        self.do_DELETE()

    def _get(self, path: str, query: dict[str, str]) -> None:
        state = self.server_state
        registry = state.registry
        page_root = "/ckptsim" if state.dashboard is not None else ""
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
        operation = _operation_path(path)
        if operation is not None:
            job_id, group, trigger_id = operation
            self._json(200, registry.job(job_id).operation(group, trigger_id))
            return
        try:
            body = registry.get(path, query)
        except rest.RestError as error:
            if error.status == 404 and state.dashboard is not None:
                found = state.dashboard.read(path)
                if found is not None:
                    self._send(200, *found)
                    return
            if error.status == 404 and not path.startswith("/jobs"):
                raise rest.RestError(404, f"Unable to load requested file {path}.") from None
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
            raise rest.not_found(path)
        mode = query.get("mode", "cancel")
        if mode not in ("cancel", "stop"):
            raise rest.bad_parameter("query", "mode", mode)
        job = self.server_state.registry.job(parts[2])
        job.cancel()
        self._json(202, {})

    def _post(self, path: str, query: dict[str, str]) -> None:
        parts = path.split("/")
        if len(parts) != 4 or parts[1] != "jobs":
            raise rest.not_found(path)
        suffix = "/" + parts[3]
        kinds = dict(_JOB_CONTROL)
        if suffix not in kinds:
            raise rest.not_found(path)
        job = self.server_state.registry.job(parts[2])
        kind = kinds[suffix]
        if kind == "savepoint":
            body = self._body("Request did not match expected format SavepointTriggerRequestBody.")
            directory = body.get("target-directory")
            if body.get("cancel-job"):
                raise rest.RestError(
                    400,
                    f"{rest._REST_EXCEPTION}: cancel-job is not supported by ckptsim: "
                    "use POST /jobs/:jobid/stop (stop-with-savepoint).",
                )
        elif kind == "stop":
            body = self._body("Request did not match expected format StopWithSavepointRequestBody.")
            directory = body.get("targetDirectory")
            if not isinstance(body.get("drain", False), bool):
                raise rest.RestError(
                    400,
                    f"{rest._REST_EXCEPTION}: Request did not match expected format "
                    "StopWithSavepointRequestBody.",
                )
        else:
            body = self._body("Request did not match expected format CheckpointTriggerRequestBody.")
            directory = None
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
            directory = directory.removeprefix("file://").removeprefix("file:")
        trigger_id = job.trigger(kind, directory)
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


__all__ = [
    "ArchivedJob",
    "FlinkDashboard",
    "JobRegistry",
    "LiveJob",
    "WebServer",
    "load_archives",
]
