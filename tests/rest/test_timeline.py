"""The checkpoint timeline: a bar per subtask and checkpoint, the phases inside it, failures
and restarts marked; drawn as PNG, SVG and HTML, and as the web page's plotly figure.

The geometry is read back from the figures' data: bar extents against the durations the REST
bodies report, bars against the next checkpoint's trigger, labels against each other. Every
job here runs on the deterministic simulation (seeded)."""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from actors.archive import write_archive
from actors.faults import FailTask
from actors.trace import TraceCollector
from ckptsim import StreamExecutionEnvironment
from ckptsim._cli import main
from ckptsim._timeline_plot import (
    COLORS,
    FAILED_FILL,
    GREY,
    MARKER_COLORS,
    MIN_PX,
    PLOT_PX,
    VERMILLION,
    WIDENED,
    Layout,
    layout,
    matplotlib_figure,
    plotly_figure,
    write_timeline,
)
from ckptsim._web import JobRegistry, load_archives
from runtime.timeline import (
    PHASES,
    UNACKNOWLEDGED,
    Bar,
    CheckpointSpan,
    History,
    Timeline,
    build_timeline,
)
from tests.rest.conftest import FLINK, keyed_sum
from tests.rest.test_archive import script

OKABE_ITO = {
    "#E69F00",
    "#56B4E9",
    "#009E73",
    "#F0E442",
    "#0072B2",
    "#D55E00",
    "#CC79A7",
    "#000000",
}


# --- jobs (the simulation, seeded) -------------------------------------------------------------


def simulate(
    build: Callable[[StreamExecutionEnvironment], None],
    *,
    seed: int = 7,
    faults: list[Any] | None = None,
    trace: TraceCollector | None = None,
) -> Timeline:
    registry = JobRegistry()
    env = StreamExecutionEnvironment()
    build(env)
    options: dict[str, Any] = {"faults": faults or []}
    if trace is not None:
        options["trace"] = trace
    result = env.execute("job", runtime="simulation", seed=seed, observer=registry, **options)
    assert result.succeeded, result.failure
    (view,) = registry.finished_views()
    return build_timeline(view.job_id, registry.body_getter(view.job_id))


def slow_running_sum(*, unaligned: bool, history: int = 100) -> Callable[[Any], None]:
    """``examples/slow_running_sum.py``, shorter: back-pressure behind a slow operator, so
    checkpoints take tens of virtual ms (start delay, alignment) or persist in-flight data."""

    def build(env: StreamExecutionEnvironment) -> None:
        env.set_parallelism(2)
        env.enable_checkpointing(50)
        env.configure(
            {
                "ckptsim.buffer.records": 100,
                "web.checkpoints.history": history,
                "execution.checkpointing.unaligned.enabled": unaligned,
            }
        )
        (
            env.from_generator(lambda i: (i % 100, 1), 20_000, name="Events")
            .rebalance()
            .map_batch(lambda batch: batch, name="Slow")
            .processing_cost(per_buffer_ms=2)
            .key_by(lambda e: e[0])
            .reduce(lambda a, b: (a[0], a[1] + b[1]), name="RunningSum")
            .collect("sums")
        )

    return build


@pytest.fixture(scope="module")
def aligned() -> Timeline:
    """Aligned checkpoints of 50 ms and more (start delay behind the slow operator)."""
    return simulate(slow_running_sum(unaligned=False))


@pytest.fixture(scope="module")
def unaligned_short_history() -> Timeline:
    """Unaligned checkpoints; a failure at checkpoint 2, then a 1 s restart delay; only the
    latest 4 checkpoints kept (``web.checkpoints.history``)."""
    return simulate(
        slow_running_sum(unaligned=True, history=4),
        faults=[FailTask(task="map_batch-2#0", during_checkpoint=2)],
    )


@pytest.fixture(scope="module")
def two_restarts() -> tuple[Timeline, list[int]]:
    """Two failures, two restarts; the checkpoints each restart restored (from the trace)."""
    trace = TraceCollector()
    timeline = simulate(
        keyed_sum,
        seed=3,
        faults=[
            FailTask(task="reduce-3#1", during_checkpoint=3),
            FailTask(task="reduce-3#0", during_checkpoint=6),
        ],
        trace=trace,
    )
    restored = {
        (e["attempt"], e["checkpoint_id"]) for e in trace.events if e["event"] == "task_restored"
    }
    return timeline, [cid for _, cid in sorted(restored)]


@pytest.fixture(scope="module")
def many_checkpoints() -> Timeline:
    """A checkpoint every 10 ms for a second: about a hundred, all in the history."""

    def build(env: StreamExecutionEnvironment) -> None:
        keyed_sum(env, records=30_000)
        env.enable_checkpointing(10)

    return simulate(build, seed=5)


@pytest.fixture(scope="module")
def flink() -> Timeline:
    (job,) = load_archives([str(FLINK / "archive" / "flink-2.3.0-job-archive")])
    return build_timeline(job.job_id, job.body)


# --- what the timeline holds --------------------------------------------------------------------


def test_a_bar_per_acknowledged_subtask_and_checkpoint(finished: Any) -> None:
    registry, view, _ = finished
    timeline = build_timeline(view.job_id, registry.body_getter(view.job_id))
    assert timeline.rows == [
        "Source: seq -> Map (1/2)",
        "Source: seq -> Map (2/2)",
        "Reduce -> Sink: sums (1/2)",
        "Reduce -> Sink: sums (2/2)",
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
    outer = {(b.row, b.checkpoint_id): b for b in timeline.bars if b.phase == "end to end"}
    for bar in timeline.bars:  # every phase lies inside its checkpoint's trigger..ack span
        around = outer.get((bar.row, bar.checkpoint_id), bar)
        assert around.start <= bar.start <= bar.end <= around.end


def test_failures_restarts_and_failed_checkpoints_are_marked(finished: Any) -> None:
    registry, view, result = finished
    timeline = build_timeline(view.job_id, registry.body_getter(view.job_id))
    kinds = [m.kind for m in timeline.markers]
    assert kinds.count("job failure") == 1 and kinds.count("checkpoint failed") == 1
    failure = next(m for m in timeline.markers if m.kind == "job failure")
    restarting = next(t for s, t in result.status_history if s == "RESTARTING")
    assert failure.at == restarting  # ms since the job started
    assert "Reduce -> Sink: sums (2/2)" in failure.label
    failed = next(c for c in timeline.checkpoints if c.status == "FAILED")
    assert failed.end > failed.start
    # the one restart: at the restore (back to RUNNING), naming the checkpoint restored
    (restart,) = [m for m in timeline.markers if m.kind == "restart"]
    running_again = [t for s, t in result.status_history if s == "RUNNING"][-1]
    restored = result.checkpoints["latest"]["restored"]["id"]
    assert (restart.at, restart.checkpoint_id, restart.source) == (
        running_again,
        restored,
        "reported",
    )
    assert f"checkpoint {restored}" in restart.label
    # the subtask that never acknowledged the expired checkpoint
    (missing,) = [b for b in timeline.bars if b.phase == UNACKNOWLEDGED]
    assert (missing.row, missing.checkpoint_id) == (
        "Reduce -> Sink: sums (1/2)",
        failed.checkpoint_id,
    )
    assert (missing.start, missing.end) == (failed.start, failed.end)


def test_every_restart_names_the_checkpoint_it_restored(
    two_restarts: tuple[Timeline, list[int]],
) -> None:
    timeline, restored = two_restarts
    assert restored == [2, 5]  # the job's own account (its trace)
    failures = [m for m in timeline.markers if m.kind == "job failure"]
    restarts = [m for m in timeline.markers if m.kind == "restart"]
    assert [m.number for m in failures] == [1, 2] and [m.number for m in restarts] == [1, 2]
    assert [m.checkpoint_id for m in restarts] == restored
    # the latest restore is reported (latest.restored); the earlier one is found in the history
    assert [m.source for m in restarts] == ["inferred", "reported"]
    for failure, restart in zip(failures, restarts, strict=True):
        assert failure.at <= restart.at
    # in the figures: a line for each, and a label naming the restored checkpoint
    for figure_layout in (layout(timeline), layout(timeline, "time")):
        assert [ln.kind for ln in figure_layout.lines].count("restart") == 2
        assert [ln.kind for ln in figure_layout.lines].count("job failure") == 2
        texts = [lb.text for lb in figure_layout.labels if lb.kind == "restart"]
        assert texts == [f"restart {n}: restored checkpoint {c}" for n, c in [(1, 2), (2, 5)]]
    page = plotly_figure(timeline)
    annotations = [a.text for a in page.layout.annotations]
    for n, cid in enumerate(restored, start=1):
        assert f"restart {n}: restored checkpoint {cid}" in annotations
    assert len(page.layout.shapes) == 4  # two failures, two restarts


def test_a_run_that_never_restarted_has_no_restart_marker(aligned: Timeline) -> None:
    assert not [m for m in aligned.markers if m.kind in ("job failure", "restart", "restore")]


# --- geometry read back from the figures ---------------------------------------------------------


def _page_bars(figure: Any) -> list[dict[str, Any]]:
    """Every bar of the page's figure: its trace, row, checkpoint, base, extent, pattern."""
    bars = []
    for trace in figure.data:
        if trace.type != "bar" or trace.y == (None,):
            continue
        shapes = trace.marker.pattern.shape
        for n, row in enumerate(trace.y):
            bars.append(
                {
                    "trace": trace.name,
                    "row": row,
                    "checkpoint": trace.customdata[n],
                    "base": trace.base[n],
                    "x": trace.x[n],
                    "offset": trace.offset[n],
                    "height": trace.width[n],
                    "widened": shapes[n] == "/",
                    "pattern": shapes[n],
                }
            )
    return bars


def test_bar_extents_equal_the_phase_durations(aligned: Timeline) -> None:
    lay = layout(aligned)
    assert lay.scale == "time" and lay.unit_ms == 1  # ms on the axis
    px = (lay.x_range[1] - lay.x_range[0]) / PLOT_PX
    drawn = _page_bars(plotly_figure(aligned))
    truths = {(b.phase, b.row, b.checkpoint_id): b for b in aligned.bars}
    assert len(drawn) == len(aligned.bars) + len(aligned.checkpoints)
    phases_seen = set()
    for bar in drawn:
        if bar["trace"] == "checkpoint":
            continue
        truth = truths[bar["trace"], bar["row"], bar["checkpoint"]]
        assert bar["base"] == truth.start
        if bar["widened"]:  # only a bar too thin to see, and never wider than it must be
            assert truth.end - truth.start < MIN_PX * px + 1
            assert bar["x"] > truth.end - truth.start
        else:
            assert bar["x"] == pytest.approx(truth.end - truth.start)
            assert bar["x"] == pytest.approx(truth.duration)  # as the body reports it
        phases_seen.add(bar["trace"])
    assert phases_seen >= {"end to end", "start delay", "alignment"}
    # the phases of the REST bodies: a start delay of tens of ms drawn as long as it lasted
    delays = [b for b in drawn if b["trace"] == "start delay" and not b["widened"]]
    assert delays and max(b["x"] for b in delays) >= 40


def test_the_files_draw_the_same_geometry(aligned: Timeline) -> None:
    """The PNG/SVG/HTML figure has a patch per bar of the geometry, as wide."""
    tips: dict[str, str] = {}
    figure = matplotlib_figure([aligned], tooltips=tips)
    lay = layout(aligned)
    (ax,) = figure.axes
    patches = {p.get_gid(): p for p in ax.get_children() if str(p.get_gid()).startswith("tl0-bar")}
    assert len(patches) == len(lay.rects)
    for n, r in enumerate(lay.rects):
        patch = patches[f"tl0-bar{n}"]
        assert patch.get_x() == pytest.approx(r.x0)
        assert patch.get_width() == pytest.approx(r.x1 - r.x0)
        assert tips[f"tl0-bar{n}"] == r.hover


def _no_reach_into_the_next_checkpoint(lay: Layout, timeline: Timeline) -> None:
    triggers = sorted((c.start, c.checkpoint_id) for c in timeline.checkpoints)
    following = {a[1]: b for a, b in itertools.pairwise(triggers)}
    ends: dict[tuple[str, float], list[tuple[float, float, int]]] = {}
    for r in lay.rects:
        if r.checkpoint_id in following:
            start, cid = following[r.checkpoint_id]
            # a bar ends where it lasted, or (widened) before the next checkpoint's trigger
            assert r.x1 <= max(lay.to_x(start, cid), r.true_x1) + 1e-9, r
        ends.setdefault((r.row, r.offset), []).append((r.x0, r.x1, r.checkpoint_id))
    for lane in ends.values():  # no two bars of one lane overlap (their checkpoints did not)
        lane.sort()
        for (_, x1, a), (x0, _, b) in itertools.pairwise(lane):
            assert a == b or x1 <= x0 + 1e-9, (a, b)


@pytest.mark.parametrize("scale", [None, "time", "checkpoint"])
def test_no_bar_reaches_into_the_next_checkpoint(
    scale: str | None,
    finished: Any,
    aligned: Timeline,
    unaligned_short_history: Timeline,
    two_restarts: tuple[Timeline, list[int]],
    flink: Timeline,
) -> None:
    registry, view, _ = finished
    timelines = [
        build_timeline(view.job_id, registry.body_getter(view.job_id)),
        aligned,
        unaligned_short_history,
        two_restarts[0],
        flink,
    ]
    for timeline in timelines:
        _no_reach_into_the_next_checkpoint(layout(timeline, scale), timeline)


def test_the_page_figure_holds_the_same_extents(finished: Any) -> None:
    registry, view, _ = finished
    timeline = build_timeline(view.job_id, registry.body_getter(view.job_id))
    lay = layout(timeline)
    drawn = sorted(
        (b["trace"], b["row"], b["checkpoint"], b["base"], b["base"] + b["x"])
        for b in _page_bars(plotly_figure(timeline))
    )
    expected = sorted((r.trace, r.row, r.checkpoint_id, r.x0, r.x1) for r in lay.rects)
    assert len(drawn) == len(expected)
    for got, want in zip(drawn, expected, strict=True):
        assert got[:3] == want[:3]
        assert got[3:] == pytest.approx(want[3:])


def test_virtual_time_checkpoints_of_0_ms_get_a_scale_that_shows_them(finished: Any) -> None:
    """On the simulation the keyed sum's checkpoints last 0 ms of virtual time: each gets a
    slot on its own time scale, and its 0 ms bars fill it, hatched as drawn wider."""
    registry, view, _ = finished
    timeline = build_timeline(view.job_id, registry.body_getter(view.job_id))
    lay = layout(timeline)
    assert lay.scale == "checkpoint"
    assert "virtual time (the simulation)" in lay.x_title
    assert "each on its own time scale" in lay.x_title
    px = (lay.x_range[1] - lay.x_range[0]) / PLOT_PX
    for r in lay.rects:
        assert r.x1 - r.x0 >= MIN_PX * px - 1e-9  # seen
        assert r.widened == (r.x1 - r.true_x1 > 1e-9)
        if r.widened:
            assert WIDENED in r.hover
    zero = [b for b in timeline.bars if b.phase == "end to end" and b.end == b.start]
    assert zero and all(
        next(r for r in lay.rects if (r.trace, r.row, r.checkpoint_id) == key).widened
        for key in (("end to end", b.row, b.checkpoint_id) for b in zero)
    )
    # on the time axis the same run is drawn to scale: a 0 ms bar is not stretched past its ms
    timed = layout(timeline, "time")
    assert timed.x_title.startswith("ms of virtual time (the simulation) since the job started")


def test_the_axis_spans_the_checkpoints_drawn(
    unaligned_short_history: Timeline, flink: Timeline
) -> None:
    timeline = unaligned_short_history
    assert len(timeline.checkpoints) == 4 and timeline.history.not_kept > 0
    first = min(c.start for c in timeline.checkpoints)
    assert first > 1000  # after the failure and the restart's delay of 1 s
    for lay in (layout(timeline), layout(timeline, "time")):
        assert lay.to_x(first, None) - lay.x_range[0] < 0.05 * (lay.x_range[1] - lay.x_range[0])
        ids = [c.checkpoint_id for c in timeline.checkpoints]
        assert f"checkpoints {min(ids)} to {max(ids)} of {timeline.history.total}" in lay.subtitle
        assert "web.checkpoints.history" in lay.subtitle
        # the failure and the restart happened before the axis: the subtitle names them
        assert "before the axis: failure 1 in Slow (1/2)" in lay.subtitle
        assert "restart 1: restored checkpoint 1" in lay.subtitle
        assert not lay.lines
    # Flink's own archive: 10 of 19 checkpoints, the latest at 97 s to 195 s of the job
    lay = layout(flink)
    assert lay.unit_ms == 1000 and lay.x_range[0] > 95
    assert "checkpoints 7 to 16 of 19" in lay.subtitle


def test_web_checkpoints_history_is_read_as_flink_reads_it(finished: Any) -> None:
    registry, view, _ = finished
    get = registry.body_getter(view.job_id)
    # ckptsim serves the job's configuration (/jobs/:id/jobmanager/config), as Flink does
    assert build_timeline(view.job_id, get).history.size == 100  # tests/rest/conftest.py's

    def with_config(key: str, value: str) -> Callable[[str], Any]:
        def body(path: str) -> Any:
            if path.endswith("/jobmanager/config"):
                return [{"key": "parallelism.default", "value": "2"}, {"key": key, "value": value}]
            return get(path)

        return body

    for key in ("web.checkpoints.history", "jobmanager.web.checkpoints.history"):
        timeline = build_timeline(view.job_id, with_config(key, "100"))
        assert timeline.history.size == 100
        assert timeline.history.kept == len(timeline.checkpoints)
        assert timeline.history.total == view.checkpoints["counts"]["total"]


def test_labels_do_not_overlap(
    finished: Any,
    aligned: Timeline,
    unaligned_short_history: Timeline,
    two_restarts: tuple[Timeline, list[int]],
    many_checkpoints: Timeline,
    flink: Timeline,
) -> None:
    registry, view, _ = finished
    timelines = [
        build_timeline(view.job_id, registry.body_getter(view.job_id)),
        aligned,
        unaligned_short_history,
        two_restarts[0],
        many_checkpoints,
        flink,
    ]
    for timeline in timelines:
        for scale in ("time", "checkpoint"):
            lay = layout(timeline, scale)
            for band in ("ids", "events"):
                for level in range(lay.levels(band)):
                    placed = sorted(
                        (lb.x, lb.x + lb.width)
                        for lb in lay.labels
                        if (lb.band, lb.level) == (band, level)
                    )
                    for (_, end), (start, _) in itertools.pairwise(placed):
                        assert end <= start + 1e-9, (timeline.name, scale, band, level)
                    assert all(lay.x_range[0] - 1e-9 <= a for a, _ in placed)
                    assert all(b <= lay.x_range[1] + 1e-9 for _, b in placed)


def test_checkpoint_ids_are_on_the_page_chart(two_restarts: tuple[Timeline, list[int]]) -> None:
    timeline, _ = two_restarts
    annotations = [a.text for a in plotly_figure(timeline).layout.annotations]
    for span in timeline.checkpoints:
        text = (
            f"{span.checkpoint_id} failed" if span.status == "FAILED" else str(span.checkpoint_id)
        )
        assert text in annotations


def test_unaligned_checkpoints_show_the_in_flight_data_they_persisted(
    unaligned_short_history: Timeline,
) -> None:
    timeline = unaligned_short_history
    assert timeline.alignment == "unaligned"
    lay = layout(timeline)
    persisted = [c for c in timeline.checkpoints if c.persisted > 0]
    assert persisted
    for span in persisted:
        (label,) = [lb for lb in lay.labels if lb.checkpoint_id == span.checkpoint_id]
        kb = f"{span.persisted / 1000:.1f} KB"
        assert label.text == f"{span.checkpoint_id} · {kb}"
        assert f"in-flight data persisted {kb}" in label.hover
    subtask = [b for b in timeline.bars if b.phase == "end to end" and b.persisted > 0]
    assert subtask
    hovers = {r.hover for r in lay.rects if r.trace == "end to end"}
    assert all(
        any(f"in-flight data persisted {b.persisted / 1000:.1f} KB" in h for h in hovers)
        for b in subtask
    )


def test_a_palette_of_distinct_colour_blind_safe_colours_failed_checkpoints_as_failed(
    finished: Any,
) -> None:
    meanings = {**{p: COLORS[p] for p in PHASES[1:]}, **MARKER_COLORS, "failed": VERMILLION}
    del meanings["restore"]  # a restore and a restart: one meaning, two line styles
    assert len(set(meanings.values())) == len(meanings)
    assert set(meanings.values()) <= OKABE_ITO
    registry, view, _ = finished
    timeline = build_timeline(view.job_id, registry.body_getter(view.job_id))
    lay = layout(timeline)
    lane = {r.checkpoint_id: r for r in lay.rects if r.trace == "checkpoint"}
    for span in timeline.checkpoints:
        failed = span.status == "FAILED"
        assert lane[span.checkpoint_id].color == (VERMILLION if failed else GREY)
        for r in lay.rects:
            if r.checkpoint_id == span.checkpoint_id and r.trace == "end to end":
                assert r.color == (FAILED_FILL if failed else COLORS["end to end"])


def test_a_checkpoint_in_progress_runs_to_now_its_pending_subtasks_dotted(finished: Any) -> None:
    registry, view, _ = finished
    get = registry.body_getter(view.job_id)
    base = f"/jobs/{view.job_id}"
    job = get(base)
    last = max(e["id"] for e in get(f"{base}/checkpoints")["history"])

    def vertex_name(path: str) -> str:
        vid = path.rsplit("/", 1)[1]
        return str(next(v["name"] for v in job["vertices"] if v["id"] == vid))

    def live(path: str) -> Any:  # the last checkpoint, seen while one subtask still works on it
        body = copy.deepcopy(get(path))
        if path == base:
            body["end-time"], body["now"] = -1, body["end-time"] + 40
        elif path == f"{base}/checkpoints":
            entry = next(e for e in body["history"] if e["id"] == last)
            entry.update(status="IN_PROGRESS", num_acknowledged_subtasks=3)
        elif path.startswith(f"{base}/checkpoints/details/{last}/subtasks/") and body:
            body["status"] = "IN_PROGRESS"
            if "Reduce" in vertex_name(path):  # Flink's row of a subtask yet to acknowledge
                body["subtasks"][0] = {
                    "className": "pending",
                    "index": 0,
                    "status": "pending_or_failed",
                }
        return body

    timeline = build_timeline(view.job_id, live)
    span = next(c for c in timeline.checkpoints if c.checkpoint_id == last)
    now = job["end-time"] + 40 - job["start-time"]
    assert (span.status, span.end, timeline.end) == ("IN_PROGRESS", now, now)
    (pending,) = [b for b in timeline.bars if (b.phase, b.checkpoint_id) == (UNACKNOWLEDGED, last)]
    assert (pending.row, pending.start, pending.end) == (
        "Reduce -> Sink: sums (1/2)",
        span.start,
        now,
    )
    (drawn,) = [
        b
        for b in _page_bars(plotly_figure(timeline))
        if (b["trace"], b["checkpoint"]) == (UNACKNOWLEDGED, last)
    ]
    assert drawn["pattern"] == "."  # dotted: not acknowledged yet (a failed one's: crossed)
    assert f"{last} …" in [lb.text for lb in layout(timeline).labels]


def test_a_job_without_checkpoints_draws_its_failures() -> None:
    def build(env: StreamExecutionEnvironment) -> None:
        env.set_parallelism(2)
        env.configure({"restart-strategy.type": "fixed-delay"})
        (
            env.from_generator(lambda i: (i % 10, 1), 3_000, rate=30_000, name="seq")
            .key_by(lambda r: r[0])
            .reduce(lambda a, b: (a[0], a[1] + b[1]), name="Reduce")
            .collect("sums")
        )

    timeline = simulate(build, seed=1, faults=[FailTask(task="reduce-2#0", at_record=500)])
    assert not timeline.checkpoints and timeline.window() == (0, timeline.end)
    (restart,) = [m for m in timeline.markers if m.kind == "restart"]
    assert restart.checkpoint_id is None and restart.label == "restart 1: no checkpoint to restore"
    lay = layout(timeline)
    assert lay.scale == "time" and [ln.kind for ln in lay.lines] == ["job failure", "restart"]
    assert "no checkpoint in the history" in lay.subtitle


# --- the files -----------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".png", ".svg", ".html"])
def test_ckptsim_timeline_writes_the_picture(finished: Any, tmp_path: Path, suffix: str) -> None:
    archive = write_archive(finished[1], tmp_path / "archive")
    out = tmp_path / f"timeline{suffix}"
    assert main(["timeline", str(archive), "-o", str(out)]) == 0
    data = out.read_bytes()
    if suffix == ".png":
        assert data.startswith(b"\x89PNG")
    elif suffix == ".svg":
        assert b"<svg" in data[:1000] and b"<title>checkpoint 1 (COMPLETED" in data
    else:
        assert data.startswith(b"<!doctype html>") and b"<svg" in data


def test_the_html_file_is_self_contained_and_under_1_mb(
    many_checkpoints: Timeline, tmp_path: Path
) -> None:
    timeline = many_checkpoints
    assert len(timeline.checkpoints) >= 80 and len(timeline.bars) >= 300
    out = write_timeline([timeline, timeline], tmp_path / "t.html")
    text = out.read_text(encoding="utf-8")
    assert out.stat().st_size < 1_000_000
    assert "<script" not in text and not re.search(r'(src|href)="(https?:)?//', text)
    tooltips = re.findall(r'<g id="tl\d-bar\d+"><title>', text)
    assert len(tooltips) == 2 * len(layout(timeline).rects)  # a tooltip on every bar


def test_a_hundred_checkpoints_of_six_subtasks_and_four_phases_stay_under_1_mb(
    tmp_path: Path,
) -> None:
    """The largest picture a default history of 100 draws: every bar a tooltip."""
    rows = [f"Vertex number {v} of a long name ({i + 1}/2)" for v in range(3) for i in range(2)]
    timeline = Timeline(
        job_id="f" * 32,
        name="big",
        status="FINISHED",
        start_epoch_ms=1,
        end=100_000,
        alignment="unaligned",
        rows=rows,
        history=History(size=100, total=300, kept=100),
    )
    phases = (("start delay", 100), ("alignment", 100), ("sync", 50), ("async", 100))
    for k in range(100):
        cid, trigger = 200 + k, 1000 * k + 10
        timeline.checkpoints.append(
            CheckpointSpan(
                checkpoint_id=cid,
                status="COMPLETED",
                checkpoint_type="UNALIGNED_CHECKPOINT",
                start=trigger,
                end=trigger + 400,
                persisted=123_456,
                acknowledged=6,
                subtasks=6,
            )
        )
        for row in rows:
            timeline.bars.append(
                Bar(
                    row=row,
                    checkpoint_id=cid,
                    phase="end to end",
                    start=trigger,
                    end=trigger + 400,
                    status="COMPLETED",
                    duration=400,
                    persisted=20_000,
                    breakdown=phases,
                )
            )
            t = trigger
            for phase, duration in phases:
                timeline.bars.append(
                    Bar(
                        row=row,
                        checkpoint_id=cid,
                        phase=phase,
                        start=t,
                        end=t + duration,
                        status="COMPLETED",
                        duration=duration,
                    )
                )
                t += duration
    out = write_timeline([timeline], tmp_path / "t.html")
    assert len(layout(timeline).rects) == 3100
    assert out.stat().st_size < 1_000_000
    assert len(re.findall(r'<g id="tl0-bar\d+"><title>', out.read_text(encoding="utf-8"))) == 3100


def test_run_timeline_writes_the_picture_at_the_end(tmp_path: Path) -> None:
    out = tmp_path / "t.png"
    assert main(["run", script(tmp_path), "--simulate", "-q", "--timeline", str(out)]) == 0
    assert out.read_bytes().startswith(b"\x89PNG")


def test_a_timeline_file_of_another_kind_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["run", script(tmp_path), "--timeline", str(tmp_path / "t.pdf")]) == 2


def test_flinks_archive_draws_too(flink: Timeline) -> None:
    assert len(flink.rows) == 4
    assert {b.phase for b in flink.bars} >= {"end to end", "start delay", "async"}
    assert len(flink.checkpoints) == 10  # the history; one of them had no acknowledgement
    assert len({b.checkpoint_id for b in flink.bars if b.phase != UNACKNOWLEDGED}) == 9
    assert [c.checkpoint_id for c in flink.checkpoints if c.status == "FAILED"] == [13, 14, 15, 16]
    missing = {(b.checkpoint_id, b.row) for b in flink.bars if b.phase == UNACKNOWLEDGED}
    assert {cid for cid, _ in missing} == {13, 14, 15, 16}
    assert {row for cid, row in missing if cid == 13} == set(flink.rows)  # none acknowledged
