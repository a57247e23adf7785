"""The checkpoint timeline: a bar per subtask and checkpoint, the phases inside it, failures
and restarts marked; drawn as PNG, SVG and HTML."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors.archive import write_archive
from ckptsim._cli import main
from ckptsim._web import load_archives
from runtime.timeline import build_timeline
from tests.rest.conftest import FLINK
from tests.rest.test_archive import script


def test_a_bar_per_acknowledged_subtask_and_checkpoint(finished: Any) -> None:
    registry, view, _ = finished
    timeline = build_timeline(view.job_id, registry.body_getter(view.job_id))
    assert timeline.rows == [
        "seq -> Map (1/2)",
        "seq -> Map (2/2)",
        "Reduce -> sums (1/2)",
        "Reduce -> sums (2/2)",
    ]
    expected = set()
    for cid, details in view.details.items():
        for key, subtasks in details["subtasks"].items():
            vertex = view.vertex_by_key(key)
            assert vertex is not None
            for row in subtasks["subtasks"]:
                if row["className"] == "completed":
                    expected.add((f"{vertex.name} ({row['index'] + 1}/2)", cid))
    bars = {(b.row, b.checkpoint_id) for b in timeline.bars if b.phase == "end to end"}
    assert bars == expected and len(bars) > 20
    for bar in timeline.bars:  # every phase lies inside its checkpoint's trigger..ack span
        outer = next(
            b
            for b in timeline.bars
            if b.phase == "end to end" and (b.row, b.checkpoint_id) == (bar.row, bar.checkpoint_id)
        )
        assert outer.start <= bar.start <= bar.end


def test_failures_restarts_and_failed_checkpoints_are_marked(finished: Any) -> None:
    registry, view, result = finished
    timeline = build_timeline(view.job_id, registry.body_getter(view.job_id))
    kinds = [m.kind for m in timeline.markers]
    assert kinds.count("job failure") == 1 and kinds.count("checkpoint failed") == 1
    failure = next(m for m in timeline.markers if m.kind == "job failure")
    restarting = next(t for s, t in result.status_history if s == "RESTARTING")
    assert failure.at == restarting  # ms since the job started
    assert "Reduce -> sums (2/2)" in failure.label
    failed = next(c for c in timeline.checkpoints if c.status == "FAILED")
    assert failed.end > failed.start


def test_flinks_archive_draws_too() -> None:
    (job,) = load_archives([str(FLINK / "archive" / "flink-2.3.0-job-archive")])
    timeline = build_timeline(job.job_id, job.body)
    assert len(timeline.rows) == 4
    assert {b.phase for b in timeline.bars} >= {"end to end", "start delay", "async"}
    assert len(timeline.checkpoints) == 10  # the history; one of them had no acknowledgement
    assert len({b.checkpoint_id for b in timeline.bars}) == 9


@pytest.mark.parametrize("suffix", [".png", ".svg", ".html"])
def test_ckptsim_timeline_writes_the_picture(finished: Any, tmp_path: Path, suffix: str) -> None:
    archive = write_archive(finished[1], tmp_path / "archive")
    out = tmp_path / f"timeline{suffix}"
    assert main(["timeline", str(archive), "-o", str(out)]) == 0
    data = out.read_bytes()
    if suffix == ".png":
        assert data.startswith(b"\x89PNG")
    elif suffix == ".svg":
        assert b"<svg" in data[:1000]
    else:
        assert b"Plotly.newPlot" in data and b'src="http' not in data  # plotly.js inlined


def test_run_timeline_writes_the_picture_at_the_end(tmp_path: Path) -> None:
    out = tmp_path / "t.png"
    assert main(["run", script(tmp_path), "--simulate", "-q", "--timeline", str(out)]) == 0
    assert out.read_bytes().startswith(b"\x89PNG")


def test_a_timeline_file_of_another_kind_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["run", script(tmp_path), "--timeline", str(tmp_path / "t.pdf")]) == 2
