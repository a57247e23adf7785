"""Jobs for the REST tests: the same kind of job as the captured Flink 2.3.0 runs (a keyed
running sum, parallelism 2, checkpoints), run on the deterministic simulation, with a task
failure (an exception, a restart and a restore) and a lost acknowledgement (a checkpoint that
expires with part of its subtasks acknowledged), as the captures have them."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.faults import DropAcknowledgement, FailTask
from ckptsim import StreamExecutionEnvironment
from ckptsim._web import JobRegistry, WebServer
from runtime import rest
from runtime.job import JobResult

FLINK = Path(__file__).parent / "flink"


def flink_body(name: str) -> Any:
    """A body a Flink 2.3.0 returned (``tests/rest/flink``)."""
    return json.loads((FLINK / name).read_text(encoding="utf-8"))


def flink_cli_output(name: str, stream: str = "out") -> str:
    """What Flink 2.3.0's CLI wrote for one command (``tests/rest/flink/tools/cli``), without
    the ``rc=N`` line the capture added."""
    text = (FLINK / "tools" / "cli" / f"{name}.{stream}").read_text(encoding="utf-8")
    return re.sub(r"rc=\d+\n\Z", "", text)


def cli_lines(text: str, *names: str) -> list[str]:
    """The lines of a CLI's output with what differs from run to run replaced: job ids, start
    times, savepoint paths, and the job ``names``."""
    text = re.sub(r"\b[0-9a-f]{32}\b", "<job-id>", text)
    text = re.sub(r"\d\d\.\d\d\.\d{4} \d\d:\d\d:\d\d", "<time>", text)
    text = re.sub(r"Path: \S+", "Path: <path>", text)
    for name in names:
        text = text.replace(f" : {name} (", " : <name> (")
    return text.splitlines()


def flink_home() -> Path | None:
    """An installation of Apache Flink: ``FLINK_HOME``, or the one PyFlink (``apache-flink``)
    ships, if this interpreter has it; None when there is none (or no ``java`` to run it)."""
    candidates = [Path(os.environ["FLINK_HOME"])] if os.environ.get("FLINK_HOME") else []
    spec = importlib.util.find_spec("pyflink")
    if spec is not None and spec.origin is not None:
        candidates.append(Path(spec.origin).parent)
    if shutil.which("java") is None:
        return None
    for home in candidates:
        if (home / "bin" / "flink").is_file() and any((home / "lib").glob("flink-dist*.jar")):
            return home
    return None


NO_FLINK = (
    "Apache Flink is not installed (pip install apache-flink, or FLINK_HOME=<a Flink 2.x "
    "distribution or site-packages/pyflink>) or java is missing"
)


def keyed_sum(
    env: StreamExecutionEnvironment, *, records: int = 6_000, rate: float | None = 30_000
) -> None:
    """``NumberSequenceSource -> map (i % 1000, 1) -> keyBy -> reduce -> sink``."""
    env.set_parallelism(2)
    env.enable_checkpointing(30)
    env.configure(
        {
            "execution.checkpointing.timeout": "60 ms",
            "execution.checkpointing.tolerable-failed-checkpoints": 100,
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": 3,
            "restart-strategy.fixed-delay.delay": "10 ms",
            "ckptsim.buffer.records": 100,
            "web.checkpoints.history": 100,
        }
    )
    (
        env.from_generator(lambda i: i, records, rate=rate, name="seq")
        .map(lambda i: (i % 1000, 1), name="Map")
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]), name="Reduce")
        .collect("sums")
    )


def run_simulated(registry: JobRegistry, *, seed: int = 3, **options: Any) -> JobResult:
    env = StreamExecutionEnvironment()
    keyed_sum(env)
    return env.execute("keyed sum", runtime="simulation", seed=seed, observer=registry, **options)


@pytest.fixture(scope="session")
def finished() -> tuple[JobRegistry, rest.JobView, JobResult]:
    """A finished simulated job that failed once (restored) and had an expired checkpoint."""
    registry = JobRegistry()
    result = run_simulated(
        registry,
        faults=[
            FailTask(task="reduce-3#1", at_record=2_000),
            DropAcknowledgement(task="reduce-3#0", checkpoint_id=2),
        ],
    )
    assert result.succeeded, result.failure
    (view,) = registry.finished_views()
    return registry, view, result


@pytest.fixture(scope="session")
def archive_bodies(finished: tuple[JobRegistry, rest.JobView, JobResult]) -> dict[str, Any]:
    return dict(rest.archive(finished[1]))


@pytest.fixture
def server(finished: tuple[JobRegistry, rest.JobView, JobResult]) -> Iterator[WebServer]:
    with WebServer(finished[0], host="localhost", port=0) as running:
        yield running


@pytest.fixture
def live() -> Iterator[tuple[Any, WebServer]]:
    """A live keyed sum on threads (``test_http.Live``), held open by its rate-limited source,
    and a server of it; cancelled at the end if it still runs."""
    yield from _live()


@pytest.fixture
def long_live() -> Iterator[tuple[Any, WebServer]]:
    """``live``, for tests that run Flink's own tools against it: each start of a JVM can take
    a minute on a busy machine, so the job's safety net (its timeout) is far longer."""
    from tests.rest.test_http import BOUND_S  # noqa: PLC0415

    yield from _live(timeout_s=BOUND_S * 30)


def _live(**options: Any) -> Iterator[tuple[Any, WebServer]]:
    from tests.rest.test_http import BOUND_S, Live, http, until  # noqa: PLC0415

    registry = JobRegistry()
    with WebServer(registry, host="localhost", port=0) as server:
        job = Live(registry, **options)
        until(
            lambda: http(server, "GET", f"/jobs/{job.job_id}")[1]["state"] == "RUNNING",
            "RUNNING",
        )
        yield job, server
        if job.thread.is_alive():
            http(server, "PATCH", f"/jobs/{job.job_id}?mode=cancel")
        job.thread.join(BOUND_S)
