"""ckptsim as a library: quiet (nothing below WARNING, only on stderr) until the application
configures logging, then the application's (structlog or the standard library). Each case runs
in a fresh interpreter: logging configuration is process-wide (issue #10, "Using it as a
library")."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

JOBS = """
from ckptsim import StreamExecutionEnvironment

def jobs():
    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(10)
    env.from_generator(lambda i: (i % 5, 1), 5_000, rate=100_000).key_by(
        lambda r: r[0]
    ).sum(1).collect()
    print("first", env.execute("good", runtime="simulation").status.value)
    env = StreamExecutionEnvironment(parallelism=1)
    env.from_collection([1, 0]).map(lambda x: 1 // x).collect()
    print("second", env.execute("bad", runtime="simulation").status.value)
"""


def python(program: str) -> tuple[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", JOBS + textwrap.dedent(program)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,  # a guard, not a measure
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def test_unconfigured_it_says_nothing_below_warning_and_only_on_stderr() -> None:
    out, err = python(
        """
        import structlog
        jobs()
        assert not structlog.is_configured()  # importing and running ckptsim configured nothing
        """
    )
    assert out == "first FINISHED\nsecond FAILED\n"
    lines = err.splitlines()
    assert lines and all(line.startswith("event=") for line in lines), err
    assert any(line.startswith("event=task_failed ") for line in lines)
    assert "ZeroDivisionError" in err
    assert "checkpoint_completed" not in err  # info: not shown


def test_configured_with_the_standard_library_its_events_are_records_of_its_loggers() -> None:
    out, _ = python(
        """
        import logging, sys
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format="%(name)s %(levelname)s %(message)s")
        jobs()
        """
    )
    assert "actors.coordinator INFO event=checkpoint_completed " in out
    assert "actors.stream_task WARNING event=task_failed " in out
    assert "first FINISHED" in out


def test_configured_with_structlog_before_or_after_the_import_it_logs_as_the_application() -> None:
    for where in ("before", "after"):
        out, err = python(
            f"""
            import structlog, sys

            def configure():
                structlog.configure(
                    processors=[structlog.processors.add_log_level,
                                structlog.processors.JSONRenderer()],
                    logger_factory=structlog.PrintLoggerFactory(sys.stdout),
                )

            if "{where}" == "before":
                configure()
            import actors.launcher
            configure()
            structlog.get_logger("app").info("app_event")
            jobs()
            """
        )
        events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        names = {e["event"] for e in events}
        assert {"app_event", "job_submitted", "checkpoint_completed", "task_failed"} <= names
        assert err == ""


def test_the_command_line_leaves_an_unconfigured_application_unconfigured() -> None:
    out, _ = python(
        """
        import structlog
        from ckptsim._cli import main
        assert main(["config"]) == 0
        assert not structlog.is_configured()
        jobs()
        """
    )
    assert out.endswith("first FINISHED\nsecond FAILED\n")
    assert "checkpoint_completed" not in out


def test_every_module_logs_through_actors_logs() -> None:
    """A module taking structlog.get_logger directly would print to stdout as a library."""
    offenders = [
        str(path.relative_to(ROOT))
        for package in ("actors", "spark_bridge")
        for path in sorted((ROOT / package).rglob("*.py"))
        if "structlog.get_logger(" in path.read_text() and path.name != "logs.py"
    ]
    assert offenders == []
