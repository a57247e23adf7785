"""``ckptsim run`` always comes back: a deterministic error restarts a bounded number of times
(the summary names each cause), and a script that never ends, a leftover thread, Ctrl-C or
SIGTERM end the run cleanly (issue #8, items 8, 9 and 13)."""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import IO, Any

import pytest

from ckptsim._cli import main

#: a keyed job whose key selector raises at record 3,000: every replay meets it again
DETERMINISTIC_ERROR = """
    def key(record):
        if record[1] == 3_000:
            raise KeyError("no key for record 3000")
        return record[0]

    def build(env):
        env.enable_checkpointing("20 ms")
        env.from_generator(lambda i: (i % 7, i), 5_000, rate=50_000).key_by(key).reduce(
            lambda a, b: (a[0], a[1] + b[1])
        ).collect("sums")
"""


def script(tmp_path: Path, body: str, name: str = "job.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def run(*argv: str) -> int:
    # virtual seconds: without a bound, Flink's default would restart until this timeout
    return main(["run", *argv, "--simulate", "--seed", "1", "--timeout", "3600"])


def test_a_deterministic_error_restarts_three_times_then_fails_naming_each_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(script(tmp_path, DETERMINISTIC_ERROR)) == 1
    out, err = capsys.readouterr()
    assert "Job 'job' FAILED" in out and "Restarts: 3\n" in out
    for n in (1, 2, 3):
        assert f"  restart {n} after: task " in out
    assert out.count("KeyError: 'no key for record 3000'") >= 4
    assert "  not restarted after: task " in out
    assert "recovery is suppressed by fixed-delay, 3 attempt(s)" in out
    assert "restarted at most 3 times" in err
    assert "-D restart-strategy.type=exponential-delay" in err


def test_flinks_unlimited_default_comes_back_with_a_restart_strategy_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = script(tmp_path, DETERMINISTIC_ERROR)
    flink_default = ["-D", "restart-strategy.type=exponential-delay"]
    code = main(["run", job, "--simulate", "--seed", "1", "--timeout", "120", *flink_default])
    assert code == 1
    out, err = capsys.readouterr()
    assert "Job 'job' CANCELED" in out  # still restarting when the timeout cancelled it
    restarts = int(out.split("Restarts: ")[1].split("\n")[0])
    assert restarts > 3
    assert "restarted at most" not in err


def test_a_strategy_the_script_configures_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = DETERMINISTIC_ERROR + (
        "        env.configure({'restart-strategy.type': 'fixed-delay',\n"
        "                       'restart-strategy.fixed-delay.attempts': 5,\n"
        "                       'restart-strategy.fixed-delay.delay': '10 ms'})\n"
    )
    assert run(script(tmp_path, body)) == 1
    out, err = capsys.readouterr()
    assert "Restarts: 5\n" in out and "restarted at most" not in err


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_bounded_job_with_a_long_interval_ends_at_its_next_checkpoint_not_two_intervals_later(
    seed: int,
) -> None:
    """Issue 11, item 13: a 0.5 s job took 58 s with a 30 s interval. As in Flink (FLIP-147)
    one final checkpoint, the next periodic one, covers every task after its input ended, so
    the job ends within one interval of its input's end (virtual time)."""
    from ckptsim import StreamExecutionEnvironment  # noqa: PLC0415

    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing("30 s")
    env.from_generator(lambda i: (i % 7, 1), 5_000, rate=10_000).key_by(lambda r: r[0]).sum(
        1
    ).collect("sums")
    result = env.execute("long interval", runtime="simulation", seed=seed)
    assert result.succeeded, result.failure
    # the first checkpoint comes after a random initial delay of at most one interval
    assert result.duration_ms <= 500 + 30_000 + 100, result.duration_ms


# --- scripts that never end, interrupts ----------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]

LOOP_AT_MODULE_LEVEL = """
    import itertools
    for n in itertools.count(): pass  # noqa: E701 - one line: the interrupt lands on it
"""

JOB_THEN_LOOP = """
    from ckptsim import StreamExecutionEnvironment
    env = StreamExecutionEnvironment()
    env.from_collection(range(10)).collect()
    env.execute("first")
    while True: pass  # noqa: E701 - one line: the interrupt lands on it
"""


@pytest.mark.parametrize(
    ("body", "line"), [(LOOP_AT_MODULE_LEVEL, 3), (JOB_THEN_LOOP, 6)], ids=["loop", "job then loop"]
)
def test_the_timeout_stops_a_script_whose_own_code_never_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, line: int
) -> None:
    job = script(tmp_path, body)
    assert main(["run", job, "-q", "--timeout", "0.3"]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"ckptsim run: {job}:{line}: stopped after --timeout 0.3 s: the script's own code "
        "(outside its job) was still running\n"
    )


def _cli(tmp_path: Path, body: str, *argv: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    return subprocess.Popen(
        [sys.executable, "-c", CLI_WITH_CTRL_C, "run", script(tmp_path, body), *argv],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


#: ``python -m ckptsim._cli``, with Python's own Ctrl-C handler: a shell starts background commands
#: with SIGINT ignored and a child inherits that (Python then installs no handler), while a
#: terminal's Ctrl-C reaches a program whose SIGINT is handled
CLI_WITH_CTRL_C = (
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('ckptsim', run_name='__main__', alter_sys=True)"
)


def _finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=240)  # a guard against a hang, not a measure
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"ckptsim run never ended\nstdout: {out}\nstderr: {err}")
    return process.returncode, out, err


FORGOTTEN_THREAD = """
    import threading
    threading.Thread(target=threading.Event().wait, name="forgotten").start()

    def build(env):
        env.from_collection(range(100)).collect()
"""


def test_the_program_exits_after_the_job_although_the_script_left_a_thread_running(
    tmp_path: Path,
) -> None:
    code, out, err = _finish(_cli(tmp_path, FORGOTTEN_THREAD, "--simulate"))
    assert code == 0, err
    assert "Job 'job' FINISHED" in out
    assert err == "ckptsim: not waiting for thread(s) the script left running: 'forgotten'\n"


SIGNALLED_LOOP = """
    print("looping", flush=True)
    while True:
        pass
"""

#: a job that would run for 10,000 s; its first record says it runs
SIGNALLED_JOB = """
    def record(i):
        if i == 0:
            print("running", flush=True)
        return i

    def build(env):
        env.enable_checkpointing("20 ms")
        env.from_generator(record, 10**7, rate=1_000).map(lambda i: i + 1).collect()
"""


@pytest.mark.parametrize(
    ("body", "ready", "sent", "code", "line"),
    [
        (SIGNALLED_LOOP, "looping", signal.SIGINT, 130, "interrupted (Ctrl-C)"),
        (
            SIGNALLED_JOB,
            "running",
            signal.SIGINT,
            130,
            "interrupted (Ctrl-C): job 'job' was cancelled",
        ),
        (
            SIGNALLED_JOB,
            "running",
            signal.SIGTERM,
            143,
            "terminated (SIGTERM): job 'job' was cancelled",
        ),
    ],
    ids=["ctrl-c in the script", "ctrl-c in the job", "sigterm in the job"],
)
def test_ctrl_c_and_sigterm_end_the_run_with_one_line_and_leave_no_checkpoint_directory(
    tmp_path: Path, body: str, ready: str, sent: int, code: int, line: str
) -> None:
    process = _cli(tmp_path, body)
    try:
        assert process.stdout is not None
        first = process.stdout.readline().strip()
        if first.startswith("Job has been submitted with JobID "):
            first = process.stdout.readline().strip()
        assert first == ready  # the script or its job runs now
        process.send_signal(sent)
        returned, out, err = _finish(process)
    finally:
        if process.poll() is None:  # a failed assertion must not leave it running
            process.kill()
            process.wait()
    assert (returned, err) == (code, f"ckptsim run: {line}\n"), out
    if body is SIGNALLED_JOB:
        assert "Job 'job' CANCELED" in out
    assert not list(tmp_path.glob("ckptsim-*")), "the temporary checkpoint directory is left"


def test_the_failure_recovery_example_leaves_no_output_folder_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    example = str(ROOT / "examples" / "failure_recovery.py")
    assert main(["run", example, "-p", "2", "--simulate", "--seed", "3"]) == 0
    assert "Job 'failure_recovery' FINISHED" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


RATE_LIMITED = """
    def build(env):
        env.enable_checkpointing(100)
        env.from_generator(lambda i: i, 3000, rate=1000).map(lambda x: x).collect()
"""


def test_a_job_cancelled_by_the_timeout_says_so_in_its_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # on the simulation --timeout is virtual seconds: the 3 s job meets the 0.5 s bound
    code = main(["run", script(tmp_path, RATE_LIMITED), "--simulate", "--timeout", "0.5"])
    assert code == 1
    out = capsys.readouterr().out
    assert re.search(
        r"Job 'job' CANCELED in \d+ ms of virtual time: cancelled when the timeout of 0\.5 s "
        r"passed\n",
        out,
    ), out


#: more output than a pipe holds (64 KiB): the print sink is still writing when the reader leaves
MUCH_OUTPUT = """
    def build(env):
        env.enable_checkpointing(50)
        env.from_collection(list(range(100_000))).map(lambda i: f"line {i}").print()
"""

PYFLINK_MUCH_OUTPUT = """
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(list(range(100_000))).map(lambda i: f"line {i}").print()
    env.execute("much output")
    print("after the job")
"""


#: the program's own print() meets the closed pipe: it stops there, as under Python, quietly
PYFLINK_OWN_OUTPUT = """
    from pyflink.datastream import StreamExecutionEnvironment

    for i in range(100_000):
        print("own line", i)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2]).print()
    env.execute("never run")
"""


@pytest.mark.parametrize(
    "body",
    [MUCH_OUTPUT, PYFLINK_MUCH_OUTPUT, PYFLINK_OWN_OUTPUT],
    ids=["build", "pyflink", "pyflink-own-print"],
)
def test_a_reader_that_leaves_early_ends_the_output_quietly(tmp_path: Path, body: str) -> None:
    """``ckptsim run job.py | head -5``: once the reader closed the pipe the print sinks stop
    writing, the job finishes (no task failure, no restart) and the run exits 0 without a
    traceback, as Python's own command line tools do."""
    with open(tmp_path / "stderr", "w+") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "ckptsim._cli", "run", script(tmp_path, body), "-p", "2"],
            cwd=ROOT,
            env={**os.environ, "TMPDIR": str(tmp_path)},
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        assert process.stdout is not None
        first = [process.stdout.readline() for _ in range(5)]
        process.stdout.close()  # as `head -5` does
        try:
            code = process.wait(timeout=240)  # a guard against a hang, not a measure
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail("ckptsim run never ended after its reader left")
        stderr.seek(0)
        err = stderr.read()
    assert all(first), first
    assert code == 0, err
    if body is PYFLINK_MUCH_OUTPUT:  # its summary is on stderr (a build script's on stdout)
        assert "Job 'much output' FINISHED" in err, err
    for noise in ("Traceback", "BrokenPipeError", "Broken pipe", "task_failed", "restart"):
        assert noise not in err, err


# --- the outputs (--stats, --timeline, --trace) at every end (issue #22, items 6 and 7) ----------

QUICK_JOB = """
    def build(env):
        env.enable_checkpointing(50)
        env.from_generator(lambda i: (i % 3, 1), 2_000, rate=10_000).key_by(lambda r: r[0]).sum(
            1
        ).collect("sums")
"""

NO_SPACE = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class _FullDisk:
    """A file on a disk that fills up: half of the first write lands, then ENOSPC."""

    def __init__(self, handle: IO[str]) -> None:
        self.handle = handle

    def __enter__(self) -> _FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()

    def write(self, text: str) -> int:
        self.handle.write(text[: len(text) // 2])
        self.handle.flush()
        raise NO_SPACE

    def flush(self) -> None:
        self.handle.flush()

    def fileno(self) -> int:
        return self.handle.fileno()


def _full_disk_for_the_archive(monkeypatch: pytest.MonkeyPatch) -> None:
    from actors import archive  # noqa: PLC0415

    def full_open(file: Any, mode: str = "r", **kw: Any) -> Any:
        handle = open(file, mode, **kw)  # noqa: SIM115 - closed by _FullDisk
        return _FullDisk(handle) if "w" in mode else handle

    monkeypatch.setattr(archive, "open", full_open, raising=False)


def _full_disk_for_the_timeline(monkeypatch: pytest.MonkeyPatch) -> None:
    from ckptsim import _timeline_plot  # noqa: PLC0415

    def draw(timelines: Any, path: str | Path) -> Path:
        Path(path).write_text("<svg>half a pict")  # the picture library got this far
        raise NO_SPACE

    monkeypatch.setattr(_timeline_plot, "write_timeline", draw)


@pytest.mark.parametrize(
    "full", [["stats"], ["timeline"], ["stats", "timeline"]], ids=["stats", "timeline", "both"]
)
def test_a_full_disk_is_one_line_per_file_exit_2_nothing_partial_left_and_the_job_reported(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    full: list[str],
) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    stats, timeline = out_dir / "stats.json", out_dir / "timeline.svg"
    stats.write_text("the archive of an earlier run")  # a full disk leaves it as it was
    if "stats" in full:
        _full_disk_for_the_archive(monkeypatch)
    if "timeline" in full:
        _full_disk_for_the_timeline(monkeypatch)
    job = script(tmp_path, QUICK_JOB)
    code = run(job, "--stats", str(stats), "--timeline", str(timeline))
    out, err = capsys.readouterr()
    assert code == 2
    assert "Job 'job' FINISHED" in out  # the job's own outcome, reported
    lines = [line for line in err.splitlines() if not line.startswith("Timeline written to")]
    expected = []
    if "stats" in full:
        expected.append(
            f"ckptsim run: cannot write the stats file {stats}: No space left on device"
        )
    if "timeline" in full:
        expected.append(
            f"ckptsim run: cannot write the timeline file {timeline}: No space left on device"
        )
    assert lines == expected
    left = sorted(p.name for p in out_dir.iterdir())
    assert left == sorted(["stats.json"] + (["timeline.svg"] if "timeline" not in full else []))
    if "stats" in full:
        assert stats.read_text() == "the archive of an earlier run"
    else:
        assert json.loads(stats.read_text())["archive"]


@pytest.mark.parametrize(
    ("sent", "code", "line"),
    [
        (signal.SIGINT, 130, "interrupted (Ctrl-C): job 'job' was cancelled"),
        (signal.SIGTERM, 143, "terminated (SIGTERM): job 'job' was cancelled"),
    ],
    ids=["ctrl-c", "sigterm"],
)
def test_after_ctrl_c_stats_timeline_and_trace_are_written_for_what_ran(
    tmp_path: Path, sent: int, code: int, line: str
) -> None:
    from ckptsim._web import load_archives  # noqa: PLC0415

    out_dir = tmp_path / "out"
    out_dir.mkdir()
    stats, timeline, trace = out_dir / "stats.json", out_dir / "t.svg", out_dir / "trace.jsonl"
    process = _cli(
        tmp_path,
        SIGNALLED_JOB,
        "--stats",
        str(stats),
        "--timeline",
        str(timeline),
        "--trace",
        str(trace),
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().strip()
        if first.startswith("Job has been submitted with JobID "):
            first = process.stdout.readline().strip()
        assert first == "running"
        process.send_signal(sent)
        returned, out, err = _finish(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert returned == code, err
    assert err == f"Timeline written to {timeline}\nckptsim run: {line}\n", err
    assert "Job 'job' CANCELED" in out
    (archived,) = load_archives([str(stats)])
    assert archived.overview["state"] == "CANCELED"
    assert "<svg" in timeline.read_text()
    events = [json.loads(text) for text in trace.read_text().splitlines()]
    assert events and any(e.get("event") == "job_cancel_requested" for e in events)
    assert sorted(p.name for p in out_dir.iterdir()) == ["stats.json", "t.svg", "trace.jsonl"]
