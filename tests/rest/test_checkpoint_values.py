"""The checkpoint values Flink's dashboard shows, as Flink 2.3 computes them (issue #25,
item 2), on the deterministic simulation: a checkpoint pending when the job fails over fails
with ``Checkpoint Coordinator is suspending.`` (Flink's capture, ``aligned/
checkpoint-details-12-failed.json``); ``latest.failed`` keeps its details after it left the
history, so the dashboard's Checkpoints tab finds them; an exception names the task's
execution (`` - execution #N``) and carries the user's exception and traceback."""

from __future__ import annotations

from typing import Any

from actors.faults import FailTask
from ckptsim import StreamExecutionEnvironment
from ckptsim._web import JobRegistry
from runtime import rest
from tests.rest.conftest import flink_body, keyed_sum


def _run(*, history: int = 100, faults: list[Any] | None = None, user_error: bool = False) -> Any:
    registry = JobRegistry()
    env = StreamExecutionEnvironment()
    keyed_sum(env)
    env.configure({"web.checkpoints.history": history})
    if user_error:
        env = StreamExecutionEnvironment()
        env.set_parallelism(2)
        env.enable_checkpointing(30)
        env.configure(
            {
                "restart-strategy.type": "fixed-delay",
                "restart-strategy.fixed-delay.attempts": 1,
                "restart-strategy.fixed-delay.delay": "10 ms",
            }
        )

        raised: list[int] = []

        def explode(i: int) -> tuple[int, int]:
            if i == 1_500 and not raised:  # once: the restarted job gets past it
                raised.append(i)
                raise ZeroDivisionError(f"record {i} divided by nothing")
            return (i % 10, 1)

        (
            env.from_generator(lambda i: i, 3_000, rate=30_000, name="seq")
            .map(explode, name="Explode")
            .key_by(lambda r: r[0])
            .reduce(lambda a, b: (a[0], a[1] + b[1]), name="Reduce")
            .collect("sums")
        )
    result = env.execute(
        "values", runtime="simulation", seed=5, observer=registry, faults=faults or []
    )
    (view,) = registry.finished_views()
    return registry, view, result


def _get(registry: JobRegistry, path: str) -> Any:
    return registry.get(path, {})


def test_a_checkpoint_pending_at_a_fail_over_fails_as_the_coordinator_suspends() -> None:
    registry, view, result = _run(faults=[FailTask(task="reduce-3#1", during_checkpoint=3)])
    assert result.succeeded and result.restarts == 1
    base = f"/jobs/{view.job_id}/checkpoints"
    failed = [h for h in _get(registry, base)["history"] if h["status"] == "FAILED"]
    assert [h["id"] for h in failed] == [3]
    flink = flink_body("aligned/checkpoint-details-12-failed.json")
    details = _get(registry, f"{base}/details/3")
    assert details["failure_message"] == flink["failure_message"]
    assert details["failure_message"] == "Checkpoint Coordinator is suspending."
    # the failing task never acknowledged it; Flink counts every subtask
    assert details["num_subtasks"] == 4 and details["num_acknowledged_subtasks"] < 4


def test_latest_failed_keeps_its_details_after_it_left_the_history() -> None:
    registry, view, _ = _run(history=2, faults=[FailTask(task="reduce-3#1", during_checkpoint=2)])
    base = f"/jobs/{view.job_id}/checkpoints"
    body = _get(registry, base)
    latest = body["latest"]["failed"]
    assert latest is not None and latest["id"] == 2
    assert 2 not in [h["id"] for h in body["history"]]
    assert _get(registry, f"{base}/details/2")["status"] == "FAILED"
    for vertex in view.vertices:
        assert _get(registry, f"{base}/details/2/subtasks/{vertex.id}")["id"] == 2
    # the archive has them (the HistoryServer's dashboard asks too)
    assert f"{base}/details/2" in dict(rest.archive(view))


def test_an_exception_names_the_execution_and_carries_the_users_traceback() -> None:
    registry, view, result = _run(user_error=True)
    assert result.succeeded and result.restarts == 1
    (entry,) = _get(registry, f"/jobs/{view.job_id}/exceptions")["exceptionHistory"]["entries"]
    assert entry["exceptionName"] == "ZeroDivisionError"
    assert entry["taskName"].endswith(" - execution #0")
    assert entry["taskName"].startswith("Source: seq -> Explode (")
    trace = entry["stacktrace"]
    assert trace.startswith("Traceback (most recent call last):")
    assert "raise ZeroDivisionError" in trace
    assert trace.rstrip().endswith("ZeroDivisionError: record 1500 divided by nothing")
    assert entry["failureLabels"] == {"operator": "map 'Explode' (map-2)"}


def test_a_finished_source_still_counts_as_flink_counts_it() -> None:
    """FLIP-147: once a source finished, the checkpoints still count its subtask (Flink's
    coordinator reports a finished task acknowledged at the trigger, with no state)."""
    registry = JobRegistry()
    env = StreamExecutionEnvironment()
    env.set_parallelism(1)
    env.enable_checkpointing(20)
    env.configure({"web.checkpoints.history": 100, "ckptsim.buffer.records": 50})
    short = env.from_generator(lambda i: i, 50, rate=1_000, name="short")
    long = env.from_generator(lambda i: i, 3_000, rate=1_000, name="long")
    short.union(long).map(lambda x: x, name="M").collect("out")
    result = env.execute("union", runtime="simulation", seed=3, observer=registry)
    assert result.succeeded
    (view,) = registry.finished_views()
    base = f"/jobs/{view.job_id}/checkpoints"
    history = _get(registry, base)["history"]
    assert {(h["num_subtasks"], h["num_acknowledged_subtasks"]) for h in history} == {(3, 3)}
    latest = history[0]
    source = next(v for v in view.vertices if v.name == "Source: short")
    (row,) = _get(registry, f"{base}/details/{latest['id']}/subtasks/{source.id}")["subtasks"]
    assert (row["className"], row["state_size"]) == ("completed", 0)
    assert row["ack_timestamp"] == latest["trigger_timestamp"]
