"""When user code fails in a running job: the failure names the operator as the user knows it
and the task it ran in, and carries the user's traceback; a bug of ckptsim itself is not
mistaken for one. On the deterministic simulation (no threads, no wall clock)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from actors.job_master import JobMaster
from actors.protocol import TaskStateUpdate
from ckptsim import StreamExecutionEnvironment
from runtime.rest import read_archive
from runtime.status import JobStatus
from tests.conftest import protocol_events

NO_RESTART = {"restart-strategy.type": "disable"}


def run(env: StreamExecutionEnvironment) -> tuple[Any, list[Any]]:
    env.configure(NO_RESTART)
    with protocol_events() as logs:
        result = env.execute("user failure", runtime="simulation", seed=3, timeout=60)
    return result, [e for e in logs if e["event"] == "task_failed"]


def fails_on_seven(record: int) -> int:
    if record == 7:
        raise ValueError("seven is not allowed")
    return record


def test_a_failing_map_names_the_operator_and_carries_the_users_traceback() -> None:
    env = StreamExecutionEnvironment(parallelism=1)
    env.from_collection(list(range(20))).map(fails_on_seven, name="Check").collect("out")
    result, failed = run(env)
    assert result.status is JobStatus.FAILED
    assert (
        "task source-1#0 failed: map 'Check' (map-2) raised ValueError: seven is not allowed"
        in (result.failure or "")
    )
    (event,) = failed
    assert event["operator"] == "map 'Check' (map-2)"
    assert 'raise ValueError("seven is not allowed")' in event["traceback"]
    assert "runtime/task" not in event["traceback"]


def test_a_failing_key_selector_is_blamed_on_the_key_by_not_on_the_task_it_ran_in() -> None:
    env = StreamExecutionEnvironment(parallelism=2)
    (
        env.from_collection([{"k": 1}, {"x": 2}])
        .key_by(lambda r: r["k"])
        .reduce(lambda a, b: a, name="Sum")
        .collect("out")
    )
    result, _ = run(env)
    assert "key_by selector of reduce-2" in (result.failure or "")
    assert "task source-1#" in (result.failure or ""), "it ran in the source's task"
    assert "KeyError: 'k'" in (result.failure or "")


def test_flat_map_returning_none_fails_the_job_naming_the_operator() -> None:
    env = StreamExecutionEnvironment(parallelism=1)

    def forgets_to_return(line: str) -> Any:
        line.split()  # the result is dropped: the function returns None

    env.from_collection(["a b"]).flat_map(forgets_to_return, name="Split").collect("out")
    result, _ = run(env)
    assert result.status is JobStatus.FAILED
    assert "flat_map 'Split' (flat_map-2)" in (result.failure or "")
    assert "returned None" in (result.failure or "")


class BrokenSink:
    """A sink connector of the user's (``sink_to``) whose writes fail."""

    def __init__(self, **_: Any) -> None:
        pass

    def write(self, records: Any) -> None:
        raise OSError("the disk is full")

    def pre_commit(self, checkpoint_id: int) -> None:
        pass

    def commit(self, checkpoint_id: int) -> None:
        pass

    def restore(self, states: list[Any]) -> None:
        pass

    def close(self, *, finished: bool) -> None:
        pass


def test_a_failing_sink_connector_fails_the_task_naming_the_sink() -> None:
    env = StreamExecutionEnvironment(parallelism=1)
    env.from_collection([1, 2, 3]).sink_to(BrokenSink, name="disk")
    result, failed = run(env)
    assert result.status is JobStatus.FAILED
    assert "task source-1#0 failed: sink 'disk' (sink-disk) raised OSError: the disk is full" in (
        result.failure or ""
    )
    (event,) = failed
    assert "in write" in event["traceback"]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_job_without_failures_reports_none(parallelism: int) -> None:
    env = StreamExecutionEnvironment(parallelism=parallelism)
    env.from_collection(list(range(10))).map(lambda r: r + 1).collect("out")
    result, failed = run(env)
    assert result.succeeded and failed == []
    assert sorted(result.collected("out")) == list(range(1, 11))


def test_the_jobmaster_hears_the_failure_with_operator_and_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    heard: list[TaskStateUpdate] = []
    receive = JobMaster.on_receive

    def spy(self: JobMaster, message: Any) -> Any:
        if isinstance(message, TaskStateUpdate) and message.failure is not None:
            heard.append(message)
        return receive(self, message)

    monkeypatch.setattr(JobMaster, "on_receive", spy)
    env = StreamExecutionEnvironment(parallelism=1)
    env.from_collection(list(range(20))).map(fails_on_seven, name="Check").collect("out")
    run(env)
    (update,) = heard
    assert update.failure is not None
    assert (update.failure.operator, update.failure.task) == ("map 'Check' (map-2)", "source-1#0")
    assert (update.failure.exception, update.failure.message) == (
        "ValueError",
        "seven is not allowed",
    )
    assert "fails_on_seven" in update.failure.traceback


def test_the_result_and_the_rest_exceptions_carry_the_users_traceback_and_operator(
    tmp_path: Path,
) -> None:
    """``JobResult.root_cause`` is the structured failure (operator, task, trimmed traceback);
    ``/jobs/:id/exceptions`` (here from the job's archive) gives the exception's name, the
    user's traceback as the stack trace, the task it ran in and the operator as a failure
    label."""
    env = StreamExecutionEnvironment(parallelism=1)
    env.configure({"jobmanager.archive.fs.dir": str(tmp_path)})
    env.from_collection(list(range(20))).map(fails_on_seven, name="Check").collect("out")
    result, _ = run(env)
    cause = result.root_cause
    assert cause is not None and cause.operator == "map 'Check' (map-2)"
    assert cause.task == "source-1#0" and cause.exception == "ValueError"
    assert cause.traceback.startswith("Traceback (most recent call last):")
    assert 'raise ValueError("seven is not allowed")' in cause.traceback
    (archive,) = tmp_path.glob(f"*/applications/*/jobs/{result.job_id}")
    bodies = read_archive(json.loads(archive.read_text()))
    body = bodies[f"/jobs/{result.job_id}/exceptions"]
    assert isinstance(body, dict)
    (entry,) = body["exceptionHistory"]["entries"]
    assert entry["exceptionName"] == "ValueError"
    assert entry["stacktrace"] == cause.traceback
    assert entry["failureLabels"] == {"operator": "map 'Check' (map-2)"}
    assert entry["taskName"].endswith("(1/1) - execution #0")  # Flink's name (issue #25)


def test_a_successful_job_has_no_root_cause() -> None:
    env = StreamExecutionEnvironment(parallelism=1)
    env.from_collection(list(range(5))).collect("out")
    result, _ = run(env)
    assert result.succeeded and result.root_cause is None and result.failure_causes == []


def test_a_stream_that_reaches_no_sink_is_warned_about() -> None:
    """Flink runs a job whose last operator writes nowhere and says nothing; ckptsim warns,
    naming the operator (its records are computed, then dropped)."""
    env = StreamExecutionEnvironment(parallelism=1)
    source = env.from_collection([1, 2, 3])
    source.map(lambda x: x, name="Dropped")
    source.collect("kept")
    with protocol_events() as logs:
        result = env.execute("no sink", runtime="simulation", seed=1)
    assert result.succeeded
    (warning,) = [e for e in logs if e["event"] == "stream_without_sink"]
    assert warning["operators"] == ["Dropped"] and warning["log_level"] == "warning"
