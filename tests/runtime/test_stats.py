"""Checkpoint statistics: counts, summary, latest, history and the REST JSON shape.

Reference: flink-checkpointing.md §1.7 (tracker) and §3.1-3.3 (REST field names and nesting).
"""

from __future__ import annotations

import pytest

from runtime.checkpoint import (
    CheckpointMetrics,
    SnapshotType,
    StateHandle,
    TaskId,
    TaskStateSnapshot,
)
from runtime.stats import (
    DEFAULT_HISTORY_SIZE,
    CheckpointStatsTracker,
    StatsSummary,
    _percentile,
)

SUMMARY_KEYS = {"min", "max", "avg", "p50", "p90", "p95", "p99", "p999"}
TASK_KEYS = {
    "id",
    "status",
    "latest_ack_timestamp",
    "checkpointed_size",
    "state_size",
    "end_to_end_duration",
    "alignment_buffered",
    "processed_data",
    "persisted_data",
    "num_subtasks",
    "num_acknowledged_subtasks",
}
CHECKPOINT_KEYS = {
    "className",
    "id",
    "status",
    "is_savepoint",
    "savepointFormat",
    "trigger_timestamp",
    "latest_ack_timestamp",
    "checkpointed_size",
    "state_size",
    "end_to_end_duration",
    "alignment_buffered",
    "processed_data",
    "persisted_data",
    "num_subtasks",
    "num_acknowledged_subtasks",
    "checkpoint_type",
    "tasks",
}


def state(size: int, checkpointed: int | None = None) -> TaskStateSnapshot:
    return TaskStateSnapshot(
        handles=(StateHandle(key="k", size=size),), checkpointed_size=checkpointed
    )


def pending(
    tracker: CheckpointStatsTracker,
    checkpoint_id: int,
    *,
    trigger: int = 1000,
    snapshot_type: SnapshotType = SnapshotType.CHECKPOINT,
    subtasks: dict[str, int] | None = None,
) -> None:
    tracker.report_pending(checkpoint_id, trigger, snapshot_type, subtasks or {"map": 1})


def ack(
    tracker: CheckpointStatsTracker,
    checkpoint_id: int,
    at: int,
    *,
    vertex: str = "map",
    subtask: int = 0,
    size: int = 0,
    metrics: CheckpointMetrics | None = None,
) -> None:
    tracker.report_subtask(checkpoint_id, TaskId(vertex, subtask), at, state(size), metrics)


def complete(
    tracker: CheckpointStatsTracker,
    checkpoint_id: int,
    *,
    trigger: int = 1000,
    ack_at: int = 1100,
    size: int = 0,
    snapshot_type: SnapshotType = SnapshotType.CHECKPOINT,
    metrics: CheckpointMetrics | None = None,
) -> None:
    pending(tracker, checkpoint_id, trigger=trigger, snapshot_type=snapshot_type)
    ack(tracker, checkpoint_id, ack_at, size=size, metrics=metrics)
    tracker.report_completed(checkpoint_id, f"/cp/chk-{checkpoint_id}")


def assert_counts_add_up(tracker: CheckpointStatsTracker) -> None:
    counts = tracker.to_json()["counts"]
    assert counts["total"] == counts["in_progress"] + counts["completed"] + counts["failed"]


# --- percentiles (Commons Math legacy estimation) ----------------------------------------------


def test_percentile_interpolates_between_neighbours() -> None:
    # n = 4, p50: pos = 50 * 5 / 100 = 2.5 -> 20 + 0.5 * (30 - 20)
    assert _percentile([10, 20, 30, 40], 50.0) == pytest.approx(25.0)


def test_percentile_at_whole_position_is_that_element() -> None:
    # n = 3, p50: pos = 2 -> second element
    assert _percentile([1, 2, 9], 50.0) == pytest.approx(2.0)


def test_percentile_position_at_or_past_n_is_the_maximum() -> None:
    # n = 4, p90: pos = 4.5 >= 4
    assert _percentile([10, 20, 30, 40], 90.0) == pytest.approx(40.0)


def test_percentile_position_below_one_is_the_minimum() -> None:
    # n = 4, p10: pos = 0.5 < 1
    assert _percentile([10, 20, 30, 40], 10.0) == pytest.approx(10.0)


def test_percentile_of_one_value_is_that_value() -> None:
    assert _percentile([7], 99.9) == pytest.approx(7.0)


def test_summary_percentiles_over_twenty_values() -> None:
    summary = StatsSummary.of(range(20, 0, -1)).to_json()  # 1..20, added unsorted
    # pos(p50) = 10.5, pos(p90) = 18.9, pos(p95) = 19.95, pos(p99) = 20.79 >= 20
    assert summary["p50"] == pytest.approx(10.5)
    assert summary["p90"] == pytest.approx(18.9)
    assert summary["p95"] == pytest.approx(19.95)
    assert summary["p99"] == pytest.approx(20.0)
    assert summary["p999"] == pytest.approx(20.0)


def test_summary_min_max_avg() -> None:
    summary = StatsSummary.of([100, 200, 400]).to_json()
    assert set(summary) == SUMMARY_KEYS
    assert (summary["min"], summary["max"], summary["avg"]) == (100, 400, 233)


def test_empty_summary_is_all_zero() -> None:
    summary = StatsSummary().to_json()
    assert (summary["min"], summary["max"], summary["avg"]) == (0, 0, 0)


# --- counts -------------------------------------------------------------------------------------


def test_new_tracker_counts_are_zero_and_latest_is_empty() -> None:
    out = CheckpointStatsTracker().to_json()
    assert out["counts"] == {
        "restored": 0,
        "total": 0,
        "in_progress": 0,
        "completed": 0,
        "failed": 0,
    }
    assert out["latest"] == {"completed": None, "savepoint": None, "failed": None, "restored": None}
    assert out["history"] == []


def test_counts_follow_pending_completed_failed() -> None:
    tracker = CheckpointStatsTracker()
    pending(tracker, 1)
    pending(tracker, 2)
    pending(tracker, 3)
    assert tracker.to_json()["counts"] == {
        "restored": 0,
        "total": 3,
        "in_progress": 3,
        "completed": 0,
        "failed": 0,
    }
    ack(tracker, 1, 1100)
    tracker.report_completed(1, None)
    tracker.report_failed(2, 1200, "expired")
    counts = tracker.to_json()["counts"]
    assert (counts["in_progress"], counts["completed"], counts["failed"]) == (1, 1, 1)
    assert counts["total"] == 3
    assert_counts_add_up(tracker)


def test_failure_without_pending_checkpoint_counts_failed_and_total_only() -> None:
    tracker = CheckpointStatsTracker()
    pending(tracker, 1)
    tracker.report_failed_without_in_progress()
    counts = tracker.to_json()["counts"]
    assert (counts["total"], counts["in_progress"], counts["failed"]) == (2, 1, 1)
    assert_counts_add_up(tracker)


def test_reports_for_finished_or_unknown_checkpoints_change_nothing() -> None:
    tracker = CheckpointStatsTracker()
    complete(tracker, 1)
    before = tracker.to_json()
    tracker.report_completed(1, None)
    tracker.report_failed(1, 5000, "late")
    tracker.report_failed(99, 5000, "unknown")
    tracker.report_completed(99, None)
    ack(tracker, 1, 9000, subtask=0, size=123)
    assert tracker.to_json() == before


def test_restore_counts_and_is_latest_restored() -> None:
    tracker = CheckpointStatsTracker()
    tracker.report_restored(4, 7000, False, "/cp/chk-4")
    tracker.report_restored(9, 8000, True, "/sp/savepoint-9")
    out = tracker.to_json()
    assert out["counts"]["restored"] == 2
    assert out["counts"]["total"] == 0
    assert out["latest"]["restored"] == {
        "id": 9,
        "restore_timestamp": 8000,
        "is_savepoint": True,
        "external_path": "/sp/savepoint-9",
    }


# --- latest -------------------------------------------------------------------------------------


def test_latest_completed_savepoint_and_failed_are_kept_apart() -> None:
    tracker = CheckpointStatsTracker()
    complete(tracker, 1)
    complete(tracker, 2, snapshot_type=SnapshotType.SAVEPOINT)
    pending(tracker, 3)
    tracker.report_failed(3, 4000, "declined")
    latest = tracker.to_json()["latest"]
    assert latest["completed"]["id"] == 1
    assert latest["completed"]["className"] == "completed"
    assert latest["savepoint"]["id"] == 2
    assert latest["savepoint"]["is_savepoint"] is True
    assert latest["failed"]["id"] == 3
    assert latest["failed"]["className"] == "failed"
    assert latest["failed"]["failure_timestamp"] == 4000
    assert latest["failed"]["failure_message"] == "declined"


def test_latest_entries_have_empty_tasks() -> None:
    tracker = CheckpointStatsTracker()
    complete(tracker, 1)
    assert tracker.to_json()["latest"]["completed"]["tasks"] == {}


# --- history ------------------------------------------------------------------------------------


def test_history_is_newest_first_and_updated_in_place() -> None:
    tracker = CheckpointStatsTracker()
    complete(tracker, 1)
    pending(tracker, 2)
    pending(tracker, 3)
    tracker.report_failed(3, 2000, "expired")
    history = tracker.to_json()["history"]
    assert [h["id"] for h in history] == [3, 2, 1]
    assert [h["status"] for h in history] == ["FAILED", "IN_PROGRESS", "COMPLETED"]
    assert [h["className"] for h in history] == ["failed", "in_progress", "completed"]
    assert all(h["tasks"] == {} for h in history)


def test_history_default_size_is_ten() -> None:
    tracker = CheckpointStatsTracker()
    for checkpoint_id in range(1, 13):
        complete(tracker, checkpoint_id)
    history = tracker.to_json()["history"]
    assert DEFAULT_HISTORY_SIZE == 10
    assert [h["id"] for h in history] == list(range(12, 2, -1))
    assert tracker.to_json()["counts"]["completed"] == 12


def test_history_is_bounded_by_history_size() -> None:
    """The history holds the last ``history_size``; the details of as many that left it stay
    (Flink's CheckpointStatsCache, issue #25), then go."""
    tracker = CheckpointStatsTracker(history_size=2)
    for checkpoint_id in (1, 2, 3, 4, 5):
        complete(tracker, checkpoint_id)
    assert [h["id"] for h in tracker.to_json()["history"]] == [5, 4]
    assert tracker.details_json(1) is None
    assert [tracker.details_json(i)["id"] for i in (2, 3, 4, 5)] == [2, 3, 4, 5]  # type: ignore[index]


def test_in_progress_checkpoint_evicted_from_history_still_counts_when_it_completes() -> None:
    tracker = CheckpointStatsTracker(history_size=1)
    pending(tracker, 1)
    pending(tracker, 2)  # evicts 1 from the history while it is in progress
    ack(tracker, 1, 1500)
    tracker.report_completed(1, None)
    out = tracker.to_json()
    assert [h["id"] for h in out["history"]] == [2]
    assert out["counts"]["completed"] == 1
    assert out["counts"]["in_progress"] == 1
    assert out["latest"]["completed"]["id"] == 1
    assert out["summary"]["end_to_end_duration"]["max"] == 500


def test_history_size_zero_keeps_no_history() -> None:
    tracker = CheckpointStatsTracker(history_size=0)
    for checkpoint_id in (1, 2, 3):
        complete(tracker, checkpoint_id)
    out = tracker.to_json()
    assert out["history"] == []
    assert out["counts"]["completed"] == 3


# --- summary ------------------------------------------------------------------------------------


def test_summary_has_every_rest_key_with_stats_summary_dto_values() -> None:
    tracker = CheckpointStatsTracker()
    complete(tracker, 1)
    summary = tracker.to_json()["summary"]
    assert set(summary) == {
        "checkpointed_size",
        "state_size",
        "end_to_end_duration",
        "alignment_buffered",
        "processed_data",
        "persisted_data",
    }
    for value in summary.values():
        assert set(value) == SUMMARY_KEYS


def test_summary_is_over_completed_checkpoints_only() -> None:
    tracker = CheckpointStatsTracker()
    complete(tracker, 1, trigger=1000, ack_at=1100, size=10)
    complete(tracker, 2, trigger=2000, ack_at=2200, size=20)
    complete(tracker, 3, trigger=3000, ack_at=3400, size=40)
    pending(tracker, 4, trigger=4000)
    ack(tracker, 4, 9000, size=1000)
    tracker.report_failed(4, 9500, "expired")
    summary = tracker.to_json()["summary"]
    e2e = summary["end_to_end_duration"]
    assert (e2e["min"], e2e["max"], e2e["avg"]) == (100, 400, 233)
    assert e2e["p50"] == pytest.approx(200.0)
    assert e2e["p90"] == pytest.approx(400.0)
    size = summary["state_size"]
    assert (size["min"], size["max"], size["avg"]) == (10, 40, 23)
    assert summary["alignment_buffered"]["max"] == 0


def test_summary_sums_processed_and_persisted_data_over_subtasks() -> None:
    tracker = CheckpointStatsTracker()
    pending(tracker, 1, subtasks={"map": 2})
    ack(tracker, 1, 1100, subtask=0, metrics=CheckpointMetrics(bytes_processed_during_alignment=3))
    ack(
        tracker,
        1,
        1200,
        subtask=1,
        metrics=CheckpointMetrics(
            bytes_processed_during_alignment=4, bytes_persisted_during_alignment=50
        ),
    )
    tracker.report_completed(1, None)
    summary = tracker.to_json()["summary"]
    assert summary["processed_data"]["max"] == 7
    assert summary["persisted_data"]["max"] == 50


# --- one checkpoint -----------------------------------------------------------------------------


def test_end_to_end_duration_is_latest_ack_minus_trigger() -> None:
    tracker = CheckpointStatsTracker()
    pending(tracker, 1, trigger=1000, subtasks={"src": 1, "map": 2})
    ack(tracker, 1, 1300, vertex="map", subtask=1)
    ack(tracker, 1, 1250, vertex="src", subtask=0)
    entry = tracker.to_json()["history"][0]
    assert entry["latest_ack_timestamp"] == 1300
    assert entry["end_to_end_duration"] == 300
    assert entry["num_subtasks"] == 3
    assert entry["num_acknowledged_subtasks"] == 2


def test_in_progress_checkpoint_without_acks_has_latest_ack_minus_one() -> None:
    tracker = CheckpointStatsTracker()
    pending(tracker, 1)
    entry = tracker.to_json()["history"][0]
    assert entry["latest_ack_timestamp"] == -1
    assert entry["num_acknowledged_subtasks"] == 0


def test_completed_checkpoint_fields() -> None:
    tracker = CheckpointStatsTracker()
    pending(tracker, 5, trigger=1000)
    tracker.report_subtask(5, TaskId("map"), 1400, state(100, checkpointed=30), None)
    tracker.report_completed(5, "/cp/chk-5")
    entry = tracker.to_json()["history"][0]
    assert set(entry) == CHECKPOINT_KEYS | {"external_path", "discarded"}
    assert entry["className"] == "completed"
    assert entry["id"] == 5
    assert entry["status"] == "COMPLETED"
    assert entry["is_savepoint"] is False
    assert entry["savepointFormat"] is None
    assert entry["trigger_timestamp"] == 1000
    assert entry["state_size"] == 100
    assert entry["checkpointed_size"] == 30
    assert entry["alignment_buffered"] == 0
    assert entry["checkpoint_type"] == "CHECKPOINT"
    assert entry["external_path"] == "/cp/chk-5"
    assert entry["discarded"] is False


def test_failed_checkpoint_fields() -> None:
    tracker = CheckpointStatsTracker()
    pending(tracker, 2)
    tracker.report_failed(2, 5000, "Checkpoint expired before completing.")
    entry = tracker.to_json()["history"][0]
    assert set(entry) == CHECKPOINT_KEYS | {"failure_timestamp", "failure_message"}
    assert entry["className"] == "failed"
    assert entry["status"] == "FAILED"
    assert entry["failure_timestamp"] == 5000
    assert entry["failure_message"] == "Checkpoint expired before completing."


def test_in_progress_checkpoint_fields() -> None:
    tracker = CheckpointStatsTracker()
    pending(tracker, 3)
    entry = tracker.to_json()["history"][0]
    assert set(entry) == CHECKPOINT_KEYS
    assert entry["className"] == "in_progress"
    assert entry["status"] == "IN_PROGRESS"


def test_report_discarded_sets_the_discarded_flag() -> None:
    tracker = CheckpointStatsTracker()
    complete(tracker, 1)
    complete(tracker, 2)
    tracker.report_discarded(1)
    by_id = {h["id"]: h for h in tracker.to_json()["history"]}
    assert by_id[1]["discarded"] is True
    assert by_id[2]["discarded"] is False


@pytest.mark.parametrize(
    ("metrics", "checkpoint_type"),
    [
        (CheckpointMetrics(), "CHECKPOINT"),
        (CheckpointMetrics(bytes_persisted_during_alignment=1), "UNALIGNED_CHECKPOINT"),
        (CheckpointMetrics(unaligned_checkpoint=True), "UNALIGNED_CHECKPOINT"),
    ],
)
def test_checkpoint_type_is_unaligned_when_data_was_persisted_or_flagged(
    metrics: CheckpointMetrics, checkpoint_type: str
) -> None:
    tracker = CheckpointStatsTracker()
    complete(tracker, 1, metrics=metrics)
    assert tracker.to_json()["latest"]["completed"]["checkpoint_type"] == checkpoint_type


@pytest.mark.parametrize(
    ("snapshot_type", "checkpoint_type"),
    [
        (SnapshotType.SAVEPOINT, "SAVEPOINT"),
        (SnapshotType.SYNC_SAVEPOINT, "SYNC_SAVEPOINT"),
        (SnapshotType.SYNC_SAVEPOINT_SUSPEND, "SYNC_SAVEPOINT"),
    ],
)
def test_checkpoint_type_of_savepoints(snapshot_type: SnapshotType, checkpoint_type: str) -> None:
    tracker = CheckpointStatsTracker()
    complete(tracker, 1, snapshot_type=snapshot_type)
    savepoint = tracker.to_json()["latest"]["savepoint"]
    assert savepoint["checkpoint_type"] == checkpoint_type
    assert savepoint["is_savepoint"] is True
    assert savepoint["savepointFormat"] == "CANONICAL"


def test_in_progress_checkpoint_type_turns_unaligned_with_an_unaligned_ack() -> None:
    tracker = CheckpointStatsTracker()
    pending(tracker, 1, subtasks={"map": 2})
    ack(tracker, 1, 1100, subtask=0)
    assert tracker.to_json()["history"][0]["checkpoint_type"] == "CHECKPOINT"
    ack(tracker, 1, 1200, subtask=1, metrics=CheckpointMetrics(unaligned_checkpoint=True))
    assert tracker.to_json()["history"][0]["checkpoint_type"] == "UNALIGNED_CHECKPOINT"


# --- details and subtasks -----------------------------------------------------------------------


def test_details_json_has_per_task_statistics() -> None:
    tracker = CheckpointStatsTracker()
    pending(tracker, 1, trigger=1000, subtasks={"src": 1, "map": 2})
    ack(tracker, 1, 1100, vertex="src", size=5)
    ack(
        tracker,
        1,
        1300,
        vertex="map",
        subtask=1,
        size=7,
        metrics=CheckpointMetrics(bytes_processed_during_alignment=9),
    )
    details = tracker.details_json(1)
    assert details is not None
    assert set(details["tasks"]) == {"src", "map"}
    map_task = details["tasks"]["map"]
    assert set(map_task) == TASK_KEYS
    assert map_task == {
        "id": 1,
        "status": "IN_PROGRESS",
        "latest_ack_timestamp": 1300,
        "checkpointed_size": 7,
        "state_size": 7,
        "end_to_end_duration": 300,
        "alignment_buffered": 0,
        "processed_data": 9,
        "persisted_data": 0,
        "num_subtasks": 2,
        "num_acknowledged_subtasks": 1,
    }
    assert details["tasks"]["src"]["end_to_end_duration"] == 100


def test_details_json_of_unknown_checkpoint_is_none() -> None:
    assert CheckpointStatsTracker().details_json(42) is None


def test_subtasks_json_has_summary_and_completed_and_pending_rows() -> None:
    tracker = CheckpointStatsTracker()
    pending(tracker, 1, trigger=1000, subtasks={"map": 3})
    metrics = CheckpointMetrics(
        bytes_processed_during_alignment=11,
        bytes_persisted_during_alignment=22,
        alignment_duration_ms=33,
        sync_duration_ms=4,
        async_duration_ms=55,
        checkpoint_start_delay_ms=6,
        unaligned_checkpoint=True,
    )
    ack(tracker, 1, 1250, subtask=2, size=100, metrics=metrics)
    stats = tracker.get(1)
    assert stats is not None
    out = stats.subtasks_json("map")
    assert set(out) == TASK_KEYS | {"summary", "subtasks"}
    assert out["num_subtasks"] == 3
    assert out["num_acknowledged_subtasks"] == 1
    assert out["subtasks"] == [
        {"className": "pending", "index": 0, "status": "pending_or_failed"},
        {"className": "pending", "index": 1, "status": "pending_or_failed"},
        {
            "className": "completed",
            "index": 2,
            "status": "completed",
            "ack_timestamp": 1250,
            "end_to_end_duration": 250,
            "checkpointed_size": 100,
            "state_size": 100,
            "checkpoint": {"sync": 4, "async": 55},
            "alignment": {"buffered": 0, "processed": 11, "persisted": 22, "duration": 33},
            "start_delay": 6,
            "unaligned_checkpoint": True,
            "aborted": False,
        },
    ]
    summary = out["summary"]
    assert set(summary) == {
        "checkpointed_size",
        "state_size",
        "end_to_end_duration",
        "checkpoint_duration",
        "alignment",
        "start_delay",
    }
    assert set(summary["checkpoint_duration"]) == {"sync", "async"}
    assert set(summary["alignment"]) == {"buffered", "processed", "persisted", "duration"}
    assert summary["end_to_end_duration"]["max"] == 250
    assert summary["checkpoint_duration"]["async"]["min"] == 55
    assert summary["alignment"]["duration"]["avg"] == 33
    assert summary["start_delay"]["max"] == 6
    for value in (summary["state_size"], summary["alignment"]["buffered"]):
        assert set(value) == SUMMARY_KEYS


def test_subtask_summary_is_over_acknowledged_subtasks() -> None:
    tracker = CheckpointStatsTracker()
    pending(tracker, 1, trigger=1000, subtasks={"map": 3})
    ack(tracker, 1, 1100, subtask=0, size=10)
    ack(tracker, 1, 1400, subtask=1, size=30)
    stats = tracker.get(1)
    assert stats is not None
    summary = stats.subtasks_json("map")["summary"]
    assert (summary["state_size"]["min"], summary["state_size"]["max"]) == (10, 30)
    assert summary["state_size"]["avg"] == 20
    assert (summary["end_to_end_duration"]["min"], summary["end_to_end_duration"]["max"]) == (
        100,
        400,
    )


# --- Flink's conventions (as a Flink 2.3.0 renders them; tests/rest compares whole bodies) ------


def test_failed_checkpoint_end_to_end_is_failure_minus_trigger_even_without_acks() -> None:
    tracker = CheckpointStatsTracker()
    pending(tracker, 12, trigger=1000, subtasks={"src": 1, "map": 1})
    tracker.report_failed(12, 1084, "Checkpoint Coordinator is suspending.")
    entry = tracker.to_json()["history"][0]
    assert entry["end_to_end_duration"] == 84
    assert entry["latest_ack_timestamp"] == -1


def test_unacknowledged_task_and_checkpoint_show_minus_one() -> None:
    tracker = CheckpointStatsTracker()
    pending(tracker, 6, trigger=1000, subtasks={"src": 1, "map": 1})
    ack(tracker, 6, 1016, vertex="src", subtask=0)
    details = tracker.details_json(6)
    assert details is not None
    assert details["end_to_end_duration"] == 16
    assert details["tasks"]["map"]["latest_ack_timestamp"] == -1
    assert details["tasks"]["map"]["end_to_end_duration"] == -1
    assert details["tasks"]["src"]["end_to_end_duration"] == 16
    pending(tracker, 7, trigger=2000)
    assert tracker.to_json()["history"][0]["end_to_end_duration"] == -1


def test_subtask_summary_percentiles_are_nan_but_buffered_is_zero() -> None:
    tracker = CheckpointStatsTracker()
    pending(tracker, 1, trigger=1000, subtasks={"map": 2})
    ack(tracker, 1, 1100, subtask=0, size=10)
    stats = tracker.get(1)
    assert stats is not None
    summary = stats.subtasks_json("map")["summary"]
    assert summary["state_size"] == {
        "min": 10,
        "max": 10,
        "avg": 10,
        **{p: "NaN" for p in ("p50", "p90", "p95", "p99", "p999")},
    }
    assert summary["alignment"]["buffered"]["p99"] == 0.0
    assert summary["checkpoint_duration"]["sync"]["p50"] == "NaN"


def test_job_summary_without_completed_checkpoints_has_nan_percentiles() -> None:
    summary = CheckpointStatsTracker().to_json()["summary"]["end_to_end_duration"]
    assert (summary["min"], summary["avg"], summary["p50"]) == (0, 0, "NaN")


# --- issue #25: details Flink keeps, subtasks Flink counts -----------------------------------------


def test_the_latest_failed_checkpoint_keeps_its_details_after_it_left_the_history() -> None:
    """Flink's history finds the latest completed, savepoint and failed checkpoints by id even
    when they left the history (the dashboard asks for the details of ``latest.failed``)."""
    tracker = CheckpointStatsTracker(history_size=2)
    pending(tracker, 1)
    tracker.report_failed(1, 1500, "Checkpoint expired before completing.")
    for checkpoint_id in range(2, 8):
        complete(tracker, checkpoint_id)
    assert tracker.to_json()["latest"]["failed"]["id"] == 1
    assert [s.checkpoint_id for s in tracker.with_details] == [7, 6, 1, 5, 4]
    assert tracker.details_json(1)["status"] == "FAILED"  # type: ignore[index]
    assert tracker.details_json(3) is None  # left the history, then the cache


def test_a_checkpoint_that_ends_after_it_left_the_history_keeps_its_details() -> None:
    tracker = CheckpointStatsTracker(history_size=1)
    pending(tracker, 1)
    complete(tracker, 2)  # 1 leaves the history in progress
    ack(tracker, 1, 1200)
    tracker.report_completed(1, "/cp/chk-1")
    assert tracker.completed == 2
    details = tracker.details_json(1)
    assert details is not None and details["num_acknowledged_subtasks"] == 1


def test_finished_subtasks_count_as_acknowledged_with_no_state() -> None:
    """FLIP-147: a checkpoint counts every subtask of each vertex, the finished ones
    acknowledged at its trigger with no state, as Flink's coordinator reports them."""
    tracker = CheckpointStatsTracker()
    tracker.report_pending(
        1,
        1000,
        SnapshotType.CHECKPOINT,
        {"map": 1, "sink": 2},
        finished=[TaskId("map", 1), TaskId("source", 0), TaskId("source", 1)],
    )
    ack(tracker, 1, 1100, vertex="map", subtask=0, size=7)
    details = tracker.details_json(1)
    assert details is not None
    assert (details["num_subtasks"], details["num_acknowledged_subtasks"]) == (6, 4)
    source = tracker.get(1).subtasks_json("source")  # type: ignore[union-attr]
    assert (source["num_subtasks"], source["num_acknowledged_subtasks"]) == (2, 2)
    assert [(r["className"], r["ack_timestamp"], r["state_size"]) for r in source["subtasks"]] == [
        ("completed", 1000, 0),
        ("completed", 1000, 0),
    ]
    assert details["tasks"]["map"]["num_acknowledged_subtasks"] == 2
