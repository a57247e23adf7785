"""The checkpoint summary table a finished job prints (``ckptsim._report``)."""

from __future__ import annotations

import io
import re
import runpy
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from ckptsim import StreamExecutionEnvironment
from ckptsim._report import ProgressDisplay, progress_line, summary_table
from runtime.checkpoint import CheckpointMetrics, SnapshotType, TaskId, TaskStateSnapshot
from runtime.job import JobResult
from runtime.stats import CheckpointStatsTracker
from runtime.status import JobStatus
from tests.conftest import protocol_events

ROOT = Path(__file__).resolve().parents[2]


def _result(tracker: CheckpointStatsTracker) -> JobResult:
    return JobResult(
        job_id="0" * 32,
        name="job",
        status=JobStatus.FINISHED,
        checkpoints=tracker.to_json(),
        checkpoint_types={s.checkpoint_id: s.triggered_type for s in tracker.history},
    )


def _rows(table: str) -> dict[str, list[str]]:
    rows = {}
    for line in table.splitlines():
        words = line.split()
        if words and words[0].isdigit():
            rows[words[0]] = words
    return rows


def test_a_failed_row_shows_dashes_and_the_type_it_was_triggered_as() -> None:
    """A failed checkpoint has no state, persisted data or subtask figures: ``-``, not
    ``0ms 0 B``. An unaligned one that failed before any acknowledgement is typed
    ``UNALIGNED_CHECKPOINT`` (Flink's REST body says ``CHECKPOINT``: it types by the acks)."""
    tracker = CheckpointStatsTracker()
    task = TaskId("map", 0)
    tracker.report_pending(1, 0, SnapshotType.CHECKPOINT, {"map": 1}, unaligned=True)
    metrics = CheckpointMetrics(unaligned_checkpoint=True, sync_duration_ms=3)
    tracker.report_subtask(1, task, 7, TaskStateSnapshot(), metrics)
    tracker.report_completed(1, None)
    tracker.report_pending(2, 10, SnapshotType.CHECKPOINT, {"map": 1}, unaligned=True)
    tracker.report_failed(2, 25, "Checkpoint expired before completing.", "CHECKPOINT_EXPIRED")
    result = _result(tracker)
    assert result.checkpoints["history"][0]["checkpoint_type"] == "CHECKPOINT"  # as Flink
    rows = _rows(summary_table(result))
    assert rows["1"][1:3] == ["COMPLETED", "UNALIGNED_CHECKPOINT"]
    assert "-" not in rows["1"]
    assert rows["2"][1:4] == ["FAILED", "UNALIGNED_CHECKPOINT", "15ms"]
    assert rows["2"][4:] == ["-"] * 6
    assert "checkpoint 2 failed: Checkpoint expired before completing." in summary_table(result)


def test_the_progress_line_says_what_a_finishing_job_waits_for() -> None:
    """While tasks whose data ended wait for their final checkpoint, the line says so, and
    when the next trigger is due (or that one is in progress), instead of looking hung."""
    running = {"status": "RUNNING", "records": 1200, "counts": {"completed": 0}}
    assert progress_line(running).endswith("0 in progress, no back-pressure")
    waiting = {**running, "waiting_for_final_checkpoint": 3, "tasks": 4}
    line = progress_line({**waiting, "next_trigger_in_ms": 8000})
    assert line.endswith("; 3 of 4 tasks wait for their final checkpoint (next trigger in 8000 ms)")
    line = progress_line({**waiting, "counts": {"in_progress": 1}, "next_trigger_in_ms": 10})
    assert line.endswith("final checkpoint (one is in progress)")
    line = progress_line({**waiting, "next_trigger_in_ms": None})
    assert line.endswith("(no checkpoint is scheduled: periodic checkpointing is off)")


def test_a_simulated_jobs_duration_is_labelled_virtual() -> None:
    result = _result(CheckpointStatsTracker())
    assert summary_table(result).splitlines()[0] == "Job 'job' FINISHED in 0 ms"
    result.virtual_time = True
    assert summary_table(result).splitlines()[0] == "Job 'job' FINISHED in 0 ms of virtual time"


def test_the_live_progress_line_fits_the_terminal_and_lets_other_output_pass_above_it() -> None:
    """Rewritten in place and cut to the terminal's width (no leftovers of a longer line);
    a warning written to stderr meanwhile lands on its own line, not on the progress line."""
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=60, color_system=None)
    pressured = [f"source-1#{i}" for i in range(8)]
    snapshot = {"status": "RUNNING", "records": 5, "counts": {}, "backpressured": pressured}
    with ProgressDisplay(console) as display:
        display.show(snapshot)
        print("a warning", file=sys.stderr)
        display.show({**snapshot, "records": 6})
    lines = [line for line in _visible(screen.getvalue()).split("\n") if line.strip()]
    assert "a warning" in lines
    progress = [line for line in lines if line.startswith("RUNNING")]
    assert progress and all(len(line) <= 60 and line.endswith("…") for line in progress)


def _visible(raw: str) -> str:
    """The text of terminal output without its control sequences (cursor moves, erases)."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "\n", raw)


def test_a_simulated_jobs_progress_is_reported_at_its_virtual_time_without_changing_it(
    tmp_path: Path,
) -> None:
    """The progress line of a simulated job reads its actors between two steps: reports come
    (here every step's check, interval 0) with the virtual time, and the trace is the seed's,
    byte for byte, with or without them."""
    traces, reports = [], []
    for watch in (False, True):
        env = StreamExecutionEnvironment(parallelism=2)
        example = runpy.run_path(str(ROOT / "examples" / "slow_running_sum.py"))
        example["build"](env)
        snapshots: list[dict[str, Any]] = []
        options: dict[str, Any] = (
            {"progress": snapshots.append, "progress_interval": 0} if watch else {}
        )
        with protocol_events() as logs:
            result = env.execute("watched", runtime="simulation", seed=4, **options)
        assert result.succeeded
        traces.append([{k: v for k, v in e.items() if k != "job"} for e in logs])
        reports.append(snapshots)
    assert traces[0] == traces[1]
    assert reports[1] and all(s["status"] == "RUNNING" for s in reports[1])
    virtual = [s["virtual_ms"] for s in reports[1]]
    assert virtual == sorted(virtual) and virtual[-1] > 0
    assert progress_line(reports[1][-1]).startswith(
        f"RUNNING at {virtual[-1]:,} ms of virtual time: "
    )


def test_checkpoints_missing_from_the_history_are_not_all_called_older() -> None:
    """A checkpoint that failed as it was triggered is counted but has no history entry (as in
    Flink): the summary does not claim the history dropped it for its size."""
    tracker = CheckpointStatsTracker()
    tracker.report_pending(1, 0, SnapshotType.CHECKPOINT, {"map": 1})
    tracker.report_failed(1, 5, "Checkpoint expired before completing.", "CHECKPOINT_EXPIRED")
    tracker.report_failed_without_in_progress()
    tracker.report_failed_without_in_progress()
    table = summary_table(_result(tracker))
    assert "(2 more not shown: older than the history keeps (web.checkpoints.history), or " in (
        table
    )
    assert "failed as they were triggered)" in table
    assert "older checkpoints not shown" not in table
