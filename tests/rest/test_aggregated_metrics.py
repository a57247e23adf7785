"""Flink's two aggregating metrics endpoints above the job: ``GET /jobs/metrics`` (the jobs'
metrics, aggregated over the jobs; ``jobs=`` picks some) and ``GET /taskmanagers/metrics``
(the task managers' metrics, aggregated over the task managers; ``taskmanagers=`` picks
some), answered as Flink's ``AbstractAggregatingMetricsHandler`` answers them, by the same
aggregation as ``/vertices/:id/subtasks/metrics``: without ``get`` the ids, with ``get`` the
aggregations (``agg=`` keeps some), a name no job or task manager has left out, an id of no
job or task manager skipped, a wrong ``agg`` Flink's 400."""

from __future__ import annotations

from typing import Any

import pytest

from actors.faults import FailTask
from ckptsim._web import JobRegistry, WebServer
from runtime import rest
from tests.rest.conftest import run_simulated
from tests.rest.test_http import http

#: a job id no job has, and a task manager id no task manager has
NO_JOB = "0" * 32
NO_TM = "00000000-0000-0000-0000-000000000000"


@pytest.fixture(scope="module")
def two_jobs() -> tuple[JobRegistry, list[rest.JobView]]:
    """Two finished keyed sums in one process: two jobs, two task managers; the second
    failed over once, so their restart counts differ."""
    registry = JobRegistry()
    assert run_simulated(registry, seed=3).succeeded
    failed_over = run_simulated(
        registry, seed=4, faults=[FailTask(task="reduce-3#1", at_record=2_000)]
    )
    assert failed_over.succeeded, failed_over.failure
    views = registry.finished_views()
    assert len(views) == 2 and views[0].job_id != views[1].job_id
    return registry, views


def get(registry: JobRegistry, path: str, **query: str) -> Any:
    return registry.get(path, query)


def test_without_get_the_ids_the_jobs_and_task_managers_have(
    two_jobs: tuple[JobRegistry, list[rest.JobView]],
) -> None:
    registry, views = two_jobs
    jobs = get(registry, "/jobs/metrics")
    assert jobs == [{"id": name} for name in rest.job_metrics(views[0])]
    assert {"id": "numRestarts"} in jobs and {"id": "lastCheckpointExternalPath"} in jobs
    tms = get(registry, "/taskmanagers/metrics")
    assert tms == [{"id": name} for name in rest.process_metrics(views[0].process)]
    # the same ids as one task manager's own endpoint serves
    own = get(registry, f"/taskmanagers/{views[1].taskmanager_id}/metrics")
    assert tms == own


def test_with_get_each_metric_aggregated_over_the_jobs(
    two_jobs: tuple[JobRegistry, list[rest.JobView]],
) -> None:
    registry, views = two_jobs
    restarts = [float(rest.job_metrics(v)["numRestarts"]) for v in views]
    assert restarts[0] != restarts[1]  # the aggregation has two values to tell apart
    (body,) = get(registry, "/jobs/metrics", get="numRestarts")
    avg = sum(restarts) / 2
    assert body == {
        "id": "numRestarts",
        "min": min(restarts),
        "max": max(restarts),
        "avg": avg,
        "sum": sum(restarts),
        "skew": (max(restarts) - avg) / avg * 100,
    }
    # Flink's aggregations are doubles
    assert all(isinstance(body[k], float) for k in rest.AGGREGATIONS)
    # jobs= picks those jobs: one job's aggregate is its value
    (one,) = get(registry, "/jobs/metrics", get="numRestarts", jobs=views[1].job_id)
    assert one["min"] == one["max"] == one["sum"] == restarts[1] and one["skew"] == 0.0


def test_with_get_each_metric_aggregated_over_the_task_managers(
    two_jobs: tuple[JobRegistry, list[rest.JobView]],
) -> None:
    registry, views = two_jobs
    name = "Status.JVM.Memory.Heap.Max"
    values = [float(rest.process_metrics(v.process)[name]) for v in views]
    (body,) = get(registry, "/taskmanagers/metrics", get=name)
    assert (body["id"], body["min"], body["max"], body["sum"]) == (
        name,
        min(values),
        max(values),
        sum(values),
    )
    first = views[0].taskmanager_id
    (one,) = get(registry, "/taskmanagers/metrics", get=name, taskmanagers=first)
    assert one["sum"] == values[0]


def test_agg_keeps_those_aggregations_in_flinks_order(
    two_jobs: tuple[JobRegistry, list[rest.JobView]],
) -> None:
    registry, _ = two_jobs
    (every,) = get(registry, "/jobs/metrics", get="numRestarts")
    (picked,) = get(registry, "/jobs/metrics", get="numRestarts", agg="sum,MAX")
    assert list(picked) == ["id", "max", "sum"]
    assert picked == {"id": "numRestarts", "max": every["max"], "sum": every["sum"]}
    (tm,) = get(registry, "/taskmanagers/metrics", get="Status.JVM.Threads.Count", agg="skew")
    assert set(tm) == {"id", "skew"}


def test_unknown_names_and_ids(two_jobs: tuple[JobRegistry, list[rest.JobView]]) -> None:
    """A name whose value is not a number (the last checkpoint's path) is left out; a name no
    job has empties the whole answer, as Flink's handler answers; an id of no job or task
    manager is skipped (none left: nothing)."""
    registry, views = two_jobs
    asked = get(registry, "/jobs/metrics", get="numRestarts,lastCheckpointExternalPath")
    assert [m["id"] for m in asked] == ["numRestarts"]
    assert get(registry, "/jobs/metrics", get="numRestarts,nosuch") == []
    assert get(registry, "/taskmanagers/metrics", get="nosuch") == []
    (both,) = get(registry, "/jobs/metrics", get="numRestarts")
    (skipped,) = get(
        registry, "/jobs/metrics", get="numRestarts", jobs=f"{NO_JOB},{views[0].job_id.upper()}"
    )
    (alone,) = get(registry, "/jobs/metrics", get="numRestarts", jobs=views[0].job_id)
    assert skipped == alone != both
    assert get(registry, "/jobs/metrics", jobs=NO_JOB) == []
    assert get(registry, "/jobs/metrics", get="numRestarts", jobs=NO_JOB) == []
    assert get(registry, "/taskmanagers/metrics", taskmanagers=NO_TM) == []
    tm = views[1].taskmanager_id
    (one,) = get(
        registry,
        "/taskmanagers/metrics",
        get="Status.JVM.Threads.Count",
        taskmanagers=f"{NO_TM},{tm}",
    )
    assert one["min"] == float(rest.process_metrics(views[1].process)["Status.JVM.Threads.Count"])


@pytest.mark.parametrize(
    ("path", "query", "name", "value"),
    [
        ("/jobs/metrics", {"get": "numRestarts", "agg": "median"}, "agg", "median"),
        ("/jobs/metrics", {"agg": "min,p50"}, "agg", "min,p50"),
        ("/taskmanagers/metrics", {"agg": "count"}, "agg", "count"),
        ("/jobs/metrics", {"jobs": "nojob"}, "jobs", "nojob"),
    ],
)
def test_a_wrong_parameter_is_flinks_400(
    two_jobs: tuple[JobRegistry, list[rest.JobView]],
    path: str,
    query: dict[str, str],
    name: str,
    value: str,
) -> None:
    registry, _ = two_jobs
    with pytest.raises(rest.RestError) as refused:
        registry.get(path, query)
    assert refused.value.status == 400
    assert refused.value.message == (
        "org.apache.flink.runtime.rest.handler.RestHandlerException: Bad request, could not "
        f'parse parameters: Cannot resolve query parameter ({name}) from value "{value}".'
    )


def test_through_the_http_server(two_jobs: tuple[JobRegistry, list[rest.JobView]]) -> None:
    registry, views = two_jobs
    with WebServer(registry, host="localhost", port=0) as server:
        status, body = http(server, "GET", "/jobs/metrics?get=numRestarts&agg=min,max")
        assert status == 200
        assert body == get(registry, "/jobs/metrics", get="numRestarts", agg="min,max")
        assert set(body[0]) == {"id", "min", "max"}
        status, body = http(server, "GET", "/taskmanagers/metrics")
        assert status == 200 and {"id": "Status.JVM.Memory.Heap.Used"} in body
        status, body = http(server, "GET", "/taskmanagers/metrics?get=nosuch")
        assert (status, body) == (200, [])
        status, body = http(server, "GET", "/jobs/metrics?get=numRestarts&agg=median")
        assert status == 400 and "Cannot resolve query parameter (agg)" in body["errors"][0]
        # a task manager of its own is still found (not taken for one called "metrics")
        status, _ = http(server, "GET", f"/taskmanagers/{views[0].taskmanager_id}/metrics")
        assert status == 200
