"""Only its user can drive the REST server (issue #22, item 2): a request that changes anything
needs ``Content-Type: application/json`` and the server's own origin (or the one
``web.access-control-allow-origin`` allows); while bound to loopback, a ``Host`` that is not a
loopback name is refused (DNS rebinding); CORS headers only when that key is set, as Flink
sends them. Every refusal is a 403 with Flink's ``{"errors": [...]}`` body."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from http.client import HTTPConnection, HTTPResponse
from pathlib import Path
from typing import Any

import pytest

from ckptsim._client import RunOutputs
from ckptsim._web import JobRegistry, WebServer
from tests.rest.test_connections import request
from tests.rest.test_http import BOUND_S, Live, http, until


def ask(
    server: WebServer,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> tuple[int, HTTPResponse, Any]:
    """One request with exactly these headers (``Host`` too, when given)."""
    connection = HTTPConnection("127.0.0.1", server.port, timeout=BOUND_S)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        raw = response.read()
    finally:
        connection.close()
    return response.status, response, json.loads(raw) if raw else None


def refusal(answer: Any) -> str:
    assert isinstance(answer, dict) and set(answer) == {"errors"}, answer
    (message,) = answer["errors"]
    assert isinstance(message, str) and message.startswith("Forbidden: "), message
    return message


def changes(job_id: str) -> list[tuple[str, str, bytes]]:
    """Every kind of change: stop, savepoint (anywhere), checkpoint, cancel, an unknown one."""
    return [
        ("POST", f"/jobs/{job_id}/stop", b'{"drain": false, "targetDirectory": "/tmp/x"}'),
        ("POST", f"/jobs/{job_id}/savepoints", b'{"target-directory": "/tmp/x"}'),
        ("POST", f"/jobs/{job_id}/checkpoints", b"{}"),
        ("PATCH", f"/jobs/{job_id}?mode=cancel", b""),
        ("DELETE", "/cluster", b""),
        ("PUT", f"/jobs/{job_id}/resource-requirements", b"{}"),
    ]


# --- Content-Type and Origin ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "origin", "why"),
    [
        ("text/plain", None, "Content-Type: application/json (got 'text/plain')"),
        (None, None, "Content-Type: application/json (got none)"),
        ("application/x-www-form-urlencoded", None, "got 'application/x-www-form-urlencoded'"),
        ("multipart/form-data; boundary=x", None, "got 'multipart/form-data; boundary=x'"),
        ("application/jsonx", None, "got 'application/jsonx'"),
        ("application/json", "http://evil.example", "Origin 'http://evil.example'"),
        ("application/json", "null", "Origin 'null'"),
        ("application/json", "http://localhost:1", "Origin 'http://localhost:1'"),
        ("application/json", "https://localhost:{port}", "Origin 'https://localhost:"),
        ("text/plain", "http://evil.example", "Origin 'http://evil.example'"),
    ],
    ids=[
        "text-plain",
        "no-content-type",
        "form",
        "multipart",
        "json-lookalike",
        "foreign-origin",
        "null-origin",
        "other-port",
        "https-origin",
        "browser-simple-request",
    ],
)
def test_a_change_is_refused_without_json_or_from_another_origin(
    server: WebServer, finished: Any, content_type: str | None, origin: str | None, why: str
) -> None:
    job_id = finished[1].job_id
    for method, path, body in changes(job_id):
        headers = {"Host": f"localhost:{server.port}"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        if origin is not None:
            headers["Origin"] = origin.format(port=server.port)
        status, response, answer = ask(server, method, path, headers=headers, body=body)
        assert status == 403, (method, path, answer)
        assert response.getheader("Content-Type", "").startswith("application/json")
        assert why.format(port=server.port) in refusal(answer), (method, path)
        assert response.getheader("Access-Control-Allow-Origin") is None  # CORS is off


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("localhost:{port}", None),
        ("localhost:{port}", "http://localhost:{port}"),
        ("127.0.0.1:{port}", "http://127.0.0.1:{port}"),
        ("[::1]:{port}", "http://[::1]:{port}"),
        ("LOCALHOST:{port}", "http://localhost:{port}"),
        ("localhost:9999", "http://localhost:9999"),  # through a forwarded port (ssh -L)
    ],
)
def test_a_json_change_from_the_servers_own_origin_gets_through(
    server: WebServer, finished: Any, host: str, origin: str | None
) -> None:
    job_id = finished[1].job_id
    headers = {"Host": host.format(port=server.port), "Content-Type": "application/json"}
    if origin is not None:
        headers["Origin"] = origin.format(port=server.port)
    for method, path, body in changes(job_id)[:4]:
        status, _, answer = ask(server, method, path, headers=headers, body=body)
        assert status == 409 and "FINISHED" in answer["errors"][0], (method, path, answer)
    status, _, answer = ask(server, "DELETE", "/cluster", headers=headers)
    assert status == 404  # as Flink answers a method it does not route


def test_reads_need_neither_json_nor_an_origin(server: WebServer, finished: Any) -> None:
    headers = {"Origin": "http://evil.example"}
    for method in ("GET", "HEAD"):
        status, response, _ = ask(server, method, "/jobs/overview", headers=headers)
        assert status == 200
        assert response.getheader("Access-Control-Allow-Origin") is None  # CORS is off
    status, response, _ = ask(
        server,
        "OPTIONS",
        "/jobs/overview",
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert status == 204  # a preflight without CORS headers: the browser refuses the request
    assert not [h for h, _ in response.getheaders() if h.lower().startswith("access-control")]


# --- Host (DNS rebinding) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:{port}",
        "evil.example",
        "localhost.evil.example:{port}",
        "10.0.0.1:{port}",
        "",
        "[::1]]:{port}",  # urlsplit reads it as [::1]
    ],
)
def test_a_foreign_host_is_refused_while_bound_to_loopback(server: WebServer, host: str) -> None:
    for method, path in (("GET", "/jobs"), ("GET", "/"), ("HEAD", "/config")):
        status, _, answer = ask(
            server, method, path, headers={"Host": host.format(port=server.port)}
        )
        assert status == 403, (host, path)
        if method != "HEAD":
            assert "DNS rebinding" in refusal(answer)


@pytest.mark.parametrize(
    ("target", "host", "status"),
    [
        # an absolute-form target names the host: the Host header is ignored (RFC 9112)
        ("http://evil.example/jobs", "localhost", 403),
        ("http://evil.example:{port}/jobs", "localhost:{port}", 403),
        ("http://localhost:{port}/jobs", "evil.example", 200),
        ("HTTP://127.0.0.1:{port}/jobs?x=1", "evil.example", 200),
        # a path starting with // is a path, not a host
        ("//evil.example/jobs", "localhost", 404),
    ],
)
def test_the_host_of_an_absolute_target_is_the_host_asked_for(
    server: WebServer, target: str, host: str, status: int
) -> None:
    """Before, ``GET http://evil.example/jobs`` with ``Host: localhost`` was answered 200."""
    line = f"GET {target} HTTP/1.1\r\nHost: {host}\r\n\r\n".format(port=server.port)
    answered, _, answer = request(server, line.encode())
    assert answered == status, answer
    if status == 403:
        assert "DNS rebinding" in refusal(answer)


def test_a_request_without_host_is_answered_under_http_1_0_only(server: WebServer) -> None:
    """HTTP/1.1 requires Host (400, as RFC 9112 says); an HTTP/1.0 request may lack it."""
    assert request(server, b"GET /jobs HTTP/1.1\r\n\r\n")[0] == 400
    status, _, answer = request(server, b"GET /jobs HTTP/1.0\r\n\r\n")
    assert status == 200 and "jobs" in answer


@pytest.mark.parametrize(
    "host", ["localhost:{port}", "localhost", "127.0.0.1:{port}", "127.0.0.2", "[::1]:{port}"]
)
def test_loopback_names_are_answered(server: WebServer, host: str) -> None:
    status, _, answer = ask(server, "GET", "/jobs", headers={"Host": host.format(port=server.port)})
    assert status == 200 and "jobs" in answer


def test_bound_to_every_interface_any_host_reads_but_changes_still_need_the_origin(
    finished: Any,
) -> None:
    """The Host rule is for loopback only (a server bound to 0.0.0.0 is meant to be reached by
    other names); the change rules hold everywhere."""
    job_id = finished[1].job_id
    with WebServer(finished[0], host="0.0.0.0", port=0) as server:
        host = {"Host": f"flink.example:{server.port}"}
        assert ask(server, "GET", "/jobs", headers=host)[0] == 200
        status, _, answer = ask(
            server,
            "POST",
            f"/jobs/{job_id}/stop",
            headers={**host, "Content-Type": "application/json", "Origin": "http://evil.example"},
            body=b"{}",
        )
        assert status == 403 and "Origin" in refusal(answer)
        status, _, answer = ask(
            server,
            "POST",
            f"/jobs/{job_id}/stop",
            headers={
                **host,
                "Content-Type": "application/json",
                "Origin": f"http://flink.example:{server.port}",
            },
            body=b"{}",
        )
        assert status == 409


# --- CORS with web.access-control-allow-origin ------------------------------------------------------


@pytest.fixture
def cors_server(finished: Any) -> Iterator[WebServer]:
    with WebServer(
        finished[0], host="localhost", port=0, allow_origin="http://dashboard.example"
    ) as running:
        yield running


def test_cors_headers_as_flink_sends_them_when_the_key_is_set(
    cors_server: WebServer, finished: Any
) -> None:
    job_id = finished[1].job_id
    for path in ("/jobs/overview", "/nosuchpath", f"/jobs/{job_id}"):
        _, response, _ = ask(cors_server, "GET", path, headers={"Origin": "http://x.example"})
        assert response.getheader("Access-Control-Allow-Origin") == "http://dashboard.example"
    status, response, _ = ask(
        cors_server,
        "OPTIONS",
        f"/jobs/{job_id}/stop",
        headers={
            "Origin": "http://dashboard.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert status == 204
    assert response.getheader("Access-Control-Allow-Origin") == "http://dashboard.example"
    methods = {m.strip() for m in response.getheader("Access-Control-Allow-Methods", "").split(",")}
    assert {"GET", "POST", "PATCH"} <= methods
    assert "content-type" in response.getheader("Access-Control-Allow-Headers", "").lower()
    json_from = {"Content-Type": "application/json", "Origin": "http://dashboard.example"}
    status, response, _ = ask(
        cors_server, "POST", f"/jobs/{job_id}/stop", headers=json_from, body=b"{}"
    )
    assert status == 409  # through the checks; the job has ended
    assert response.getheader("Access-Control-Allow-Origin") == "http://dashboard.example"
    for headers in (
        {"Content-Type": "application/json", "Origin": "http://other.example"},
        {"Content-Type": "text/plain", "Origin": "http://dashboard.example"},
    ):
        status, response, answer = ask(
            cors_server, "POST", f"/jobs/{job_id}/stop", headers=headers, body=b"{}"
        )
        assert status == 403, headers
        refusal(answer)


def test_cors_star_lets_any_origin_change_with_json_only(finished: Any) -> None:
    job_id = finished[1].job_id
    with WebServer(finished[0], host="localhost", port=0, allow_origin="*") as server:
        headers = {"Origin": "http://anywhere.example", "Content-Type": "application/json"}
        status, response, _ = ask(
            server, "POST", f"/jobs/{job_id}/stop", headers=headers, body=b"{}"
        )
        assert status == 409 and response.getheader("Access-Control-Allow-Origin") == "*"
        headers["Content-Type"] = "text/plain"
        assert ask(server, "POST", f"/jobs/{job_id}/stop", headers=headers, body=b"{}")[0] == 403


def _outputs(settings: dict[str, str]) -> RunOutputs:
    args = argparse.Namespace(stats=None, timeline=None, web=True, flink_dashboard=False)
    return RunOutputs.prepare(args, {"rest.port": "0", **settings})


def test_the_key_reaches_the_server_of_ckptsim_run_web(capsys: pytest.CaptureFixture[str]) -> None:
    outputs = _outputs({})
    try:
        assert outputs.server.allow_origin is None  # Flink's default '*' is not ckptsim's
    finally:
        outputs.close()
    for key in ("web.access-control-allow-origin", "jobmanager.web.access-control-allow-origin"):
        outputs = _outputs({key: "http://dashboard.example"})
        try:
            assert outputs.server.allow_origin == "http://dashboard.example"
        finally:
            outputs.close()
    capsys.readouterr()


# --- a live job: nothing refused acts ---------------------------------------------------------------


@pytest.fixture
def live_server() -> Iterator[tuple[Live, WebServer]]:
    registry = JobRegistry()
    with WebServer(registry, host="localhost", port=0) as server:
        job = Live(registry)
        until(
            lambda: http(server, "GET", f"/jobs/{job.job_id}")[1]["state"] == "RUNNING", "RUNNING"
        )
        yield job, server
        if job.thread.is_alive():
            http(server, "PATCH", f"/jobs/{job.job_id}?mode=cancel")
        job.thread.join(BOUND_S)


def test_refused_changes_do_not_act_on_a_running_job(
    live_server: tuple[Live, WebServer], tmp_path: Path
) -> None:
    """The attack of the issue: a cross-origin ``text/plain`` stop or savepoint (what a web page
    sends without a preflight) returned 202 and acted, writing anywhere."""
    job, server = live_server
    target = tmp_path / "anywhere"
    for content_type, origin in (("text/plain", None), ("application/json", "http://evil.example")):
        headers = {"Content-Type": content_type}
        if origin is not None:
            headers["Origin"] = origin
        for method, path, body in changes(job.job_id):
            anywhere = body.replace(b"/tmp/x", str(target).encode())
            assert ask(server, method, path, headers=headers, body=anywhere)[0] == 403, path
    assert ask(server, "GET", f"/jobs/{job.job_id}", headers={"Host": "evil.example"})[0] == 403
    assert http(server, "GET", f"/jobs/{job.job_id}")[1]["state"] == "RUNNING"
    assert not target.exists()
    # the same stop from the server's own page: it stops, with its savepoint
    status, _, trigger = ask(
        server,
        "POST",
        f"/jobs/{job.job_id}/stop",
        headers={
            "Content-Type": "application/json",
            "Origin": f"http://localhost:{server.port}",
            "Host": f"localhost:{server.port}",
        },
        body=json.dumps({"drain": False, "targetDirectory": str(target)}).encode(),
    )
    assert status == 202, trigger
    job.thread.join(BOUND_S)
    assert job.results[0].status.value == "FINISHED"
    assert any(target.glob("savepoint-*/_metadata"))
