"""A live job's metrics while a task is too busy to answer: the REST view and the Prometheus
page show the task's last answered metrics, not none, and a scrape waits one deadline for all
the tasks, not one per busy task (a tester's scrape took 2 s per busy task)."""

from __future__ import annotations

from typing import Any

import pykka
import pytest

from ckptsim import _web
from ckptsim._web import LiveJob
from runtime.checkpoint import TaskId
from runtime.config import Configuration
from runtime.datastream import StreamEnvironment

TASK = TaskId("map", 0)


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
