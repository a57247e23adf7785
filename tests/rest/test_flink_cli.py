"""Flink's own CLI drives ckptsim (issue #25, item 1): every REST path under ``/v1/`` as well,
the requests Flink 2.3's CLI sends (captured in ``flink/tools/cli-requests.jsonl``) pass the
REST security rules, and the savepoint and stop-with-savepoint bodies it sends are understood
(``formatType``, ``triggerId``, no directory: refused as Flink refuses it).

The last tests run Flink's CLI itself (``flink list|savepoint|stop|cancel -m localhost:PORT``)
against a running ckptsim job and compare its output with what it printed against a real Flink
2.3, line for line; they are skipped where Apache Flink (``apache-flink``, or ``FLINK_HOME``)
or java is missing. A live job is held open by its rate-limited source; every wait is on a
condition (bounded by ``BOUND_S`` as a safety net)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from http.client import HTTPConnection
from pathlib import Path
from typing import Any

import pytest

from ckptsim._web import WebServer
from runtime import rest
from tests.rest.conftest import FLINK, NO_FLINK, cli_lines, flink_cli_output, flink_home
from tests.rest.test_http import BOUND_S, Live, _operation, http

#: the job id in the captured requests
CAPTURED_JOBS = re.compile(r"8640186809b78ce47a954203737826a3|3037769ab9f5180b447cd63e6c60b4a8")


def captured_requests() -> list[dict[str, Any]]:
    lines = (FLINK / "tools" / "cli-requests.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def send(server: WebServer, method: str, path: str, headers: dict[str, str], body: str) -> Any:
    connection = HTTPConnection("localhost", server.port, timeout=10)
    try:
        connection.request(method, path, body=body.encode() or None, headers=headers)
        response = connection.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw else None
    finally:
        connection.close()


# --- /v1 ------------------------------------------------------------------------------------


def test_every_rest_path_is_served_under_v1_as_well(server: WebServer, finished: Any) -> None:
    _, view, _ = finished
    for path, body in rest.archive(view):
        query = ""
        if path.endswith("/metrics"):  # archived with every metric: the answer to ?get=all
            assert isinstance(body, list)
            query = "?get=" + ",".join(m["id"] for m in body)
        status, answer = http(server, "GET", "/v1" + path + query)
        assert (status, answer) == (200, json.loads(json.dumps(body))), path
    for path in ("/config", "/overview", "/jobs", "/jobs/overview", "/applications/overview"):
        assert http(server, "GET", "/v1" + path) == http(server, "GET", path)


def test_errors_under_v1_name_the_path_asked_for(server: WebServer, finished: Any) -> None:
    job_id = finished[1].job_id
    status, answer = http(server, "GET", "/v1/nosuchpath")
    assert (status, answer) == (404, {"errors": ["Unable to load requested file /v1/nosuchpath."]})
    status, answer = http(server, "GET", f"/v1/jobs/{job_id}/nosuch")
    assert (status, answer) == (404, {"errors": [f"Not found: /v1/jobs/{job_id}/nosuch"]})
    status, answer = http(server, "POST", f"/v1/jobs/{job_id}/nosuch", {})
    assert (status, answer) == (404, {"errors": [f"Not found: /v1/jobs/{job_id}/nosuch"]})
    # the web page and static files are not REST paths
    assert http(server, "GET", "/v1/ckptsim/static/app.js")[0] == 404


def test_the_requests_flinks_cli_sends_pass_the_security_rules(
    server: WebServer, finished: Any
) -> None:
    """Every request Flink 2.3's CLI sent (its headers as they were: a JSON content type on
    every request, a GET with the body ``{}``, no Origin) reaches the job: none is refused by
    the rules of docs/rest-security.md (403); the changes find the job ended (409)."""
    job_id = finished[1].job_id
    requests = captured_requests()
    assert {r["method"] for r in requests} == {"GET", "POST", "PATCH"}
    for captured in requests:
        headers = dict(captured["headers"])
        assert "origin" not in {h.lower() for h in headers}
        assert headers["content-type"] == "application/json; charset=UTF-8"
        headers["host"] = f"localhost:{server.port}"
        path = CAPTURED_JOBS.sub(job_id, captured["path"])
        status, answer = send(server, captured["method"], path, headers, captured["body"])
        assert status != 403, (captured["method"], path, answer)
        if path == "/v1/jobs/overview":
            assert status == 200 and answer["jobs"][0]["jid"] == job_id
        elif job_id in path and captured["method"] != "GET":
            assert status == 409 and "FINISHED" in answer["errors"][0], (path, answer)
        else:  # the status of a savepoint of another run, a job that does not exist
            assert status == 404, (path, answer)


# --- the bodies Flink's CLI sends ------------------------------------------------------------


def _flink_error(name: str) -> str:
    """The REST error in a captured CLI's standard error (its first line)."""
    text = flink_cli_output(name, "err")
    match = re.search(r"RestClientException: \[(org\.apache\.flink\.[^\n]*)", text)
    assert match is not None
    return match.group(1)


def test_a_savepoint_without_a_directory_is_refused_as_flink_refuses_it(
    live: tuple[Live, WebServer],
) -> None:
    job, server = live
    base = f"/v1/jobs/{job.job_id}"
    savepoint = {"target-directory": None, "cancel-job": False, "formatType": "CANONICAL"}
    status, answer = http(server, "POST", f"{base}/savepoints", {**savepoint, "triggerId": None})
    assert status == 400
    assert answer["errors"][0] == _flink_error("savepoint-nodir")
    stop = {"targetDirectory": None, "drain": False, "formatType": "CANONICAL", "triggerId": None}
    status, answer = http(server, "POST", f"{base}/stop", stop)
    assert status == 400
    assert answer["errors"][0] == _flink_error("stop-nodir")
    assert http(server, "GET", base)[1]["state"] == "RUNNING"


def test_savepoint_format_trigger_id_and_drain(
    live: tuple[Live, WebServer], tmp_path: Path
) -> None:
    job, server = live
    base = f"/v1/jobs/{job.job_id}"
    body = {
        "target-directory": f"file://{tmp_path}/native",
        "cancel-job": False,
        "formatType": "NATIVE",
        "triggerId": "0123456789abcdef0123456789abcdef",
    }
    status, trigger = http(server, "POST", f"{base}/savepoints", body)
    assert (status, trigger) == (202, {"request-id": body["triggerId"]})
    # the same trigger id again: the same operation, nothing triggered twice
    assert http(server, "POST", f"{base}/savepoints", body) == (202, trigger)
    done = _operation(server, f"{base}/savepoints/{body['triggerId']}")
    location = done["operation"]["location"]
    assert location.startswith(f"file:{tmp_path}/native/savepoint-")
    savepoint = http(server, "GET", f"{base}/checkpoints")[1]["latest"]["savepoint"]
    assert (savepoint["savepointFormat"], savepoint["external_path"]) == ("NATIVE", location)
    assert len(list((tmp_path / "native").iterdir())) == 1
    for bad in ({"formatType": "FOO"}, {"cancel-job": "yes"}, {"triggerId": 7}):
        status, answer = http(server, "POST", f"{base}/savepoints", {**body, **bad})
        assert status == 400
        assert answer["errors"][0].endswith(
            "Request did not match expected format SavepointTriggerRequestBody."
        ), bad
    assert http(server, "GET", base)[1]["state"] == "RUNNING"
    # stop-with-savepoint with drain (``flink stop --drain``): accepted, the job FINISHES
    stop = {"targetDirectory": str(tmp_path / "drained"), "drain": True, "triggerId": "d" * 32}
    status, trigger = http(server, "POST", f"{base}/stop", stop)
    assert (status, trigger) == (202, {"request-id": "d" * 32})
    done = _operation(server, f"{base}/savepoints/{'d' * 32}")
    assert done["operation"]["location"].startswith(f"file:{tmp_path}/drained/savepoint-")
    job.thread.join(BOUND_S)
    assert job.results[0].status.value == "FINISHED"


# --- Flink's own CLI --------------------------------------------------------------------------


class FlinkCli:
    """``bin/flink`` of an Apache Flink installation, its log out of the installation."""

    def __init__(self, home: Path, logs: Path) -> None:
        self.home = home
        self.env = {**os.environ, "FLINK_LOG_DIR": str(logs)}

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.home / "bin" / "flink"), *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=BOUND_S * 3,
            check=False,
        )


@pytest.fixture
def flink(tmp_path: Path) -> FlinkCli:
    home = flink_home()
    if home is None:
        pytest.skip(NO_FLINK)
    return FlinkCli(home, tmp_path / "flink-log")


def test_flinks_cli_lists_savepoints_and_stops_a_ckptsim_job(
    flink: FlinkCli, long_live: tuple[Live, WebServer], tmp_path: Path
) -> None:
    job, server = long_live
    address = f"localhost:{server.port}"
    name = "live keyed sum"
    for option, capture in (([], "list"), (["-r"], "list-r"), (["-s"], "list-s")):
        listed = flink("list", *option, "-m", address)
        assert listed.returncode == 0, listed.stderr
        assert cli_lines(listed.stdout, name) == cli_lines(flink_cli_output(capture), "real-job-a")
    target = tmp_path / "savepoints"
    saved = flink("savepoint", "-m", address, job.job_id, f"file://{target}")
    assert saved.returncode == 0, saved.stderr
    assert cli_lines(saved.stdout) == cli_lines(flink_cli_output("savepoint-dir"))
    (path,) = re.findall(r"Path: (\S+)", saved.stdout)
    assert path.startswith(f"file:{target}/") and Path(path[5:], "_metadata").is_file()
    refused = flink("savepoint", "-m", address, job.job_id)  # no directory configured
    assert refused.returncode == 1
    assert cli_lines(refused.stdout) == cli_lines(flink_cli_output("savepoint-nodir"))
    assert _flink_error("savepoint-nodir") in refused.stderr
    stopped = flink("stop", "-p", str(tmp_path / "stop"), "-m", address, job.job_id)
    assert stopped.returncode == 0, stopped.stderr
    assert cli_lines(stopped.stdout) == cli_lines(flink_cli_output("stop-p"))
    job.thread.join(BOUND_S)
    assert job.results[0].status.value == "FINISHED"
    assert any((tmp_path / "stop").glob("savepoint-*/_metadata"))
    ended = flink("list", "-a", "-m", address)
    assert ended.returncode == 0, ended.stderr
    assert f"{job.job_id} : {name} (FINISHED)" in ended.stdout
    assert "Terminated Jobs" in ended.stdout and "No running jobs." in ended.stdout


def test_flinks_cli_cancels_a_ckptsim_job(
    flink: FlinkCli, long_live: tuple[Live, WebServer]
) -> None:
    job, server = long_live
    cancelled = flink("cancel", "-m", f"localhost:{server.port}", job.job_id)
    assert cancelled.returncode == 0, cancelled.stderr
    assert cli_lines(cancelled.stdout) == cli_lines(flink_cli_output("cancel"))
    job.thread.join(BOUND_S)
    assert job.results[0].status.value == "CANCELED"
