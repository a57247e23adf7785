"""The command line of the REST API, the archives and the timeline: ``ckptsim run``'s
``--web``, ``--stats``, ``--timeline`` and ``--flink-dashboard``; ``ckptsim serve``,
``ckptsim timeline``; and a Flink-style client (``list``, ``cancel``, ``savepoint``,
``stop``, each with ``-m host:port``) that talks to a running job's REST API."""

from __future__ import annotations

import argparse
import contextlib
import errno
import http.client
import io
import json
import os
import re
import signal
import socket
import sys
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.config import local_path

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEFAULT_ADDRESS = "localhost:8081"
#: how long the client waits for a savepoint (Flink's client: client.timeout, 60 s)
CLIENT_TIMEOUT_S = 60.0


class UsageError(Exception):
    """Bad input on the command line (exit status 2)."""


def _stats_directory(path: str) -> bool:
    """``--stats DIR``: a directory that exists, or a path ending in a separator."""
    return path.endswith(("/", os.sep)) or Path(path).is_dir()


def _unwritable(path: str) -> str | None:
    """Why the file ``path`` cannot be written (None: it can): what the user has to fix."""
    target = Path(path)
    if target.is_dir():
        return "it is a directory: give a file name"
    if target.exists():
        return None if os.access(target, os.W_OK) else "no permission to write it"
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.exists():
        return f"its folder {parent} does not exist: create it first"
    if not parent.is_dir():
        return f"{parent} is not a folder"
    return None if os.access(parent, os.W_OK) else f"no permission to write in {parent}"


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the serving as Ctrl-C does (main thread only)."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def serve_forever(url: str) -> None:
    # SIGTERM is handled before the line says so: a signal sent on reading it ends the serving
    with sigterm_as_interrupt(), contextlib.suppress(KeyboardInterrupt):
        print(f"Serving {url} until Ctrl-C (or SIGTERM).", file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)


# --- ckptsim run: --web, --stats, --timeline ---------------------------------------------------


def add_run_options(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--stats",
        metavar="FILE",
        help="write the job's archive, Flink's format (the HistoryServer's; ckptsim serve "
        "reads it): every REST body of the job; '-' writes it to standard output; a directory "
        "(one that exists, or a path ending in /) gets Flink 2.3's layout of "
        "jobmanager.archive.fs.dir, an application per job, for Flink's HistoryServer",
    )
    run.add_argument(
        "--web",
        action="store_true",
        help="serve Flink's REST API and the web page on rest.address:rest.port (default "
        "localhost:8081; -D rest.port=0 picks a free port) while the job runs, and after it "
        "until Ctrl-C",
    )
    run.add_argument(
        "--flink-dashboard",
        action="store_true",
        help="with --web: serve Flink's own web dashboard at / (needs apache-flink installed; "
        "the ckptsim page moves to /ckptsim/)",
    )
    run.add_argument(
        "--timeline",
        metavar="FILE",
        help="draw the checkpoint timeline at the end (.png, .svg or .html)",
    )


@dataclass
class RunOutputs:
    """What ``ckptsim run`` shows and writes besides the job: the web server, the archive,
    the timeline."""

    args: argparse.Namespace
    registry: Any = None
    server: Any = None
    #: the Prometheus reporter (``metrics.reporter.prom.*``), if configured
    reporter: Any = None
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def prepare(cls, args: argparse.Namespace, settings: dict[str, str]) -> RunOutputs:
        """Check the output paths and start the server before the job; ``UsageError``."""
        from runtime.config import Configuration  # noqa: PLC0415

        outputs = cls(args)
        try:  # a file: URI is a path as well
            if args.stats and args.stats != "-":
                args.stats = local_path(args.stats)
            if args.timeline:
                args.timeline = local_path(args.timeline)
        except ValueError as error:
            raise UsageError(str(error)) from None
        if args.stats and args.stats != "-" and _stats_directory(args.stats):
            try:
                Path(args.stats).mkdir(parents=True, exist_ok=True)
            except OSError as error:
                reason = _why(error)
                raise UsageError(
                    f"cannot write the stats directory {args.stats}: {reason}"
                ) from None
            if not os.access(args.stats, os.W_OK):
                raise UsageError(
                    f"cannot write the stats directory {args.stats}: no permission to write in it"
                )
        elif args.stats and args.stats != "-" and (why := _unwritable(args.stats)):
            raise UsageError(f"cannot write the stats file {args.stats}: {why}")
        if args.timeline:
            from ckptsim._timeline_plot import FORMATS  # noqa: PLC0415

            if Path(args.timeline).suffix.lower() not in FORMATS:
                raise UsageError(f"--timeline {args.timeline}: use a .png, .svg or .html file name")
            if problem := _unwritable(args.timeline):
                raise UsageError(f"cannot write the timeline file {args.timeline}: {problem}")
        if args.flink_dashboard and not args.web:
            raise UsageError("--flink-dashboard goes with --web")
        reporter = Configuration(settings)["metrics.reporter.prom.factory.class"]
        prometheus = reporter is not None and reporter.strip() == PROMETHEUS_FACTORY
        if reporter is not None and not prometheus:
            print(
                f"ckptsim: metrics.reporter.prom.factory.class {reporter} ignored: ckptsim has "
                f"Flink's Prometheus reporter only ({PROMETHEUS_FACTORY})",
                file=sys.stderr,
            )
        if not (args.web or args.stats or args.timeline or prometheus):
            return outputs
        from ckptsim._web import JobRegistry  # noqa: PLC0415

        outputs.registry = JobRegistry()
        outputs.options["observer"] = outputs.registry
        if prometheus:
            outputs.reporter = start_reporter(outputs.registry, Configuration(settings))
        if args.web:
            conf = Configuration(settings)
            host = conf["rest.bind-address"] or conf["rest.address"]
            allow_origin = conf["web.access-control-allow-origin"]
            outputs.server = start_server(
                outputs.registry,
                host,
                conf["rest.port"],
                dashboard=args.flink_dashboard,
                allow_origin=allow_origin
                if conf.is_set("web.access-control-allow-origin")
                else None,
            )
            print_urls(outputs.server, conf["rest.address"])
        return outputs

    def finish(self) -> list[str]:
        """After the job, or after Ctrl-C for the jobs that ran: the archive, the timeline.
        Returns a line for each that could not be written (a full disk); nothing is left
        half-written."""
        if self.registry is None:
            return []
        views = self.registry.finished_views()
        if not views:
            return []
        from actors.archive import write_archive, write_archive_dir  # noqa: PLC0415

        problems = []
        if self.args.stats:
            try:
                if self.args.stats != "-" and _stats_directory(self.args.stats):
                    for view in views:  # an application per job, as Flink 2.3 archives them
                        write_archive_dir(view, self.args.stats)
                else:
                    write_archive(views[-1], self.args.stats)
            except OSError as error:
                problems.append(f"cannot write the stats file {self.args.stats}: {_why(error)}")
        if self.args.timeline:
            from runtime.timeline import build_timeline  # noqa: PLC0415

            timelines = [
                build_timeline(v.job_id, self.registry.body_getter(v.job_id)) for v in views
            ]
            try:
                path = write_timeline_atomically(timelines, self.args.timeline)
            except OSError as error:
                why = _why(error)
                problems.append(f"cannot write the timeline file {self.args.timeline}: {why}")
            else:
                print(f"Timeline written to {path}", file=sys.stderr)
        return problems

    def serve(self) -> None:
        if self.server is None:
            return
        try:
            serve_forever(self.server.page_url)
        finally:
            self.server.stop()

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self.reporter is not None:
            self.reporter.stop()
            self.reporter = None


def _why(error: OSError) -> str:
    return error.strerror or str(error)


def write_timeline_atomically(timelines: list[Any], target: str | Path) -> Path:
    """``write_timeline`` into a file beside ``target`` that replaces it once drawn (removed
    when drawing or writing fails): never a partial picture."""
    from ckptsim._timeline_plot import write_timeline  # noqa: PLC0415

    path = Path(target)
    tmp = path.with_name(f"{path.stem}.inprogress{path.suffix}")
    try:
        write_timeline(timelines, tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return path


def start_server(
    registry: Any, host: str, port: int, *, dashboard: bool, allow_origin: str | None = None
) -> Any:
    """The web server, started; ``UsageError`` (one line) when it cannot serve there."""
    from ckptsim._web import FlinkDashboard, WebServer  # noqa: PLC0415

    if not 0 <= port <= 65535:
        raise UsageError(
            f"cannot serve on port {port}: a port is a number from 0 to 65535 (0: a free one)"
        )
    flink = None
    if dashboard:
        try:
            flink = FlinkDashboard.find()
        except (FileNotFoundError, OSError) as error:
            raise UsageError(str(error)) from None
    try:
        server = WebServer(
            registry, host=host, port=port, dashboard=flink, allow_origin=allow_origin
        )
    except OSError as error:
        advice = (
            ". Choose another port (-D rest.port=N, or serve --port N; 0 for a free one)"
            if error.errno in (errno.EADDRINUSE, errno.EACCES)
            else ""
        )
        raise UsageError(
            f"cannot serve on {host}:{port}: {error.strerror or error}{advice}"
        ) from None
    except (OverflowError, ValueError) as error:  # e.g. a host name no resolver takes
        raise UsageError(f"cannot serve on {host}:{port}: {error}") from None
    return server.start()


#: ``metrics.reporter.prom.factory.class`` of Flink's Prometheus reporter
PROMETHEUS_FACTORY = "org.apache.flink.metrics.prometheus.PrometheusReporterFactory"


def start_reporter(registry: Any, conf: Any) -> Any:
    """Flink's Prometheus reporter on ``metrics.reporter.prom.port``, started; ``UsageError``
    (one line) when it cannot serve there."""
    from ckptsim._prometheus import PrometheusReporter  # noqa: PLC0415

    spec = conf["metrics.reporter.prom.port"]
    try:
        reporter = PrometheusReporter(
            registry,
            spec,
            conf["metrics.reporter.prom.host"],
            conf["metrics.reporter.prom.filterLabelValueCharacters"],
        )
    except (OSError, ValueError) as error:
        raise UsageError(f"cannot start the Prometheus reporter: {error}") from None
    print(f"Prometheus metrics: {reporter.url}", file=sys.stderr, flush=True)
    return reporter


def print_urls(server: Any, address: str | None = None) -> None:
    page = server.page_url
    if address and server.host in ("0.0.0.0", "::"):
        page = page.replace(server.host, address, 1)
    print(f"Web page: {page}", file=sys.stderr, flush=True)
    print(f"REST API: {server.url}jobs/overview", file=sys.stderr, flush=True)
    if server.dashboard is not None:
        print(f"Flink dashboard: {server.url}", file=sys.stderr, flush=True)


# --- ckptsim serve, ckptsim timeline -----------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    from ckptsim._web import JobRegistry, load_archives  # noqa: PLC0415
    from runtime.rest import ArchiveFormatError  # noqa: PLC0415

    try:
        jobs = load_archives(args.paths)
    except FileNotFoundError as missing:
        print(f"ckptsim serve: no such file or directory: {missing}", file=sys.stderr)
        return EXIT_USAGE
    except (ArchiveFormatError, OSError) as error:
        print(f"ckptsim serve: {error}", file=sys.stderr)
        return EXIT_USAGE
    if not jobs:
        print(
            f"ckptsim serve: no job archive in {' '.join(args.paths)} (write one with "
            "ckptsim run --stats FILE, or -D jobmanager.archive.fs.dir=DIR)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        server = start_server(
            JobRegistry(jobs), args.address, args.port, dashboard=args.flink_dashboard
        )
    except UsageError as error:
        print(f"ckptsim serve: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        # SIGTERM is an interrupt from before the URLs are printed: a caller that reads them
        # and stops the server at once must not kill the process with the default handler
        with sigterm_as_interrupt(), contextlib.suppress(KeyboardInterrupt):
            print(f"{len(jobs)} archived job(s)", file=sys.stderr)
            print_urls(server)
            serve_forever(server.page_url)
    finally:
        server.stop()
    return EXIT_OK


def cmd_timeline(args: argparse.Namespace) -> int:
    from ckptsim._timeline_plot import FORMATS  # noqa: PLC0415
    from ckptsim._web import load_archives  # noqa: PLC0415
    from runtime.rest import ArchiveFormatError  # noqa: PLC0415
    from runtime.timeline import build_timeline  # noqa: PLC0415

    if Path(args.output).suffix.lower() not in FORMATS:
        print(f"ckptsim timeline: -o {args.output}: use .png, .svg or .html", file=sys.stderr)
        return EXIT_USAGE
    unwritable = _unwritable(args.output)
    if unwritable is not None:  # said before the archives are read and the picture drawn
        print(f"ckptsim timeline: cannot write {args.output}: {unwritable}", file=sys.stderr)
        return EXIT_USAGE
    try:
        jobs = load_archives(args.archives)
    except FileNotFoundError as missing:
        print(f"ckptsim timeline: no such file or directory: {missing}", file=sys.stderr)
        return EXIT_USAGE
    except (ArchiveFormatError, OSError) as error:
        print(f"ckptsim timeline: {error}", file=sys.stderr)
        return EXIT_USAGE
    if not jobs:
        print(f"ckptsim timeline: {' '.join(args.archives)} hold no job", file=sys.stderr)
        return EXIT_USAGE
    if args.job:
        every = sorted(j.job_id for j in jobs)
        jobs = [j for j in jobs if j.job_id.lower().startswith(args.job.strip().lower())]
        if not jobs:
            shown = ", ".join(every[:5]) + (", ..." if len(every) > 5 else "")
            print(
                f"ckptsim timeline: --job {args.job}: no job's id starts with it; the archives "
                f"hold {shown}",
                file=sys.stderr,
            )
            return EXIT_USAGE
    try:
        timelines = [build_timeline(j.job_id, j.body) for j in jobs]
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as error:
        print(
            f"ckptsim timeline: {' '.join(args.archives)}: a body of another shape than Flink's "
            f"({type(error).__name__}: {error}); give archives ckptsim run --stats or Flink's "
            "jobmanager.archive.fs.dir wrote, unchanged",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        path = write_timeline_atomically(timelines, args.output)
    except OSError as error:
        print(f"ckptsim timeline: cannot write {args.output}: {_why(error)}", file=sys.stderr)
        return EXIT_USAGE
    print(f"Timeline written to {path}")
    return EXIT_OK


# --- the client ----------------------------------------------------------------------------------

#: how long the client waits for one answer of the REST API, from connecting to its last byte
REQUEST_TIMEOUT_S = 10.0
#: the largest answer the client reads
MAX_ANSWER_BYTES = 64 * 1024 * 1024
_JOB_ID = re.compile(r"[0-9a-fA-F]{32}")
_TRIGGER_ID = re.compile(r"[0-9A-Za-z_-]{1,128}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
#: the Java exception class that begins Flink's error messages
_JAVA_CLASS = re.compile(r"^(?:(?:[a-z_]\w*\.)+[A-Z]\w*(?:Exception|Error): )+")


class ClientError(Exception):
    """The REST API answered that it could not do it (``exit_code`` 1), or there was no REST API
    of a job to ask: a bad address, nothing listening, no answer, or a server that is not
    ckptsim's or Flink's (``exit_code`` 2)."""

    def __init__(self, message: str, *, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _base(address: str) -> str:
    address = address.strip()
    if "://" in address:
        return address.rstrip("/")
    return f"http://{address}"


class _DeadlineReader(io.RawIOBase):
    """A socket's bytes, each read bounded by what is left of one deadline (a socket timeout
    alone bounds each read, so a server trickling bytes could hold the client forever)."""

    def __init__(self, owner: _DeadlineSocket, deadline: float) -> None:
        super().__init__()
        self._owner = owner
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("timed out")
        sock = self._owner.sock
        sock.settimeout(remaining)
        return sock.recv_into(buffer)

    def close(self) -> None:
        if not self.closed:
            super().close()
            self._owner.reader_closed()


class _DeadlineSocket:
    """What ``http.client`` uses of a connected socket, its reads under ``_DeadlineReader``.
    As a socket and its ``makefile`` do, it closes the socket only once both it and every
    reader it made are closed: ``http.client`` closes the connection's socket as soon as an
    answer says the server closes (HTTP/1.0), while the answer is still being read."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self._deadline = deadline
        self._readers = 0
        self._closed = False

    def sendall(self, data: bytes) -> None:
        self.sock.settimeout(max(self._deadline - time.monotonic(), 0.001))
        self.sock.sendall(data)

    def makefile(self, mode: str) -> io.BufferedReader:
        self._readers += 1
        return io.BufferedReader(_DeadlineReader(self, self._deadline))

    def reader_closed(self) -> None:
        self._readers -= 1
        self._close_when_unused()

    def close(self) -> None:
        self._closed = True
        self._close_when_unused()

    def _close_when_unused(self) -> None:
        if self._closed and self._readers <= 0:
            self.sock.close()


def request(
    address: str, method: str, path: str, body: Any = None, *, accepted: int | None = None
) -> Any:
    """One call of the REST API at ``address`` (``host:port`` or a URL): its JSON answer.
    Changes go as JSON (``Content-Type: application/json``, as Flink's own client sends them;
    ckptsim's server refuses anything else). ``accepted``: the success status the REST API
    answers (Flink's 202 for a change). ``ClientError`` for anything else."""
    base = _base(address)
    connection_class: type[http.client.HTTPConnection] = http.client.HTTPConnection
    try:
        parts = urllib.parse.urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("give host:port")
        if parts.query or parts.fragment or _CONTROL.search(parts.path) or " " in parts.path:
            raise ValueError("a path of a URL, then nothing else")
        if parts.scheme == "https":
            connection_class = http.client.HTTPSConnection
        connection = connection_class(parts.hostname, parts.port, timeout=REQUEST_TIMEOUT_S)
    except (ValueError, http.client.InvalidURL) as error:  # a bad port, a host with spaces
        raise ClientError(f"-m {address}: not an address of a REST API ({error})") from None
    url = base + path
    data = json.dumps({} if body is None else body).encode() if method != "GET" else None
    headers = {"Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    deadline = time.monotonic() + REQUEST_TIMEOUT_S
    no_answer = ClientError(
        f"{url}: no answer within {REQUEST_TIMEOUT_S:g} s. Is it the REST API of a job "
        "(ckptsim run --web, or ckptsim serve)?"
    )
    try:
        try:
            connection.connect()
        except TimeoutError:
            raise no_answer from None
        except (OSError, ValueError) as error:  # connection refused, no such host, bad name
            reason = getattr(error, "strerror", None) or error
            raise ClientError(
                f"cannot reach the REST API at {base}: {reason}. Is a job running with "
                "ckptsim run --web (or ckptsim serve)? Give its address with -m host:port"
            ) from None
        connection.sock = _DeadlineSocket(connection.sock, deadline)
        connection.request(method, parts.path.rstrip("/") + path, body=data, headers=headers)
        response = connection.getresponse()
        raw = response.read(MAX_ANSWER_BYTES + 1)
    except TimeoutError:
        raise no_answer from None
    except (http.client.HTTPException, OSError, ValueError) as error:
        raise ClientError(
            f"{url}: the server did not answer HTTP ({type(error).__name__}: {error}); it is "
            "not ckptsim's REST API"
        ) from None
    finally:
        connection.close()
    status = response.status
    kind = response.getheader("Content-Type") or "no content type"
    if len(raw) > MAX_ANSWER_BYTES:
        raise ClientError(f"{url}: the answer is over {MAX_ANSWER_BYTES} bytes: not a REST API")
    if 300 <= status < 400:
        where = response.getheader("Location")
        to = f" to {where}" if where else ""
        raise ClientError(
            f"{url}: answered {status} (a redirect{to}), as ckptsim's REST API never does: "
            "give the address of the REST API itself with -m host:port"
        )
    not_json = object()
    try:
        answer = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested too deep
        answer = not_json
    if status >= 400:
        errors = answer.get("errors") if isinstance(answer, dict) else None
        if not isinstance(errors, list) or not all(isinstance(e, str) for e in errors):
            raise ClientError(
                f"{url}: answered {status} {response.reason} ({kind}) without the REST API's "
                "error body: not ckptsim's REST API"
            )
        detail = "; ".join(_JAVA_CLASS.sub("", e.splitlines()[0]) for e in errors if e.strip())
        detail = detail or response.reason
        raise ClientError(f"{method} {path}: {status} {detail}", exit_code=EXIT_FAILED)
    if answer is not_json:
        raise ClientError(
            f"{url}: answered {status} with {kind} that is not JSON: not ckptsim's REST API"
        )
    if accepted is not None and status != accepted:
        raise ClientError(
            f"{url}: answered {status} where the REST API answers {accepted}: not ckptsim's "
            "REST API"
        )
    return answer


def _not_the_api(address: str, path: str, what: str) -> ClientError:
    return ClientError(f"{_base(address)}{path}: the answer is {what}: not ckptsim's REST API")


def _fields(answer: Any, address: str, path: str, **kinds: type | tuple[type, ...]) -> Any:
    """``answer`` as an object with these fields of these types (else ``ClientError``)."""
    if not isinstance(answer, dict):
        raise _not_the_api(address, path, f"a JSON {type(answer).__name__}, not an object")
    for name, kind in kinds.items():
        value = answer.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):  # no field is a bool
            raise _not_the_api(address, path, f"without the field {name!r} of the right type")
    return answer


def _job_id(job_id: str) -> str:
    if not _JOB_ID.fullmatch(job_id):
        raise ClientError(
            f"{job_id!r} is not a job id (32 hexadecimal digits, as ckptsim list shows)"
        )
    return job_id.lower()


def _format_time(epoch_ms: int) -> str:
    return time.strftime("%d.%m.%Y %H:%M:%S", time.localtime(epoch_ms / 1000))


def _printable(text: str, limit: int = 300) -> str:
    """``text`` on one line, without control characters (a server's words never move the
    cursor of the terminal they are shown on), and at most ``limit`` characters."""
    text = _CONTROL.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fail(command: str, error: ClientError, what: str = "") -> int:
    """One line on stderr: Flink's sentence for what failed (``what``) where the REST API
    answered that it could not, then why."""
    text = str(error)
    if what and error.exit_code == EXIT_FAILED:
        text = f"{what.removesuffix('.')}: {text}"
    print(f"ckptsim {command}: {_printable(text, 1000)}", file=sys.stderr)
    return error.exit_code


#: Flink's CLI: the lines of ``flink list`` (CliFrontend), 62 characters each
_SECTIONS = {
    "running": "------------------ Running/Restarting Jobs -------------------",
    "scheduled": "----------------------- Scheduled Jobs -----------------------",
    "terminated": "---------------------- Terminated Jobs -----------------------",
}
_RULE = "-" * 62
_TERMINAL = frozenset({"FINISHED", "CANCELED", "FAILED"})


def cmd_list(args: argparse.Namespace) -> int:
    """Flink's ``flink list``: running and scheduled (created) jobs; ``-r`` running only,
    ``-s`` scheduled only, ``-a`` every job, the terminated ones too."""
    path = "/jobs/overview"
    show_all = args.all
    show_running = args.running or show_all or not args.scheduled
    show_scheduled = args.scheduled or show_all or not args.running
    print("Waiting for response...", flush=True)
    try:
        answer = _fields(request(args.jobmanager, "GET", path), args.jobmanager, path, jobs=list)
        jobs = [
            _fields(j, args.jobmanager, path, jid=str, name=str, state=str, **{"start-time": int})
            for j in answer["jobs"]
        ]
    except ClientError as error:
        return _fail("list", error, "Failed to retrieve job list.")
    groups: dict[str, list[dict[str, Any]]] = {"running": [], "scheduled": [], "terminated": []}
    for j in jobs:
        state = j["state"]
        group = (
            "scheduled"
            if state == "CREATED"
            else "terminated"
            if state in _TERMINAL
            else ("running")
        )
        groups[group].append(j)
    shown = [
        ("running", show_running, "No running jobs."),
        ("scheduled", show_scheduled, "No scheduled jobs."),
        ("terminated", show_all, None),
    ]
    for group, show, none in shown:
        if not show:
            continue
        if not groups[group]:
            if none is not None:
                print(none)
            continue
        print(_SECTIONS[group])
        for j in sorted(groups[group], key=lambda j: j["start-time"]):
            when = _format_time(j["start-time"]) if 0 <= j["start-time"] < 2**53 else "?"
            print(_printable(f"{when} : {j['jid']} : {j['name']} ({j['state']})", 4096))
        print(_RULE)
    return EXIT_OK


def cmd_cancel(args: argparse.Namespace) -> int:
    """Flink's ``flink cancel``."""
    try:
        job_id = _job_id(args.job_id)
    except ClientError as error:
        return _fail("cancel", error)
    print(f"Cancelling job {job_id}.", flush=True)
    try:
        request(args.jobmanager, "PATCH", f"/jobs/{job_id}?mode=cancel", accepted=202)
    except ClientError as error:
        return _fail("cancel", error, f"Could not cancel job {job_id}.")
    print(f"Cancelled job {job_id}.")
    return EXIT_OK


def _trigger_id(answer: Any, address: str, path: str) -> str:
    trigger: str = _fields(answer, address, path, **{"request-id": str})["request-id"]
    if not _TRIGGER_ID.fullmatch(trigger):
        raise _not_the_api(address, path, f"a request-id that is no trigger id ({trigger[:40]!r})")
    return trigger


def _await_savepoint(address: str, job_id: str, trigger_id: str) -> dict[str, Any]:
    """Poll the savepoint's status until it completes (the client's own wait, as Flink's)."""
    deadline = time.monotonic() + CLIENT_TIMEOUT_S
    path = f"/jobs/{job_id}/savepoints/{trigger_id}"
    while True:
        answer = _fields(request(address, "GET", path), address, path, status=dict)
        state = _fields(answer["status"], address, path, id=str)["id"]
        if state == "COMPLETED":
            operation = answer.get("operation") or {}
            if not isinstance(operation, dict):
                raise _not_the_api(address, path, "an operation that is no object")
            cause = operation.get("failure-cause")
            location = operation.get("location")
            if cause is None and not isinstance(location, str):
                raise _not_the_api(address, path, "a completed savepoint without its location")
            if cause is not None and not isinstance(cause, dict):
                raise _not_the_api(address, path, "a failure-cause that is no object")
            return dict(operation)
        if state != "IN_PROGRESS":
            raise _not_the_api(address, path, f"a status {state[:40]!r}")
        if time.monotonic() > deadline:
            raise ClientError(
                f"the savepoint did not complete within {CLIENT_TIMEOUT_S:.0f} s",
                exit_code=EXIT_FAILED,
            )
        time.sleep(0.2)


def _savepoint_result(command: str, operation: dict[str, Any], what: str) -> int:
    if "failure-cause" in operation:
        trace = operation["failure-cause"].get("stack-trace")
        cause = _printable("".join(str(trace).splitlines()[:1]) if trace else "")
        what = what.removesuffix(".")
        print(f"ckptsim {command}: {what}: the savepoint failed: {cause}", file=sys.stderr)
        return EXIT_FAILED
    print(f"Savepoint completed. Path: {_printable(str(operation.get('location')), 4096)}")
    if command == "savepoint":
        print("You can resume your program from this savepoint with the run command.")
    return EXIT_OK


def _directory(path: str | None) -> str | None:
    """A savepoint directory as given (a path or a ``file:`` URI; the REST API reads both)."""
    if path is None:
        return None
    try:
        local_path(path)
    except ValueError as error:
        raise ClientError(f"{error}") from None
    return path


def _no_directory_hint(error: ClientError, directory: str | None, usage: str) -> ClientError:
    """A savepoint refused for want of a directory (Flink's words) gets the fix: give one."""
    if directory is not None or "savepoint-dir] is not set" not in str(error):
        return error
    return ClientError(
        f"{error} Give the directory ({usage}), or start the job with -D "
        "execution.checkpointing.savepoint-dir=DIR",
        exit_code=error.exit_code,
    )


def cmd_savepoint(args: argparse.Namespace) -> int:
    """Flink's ``flink savepoint JOB [DIR]`` (``-type canonical|native``)."""
    try:
        job_id = _job_id(args.job_id)
        directory = _directory(args.directory)
    except ClientError as error:
        return _fail("savepoint", error)
    what = f"Failed to trigger a savepoint for the job {job_id}."
    print(f"Triggering savepoint for job {job_id}.", flush=True)
    try:
        body: dict[str, Any] = {
            "target-directory": directory,
            "cancel-job": False,
            "formatType": args.type,
        }
        path = f"/jobs/{job_id}/savepoints"
        print("Waiting for response...", flush=True)
        answer = request(args.jobmanager, "POST", path, body, accepted=202)
        trigger = _trigger_id(answer, args.jobmanager, path)
        operation = _await_savepoint(args.jobmanager, job_id, trigger)
    except ClientError as error:
        usage = f"ckptsim savepoint {job_id} DIR"
        return _fail("savepoint", _no_directory_hint(error, directory, usage), what)
    return _savepoint_result("savepoint", operation, what)


def cmd_stop(args: argparse.Namespace) -> int:
    """Flink's ``flink stop JOB`` (``-p DIR``, ``--drain``, ``-type canonical|native``)."""
    try:
        job_id = _job_id(args.job_id)
        directory = _directory(args.savepoint_path)
    except ClientError as error:
        return _fail("stop", error)
    what = f'Could not stop with a savepoint job "{job_id}".'
    verb = "Draining" if args.drain else "Suspending"
    print(f'{verb} job "{job_id}" with a {args.type} savepoint.', flush=True)
    print(f"Triggering stop-with-savepoint for job {job_id}.", flush=True)
    try:
        body: dict[str, Any] = {
            "targetDirectory": directory,
            "drain": bool(args.drain),
            "formatType": args.type,
        }
        path = f"/jobs/{job_id}/stop"
        print("Waiting for response...", flush=True)
        answer = request(args.jobmanager, "POST", path, body, accepted=202)
        trigger = _trigger_id(answer, args.jobmanager, path)
        operation = _await_savepoint(args.jobmanager, job_id, trigger)
    except ClientError as error:
        usage = f"ckptsim stop -p DIR {job_id}"
        return _fail("stop", _no_directory_hint(error, directory, usage), what)
    return _savepoint_result("stop", operation, what)


def _savepoint_type(text: str) -> str:
    """``-type``: Flink's savepoint format, in any case."""
    value = text.strip().upper()
    if value not in ("CANONICAL", "NATIVE"):
        raise argparse.ArgumentTypeError(
            f"Could not parse value {text!r} for the savepoint format. Expected one of: "
            "[canonical, native]"
        )
    return value


def add_commands(sub: Any) -> None:
    serve = sub.add_parser(
        "serve", help="serve job archives as Flink's HistoryServer does, with the web page"
    )
    serve.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")
    serve.add_argument("--address", default="localhost", help="bind address (default localhost)")
    serve.add_argument(
        "--port", type=int, default=8082, help="port (default 8082, the HistoryServer's; 0: free)"
    )
    serve.add_argument(
        "--flink-dashboard",
        action="store_true",
        help="serve Flink's own web dashboard at / (needs apache-flink installed)",
    )
    serve.set_defaults(func=cmd_serve)
    timeline = sub.add_parser("timeline", help="draw the checkpoint timeline of job archives")
    timeline.add_argument("archives", nargs="+", metavar="ARCHIVE")
    timeline.add_argument(
        "-o", "--output", required=True, metavar="FILE", help=".png, .svg or .html"
    )
    timeline.add_argument("--job", metavar="JOBID", help="only this job (a prefix of its id)")
    timeline.set_defaults(func=cmd_timeline)

    def client(name: str, help_text: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = sub.add_parser(name, help=help_text)
        parser.add_argument(
            "-m",
            "--jobmanager",
            default=DEFAULT_ADDRESS,
            metavar="HOST:PORT",
            help=f"the REST API of the job (default {DEFAULT_ADDRESS})",
        )
        return parser

    listing = client("list", "list the jobs of a REST API (ckptsim run --web), as flink list")
    listing.add_argument(
        "-a", "--all", action="store_true", help="show all jobs, the terminated ones too"
    )
    listing.add_argument("-r", "--running", action="store_true", help="only running jobs")
    listing.add_argument(
        "-s", "--scheduled", action="store_true", help="only scheduled (created) jobs"
    )
    listing.set_defaults(func=cmd_list)
    cancel = client("cancel", "cancel a running job, as flink cancel")
    cancel.add_argument("job_id", metavar="JOBID")
    cancel.set_defaults(func=cmd_cancel)
    savepoint = client("savepoint", "take a savepoint of a running job, as flink savepoint")
    savepoint.add_argument("job_id", metavar="JOBID")
    savepoint.add_argument(
        "directory",
        nargs="?",
        metavar="DIR",
        help="target directory, a path or a file: URI (default: the job's "
        "execution.checkpointing.savepoint-dir; without one the savepoint is refused)",
    )
    stop = client("stop", "stop a running job with a savepoint, as flink stop")
    stop.add_argument("job_id", metavar="JOBID")
    stop.add_argument(
        "--savepointPath",
        "-p",
        dest="savepoint_path",
        metavar="DIR",
        help="target directory, a path or a file: URI (default: the job's "
        "execution.checkpointing.savepoint-dir)",
    )
    stop.add_argument(
        "--drain",
        "-d",
        action="store_true",
        help="advance to the end of event time before the savepoint (the sources emit "
        "MAX_WATERMARK: event-time timers fire, windows flush), then the job finishes",
    )
    for parser in (savepoint, stop):
        parser.add_argument(
            "-type",
            "--type",
            dest="type",
            type=_savepoint_type,
            default="CANONICAL",
            metavar="canonical|native",
            help="the savepoint's binary format (default canonical)",
        )
    savepoint.set_defaults(func=cmd_savepoint)
    stop.set_defaults(func=cmd_stop)
