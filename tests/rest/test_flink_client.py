"""ckptsim's client commands as Flink's CLI (issue #25, item 4): ``list -r/-s/-a``,
``savepoint [-type]``, ``stop [-p] [--drain] [-type]`` and ``cancel`` print what Flink 2.3's CLI
printed against a real Flink (``flink/tools/cli/*.out``), line for line; a savepoint without a
directory is refused as Flink refuses it; ``run -s/--fromSavepoint`` takes the ``file:`` path
``savepoint`` prints, ``-n/--allowNonRestoredState`` too, and an option ``run`` does not know
prints ``run``'s own usage.

A live job runs on threads, held open by its rate-limited source; every wait is on a
condition."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from ckptsim._cli import main
from ckptsim._web import WebServer
from runtime import serde
from tests.rest.conftest import cli_lines, flink_cli_output
from tests.rest.test_flink_cli import _flink_error
from tests.rest.test_http import BOUND_S, Live, http

NAME = "live keyed sum"  # Live's job
FLINK_NAME = "real-job-a"  # the captured job


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_list_savepoint_stop_and_list_again_print_flinks_lines(
    live: tuple[Live, WebServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job, server = live
    address = f"localhost:{server.port}"
    for option, capture in (([], "list"), (["-r"], "list-r"), (["-s"], "list-s")):
        code, out, err = run(capsys, "list", *option, "-m", address)
        assert (code, err) == (0, "")
        assert cli_lines(out, NAME) == cli_lines(flink_cli_output(capture), FLINK_NAME)
    # a savepoint to a file: URI, in the native format
    target = tmp_path / "sp"
    code, out, err = run(
        capsys, "savepoint", "-m", address, "-type", "native", job.job_id, f"file://{target}"
    )
    assert (code, err) == (0, "")
    assert cli_lines(out) == cli_lines(flink_cli_output("savepoint-native"))
    (location,) = re.findall(r"Path: (file:\S+)", out)
    assert Path(location.removeprefix("file:"), "_metadata").is_file()
    latest = http(server, "GET", f"/jobs/{job.job_id}/checkpoints")[1]["latest"]["savepoint"]
    assert (latest["external_path"], latest["savepointFormat"]) == (location, "NATIVE")
    # no directory, none configured: refused as Flink refuses it
    code, out, err = run(capsys, "savepoint", "-m", address, job.job_id)
    assert code == 1
    assert cli_lines(out) == cli_lines(flink_cli_output("savepoint-nodir"))
    assert err.count("\n") == 1 and err.startswith(
        f"ckptsim savepoint: Failed to trigger a savepoint for the job {job.job_id}: "
    )
    assert _flink_error("savepoint-nodir").split("RestHandlerException: ")[1] in err
    # stop with a savepoint
    code, out, err = run(capsys, "stop", "-p", f"file:{tmp_path}/stop", "-m", address, job.job_id)
    assert (code, err) == (0, "")
    assert cli_lines(out) == cli_lines(flink_cli_output("stop-p"))
    job.thread.join(BOUND_S)
    assert job.results[0].status.value == "FINISHED"
    (stopped,) = re.findall(r"Path: (file:\S+)", out)
    # the terminated job, with -a only
    code, out, err = run(capsys, "list", "-a", "-m", address)
    assert (code, err) == (0, "")
    assert cli_lines(out, NAME) == [
        "Waiting for response...",
        "No running jobs.",
        "No scheduled jobs.",
        "---------------------- Terminated Jobs -----------------------",
        "<time> : <job-id> : <name> (FINISHED)",
        "-" * 62,
    ]
    code, out, err = run(capsys, "list", "-m", address)
    assert cli_lines(out) == ["Waiting for response...", "No running jobs.", "No scheduled jobs."]
    # the path stop printed (a file: URI) is what run -s takes; the savepoint holds the state
    # of the live job's sink, which the job run from it has not: -n
    script = _script(tmp_path, Path(stopped.removeprefix("file:")))
    code, out, err = run(capsys, "run", str(script), "--simulate", "-s", stopped)
    assert code == 2 and "'sink-Discard', which this job does not have" in err
    for options in (
        ["-s", stopped, "-n"],
        ["--fromSavepoint", stopped, "--allowNonRestoredState"],
        ["--from-savepoint", stopped.replace("file:", "file://"), "-n"],
        ["-s", stopped.removeprefix("file:"), "--allow-non-restored-state"],
    ):
        code, out, err = run(capsys, "run", str(script), "--simulate", *options)
        assert code == 0, err
        assert "restored 1" in out, options


def _script(tmp_path: Path, savepoint: Path) -> Path:
    """The live job's topology, bounded (a thousand records past where the ``savepoint`` left
    its source), with another sink."""
    indexes = [
        int(serde.unpack(state)["position"]["index"])
        for path in savepoint.glob("source-*.state.msgpack")
        for state in msgspec.msgpack.decode(path.read_bytes())["operator_states"].values()
    ]
    assert indexes, f"no source position in {savepoint}"
    script = tmp_path / "job.py"
    script.write_text(
        "def build(env):\n"
        "    env.set_parallelism(2)\n"
        "    env.enable_checkpointing(50)\n"
        f"    (env.from_generator(lambda i: i, {max(indexes) + 1000}, name='seq')\n"
        "        .map(lambda i: (i % 1000, 1), name='Map')\n"
        "        .key_by(lambda r: r[0])\n"
        "        .reduce(lambda a, b: (a[0], a[1] + b[1]), name='Reduce')\n"
        "        .collect('sums'))\n"
    )
    return script


def test_stop_drain_prints_flinks_lines_and_the_job_finishes(
    live: tuple[Live, WebServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``stop --drain -type native``: Flink's lines (``Draining job ...``), a savepoint in
    the native format, the job FINISHED."""
    job, server = live
    address = f"localhost:{server.port}"
    code, out, err = run(
        capsys,
        "stop",
        "--drain",
        "-type",
        "native",
        "-p",
        f"file:{tmp_path}/drained",
        "-m",
        address,
        job.job_id,
    )
    assert (code, err) == (0, "")
    assert cli_lines(out) == cli_lines(flink_cli_output("stop-drain-native"))
    (location,) = re.findall(r"Path: (file:\S+)", out)
    assert Path(location.removeprefix("file:"), "_metadata").is_file()
    job.thread.join(BOUND_S)
    assert job.results[0].status.value == "FINISHED"


def test_cancel_prints_flinks_lines(
    live: tuple[Live, WebServer], capsys: pytest.CaptureFixture[str]
) -> None:
    job, server = live
    code, out, err = run(capsys, "cancel", "-m", f"localhost:{server.port}", job.job_id)
    assert (code, err) == (0, "")
    assert cli_lines(out) == cli_lines(flink_cli_output("cancel"))
    job.thread.join(BOUND_S)
    assert job.results[0].status.value == "CANCELED"
    code, out, err = run(capsys, "cancel", "-m", f"localhost:{server.port}", job.job_id)
    assert code == 1
    assert cli_lines(out) == cli_lines(flink_cli_output("cancel-badjob"))
    assert err.startswith(f"ckptsim cancel: Could not cancel job {job.job_id}: ") and "409" in err


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["run", "job.py", "--nosuch"], "usage: ckptsim run SCRIPT"),
        (["run", "--fromSavepoint"], "usage: ckptsim run SCRIPT"),
        (["run", "job.py", "-s", "a", "--from-checkpoint", "b"], "usage: ckptsim run SCRIPT"),
        (["savepoint", "-type", "foo", "0" * 32], "usage: ckptsim savepoint"),
        (["stop", "0" * 32, "--nosuch"], "usage: ckptsim stop"),
        (["list", "-x"], "usage: ckptsim list"),
    ],
)
def test_an_option_error_prints_the_commands_own_usage(
    capsys: pytest.CaptureFixture[str], argv: list[str], usage: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith(usage), err
    assert "usage: ckptsim [-h]" not in err


def test_run_refuses_a_path_of_another_file_system_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "run", str(tmp_path / "job.py"), "-s", "hdfs:///x/sp")
    assert code == 2
    assert err == "ckptsim run: 'hdfs:///x/sp': ckptsim reads and writes local files only: " + (
        "give a path or a file: URI\n"
    )


def test_every_path_option_takes_a_file_uri(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--stats``, ``--timeline``, ``--trace`` and the path-valued configuration keys take a
    ``file:`` URI (``file:/p`` and ``file:///p``) as they take a path, as Flink's CLI does."""
    from ckptsim._web import load_archives  # noqa: PLC0415

    script = tmp_path / "job.py"
    script.write_text(
        "def build(env):\n"
        "    env.set_parallelism(2)\n"
        "    env.enable_checkpointing(10)\n"
        "    (env.from_generator(lambda i: i, 2000, rate=20_000, name='seq')\n"
        "        .key_by(lambda i: i % 10)\n"
        "        .reduce(lambda a, b: a + b, name='Reduce')\n"
        "        .collect('sums'))\n"
    )
    code, _, err = run(
        capsys,
        "run",
        str(script),
        "--simulate",
        "--stats",
        f"file:{tmp_path}/stats.json",
        "--timeline",
        f"file://{tmp_path}/timeline.html",
        "--trace",
        f"file:{tmp_path}/trace.jsonl",
        "-D",
        f"execution.checkpointing.dir=file://{tmp_path}/checkpoints",
    )
    assert code == 0, err
    for name in ("stats.json", "timeline.html", "trace.jsonl"):
        assert (tmp_path / name).is_file(), name
    assert not list(tmp_path.glob("file:*"))  # no folder named after the URI
    assert [p.name for p in (tmp_path / "checkpoints").iterdir()] == [f"{1:032x}"]  # its job
    (job,) = load_archives([f"file://{tmp_path}/stats.json"])
    assert job.job_id == f"{1:032x}" and job.source == str(tmp_path / "stats.json")
