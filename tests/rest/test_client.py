"""``ckptsim list|cancel|savepoint|stop -m HOST:PORT`` against servers that are not ckptsim
(issue #22, item 6): HTML, text, JSON of another shape, JSON nested too deep, a redirect loop,
an invalid address, a closed port, a server that never answers or trickles, one that speaks
no HTTP. Each gives one line naming the address and what was wrong, exit 2 (1 only where a
REST API answered that it could not do it), never a traceback.

The fake servers are small and local; the client's timeout is shortened for the ones that
never answer (no test measures time)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ckptsim import _client
from ckptsim._cli import main
from tests.rest.test_http import BOUND_S

JOB = "0123456789abcdef0123456789abcdef"
#: each command as a user types it (the address goes after it)
COMMANDS = {
    "list": ["list", "-a"],
    "cancel": ["cancel", JOB],
    "savepoint": ["savepoint", JOB, "/tmp/sp"],
    "stop": ["stop", JOB, "--savepointPath", "/tmp/sp"],
}

Answer = tuple[int, dict[str, str], bytes]


class FakeServer:
    """An HTTP server that answers every request with ``answer(method, path)``."""

    def __init__(self, answer: Callable[[str, str], Answer]) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                status, headers, body = answer(self.command, self.path)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class RawServer:
    """A TCP server whose every connection gets ``behave(connection, stopped)``; ``close``
    ends its threads (the accepting one and one per connection) and waits for them."""

    def __init__(self, behave: Callable[[socket.socket, threading.Event], None]) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        self.connections: list[socket.socket] = []
        self.threads: list[threading.Thread] = []

        def accept() -> None:
            while True:
                try:
                    connection, _ = self.listener.accept()
                except OSError:
                    return
                if self.stopped.is_set():  # the wake-up connection of close()
                    connection.close()
                    return
                self.connections.append(connection)
                worker = threading.Thread(
                    target=behave, args=(connection, self.stopped), daemon=True
                )
                self.threads.append(worker)
                worker.start()

        self.acceptor = threading.Thread(target=accept, daemon=True)
        self.acceptor.start()

    def close(self) -> None:
        self.stopped.set()
        # closing a listening socket does not wake a thread blocked in accept(): connect once
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", self.port), timeout=BOUND_S).close()
        self.acceptor.join(BOUND_S)
        self.listener.close()
        for connection in self.connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()
        for worker in self.threads:
            worker.join(BOUND_S)
        assert not self.acceptor.is_alive() and not any(w.is_alive() for w in self.threads)


def _run(command: str, address: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main([*COMMANDS[command], "-m", address])
    err = capsys.readouterr().err
    return code, err


def assert_one_line(err: str, *parts: str) -> None:
    assert "Traceback" not in err and err.count("\n") == 1, err
    for part in parts:
        assert part in err, (part, err)


def _json(body: Any, status: int = 200) -> Answer:
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()


NOT_CKPTSIM: dict[str, tuple[Answer, str]] = {
    "html": ((200, {"Content-Type": "text/html"}, b"<html><body>hi</body></html>"), "not JSON"),
    "text": ((200, {"Content-Type": "text/plain"}, b"hello"), "not JSON"),
    "html-404": ((404, {"Content-Type": "text/html"}, b"<h1>Not Found</h1>"), "404"),
    "html-500": ((500, {}, b"oops"), "500"),
    "errors-of-another-shape": (_json({"errors": [1, 2]}, 400), "error body"),
    "json-list": (_json([1, 2]), "not ckptsim's REST API"),
    "json-string": (_json("jobs"), "not ckptsim's REST API"),
    "json-null": (_json(None), "not ckptsim's REST API"),
    "json-other-object": (_json({"jobs": "none", "request-id": 5}), "not ckptsim's REST API"),
    "json-wrong-jobs": (_json({"jobs": [{"jid": 5}]}), "not ckptsim's REST API"),
    "json-nested-too-deep": (
        (200, {"Content-Type": "application/json"}, b"[" * 100_000 + b"]" * 100_000),
        "not JSON",
    ),
    "redirect-loop": ((302, {"Location": "/jobs/overview"}, b""), "redirect"),
    "redirect-away": ((301, {"Location": "http://example.com/"}, b""), "redirect"),
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("kind", list(NOT_CKPTSIM))
def test_a_server_that_is_not_ckptsim_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], command: str, kind: str
) -> None:
    answer, what = NOT_CKPTSIM[kind]
    server = FakeServer(lambda method, path: answer)
    try:
        code, err = _run(command, f"127.0.0.1:{server.port}", capsys)
    finally:
        server.close()
    assert code == 2, err
    assert_one_line(err, f"ckptsim {command}: ", f"127.0.0.1:{server.port}", what)


def _savepoint_server(status_answer: Any, request_id: Any = "a1b2") -> FakeServer:
    """A REST API that accepts the savepoint and then answers its status with this."""

    def answer(method: str, path: str) -> Answer:
        if method == "POST":
            return _json({"request-id": request_id}, 202)
        return _json(status_answer)

    return FakeServer(answer)


@pytest.mark.parametrize(
    ("status_answer", "request_id", "what"),
    [
        ({"status": "COMPLETED"}, "a1b2", "'status'"),
        ({"status": {"id": "WHATEVER"}}, "a1b2", "a status 'WHATEVER'"),
        ({"status": {"id": "COMPLETED"}, "operation": "done"}, "a1b2", "operation"),
        ({"status": {"id": "COMPLETED"}, "operation": {}}, "a1b2", "without its location"),
        (
            {"status": {"id": "COMPLETED"}, "operation": {"failure-cause": "x"}},
            "a1b2",
            "failure-cause",
        ),
        ({"status": {"id": "COMPLETED"}}, "../../x y", "no trigger id"),
        ({"status": {"id": "COMPLETED"}}, 17, "'request-id'"),
    ],
)
@pytest.mark.parametrize("command", ["savepoint", "stop"])
def test_a_savepoint_status_of_another_shape_is_exit_2(
    capsys: pytest.CaptureFixture[str], command: str, status_answer: Any, request_id: Any, what: str
) -> None:
    server = _savepoint_server(status_answer, request_id)
    try:
        code, err = _run(command, f"127.0.0.1:{server.port}", capsys)
    finally:
        server.close()
    assert code == 2, err
    assert_one_line(err, f"127.0.0.1:{server.port}", what)


@pytest.mark.parametrize("command", ["savepoint", "stop"])
def test_a_savepoint_the_job_failed_is_exit_1(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    failed = {
        "status": {"id": "COMPLETED"},
        "operation": {"failure-cause": {"class": "x", "stack-trace": "Exception: boom\n\tat y"}},
    }
    server = _savepoint_server(failed)
    try:
        code, err = _run(command, f"127.0.0.1:{server.port}", capsys)
    finally:
        server.close()
    assert code == 1
    assert_one_line(err, "the savepoint failed: Exception: boom")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_rest_api_that_refuses_is_exit_1(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    refusal = _json({"errors": [f"Job {JOB} not found\n\tat somewhere"]}, 404)
    server = FakeServer(lambda method, path: refusal)
    try:
        code, err = _run(command, f"127.0.0.1:{server.port}", capsys)
    finally:
        server.close()
    assert code == 1
    assert_one_line(err, f"404 Job {JOB} not found")


@pytest.mark.parametrize("command", ["cancel", "savepoint", "stop"])
def test_a_change_answered_200_instead_of_202_is_not_the_rest_api(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    server = FakeServer(lambda method, path: _json({"request-id": "a1"}))
    try:
        code, err = _run(command, f"127.0.0.1:{server.port}", capsys)
    finally:
        server.close()
    assert code == 2
    assert_one_line(err, "answered 200 where the REST API answers 202")


@pytest.mark.parametrize(
    "address",
    [
        "http://[::1",
        "localhost:99999",
        "localhost:abc",
        "",
        "ftp://localhost:1",
        "http://",
        "local host:80",
        "http://localhost:1/a b",
        "localhost:1/?q",
    ],
)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_invalid_address_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], command: str, address: str
) -> None:
    code, err = _run(command, address, capsys)
    assert code == 2
    assert_one_line(err, f"-m {address}: not an address of a REST API")


def test_an_unresolvable_host_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run("list", "no-such-host.invalid:8081", capsys)
    assert code == 2
    assert_one_line(err, "cannot reach the REST API at http://no-such-host.invalid:8081")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_closed_port_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    code, err = _run(command, f"127.0.0.1:{port}", capsys)
    assert code == 2
    assert_one_line(err, f"cannot reach the REST API at http://127.0.0.1:{port}")


def _silent(connection: socket.socket, stopped: threading.Event) -> None:
    stopped.wait()


def _trickle(connection: socket.socket, stopped: threading.Event) -> None:
    try:
        connection.sendall(b"HTTP/1.1 200 OK\r\n")
        while not stopped.wait(0.02):
            connection.sendall(b"X-Slow: 1\r\n")
    except OSError:
        return


def _trickle_body(connection: socket.socket, stopped: threading.Event) -> None:
    try:
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n[")
        while not stopped.wait(0.02):
            connection.sendall(b"1,")
    except OSError:
        return


def _banner(connection: socket.socket, stopped: threading.Event) -> None:
    connection.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
    connection.close()


def _closes(connection: socket.socket, stopped: threading.Event) -> None:
    connection.recv(1)
    connection.close()


@pytest.fixture
def raw_server(request: pytest.FixtureRequest) -> Iterator[RawServer]:
    server = RawServer(request.param)
    yield server
    server.close()


@pytest.mark.parametrize(
    ("raw_server", "what"),
    [
        (_silent, "no answer within 0.3 s"),
        (_trickle, "no answer within 0.3 s"),
        (_trickle_body, "no answer within 0.3 s"),
        (_banner, "the server did not answer HTTP"),
        (_closes, "the server did not answer HTTP"),
    ],
    indirect=["raw_server"],
    ids=["never-answers", "trickles-its-head", "trickles-its-body", "not-http", "hangs-up"],
)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_server_that_hangs_or_speaks_no_http_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    raw_server: RawServer,
    what: str,
    command: str,
) -> None:
    monkeypatch.setattr(_client, "REQUEST_TIMEOUT_S", 0.3)
    code, err = _run(command, f"127.0.0.1:{raw_server.port}", capsys)
    assert code == 2
    assert_one_line(err, f"http://127.0.0.1:{raw_server.port}", what)


def test_an_answer_over_the_bound_is_not_read_whole(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_client, "MAX_ANSWER_BYTES", 1000)
    server = FakeServer(lambda method, path: _json({"jobs": [], "padding": "x" * 2000}))
    try:
        code, err = _run("list", f"127.0.0.1:{server.port}", capsys)
    finally:
        server.close()
    assert code == 2
    assert_one_line(err, "over 1000 bytes")


@pytest.mark.parametrize("command", ["cancel", "savepoint", "stop"])
@pytest.mark.parametrize("job_id", ["abc", "a b", "../jobs", "g" * 32, JOB + "0"])
def test_a_job_id_that_is_none_is_exit_2_before_any_request(
    capsys: pytest.CaptureFixture[str], command: str, job_id: str
) -> None:
    argv = [command, job_id, "-m", "127.0.0.1:1"]  # nothing listens there: never asked
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert_one_line(err, f"{job_id!r} is not a job id")


def test_the_deadline_socket_stays_open_while_an_answer_is_read() -> None:
    """``http.client`` closes the connection's socket as soon as an HTTP/1.0 answer's head says
    the server closes, then reads the body: the socket must stay open until the reader closes
    too (before, the body read failed with EBADF about 3 times in 8 against such a server)."""
    ours, theirs = socket.socketpair()
    with theirs:
        wrapped = _client._DeadlineSocket(ours, time.monotonic() + BOUND_S)
        reader = wrapped.makefile("rb")
        theirs.sendall(b"HTTP/1.0 200 OK\r\n\r\n{}")
        assert reader.readline() == b"HTTP/1.0 200 OK\r\n"
        wrapped.close()  # what http.client does after the head
        assert reader.read(4) == b"\r\n{}"
        assert ours.fileno() != -1
        reader.close()
        assert ours.fileno() == -1, "closed once both were"


@pytest.mark.parametrize("command", ["savepoint", "stop"])
def test_a_savepoint_refused_for_want_of_a_directory_says_how_to_give_one(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    key = "target-directory" if command == "savepoint" else "targetDirectory"
    refusal = _json(
        {
            "errors": [
                "org.apache.flink.runtime.rest.handler.RestHandlerException: Config key "
                f"[execution.checkpointing.savepoint-dir] is not set. Property [{key}] must be "
                "provided."
            ]
        },
        400,
    )
    server = FakeServer(lambda method, path: refusal)
    without_directory = {"savepoint": ["savepoint", JOB], "stop": ["stop", JOB]}[command]
    try:
        code = main([*without_directory, "-m", f"127.0.0.1:{server.port}"])
    finally:
        server.close()
    err = capsys.readouterr().err
    assert code == 1
    usage = (
        f"ckptsim savepoint {JOB} DIR" if command == "savepoint" else f"ckptsim stop -p DIR {JOB}"
    )
    assert_one_line(
        err,
        f"must be provided. Give the directory ({usage}), or start the job with -D "
        "execution.checkpointing.savepoint-dir=DIR\n",
    )
