"""A run's trace is an observer handed to the run (``execute(trace=...)``, ``--trace``), written
by a trace writer: whether and how logging is configured changes nothing in it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import structlog

from actors.trace import EventLog, TraceCollector, TraceWriter
from ckptsim import FailTask, StreamExecutionEnvironment, check_trace
from ckptsim._cli import main
from ckptsim._logging import logging_restored

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    from ckptsim import FailTask

    JOB_NAME = "traced"

    def build(env):
        env.set_parallelism(2)
        env.enable_checkpointing("20 ms")
        env.configure({"restart-strategy.type": "fixed-delay",
                       "restart-strategy.fixed-delay.attempts": 2})
        env.inject_faults(FailTask(task="reduce-2#1", at_record=700))
        (env.from_generator(lambda i: (i % 7, 1), 4000, name="numbers")
            .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
            .collect("sums"))
    """
)

API = textwrap.dedent(
    """
    import runpy, sys
    from ckptsim import StreamExecutionEnvironment, TraceWriter

    script = runpy.run_path(sys.argv[1])
    env = StreamExecutionEnvironment()
    script["build"](env)
    with TraceWriter(sys.argv[2]) as trace:
        result = env.execute(script["JOB_NAME"], runtime="simulation", seed=11, trace=trace)
    assert result.succeeded and result.restarts == 1, result
    """
)


def test_a_run_traced_through_the_api_with_logging_unconfigured_writes_the_clis_trace(
    tmp_path: Path,
) -> None:
    """The same seeded job, once from a plain Python program that configures no logging and
    once with ``ckptsim run --trace``: the two trace files are equal, byte for byte."""
    script = tmp_path / "traced.py"
    script.write_text(SCRIPT)
    api, cli = tmp_path / "api.jsonl", tmp_path / "cli.jsonl"
    program = tmp_path / "api.py"
    program.write_text(API)
    ran = subprocess.run(
        [sys.executable, str(program), str(script), str(api)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert "Traceback" not in ran.stderr  # unconfigured: only warnings, on stderr
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "ckptsim",
            "run",
            str(script),
            "--simulate",
            "--seed",
            "11",
            "-q",
            "--trace",
            str(cli),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    text = api.read_text()
    assert text == cli.read_text()
    events = [json.loads(line) for line in text.splitlines()]
    names = {e["event"] for e in events}
    assert {"job_submitted", "checkpoint_completed", "job_restarting", "job_finished"} <= names
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert check_trace(events).violation is None


def _job(out: str) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing("20 ms")
    env.from_generator(lambda i: (i % 5, 1), 2000).key_by(lambda r: r[0]).sum(1).collect(out)
    return env


@pytest.mark.parametrize("level", ["critical", "debug"])
def test_the_trace_does_not_depend_on_the_logging_level(level: str) -> None:
    """Logging configured to show nothing, or everything: the run's trace is the same."""
    traces = []
    for configured in (False, True):
        trace = TraceCollector()
        with logging_restored():
            if configured:
                structlog.configure(
                    wrapper_class=structlog.make_filtering_bound_logger(
                        {"critical": 50, "debug": 10}[level]
                    ),
                    logger_factory=structlog.ReturnLoggerFactory(),
                )
            _job("sums").execute("levels", runtime="simulation", seed=3, trace=trace)
        traces.append(trace.events)
    assert traces[0] == traces[1]
    assert any(e["event"] == "checkpoint_completed" for e in traces[0])


def test_the_trace_writer_numbers_events_and_stops_on_a_write_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Events are numbered on across the jobs written to one writer; a write error (a full
    disk) stops the trace with one line on standard error, and the run goes on."""

    class Full:
        closed = False

        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    writer = TraceWriter(tmp_path / "t.jsonl")
    log = EventLog(structlog.get_logger("t"), writer, lambda: ("time_ms", 1.0))
    log.bind(task="a#0").info("one", n=1)
    log.debug("below the level")
    log.warning("two")
    writer.close()
    lines = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert lines == [
        {"seq": 1, "event": "one", "level": "info", "task": "a#0", "n": 1, "time_ms": 1.0},
        {"seq": 2, "event": "two", "level": "warning", "time_ms": 1.0},
    ]
    full = TraceWriter(Full())  # type: ignore[arg-type]
    EventLog(structlog.get_logger("t"), full).info("lost")
    EventLog(structlog.get_logger("t"), full).info("not tried")
    assert capsys.readouterr().err == (
        "ckptsim: trace file no longer written: [Errno 28] No space left on device\n"
    )


def test_a_debug_trace_has_the_per_buffer_events_an_info_trace_leaves_out() -> None:
    info, debug = TraceCollector(), TraceCollector(level="debug")
    for trace in (info, debug):
        _job("sums").execute("debug", runtime="simulation", seed=5, trace=trace)
    assert {e["level"] for e in info.events} <= {"info", "warning", "error"}
    assert len(debug.events) > len(info.events)
    assert any(e["level"] == "debug" for e in debug.events)


def test_fail_task_faults_are_importable_from_ckptsim() -> None:
    assert FailTask(task="x#0", at_record=1).task == "x#0"


def test_a_trace_file_appears_whole_at_close_and_nothing_is_left_when_the_disk_is_full(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The trace is written under ``t.inprogress.jsonl`` and renamed at close; when a write
    fails (a full disk), the partial file is removed and ``failed`` says why."""
    target = tmp_path / "t.jsonl"
    writer = TraceWriter(target)
    EventLog(structlog.get_logger("t"), writer).info("one")
    assert not target.exists() and (tmp_path / "t.inprogress.jsonl").exists()
    writer.close()
    assert [json.loads(line)["event"] for line in target.read_text().splitlines()] == ["one"]
    assert writer.failed is None and not (tmp_path / "t.inprogress.jsonl").exists()

    class Full:
        closed = False

        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

        def close(self) -> None:
            pass

    other = tmp_path / "u.jsonl"
    writer = TraceWriter(other)
    writer._file = Full()  # type: ignore[assignment]  # the disk fills up
    EventLog(structlog.get_logger("t"), writer).info("lost")
    writer.close()
    assert writer.failed == "[Errno 28] No space left on device"
    assert list(tmp_path.glob("u*")) == []
    assert capsys.readouterr().err.count("\n") == 1


def test_ckptsim_run_with_a_trace_the_disk_cannot_hold_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """/dev/full takes the open and fails the writes (ENOSPC) as a full disk does: before, a
    traceback from closing the trace and exit 1."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    script = tmp_path / "job.py"
    script.write_text(
        "def build(env):\n    env.from_collection([1, 2, 3]).map(lambda x: x * 2).collect('out')\n"
    )
    assert main(["run", str(script), "-q", "--simulate", "--trace", "/dev/full"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "trace file no longer written" in err, err
