"""Job archives: Flink's format written (``--stats``, ``jobmanager.archive.fs.dir``), served
back (``ckptsim serve``) with identical bodies, and Flink's own archive served by ckptsim."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from actors.archive import write_archive
from ckptsim._cli import main
from ckptsim._web import JobRegistry, WebServer, load_archives
from runtime import rest
from tests.rest.conftest import FLINK, flink_body
from tests.rest.test_http import BOUND_S, http

SCRIPT = """
def build(env):
    env.set_parallelism(2)
    env.enable_checkpointing(20)
    env.configure({"ckptsim.buffer.records": 100})
    (env.from_generator(lambda i: (i % 10, 1), 3_000, rate=30_000)
        .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).collect("sums"))
"""


def script(tmp_path: Path) -> str:
    path = tmp_path / "job.py"
    path.write_text(SCRIPT)
    return str(path)


def test_write_serve_and_read_back_identical_bodies(finished: Any, tmp_path: Path) -> None:
    registry, view, _ = finished
    target = write_archive(view, tmp_path / "job-archive")
    document = json.loads(target.read_text())
    assert set(document) == {"archive"}
    assert all(
        set(e) == {"path", "json"} and isinstance(e["json"], str) for e in document["archive"]
    )
    (job,) = load_archives([str(target)])
    with WebServer(JobRegistry([job]), host="localhost", port=0) as server:
        for entry in document["archive"]:
            path = entry["path"]
            status, body = http(server, "GET", path)
            assert status == 200, path
            # a metrics file holds every metric (Flink's HistoryServer serves it whatever is
            # asked for): live, asking for all of them
            query = {"get": ",".join(m["id"] for m in body)} if path.endswith("metrics") else {}
            assert body == json.loads(entry["json"]) == registry.get(path, query), path
        overview = http(server, "GET", "/jobs/overview")[1]
        assert [j["jid"] for j in overview["jobs"]] == [view.job_id]
        assert http(server, "GET", "/config")[1]["features"]["web-history"] is True


def test_stats_dash_writes_the_archive_to_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", script(tmp_path), "--simulate", "--stats", "-"])
    captured = capsys.readouterr()
    assert code == 0
    bodies = rest.read_archive(json.loads(captured.out))
    assert any(path.endswith("/checkpoints") for path in bodies)
    assert "FINISHED" in captured.err  # the summary moved to stderr


def test_archive_dir_is_written_in_flinks_layout_and_served(tmp_path: Path) -> None:
    archive_dir = tmp_path / "archive"
    code = main(
        [
            "run",
            script(tmp_path),
            "--simulate",
            "-q",
            "-D",
            f"jobmanager.archive.fs.dir={archive_dir}",
        ]
    )
    assert code == 0
    (job_file,) = archive_dir.glob("*/applications/*/jobs/*")
    job_id = job_file.name
    assert job_file.parent.parent.name == job_id
    summary = json.loads((job_file.parent.parent / "application-summary").read_text())
    flink_summary = flink_body("archive/flink-2.3.0-application-summary")
    flink_id = "9f8082fa78208e6944a1e385e2d6207d"
    assert [e["path"] for e in summary["archive"]] == [  # Flink's, in Flink's order
        e["path"].replace(flink_id, job_id) for e in flink_summary["archive"]
    ]
    (job,) = load_archives([str(archive_dir)])
    assert job.job_id == job_id


def test_flinks_own_archive_is_served_and_drawn() -> None:
    (job,) = load_archives([str(FLINK / "archive" / "flink-2.3.0-job-archive")])
    registry = JobRegistry([job])
    overview = registry.get("/jobs/overview", {})
    assert isinstance(overview, dict) and overview["jobs"][0]["name"] == "capture-job"
    checkpoints = registry.get(f"/jobs/{job.job_id}/checkpoints", {})
    assert checkpoints == job.body(f"/jobs/{job.job_id}/checkpoints")
    timeline = registry.timeline(job.job_id)["timeline"]
    assert len(timeline["rows"]) == 4 and timeline["bars"]


def test_a_file_that_is_not_an_archive_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"jobs": {}}')
    assert main(["serve", str(bad)]) == 2
    assert "is not a Flink job archive" in capsys.readouterr().err
    assert main(["serve", str(tmp_path / "missing")]) == 2
    assert main(["timeline", str(bad), "-o", str(tmp_path / "t.png")]) == 2


def test_a_trace_given_for_an_archive_is_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"event": "job_submitted"}\n{"event": "job_deployed"}\n')
    assert main(["timeline", str(trace), "-o", str(tmp_path / "t.png")]) == 2
    err = capsys.readouterr().err
    assert "it looks like a --trace file" in err and "written by --stats FILE" in err


@pytest.mark.parametrize(
    "body",
    [
        {"history": "not a list"},
        {"counts": {}, "history": [{"id": "one"}]},
        ["a list"],
    ],
    ids=["history a string", "an id not a number", "a list"],
)
def test_a_malformed_archived_body_is_flinks_not_found_and_the_server_keeps_serving(
    body: Any, finished: Any, tmp_path: Path
) -> None:
    """The timeline of an archive whose checkpoints body was of another shape answered 500;
    Flink's HistoryServer serves no archive it cannot process (404), and serves on."""
    _, view, _ = finished
    target = write_archive(view, tmp_path / "job-archive")
    document = json.loads(target.read_text())
    for entry in document["archive"]:
        if entry["path"] == f"/jobs/{view.job_id}/checkpoints":
            entry["json"] = json.dumps(body)
    target.write_text(json.dumps(document))
    (job,) = load_archives([str(target)])
    with WebServer(JobRegistry([job]), host="localhost", port=0) as server:
        status, answer = http(server, "GET", f"/ckptsim/jobs/{view.job_id}/timeline")
        assert status == 404, answer
        (message,) = answer["errors"]
        assert message.startswith(
            f"org.apache.flink.runtime.rest.NotFoundException: the timeline of job "
            f"{view.job_id} cannot be drawn: {target} holds a body of another shape than Flink's"
        )
        assert http(server, "GET", f"/jobs/{view.job_id}/checkpoints")[1] == body  # as it is
        assert http(server, "GET", "/jobs/overview")[0] == 200
        assert http(server, "GET", "/jobs")[0] == 200


def test_an_archive_whose_overview_entry_is_malformed_is_refused_when_loaded(
    finished: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An overview entry without its state made GET /jobs and /applications/overview 500 for
    every job the server showed."""
    _, view, _ = finished
    (tmp_path / "archives").mkdir()
    target = write_archive(view, tmp_path / "archives" / "job-archive")
    document = json.loads(target.read_text())
    for entry in document["archive"]:
        if entry["path"] == "/jobs/overview":
            overview = json.loads(entry["json"])
            del overview["jobs"][0]["state"]
            entry["json"] = json.dumps(overview)
    target.write_text(json.dumps(document))
    with pytest.raises(rest.ArchiveFormatError, match="names its job in another shape"):
        load_archives([str(target)])
    assert load_archives([str(target.parent)]) == []  # in a folder: skipped, as Flink's
    assert main(["serve", str(target)]) == 2
    assert "names its job in another shape than Flink's" in capsys.readouterr().err


def _started(process: subprocess.Popen[str]) -> str:
    """The web page's URL the command prints (its first line on stderr names it)."""
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("Web page: "):
            return line.split(": ", 1)[1].strip()
    raise AssertionError(f"no URL printed; exit {process.wait(BOUND_S)}")


def _terminate(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(BOUND_S)


def _command(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "ckptsim", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
    )


def test_serve_serves_until_sigterm(finished: Any, tmp_path: Path) -> None:
    target = write_archive(finished[1], tmp_path / "job-archive")
    process = _command("serve", str(target), "--port", "0")
    try:
        url = _started(process)
        with urllib.request.urlopen(url + "jobs/overview", timeout=10) as response:
            assert json.load(response)["jobs"][0]["jid"] == finished[1].job_id
    finally:
        assert _terminate(process) == 0


def test_run_web_keeps_serving_after_the_job_until_sigterm(tmp_path: Path) -> None:
    process = _command("run", script(tmp_path), "--simulate", "-q", "--web", "-D", "rest.port=0")
    try:
        url = _started(process)
        assert process.stderr is not None
        for line in process.stderr:  # the job ended; the server stays
            if line.startswith("Serving "):
                break
        with urllib.request.urlopen(url + "jobs/overview", timeout=10) as response:
            (job,) = json.load(response)["jobs"]
        assert job["state"] == "FINISHED"
        assert process.poll() is None
    finally:
        assert _terminate(process) == 0
