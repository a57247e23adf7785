"""ckptsim's REST bodies against the bodies a real Flink 2.3.0 returned for the same kind of
job (``tests/rest/flink``): the same keys, and values of the same JSON types, all the way
down. Where ckptsim must differ, ``DIFFERENCES`` says so (and the README)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ckptsim import StreamExecutionEnvironment
from ckptsim._web import JobRegistry
from runtime import rest
from runtime.checkpoint import CheckpointMetrics, SnapshotType, TaskId, TaskStateSnapshot
from runtime.config import CheckpointConfig
from runtime.job import JobResult
from runtime.stats import CheckpointStatsTracker
from tests.rest.conftest import flink_body, keyed_sum

HEX32 = re.compile(r"^[0-9a-f]{32}$")
STATUS_NAMES = set(rest.JOB_STATUSES)

Finished = tuple[JobRegistry, rest.JobView, JobResult]


def _type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return type(value).__name__


def _pick(reference: list[Any], ours: Any) -> Any:
    """The reference element to compare a list element with: one of the same className or
    status where the list mixes kinds (a checkpoint history), or with the same keys (a
    plan's source node has no inputs), else the first."""
    if isinstance(ours, dict) and "className" in ours:
        same = [
            r for r in reference if isinstance(r, dict) and r.get("className") == ours["className"]
        ]
        # None: Flink's capture has no example of this kind (nothing to compare with)
        return same[0] if same else None
    if isinstance(ours, dict):
        for r in reference:
            if isinstance(r, dict) and set(r) == set(ours):
                return r
    return reference[0]


def differences(reference: Any, ours: Any, path: str = "") -> list[str]:
    """Where ``ours`` has other keys or other JSON types than ``reference``. A ``null`` in
    the reference matches anything (Flink had no value there at that moment); maps keyed by
    vertex ids (32 hex digits) are compared value by value against any of the reference's."""
    if reference is None:
        return []
    if _type(reference) != _type(ours):
        return [
            f"{path or '/'}: Flink has {_type(reference)} {reference!r:.60}, ckptsim {_type(ours)} {ours!r:.60}"
        ]
    if isinstance(reference, dict):
        if reference and set(reference) | set(ours) <= STATUS_NAMES and set(reference) != set(ours):
            template = next(iter(reference.values()))  # a count by job status
            return [d for k, v in ours.items() for d in differences(template, v, f"{path}/{k}")]
        if reference and all(HEX32.match(k) for k in reference):
            if not all(HEX32.match(k) for k in ours):
                return [f"{path}: keys are not vertex ids: {sorted(ours)}"]
            template = next(iter(reference.values()))
            return [d for k, v in ours.items() for d in differences(template, v, f"{path}/{k}")]
        found = []
        if set(reference) != set(ours):
            missing, extra = set(reference) - set(ours), set(ours) - set(reference)
            found.append(f"{path or '/'}: missing {sorted(missing)}, extra {sorted(extra)}")
        for key in set(reference) & set(ours):
            found += differences(reference[key], ours[key], f"{path}/{key}")
        return found
    if isinstance(reference, list) and reference and ours:
        return [
            d
            for n, v in enumerate(ours)
            for d in differences(_pick(reference, v), v, f"{path}[{n}]")
        ]
    return []


def assert_like_flink(reference: Any, ours: Any) -> None:
    found = differences(reference, ours)
    assert not found, "\n".join(found)


def test_differences_finds_a_missing_key_and_a_wrong_type() -> None:
    """The comparison itself can fail."""
    assert differences({"a": 1, "b": 2.0}, {"a": 1}) == ["/: missing ['b'], extra []"]
    assert differences({"a": {"x": 1}}, {"a": {"x": 1.0}})
    assert differences({"p50": "NaN"}, {"p50": 0.0})
    assert differences({"v": True}, {"v": 1})
    assert not differences({"latest": None}, {"latest": {"id": 1}})


# --- a finished job (the archive's bodies) --------------------------------------------------------


def ours(finished: Finished, suffix: str = "") -> Any:
    registry, view, _ = finished
    return registry.get(f"/jobs/{view.job_id}{suffix}", {})


def by_status(finished: Finished, status: str) -> int:
    history = ours(finished, "/checkpoints")["history"]
    return next(h["id"] for h in history if h["status"] == status)


@pytest.mark.parametrize(
    "reference",
    [
        "aligned/job.json",
        "unaligned/job-at-cancel.json",
        "extra/job.json",
        "extra/job-after-stop.json",
    ],
)
def test_job_details(finished: Finished, reference: str) -> None:
    assert_like_flink(flink_body(reference), ours(finished))


@pytest.mark.parametrize(
    "reference",
    [
        "aligned/checkpoints.json",
        "aligned/checkpoints-with-failed.json",
        "unaligned/checkpoints-later.json",
    ],
)
def test_checkpoint_statistics(finished: Finished, reference: str) -> None:
    assert_like_flink(flink_body(reference), ours(finished, "/checkpoints"))


def test_checkpoint_statistics_after_a_restore(finished: Finished) -> None:
    body = ours(finished, "/checkpoints")
    restored = body["latest"]["restored"]
    assert set(restored) == {"id", "restore_timestamp", "is_savepoint", "external_path"}
    assert isinstance(restored["restore_timestamp"], int) and restored["restore_timestamp"] > 0


@pytest.mark.parametrize(
    "reference", ["aligned/checkpoints-config.json", "unaligned/checkpoints-config.json"]
)
def test_checkpoint_config(finished: Finished, reference: str) -> None:
    body = ours(finished, "/checkpoints/config")
    assert_like_flink(flink_body(reference), body)
    assert body["mode"] == "exactly_once" and body["interval"] == 30 and body["timeout"] == 60


def test_checkpoint_config_names_the_storage_the_job_checkpoints_to(finished: Finished) -> None:
    """``checkpoint_storage`` is Flink's class name of the storage the job was given:
    ``FileSystemCheckpointStorage`` by default (a run always has a checkpoint folder), and
    ``JobManagerCheckpointStorage`` for ``execution.checkpointing.storage: jobmanager``."""
    assert ours(finished, "/checkpoints/config")["checkpoint_storage"] == (
        "FileSystemCheckpointStorage"
    )
    registry = JobRegistry()
    env = StreamExecutionEnvironment()
    keyed_sum(env)
    env.configure({"execution.checkpointing.storage": "jobmanager"})
    result = env.execute("in memory", runtime="simulation", seed=3, observer=registry)
    assert result.succeeded, result.failure
    (view,) = registry.finished_views()
    body: Any = registry.get(f"/jobs/{view.job_id}/checkpoints/config", {})
    assert body["checkpoint_storage"] == "JobManagerCheckpointStorage"


def test_completed_checkpoint_details_and_subtasks(finished: Finished) -> None:
    cid = by_status(finished, "COMPLETED")
    details = ours(finished, f"/checkpoints/details/{cid}")
    assert_like_flink(flink_body("aligned/checkpoint-details-5.json"), details)
    for vertex in details["tasks"]:
        assert_like_flink(
            flink_body(
                "aligned/checkpoint-details-5-subtasks-90bea66de1c231edf33913ecd54406c1.json"
            ),
            ours(finished, f"/checkpoints/details/{cid}/subtasks/{vertex}"),
        )


def test_failed_checkpoint_details_and_subtasks(finished: Finished) -> None:
    """Checkpoint 2 expired with one subtask's acknowledgement lost: Flink's shape, its
    end-to-end duration the failure time minus the trigger time, the message bare."""
    cid = by_status(finished, "FAILED")
    details = ours(finished, f"/checkpoints/details/{cid}")
    assert_like_flink(flink_body("aligned/checkpoint-details-12-failed.json"), details)
    assert (
        details["end_to_end_duration"]
        == details["failure_timestamp"] - details["trigger_timestamp"]
    )
    assert details["failure_message"] == "Checkpoint expired before completing."
    for vertex in details["tasks"]:
        assert_like_flink(
            flink_body(
                "aligned/checkpoint-details-12-failed-subtasks-cbc357ccb763df2852fee8c4fc7d55f2.json"
            ),
            ours(finished, f"/checkpoints/details/{cid}/subtasks/{vertex}"),
        )


@pytest.mark.parametrize(
    ("path", "reference"),
    [
        ("/plan", "extra/job-plan.json"),
        ("/config", "extra/job-config.json"),
        ("/exceptions", "extra/job-exceptions.json"),
    ],
)
def test_job_plan_config_and_exceptions(finished: Finished, path: str, reference: str) -> None:
    assert_like_flink(flink_body(reference), ours(finished, path))


def test_exceptions_name_the_failing_task(finished: Finished) -> None:
    (entry,) = ours(finished, "/exceptions")["exceptionHistory"]["entries"]
    # Flink's name of a subtask's execution: the chain as Flink names it, the attempt
    assert entry["taskName"] == "Reduce -> Sink: sums (2/2) - execution #0"
    assert entry["taskManagerId"] == finished[1].taskmanager_id
    assert "FailTask" in entry["stacktrace"]
    assert entry["timestamp"] > finished[1].epoch_ms


def test_vertex_details_backpressure_and_dashboard_metrics(finished: Finished) -> None:
    for vertex in finished[1].vertices:
        base = f"/vertices/{vertex.id}"
        assert_like_flink(flink_body("extra/vertex-0.json"), ours(finished, base))
        assert_like_flink(
            flink_body("extra/vertex-0-backpressure.json"), ours(finished, base + "/backpressure")
        )
        assert ours(finished, base + "/watermarks") == []
        registry, view, _ = finished
        metrics = registry.get(
            f"/jobs/{view.job_id}{base}/subtasks/metrics",
            {"get": "backPressuredTimeMsPerSecond,busyTimeMsPerSecond,numRecordsInPerSecond"},
        )
        assert_like_flink(flink_body("extra/vertex-0-subtasks-metrics-get.json"), metrics)


@pytest.mark.parametrize(
    ("path", "reference"),
    [
        ("/jobs/overview", "aligned/jobs-overview.json"),
        ("/overview", "extra/overview.json"),
        ("/config", "extra/config.json"),
        ("/applications/overview", "extra/applications-overview.json"),
    ],
)
def test_cluster_endpoints(finished: Finished, path: str, reference: str) -> None:
    assert_like_flink(flink_body(reference), finished[0].get(path, {}))


def test_values_are_flinks(finished: Finished) -> None:
    """Epoch-millisecond timestamps from the simulation's fixed epoch, 32-hex vertex ids with
    the name beside them, -1 for "not yet", records counted."""
    _, view, result = finished
    job = ours(finished)
    assert job["start-time"] == view.epoch_ms == 1_767_225_600_000  # 2026-01-01, every run
    assert job["end-time"] == view.epoch_ms + result.status_history[-1][1]
    assert [v["name"] for v in job["vertices"]] == ["Source: seq -> Map", "Reduce -> Sink: sums"]
    assert all(HEX32.match(v["id"]) for v in job["vertices"])
    source, reduce = job["vertices"]
    # the metrics of the tasks' last attempt (restored from a checkpoint), as in Flink
    assert 0 < reduce["metrics"]["read-records"] <= source["metrics"]["write-records"] < 6_000
    assert reduce["metrics"]["read-bytes"] > 0 and source["metrics"]["write-bytes"] > 0
    history = ours(finished, "/checkpoints")["history"]
    assert all(h["trigger_timestamp"] > view.epoch_ms for h in history)
    path = next(h["external_path"] for h in history if h["status"] == "COMPLETED")
    assert path.startswith("file:/")


def test_vertex_ids_are_stable_and_follow_the_graph() -> None:
    def ids() -> list[str]:
        env = StreamExecutionEnvironment()
        keyed_sum(env)
        return list(rest.vertex_ids(env.build_job_graph("a")).values())

    first, second = ids(), ids()
    assert first == second and len(set(first)) == 2
    env = StreamExecutionEnvironment()
    env.from_collection([1]).map(lambda x: x, name="Other").collect("out")
    assert not set(rest.vertex_ids(env.build_job_graph("b")).values()) & set(first)


# --- an in-progress checkpoint (the live view of the tracker) -------------------------------------


def in_progress_view() -> rest.JobView:
    """Checkpoint 6 pending with the source's two acknowledgements (as in Flink's capture)."""
    env = StreamExecutionEnvironment()
    keyed_sum(env)
    job = env.build_job_graph("keyed sum")
    tracker = CheckpointStatsTracker()
    tracker.report_pending(5, 1000, SnapshotType.CHECKPOINT, {"source-1": 2, "reduce-3": 2})
    for task in ("source-1", "reduce-3"):
        for i in range(2):
            tracker.report_subtask(
                5, TaskId(task, i), 1100, TaskStateSnapshot(handles=()), CheckpointMetrics()
            )
    tracker.report_completed(5, "/tmp/chk-5")
    tracker.report_pending(6, 2000, SnapshotType.CHECKPOINT, {"source-1": 2, "reduce-3": 2})
    for i in range(2):
        tracker.report_subtask(6, TaskId("source-1", i), 2016, TaskStateSnapshot(handles=()), None)
    details = {}
    for entry in tracker.history:
        body = tracker.details_json(entry.checkpoint_id)
        assert body is not None
        body["subtasks"] = {v: entry.subtasks_json(v) for v in entry.num_subtasks}
        details[entry.checkpoint_id] = body
    return rest.job_view(
        job,
        CheckpointConfig(interval=200),
        job_id="ab" * 16,
        status="RUNNING",
        now=2100,
        epoch_ms=1_700_000_000_000,
        status_history=[("CREATED", 0), ("RUNNING", 5)],
        task_states={f"{v}#{i}": "RUNNING" for v in ("source-1", "reduce-3") for i in range(2)},
        task_metrics={},
        attempt=0,
        checkpoints=tracker.to_json(),
        details=details,
    )


def test_in_progress_checkpoint_bodies() -> None:
    view = in_progress_view()
    views = {view.job_id: view}

    def get(path: str) -> Any:
        routed = rest.route_job(views, f"/jobs/{view.job_id}{path}", {})
        assert routed is not None
        return routed[1]

    details = get("/checkpoints/details/6")
    assert_like_flink(flink_body("aligned/checkpoint-details-6-in_progress.json"), details)
    reduce = view.vertex_by_key("reduce-3")
    assert reduce is not None
    assert details["tasks"][reduce.id]["latest_ack_timestamp"] == -1
    assert details["tasks"][reduce.id]["end_to_end_duration"] == -1
    assert details["end_to_end_duration"] == 16
    pending = get(f"/checkpoints/details/6/subtasks/{reduce.id}")
    assert_like_flink(
        flink_body(
            "unaligned/checkpoint-details-7-in_progress-subtasks-90bea66de1c231edf33913ecd54406c1.json"
        ),
        pending,
    )
    assert pending["subtasks"] == [
        {"className": "pending", "index": i, "status": "pending_or_failed"} for i in range(2)
    ]
    assert_like_flink(flink_body("aligned/checkpoints.json"), get("/checkpoints"))
    assert_like_flink(flink_body("aligned/job.json"), get(""))
    assert get("")["end-time"] == -1


# --- the archive against Flink's own ----------------------------------------------------------------

#: paths of Flink's job archive that ckptsim does not write: task-manager and accumulator
#: views (one process, no accumulators), per-attempt subtask pages and rescales
#: what Flink 2.3 archives and ckptsim does not: the error bodies of the rescale paths of a job
#: without the adaptive scheduler (its dashboard asks for them only with it)
NOT_ARCHIVED = {
    "/rescales/config",
    "/rescales/overview",
    "/rescales/summary",
    "/rescales/history",
}
#: what ckptsim archives besides: every other path Flink's dashboard asks for a finished job
#: (Flink's HistoryServer answers them 404), and the application's paths (Flink writes them
#: into the application's summary beside the job's archive)
ALSO_ARCHIVED = {
    "/vertices/*/backpressure",
    "/vertices/*/accumulators",
    "/vertices/*/subtasks/accumulators",
    "/vertices/*/subtasks/*",
    "/vertices/*/watermarks",
    "/vertices/*/metrics",
    "/vertices/*/subtasks/metrics",
    "/applications/overview",
    "/applications/*",
    "/applications/*/exceptions",
    "/applications/*/jobmanager/config",
}


def _generic(path: str, job_id: str) -> str:
    path = path.replace(f"/jobs/{job_id}", "")
    path = re.sub(r"/[0-9a-f]{32}", "/*", path)
    path = re.sub(r"/details/\d+", "/details/*", path)
    return re.sub(r"/(subtasks|attempts)/\d+", r"/\1/*", path)


def test_the_archive_has_flinks_paths_and_bodies(finished: Finished) -> None:
    flink = rest.read_archive(flink_body("archive/flink-2.3.0-job-archive"))
    flink_id = next(p for p in flink if p != "/jobs/overview").split("/")[2]
    view = finished[1]
    ckptsim = dict(rest.archive(view))
    theirs = {_generic(p, flink_id) for p in flink}
    mine = {_generic(p, view.job_id) for p in ckptsim}
    assert theirs - mine == NOT_ARCHIVED
    assert mine - theirs == ALSO_ARCHIVED
    for path, body in ckptsim.items():
        generic = _generic(path, view.job_id)
        references = [b for p, b in flink.items() if _generic(p, flink_id) == generic]
        if references:
            found = differences(_pick(references, body), body, path)
            assert not found, "\n".join(found)
