"""Every endpoint Flink's dashboard calls (issue #25, item 2), against the bodies a real
Flink 2.3.0 returned for them (``flink/tools/live``): the Task Manager and Job Manager pages,
a vertex's task managers, accumulators, subtask times, subtasks and their attempts, metrics,
flame graph; a job's accumulators, job manager configuration and environment, log URLs,
execution result; the application. Same keys, same JSON types; and the values that say how
ckptsim runs a job: one task manager per job (a resource id that is a UUID, as the
MiniCluster's), slots as Flink's slot sharing counts them, freed when the job ends."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from ckptsim._web import ArchivedJob, JobRegistry, WebServer
from runtime import rest
from runtime.job import JobResult
from tests.rest.conftest import FLINK
from tests.rest.test_flink_bodies import assert_like_flink
from tests.rest.test_http import http

Finished = tuple[JobRegistry, rest.JobView, JobResult]
LIVE = FLINK / "tools" / "live"
#: the ids in the captured paths
FLINK_JOB = "8640186809b78ce47a954203737826a3"
FLINK_TM = "6a004c39-aa71-4397-8cd1-4aea5b41c646"
FLINK_SOURCE = "cbc357ccb763df2852fee8c4fc7d55f2"
FLINK_SINK = "90bea66de1c231edf33913ecd54406c1"


def captured(name: str) -> tuple[str, int, Any]:
    """A captured endpoint: its path, Flink's status and body."""
    meta = json.loads((LIVE / f"{name}.meta").read_text(encoding="utf-8"))
    return meta["path"], meta["status"], json.loads((LIVE / f"{name}.json").read_text())


def ours_for(path: str, view: rest.JobView) -> str:
    """The captured path for ckptsim's job: its job, task manager and vertex ids."""
    source, sink = view.vertices[0].id, view.vertices[-1].id
    for theirs, mine in (
        (FLINK_JOB, view.job_id),
        (FLINK_TM, view.taskmanager_id),
        (FLINK_SOURCE, source),
        (FLINK_SINK, sink),
    ):
        path = path.replace(theirs, mine)
    # the captured job's first attempt; ckptsim's job restarted
    return path.replace("/attempts/0", f"/attempts/{view.vertices[0].subtasks[0].attempt}")


def get(registry: JobRegistry, path: str, query: dict[str, str] | None = None) -> Any:
    return registry.get(path, query or {})


def _no_nan(body: Any) -> Any:
    """Flink's busy time of a back-pressured source is the double NaN (``"NaN"``); ckptsim
    always measures it."""
    if isinstance(body, dict):
        return {
            k: 0.0 if v == "NaN" and k == "accumulated-busy-time" else _no_nan(v)
            for k, v in body.items()
        }
    if isinstance(body, list):
        return [_no_nan(v) for v in body]
    return body


BODIES = sorted(
    p.stem
    for p in LIVE.glob("*.json")
    # the job's details and the job list (test_flink_bodies), its watermarks (ckptsim has
    # none), its execution result (captured while it ran: test_execution_result)
    if p.stem
    not in ("job-details", "v1-jobs-overview", "vertex-watermarks", "job-execution-result")
)


def _any_operator(metric: str) -> str:
    """``<subtask>.<operator>.<name>`` -> ``<subtask>.*.<name>``."""
    parts = metric.split(".")
    return ".".join((parts[0], "*", parts[-1])) if len(parts) == 3 else metric


@pytest.mark.parametrize("name", BODIES)
def test_the_dashboards_endpoints_answer_as_flinks(
    server: WebServer, finished: Finished, name: str
) -> None:
    path, flink_status, flink = captured(name)
    status, body = http(server, "GET", ours_for(path, finished[1]))
    assert status == flink_status, (path, body)
    if name.endswith("metrics-get"):  # the same metrics, by the same names
        assert {m["id"] for m in body} == {m["id"] for m in flink}
    if name == "vertex-metrics":  # per subtask, each a metric Flink has
        # (an operator's by its metric: the captured job's operators are not this job's)
        names = {_any_operator(m["id"]) for m in flink}
        assert body and all(_any_operator(m["id"]) in names for m in body), body
        return
    if name.endswith("metrics") or (name.endswith("config") and isinstance(flink, list)):
        assert all(set(m) == set(flink[0]) for m in body), body
        return
    assert_like_flink(_no_nan(flink), body)


def test_one_task_manager_per_job_with_flinks_slots(finished: Finished) -> None:
    """The job's task manager: a UUID as a MiniCluster's resource id, named by every subtask
    and exception; as many slots as the job's largest parallelism (one slot sharing group),
    all free once the job ended; it stays (a session cluster's)."""
    registry, view, _ = finished
    tm = view.taskmanager_id
    assert str(uuid.UUID(tm)) == tm
    overview = get(registry, "/overview", {})
    assert (overview["taskmanagers"], overview["slots-total"], overview["slots-available"]) == (
        1,
        2,
        2,
    )
    (entry,) = get(registry, "/taskmanagers", {})["taskmanagers"]
    assert (entry["id"], entry["slotsNumber"], entry["freeSlots"]) == (tm, 2, 2)
    detail = get(registry, f"/taskmanagers/{tm}", {})
    assert detail["allocatedSlots"] == [] and detail["hardware"]["cpuCores"] >= 1
    base = f"/jobs/{view.job_id}"
    for vertex in view.vertices:
        v = f"{base}/vertices/{vertex.id}"
        assert {s["taskmanager-id"] for s in get(registry, v, {})["subtasks"]} == {tm}
        (row,) = get(registry, f"{v}/taskmanagers", {})["taskmanagers"]
        assert row["taskmanager-id"] == tm
        assert (
            row["metrics"]
            == get(registry, base)["vertices"][view.vertices.index(vertex)]["metrics"]
        )
    (failure,) = get(registry, f"{base}/exceptions", {})["exceptionHistory"]["entries"]
    assert failure["taskManagerId"] == tm


def test_a_running_job_holds_its_slots(live: tuple[Any, WebServer]) -> None:
    job, server = live
    overview = http(server, "GET", "/overview")[1]
    assert (overview["taskmanagers"], overview["slots-total"], overview["slots-available"]) == (
        1,
        2,
        0,
    )
    (entry,) = http(server, "GET", "/taskmanagers")[1]["taskmanagers"]
    assert (entry["freeSlots"], entry["assignedTasks"]) == (0, 4)
    detail = http(server, "GET", f"/taskmanagers/{entry['id']}")[1]
    assert [s["assignedTasks"] for s in detail["allocatedSlots"]] == [2, 2]
    dump = http(server, "GET", f"/taskmanagers/{entry['id']}/thread-dump")[1]
    names = [t["threadName"] for t in dump["threadInfos"]]
    assert "ckptsim-web" in names and all(t["stringifiedThreadInfo"] for t in dump["threadInfos"])
    url = http(server, "GET", f"/jobs/{job.job_id}/jobmanager/log-url")[1]["url"]
    assert url == f"http://localhost:{server.port}/#/job-manager/logs"
    for text in ("/jobmanager/log", "/jobmanager/stdout", f"/taskmanagers/{entry['id']}/log"):
        assert http(server, "GET", text)[0] == 200


def test_subtask_times_and_attempts(finished: Finished) -> None:
    registry, view, _ = finished
    for vertex in view.vertices:
        v = f"/jobs/{view.job_id}/vertices/{vertex.id}"
        times = get(registry, f"{v}/subtasktimes", {})
        for row, subtask in zip(times["subtasks"], vertex.subtasks, strict=True):
            t = row["timestamps"]
            assert 0 < t["CREATED"] <= t["RUNNING"] <= t["FINISHED"]
            attempt = f"{v}/subtasks/{subtask.index}/attempts/{subtask.attempt}"
            assert get(registry, attempt, {}) == get(registry, f"{v}/subtasks/{subtask.index}", {})
            accumulators = get(registry, f"{attempt}/accumulators", {})
            assert re.fullmatch(
                rf"[0-9a-f]{{32}}_{vertex.id}_{subtask.index}_{subtask.attempt}",
                accumulators["id"],
            )
        with pytest.raises(rest.RestError) as error:
            get(registry, f"{v}/subtasks/{vertex.parallelism}", {})
        assert error.value.status == 404 and "Invalid subtask index" in error.value.message
        with pytest.raises(rest.RestError) as error:
            get(registry, f"{v}/subtasks/0/attempts/{vertex.subtasks[0].attempt + 1}", {})
        assert error.value.status == 404


def test_metrics_are_answered_by_name(finished: Finished) -> None:
    registry, view, _ = finished
    vertex = view.vertices[-1]
    v = f"/jobs/{view.job_id}/vertices/{vertex.id}/metrics"
    listed = {m["id"] for m in get(registry, v, {})}
    assert {"0.numRecordsIn", "1.numRecordsIn", "0.busyTimeMsPerSecond"} <= listed
    asked = get(registry, v, {"get": "0.numRecordsIn,1.numRecordsIn,0.nosuch"})
    counts = get(registry, f"/jobs/{view.job_id}/vertices/{vertex.id}", {})["subtasks"]
    assert asked == [
        {"id": f"{i}.numRecordsIn", "value": str(counts[i]["metrics"]["read-records"])}
        for i in range(2)
    ]


def test_the_application_of_a_job(finished: Finished, tmp_path: Path) -> None:
    """Live and from an archive written without the application's paths (as before issue
    #25): one application per job."""
    registry, view, _ = finished
    app = get(registry, f"/applications/{view.job_id}", {})
    assert app["jobs"] == [rest.job_overview_entry(view)]
    bodies = {p: b for p, b in rest.archive(view) if not p.startswith("/applications")}
    archived = JobRegistry([ArchivedJob(bodies, source="old")])
    assert get(archived, f"/applications/{view.job_id}", {})["jobs"] == [
        rest.job_overview_entry(view)
    ]
    assert get(archived, f"/applications/{view.job_id}/exceptions", {}) == {
        "exceptionHistory": {"entries": []}
    }
    overview = get(archived, "/applications/overview", {})
    assert [a["id"] for a in overview["applications"]] == [view.job_id]


def test_execution_result(finished: Finished, live: tuple[Any, WebServer]) -> None:
    registry, view, _ = finished
    result = get(registry, f"/jobs/{view.job_id}/execution-result", {})
    assert result["status"] == {"id": "COMPLETED"}
    assert result["job-execution-result"]["application-status"] == "SUCCEEDED"
    job, server = live
    assert http(server, "GET", f"/jobs/{job.job_id}/execution-result")[1] == {
        "status": {"id": "IN_PROGRESS"}
    }


def test_the_dashboards_cancel_button_is_hidden_and_its_get_does_not_cancel(
    live: tuple[Any, WebServer],
) -> None:
    """Flink's dashboard cancels with ``GET /jobs/:jobid/yarn-cancel``, a GET that acts, which
    any page could make a browser send (docs/rest-security.md): ckptsim tells the dashboard
    it may not cancel (its button is hidden) and refuses the GET."""
    job, server = live
    assert http(server, "GET", "/config")[1]["features"]["web-cancel"] is False
    status, body = http(server, "GET", f"/jobs/{job.job_id}/yarn-cancel")
    assert status == 403 and "ckptsim cancel" in body["errors"][0]
    assert http(server, "GET", f"/jobs/{job.job_id}")[1]["state"] == "RUNNING"
