"""The REST API over HTTP: every endpoint, every control call (on a job running on threads),
Flink's error bodies and status codes, and the client commands.

A live job runs on the threaded runtime; the tests poll the server until the job reports what
they wait for, each wait bounded generously (a safety net, never a sleep that a test needs)."""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.connectors import NoTransactions
from ckptsim import StreamExecutionEnvironment
from ckptsim._cli import main
from ckptsim._web import FlinkDashboard, JobRegistry, WebServer
from runtime import rest
from runtime.job import JobResult
from tests.rest.conftest import flink_body

#: the safety net of every wait on a live job (a job does it in well under a second)
BOUND_S = 60.0


def http(server: WebServer, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(server.url.rstrip("/") + path, data=data, method=method)
    if method not in ("GET", "HEAD"):  # as Flink's own client: a change is JSON (or refused)
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        raw, status = error.read(), error.code
    return status, json.loads(raw) if raw else None


def until(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + BOUND_S
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


# --- a finished job: every GET endpoint, and Flink's errors -------------------------------------


def test_every_get_endpoint_of_a_finished_job(server: WebServer, finished: Any) -> None:
    _, view, _ = finished
    base = f"/jobs/{view.job_id}"
    paths = ["/config", "/overview", "/jobs", "/jobs/overview", "/applications/overview"]
    paths += [base + p for p in ("", "/plan", "/config", "/exceptions", "/status")]
    paths += [base + p for p in ("/checkpoints", "/checkpoints/config")]
    paths += [f"{base}/exceptions?maxExceptions=10"]
    for vertex in view.vertices:
        v = f"{base}/vertices/{vertex.id}"
        paths += [
            v,
            v + "/backpressure",
            v + "/watermarks",
            v + "/subtasks/metrics?get=busyTimeMsPerSecond",
        ]
    for cid, details in view.details.items():
        paths.append(f"{base}/checkpoints/details/{cid}")
        for key in details["tasks"]:  # the vertices the checkpoint waited for
            vertex = view.vertex_by_key(key)
            assert vertex is not None
            paths.append(f"{base}/checkpoints/details/{cid}/subtasks/{vertex.id}")
    for path in paths:
        status, body = http(server, "GET", path)
        assert status == 200, (path, body)
        assert body is not None
    assert http(server, "GET", base + "/status")[1] == {"status": "FINISHED"}


def test_the_web_page_plotly_and_the_timeline_are_served(server: WebServer, finished: Any) -> None:
    with urllib.request.urlopen(server.url, timeout=10) as response:
        page = response.read().decode()
    assert "/ckptsim/static/plotly.min.js" in page and "timeline" in page
    for asset in ("plotly.min.js", "app.js", "style.css"):
        with urllib.request.urlopen(f"{server.url}ckptsim/static/{asset}", timeout=10) as r:
            assert r.status == 200 and len(r.read()) > 100
    status, answer = http(server, "GET", f"/ckptsim/jobs/{finished[1].job_id}/timeline")
    assert status == 200
    assert answer["timeline"]["bars"] and answer["figure"]["data"]


def _error_line(body: Any) -> str:
    (first,) = body["errors"]
    return str(first).splitlines()[0]


@pytest.mark.parametrize(
    ("name", "method", "path", "body"),
    [
        ("err-unknown-path", "GET", "/nosuchpath", None),
        ("err-bad-jobid", "GET", "/jobs/zzz", None),
        ("err-unknown-job", "GET", "/jobs/00000000000000000000000000000000", None),
        (
            "err-unknown-vertex",
            "GET",
            "/jobs/{job}/vertices/00000000000000000000000000000000",
            None,
        ),
        ("err-unknown-checkpoint", "GET", "/jobs/{job}/checkpoints/details/9999", None),
        ("err-bad-checkpoint-id", "GET", "/jobs/{job}/checkpoints/details/abc", None),
        ("err-method", "DELETE", "/jobs/{job}", None),
    ],
)
def test_bad_requests_get_flinks_error_json_and_status(
    server: WebServer, finished: Any, name: str, method: str, path: str, body: Any
) -> None:
    job_id = finished[1].job_id
    flink_status = json.loads((Path(__file__).parent / "flink/extra" / f"{name}.meta").read_text())[
        "status"
    ]
    flink_id = "3b83ccfe22e846876a73f23e527ea40c"
    expected = _error_line(flink_body(f"extra/{name}.json")).replace(flink_id, job_id)
    status, answer = http(server, method, path.format(job=job_id), body)
    assert status == flink_status
    assert set(answer) == {"errors"}
    assert _error_line(answer) == expected


def test_a_checkpoint_id_beyond_a_java_long_is_a_bad_parameter(
    server: WebServer, finished: Any
) -> None:
    """Flink reads the id as a long: one it cannot read is a 400 naming the value, as for
    ``abc`` (ckptsim answered 404, checkpoint not found)."""
    job_id = finished[1].job_id
    huge = "9" * 23
    expected = _error_line(flink_body("extra/err-bad-checkpoint-id.json")).replace(
        '"abc"', f'"{huge}"'
    )
    status, answer = http(server, "GET", f"/jobs/{job_id}/checkpoints/details/{huge}")
    assert (status, _error_line(answer)) == (400, expected)
    status, _ = http(server, "GET", f"/jobs/{job_id}/checkpoints/details/{(1 << 63) - 1}")
    assert status == 404  # a long: read, and not in the history


def test_control_calls_on_an_ended_job_are_refused(server: WebServer, finished: Any) -> None:
    job_id = finished[1].job_id
    calls: list[tuple[str, str, Any]] = [
        ("PATCH", f"/jobs/{job_id}?mode=cancel", None),
        ("POST", f"/jobs/{job_id}/savepoints", {}),
        ("POST", f"/jobs/{job_id}/stop", {}),
        ("POST", f"/jobs/{job_id}/checkpoints", {}),
    ]
    for method, path, body in calls:
        status, answer = http(server, method, path, body)
        assert status == 409 and "FINISHED" in answer["errors"][0], (method, path)
    status, answer = http(server, "PATCH", f"/jobs/{job_id}?mode=foo")
    assert status == 400 and _error_line(answer) == _error_line(
        flink_body("extra/err-patch-bad-mode.json")
    )
    status, answer = http(server, "GET", f"/jobs/{job_id}/savepoints/{'0' * 32}")
    assert status == 404
    assert _error_line(answer) == _error_line(
        flink_body("extra/err-savepoint-status-unknown.json")
    ).replace("3b83ccfe22e846876a73f23e527ea40c", job_id)


# --- a live job: control calls --------------------------------------------------------------------


class _Discard(NoTransactions):
    def write(self, records: Any) -> None:
        pass

    def pre_commit(self, checkpoint_id: int) -> None:
        return None

    def close(self, *, finished: bool) -> None:
        return None


def _discard(**_: Any) -> _Discard:
    return _Discard()


class Live:
    """A keyed sum that runs on threads until it is stopped or cancelled."""

    def __init__(self, registry: JobRegistry, *, timeout_s: float = BOUND_S * 2) -> None:
        self.registry = registry
        self.results: list[JobResult] = []
        env = StreamExecutionEnvironment()
        env.set_parallelism(2)
        env.enable_checkpointing(60_000)  # checkpoints only when asked for
        (
            env.from_generator(lambda i: i, 50_000_000, rate=20_000, name="seq")
            .map(lambda i: (i % 1000, 1), name="Map")
            .key_by(lambda r: r[0])
            .reduce(lambda a, b: (a[0], a[1] + b[1]), name="Reduce")
            .sink_to(_discard, name="Discard")
        )
        self.thread = threading.Thread(
            target=lambda: self.results.append(
                env.execute("live keyed sum", observer=registry, timeout=timeout_s)
            ),
            daemon=True,
        )
        self.thread.start()
        self.job_id: str = until(lambda: next(iter(registry.live), None), "the job to start")


@pytest.fixture
def live() -> Iterator[tuple[Live, WebServer]]:
    registry = JobRegistry()
    with WebServer(registry, host="localhost", port=0) as server:
        job = Live(registry)
        until(
            lambda: http(server, "GET", f"/jobs/{job.job_id}")[1]["state"] == "RUNNING",
            "RUNNING",
        )
        yield job, server
        if job.thread.is_alive():
            http(server, "PATCH", f"/jobs/{job.job_id}?mode=cancel")
        job.thread.join(BOUND_S)


def _operation(server: WebServer, path: str) -> dict[str, Any]:
    def done() -> Any:
        status, body = http(server, "GET", path)
        assert status == 200, body
        return body if body["status"]["id"] == "COMPLETED" else None

    result: dict[str, Any] = until(done, path)
    return result


def test_live_job_checkpoint_savepoint_and_stop(
    live: tuple[Live, WebServer], tmp_path: Path
) -> None:
    job, server = live
    base = f"/jobs/{job.job_id}"
    # the live view: records flow, the vertices and their metrics are there
    until(
        lambda: http(server, "GET", base)[1]["vertices"][1]["metrics"]["read-records"] > 0,
        "records",
    )
    # a manual checkpoint, as POST /jobs/:jobid/checkpoints
    status, trigger = http(server, "POST", f"{base}/checkpoints", {})
    assert status == 202 and set(trigger) == {"request-id"}
    assert http(server, "GET", f"{base}/checkpoints/{trigger['request-id']}")[0] == 200
    done = _operation(server, f"{base}/checkpoints/{trigger['request-id']}")
    assert set(done["operation"]) == {"checkpointId"}
    assert set(done) == set(flink_body("extra/checkpoint-trigger-status.json"))
    cid = done["operation"]["checkpointId"]
    details = http(server, "GET", f"{base}/checkpoints/details/{cid}")[1]
    assert details["status"] == "COMPLETED" and details["num_acknowledged_subtasks"] == 4
    # a savepoint, as POST /jobs/:jobid/savepoints
    status, trigger = http(
        server, "POST", f"{base}/savepoints", {"target-directory": str(tmp_path / "sp")}
    )
    assert status == 202
    done = _operation(server, f"{base}/savepoints/{trigger['request-id']}")
    assert set(done) == set(flink_body("extra/savepoint-status.json"))
    location = done["operation"]["location"]
    assert (
        location.startswith("file:") and Path(location.removeprefix("file:"), "_metadata").is_file()
    )
    # the client: list, savepoint, then stop with a savepoint
    address = f"localhost:{server.port}"
    assert main(["list", "-m", address]) == 0
    assert main(["savepoint", job.job_id, str(tmp_path / "client"), "-m", address]) == 0
    assert any((tmp_path / "client").glob("savepoint-*/_metadata"))
    assert main(["stop", job.job_id, "--savepointPath", str(tmp_path / "stop"), "-m", address]) == 0
    job.thread.join(BOUND_S)
    (result,) = job.results
    assert result.status.value == "FINISHED"
    assert any((tmp_path / "stop").glob("savepoint-*/_metadata"))
    assert http(server, "GET", base)[1]["state"] == "FINISHED"


def test_a_relative_savepoint_directory_is_made_absolute_as_flink_qualifies_it(
    live: tuple[Live, WebServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A relative target stayed relative in the operation's location and in the client's
    'Savepoint completed. Path: ...'; Flink qualifies it: file:/abs/path."""
    job, server = live
    base = f"/jobs/{job.job_id}"
    monkeypatch.chdir(tmp_path)
    cwd = Path.cwd()
    status, trigger = http(server, "POST", f"{base}/savepoints", {"target-directory": "x/../sp"})
    assert status == 202
    done = _operation(server, f"{base}/savepoints/{trigger['request-id']}")
    location = done["operation"]["location"]
    assert location.startswith(f"file:{cwd}/sp/savepoint-"), location
    assert Path(location.removeprefix("file:"), "_metadata").is_file()
    history = http(server, "GET", f"{base}/checkpoints")[1]["history"]
    assert location in [entry["external_path"] for entry in history]
    capsys.readouterr()
    assert main(["savepoint", job.job_id, "client-sp", "-m", f"localhost:{server.port}"]) == 0
    out = capsys.readouterr().out
    assert f"Savepoint completed. Path: file:{cwd}/client-sp/savepoint-" in out, out


def test_live_job_cancel_by_client_and_raw_patch(
    live: tuple[Live, WebServer], capsys: pytest.CaptureFixture[str]
) -> None:
    job, server = live
    address = f"localhost:{server.port}"
    assert main(["list", "-m", address]) == 0
    assert re.search(rf"{job.job_id} : live keyed sum \(RUNNING\)", capsys.readouterr().out)
    # an empty mode cancelled the job (the query dropped it, and cancel is the default);
    # Flink refuses it as any mode it cannot resolve
    status, body = http(server, "PATCH", f"/jobs/{job.job_id}?mode=")
    assert status == 400 and 'Cannot resolve query parameter (mode) from value ""' in str(body)
    assert http(server, "GET", f"/jobs/{job.job_id}")[1]["state"] == "RUNNING"
    status, body = http(server, "PATCH", f"/jobs/{job.job_id}?mode=cancel")
    assert (status, body) == (202, {})
    job.thread.join(BOUND_S)
    assert job.results[0].status.value == "CANCELED"
    assert http(server, "GET", f"/jobs/{job.job_id}")[1]["state"] == "CANCELED"
    assert main(["cancel", job.job_id, "-m", address]) == 1  # it has ended
    assert "409" in capsys.readouterr().err


def test_the_client_says_when_no_server_answers(capsys: pytest.CaptureFixture[str]) -> None:
    with WebServer(JobRegistry(), host="localhost", port=0) as server:
        port = server.port
    assert main(["list", "-m", f"localhost:{port}"]) == 2  # no REST API to ask: bad input
    assert "cannot reach the REST API" in capsys.readouterr().err


def test_the_cancel_client_cancels(capsys: pytest.CaptureFixture[str]) -> None:
    registry = JobRegistry()
    with WebServer(registry, host="localhost", port=0) as server:
        job = Live(registry)
        until(
            lambda: http(server, "GET", f"/jobs/{job.job_id}")[1]["state"] == "RUNNING", "RUNNING"
        )
        assert main(["cancel", job.job_id, "-m", f"localhost:{server.port}"]) == 0
        assert f"Cancelled job {job.job_id}." in capsys.readouterr().out
        job.thread.join(BOUND_S)
    assert job.results[0].status.value == "CANCELED"


def test_rest_error_bodies_are_flinks_shape() -> None:
    assert rest.unknown_job("ab").body() == {
        "errors": ["org.apache.flink.runtime.rest.NotFoundException: Job ab not found"]
    }


def test_flink_dashboard_files_come_from_the_jar(finished: Any, tmp_path: Path) -> None:
    """``--flink-dashboard``: Flink's static files from the ``web/`` folder of the jar (here
    a stand-in jar; the real one is flink-dist's in an apache-flink installation), the REST
    paths as always, ckptsim's page at /ckptsim/."""
    jar = tmp_path / "flink-dist-2.3.0.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("web/index.html", "<html>Apache Flink Dashboard</html>")
        archive.writestr("web/main.js", "console.log('flink')")
    registry = finished[0]
    with WebServer(registry, host="localhost", port=0, dashboard=FlinkDashboard(jar)) as server:
        with urllib.request.urlopen(server.url, timeout=10) as response:
            assert b"Apache Flink Dashboard" in response.read()
        with urllib.request.urlopen(server.url + "main.js", timeout=10) as response:
            assert response.headers["Content-Type"].startswith(
                ("text/javascript", "application/javascript")
            )
        with urllib.request.urlopen(server.page_url, timeout=10) as response:
            assert b"/ckptsim/static/plotly.min.js" in response.read()
        assert http(server, "GET", "/jobs/overview")[0] == 200
        assert http(server, "GET", "/nothing.js")[0] == 404
