"""A live job's metrics while a task is too busy to answer: the REST view and the Prometheus
page show the task's last answered metrics, not none, and a scrape waits one deadline for all
the tasks, not one per busy task (a tester's scrape took 2 s per busy task)."""

from __future__ import annotations

import multiprocessing
import threading
from typing import Any

import pykka
import pytest

from ckptsim import _web
from ckptsim._prometheus import PrometheusReporter
from ckptsim._web import JobRegistry, LiveJob
from runtime.checkpoint import TaskId
from runtime.config import Configuration
from runtime.datastream import StreamEnvironment

TASK = TaskId("map", 0)
#: a safety net only: the tests below wait for events, never for time to pass
BOUND_S = 60.0
RECORDS = 1000
BLOCK_AT = 300
#: fork's events: the map may run in a TaskManager process (``runtime="processes"``)
_context = multiprocessing.get_context("fork")


class _Future:
    def __init__(self, answer: dict[str, Any] | None) -> None:
        self.answer = answer
        self.timeouts: list[float] = []

    def get(self, timeout: float | None = None) -> Any:
        self.timeouts.append(timeout or 0)
        if self.answer is None:
            raise pykka.Timeout("busy")
        return self.answer


class _Task:
    """A task actor's ref: ``progress()`` answers the next of ``answers`` (None: busy)."""

    def __init__(self, answers: list[dict[str, Any] | None]) -> None:
        self.answers = answers
        self.futures: list[_Future] = []

    def proxy(self) -> _Task:
        return self

    def progress(self) -> _Future:
        future = _Future(self.answers.pop(0))
        self.futures.append(future)
        return future


class _Master:
    def __init__(self, tasks: dict[TaskId, Any]) -> None:
        self.tasks = tasks

    def ask(self, message: Any, block: bool = True, timeout: float | None = None) -> Any:
        return {
            "task_metrics": {t: {"numRecordsIn": -1} for t in self.tasks},
            "tasks": self.tasks,
            "coordinator": None,
            "status": "RUNNING",
            "now": 0,
            "epoch_ms": 0,
            "status_history": [("RUNNING", 0)],
            "task_states": {t: "RUNNING" for t in self.tasks},
            "attempt": 0,
            "failures": [],
            "failure_causes": [],
        }


def _live(tasks: dict[TaskId, Any]) -> LiveJob:
    env = StreamEnvironment()
    env.from_collection([1]).map(lambda x: x).uid("map").collect("out")
    return LiveJob(
        job=env.build_job_graph("job"),
        conf=Configuration(),
        job_id="0" * 32,
        master=_Master(tasks),  # type: ignore[arg-type]
        runtime=None,
    )


def test_a_busy_task_shows_its_last_answered_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[dict[Any, Any]] = []
    job_view = _web.rest.job_view

    def capture(*args: Any, **kwargs: Any) -> Any:
        shown.append(dict(kwargs["task_metrics"]))
        return job_view(*args, **kwargs)

    monkeypatch.setattr(_web.rest, "job_view", capture)
    task = _Task([None, {"io": {"numRecordsIn": 7}}, None])
    live = _live({TASK: task})
    for _ in range(3):  # busy, answers, busy again
        assert live._gather() is not None
    assert [m[TASK]["numRecordsIn"] for m in shown] == [-1, 7, 7], (
        "before any answer: what the JobMaster knows; then the last answer, not the JobMaster's"
    )


def test_one_deadline_bounds_the_asks_of_all_busy_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each busy task's ask gets what is left of one deadline (a fake clock: no waiting)."""
    now = [100.0]
    monkeypatch.setattr(_web.time, "monotonic", lambda: now[0])

    class _Slow(_Future):
        def get(self, timeout: float | None = None) -> Any:
            self.timeouts.append(timeout or 0)
            now[0] += timeout or 0  # it waited that long, then timed out
            raise pykka.Timeout("busy")

    class _SlowTask(_Task):
        def progress(self) -> _Future:
            self.futures.append(_Slow(None))
            return self.futures[-1]

    tasks = {TaskId("map", i): _SlowTask([]) for i in range(3)}
    live = _live(dict(tasks))
    live._gather()
    waited = [f.timeouts[0] for t in tasks.values() for f in t.futures]
    assert waited[0] == pytest.approx(_web.ASK_TIMEOUT_S)
    assert all(w <= 0.001 for w in waited[1:]), waited


# --- a task busy in a long buffer: its counts as of now, not read through its mailbox --------


def _blocking_job(runtime: str) -> tuple[JobRegistry, threading.Thread, str, Any]:
    """``1000 numbers -> map (blocks at the 301st record) -> key_by -> reduce``, started on
    ``runtime``; the map's task sits in the middle of a buffer until ``release`` is set."""
    from ckptsim import StreamExecutionEnvironment  # noqa: PLC0415

    reached = _context.Event()
    release = _context.Event()

    def slow(x: int) -> int:
        if x == BLOCK_AT:
            reached.set()
            release.wait(BOUND_S)
        return x

    registry = JobRegistry()
    env = StreamExecutionEnvironment()
    env.set_parallelism(1)
    (
        env.from_collection(list(range(RECORDS)), name="numbers")
        .rebalance()
        .map(slow, name="Slow")
        .key_by(lambda x: x % 2)
        .reduce(lambda a, b: a + b, name="Reduce")
        .collect("out")
    )
    thread = threading.Thread(
        target=lambda: env.execute("busy map", runtime=runtime, observer=registry, timeout=BOUND_S),
        daemon=True,
    )
    thread.start()
    assert reached.wait(BOUND_S), "the map never reached its record"
    job_id = next(iter(registry.live))
    return registry, thread, job_id, release


def _slow_metrics(registry: JobRegistry, job_id: str) -> dict[str, str]:
    view = registry.live[job_id].view()
    vertex = next(v for v in view.vertices if "Slow" in v.name)
    return _web.rest.vertex_metrics(view, vertex)


@pytest.mark.parametrize("runtime", ["threaded", "processes"])
def test_a_task_in_a_long_buffer_shows_its_counts_as_of_now(runtime: str) -> None:
    """The map blocks at the 301st record of its input (a slow user function in one long
    buffer): its task does not take mail, yet the REST view has its counts as of that record,
    read off its counters (Flink counts per record): 301 records taken, 300 emitted; the
    source's 1000 went out. Once released, the counts are the whole input's."""
    registry, thread, job_id, release = _blocking_job(runtime)
    try:
        values = _slow_metrics(registry, job_id)
        assert values["0.numRecordsIn"] == str(BLOCK_AT + 1), values
        assert values["0.Slow.numRecordsIn"] == str(BLOCK_AT + 1)
        assert values["0.Slow.numRecordsOut"] == str(BLOCK_AT)
        assert values["0.numRecordsOut"] == str(BLOCK_AT)
        assert values["0.busyTimeMsPerSecond"] != "NaN"
    finally:
        release.set()
        thread.join(BOUND_S)
    assert not thread.is_alive()
    values = _slow_metrics(registry, job_id)
    assert values["0.numRecordsIn"] == values["0.numRecordsOut"] == str(RECORDS)


def test_prometheus_shows_a_busy_tasks_counts() -> None:
    registry, thread, _job_id, release = _blocking_job("threaded")
    reporter = PrometheusReporter(registry, "0", "localhost")
    try:
        from tests.rest.test_metrics import scrape  # noqa: PLC0415

        samples = scrape(reporter)["flink_taskmanager_job_task_operator_numRecordsIn"]
        slow = [v for labels, v in samples if labels["operator_name"] == "Slow"]
        assert slow == [BLOCK_AT + 1]
    finally:
        reporter.stop()
        release.set()
        thread.join(BOUND_S)
