"""Drawing the checkpoint timeline (``runtime.timeline``).

One geometry (``layout``), drawn twice: a plotly figure for the web page (its plotly.js is
served by ``ckptsim serve`` itself) and a matplotlib figure for ``.png``, ``.svg`` and
``.html`` files (the HTML file holds the SVG inline, a tooltip on every bar: no script, well
under 1 MB, opens offline).

What the geometry promises:

- **true widths.** A bar's extent is its duration on the axis. A bar too thin to see (under
  ``MIN_PX`` pixels, or under the 1 ms resolution of Flink's timestamps) is drawn wider, but
  never into the next checkpoint (nor past its slot), and it is hatched: "drawn wider than it
  lasted". The phases of a subtask lie in four thin lanes inside its end-to-end bar, so a
  widened phase does not cover the next one.
- **an axis over the checkpoints drawn.** Flink keeps the latest ``web.checkpoints.history``
  checkpoints; the axis spans them (and the failures and restarts among them), not the job.
- **two scales.** Seconds (or ms) since the job started; or, when the checkpoints last too
  little to be seen on one time axis (the simulation's virtual time: 0 ms checkpoints), a slot
  per checkpoint, each on its own time scale from its trigger to its end, the time between
  them squeezed into narrow gaps. The axis title says which.
- **every failure and restart** as a line with a label naming the restored checkpoint; the
  labels and the checkpoint ids above the rows are set in levels so that none overlaps
  another (measured at ``PLOT_PX`` pixels of plot width).
- **Okabe-Ito colours**, one per meaning; a failed checkpoint in vermillion, its subtasks that
  did not acknowledge it crossed; unaligned checkpoints' persisted in-flight bytes by their
  ids; every figure in the tooltips.
"""

from __future__ import annotations

import html
import io
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

from actors.simulation import SIMULATION_EPOCH_MS
from runtime.timeline import PHASES, UNACKNOWLEDGED, CheckpointSpan, Marker, Timeline

FORMATS = (".png", ".svg", ".html")

# Okabe & Ito's colour-blind safe palette
BLACK, ORANGE, SKY_BLUE, GREEN = "#000000", "#E69F00", "#56B4E9", "#009E73"
BLUE, VERMILLION, PURPLE, GREY = "#0072B2", "#D55E00", "#CC79A7", "#7F7F7F"
COLORS = {
    "end to end": "#E3E3E3",
    "start delay": ORANGE,
    "alignment": SKY_BLUE,
    "sync": BLUE,
    "async": GREEN,
    UNACKNOWLEDGED: "#FFFFFF",
    "checkpoint": GREY,
}
#: fill of a failed checkpoint's end-to-end bars (its lane is vermillion)
FAILED_FILL = "#F6D2BC"
MARKER_COLORS = {"job failure": BLACK, "restart": PURPLE, "restore": PURPLE}
MARKER_DASH = {"job failure": "solid", "restart": "dash", "restore": "dot"}
MPL_DASH: dict[str, Any] = {"job failure": "-", "restart": "--", "restore": ":"}
WIDENED = "drawn wider than it lasted"
PENDING = "not acknowledged yet"
FAILED = "failed checkpoint"
CHECKPOINT_ROW = "checkpoints"

#: the plot's nominal width in pixels: labels are placed so that they do not overlap at it
PLOT_PX = 1000
#: a bar narrower than this (at ``PLOT_PX``) is drawn this wide, hatched
MIN_PX = 4
#: the width of a label's character in pixels (11 px sans-serif, generously)
CHAR_PX = 7.0
#: checkpoint scale: a slot per checkpoint, and the gap between two
SLOT, GAP = 1.0, 0.4
#: levels of checkpoint-id labels before an id is left to the tooltip
ID_LEVELS = 3
#: row geometry, in row units (a row's centre at 0, up positive): (offset, height)
END_TO_END_LANE = (-0.4, 0.8)
PHASE_LANES = {
    "start delay": (0.19, 0.16),
    "alignment": (0.01, 0.16),
    "sync": (-0.17, 0.16),
    "async": (-0.35, 0.16),
}
CHECKPOINT_LANE = (-0.3, 0.6)


@dataclass(frozen=True, slots=True, kw_only=True)
class Rect:
    """A bar: ``x0..x1`` on the axis, ``offset..offset + height`` in its row."""

    trace: str
    row: str
    checkpoint_id: int
    x0: float
    x1: float
    #: where the true extent ends (``x1`` unless widened)
    true_x1: float
    offset: float
    height: float
    color: str
    widened: bool
    failed: bool
    hover: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Line:
    x: float
    kind: str
    hover: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Label:
    """Text above the rows at ``x`` (its left end), ``level`` lines up; ``width`` in axis
    units at ``PLOT_PX``."""

    x: float
    level: int
    text: str
    width: float
    color: str
    hover: str
    band: str  # "ids" | "events"
    checkpoint_id: int | None = None
    kind: str = ""


@dataclass(slots=True, kw_only=True)
class Layout:
    title: str
    subtitle: str
    scale: str  # "time" | "checkpoint"
    x_title: str
    x_range: tuple[float, float]
    #: ms per axis unit on the time scale (1 or 1000); 0 on the checkpoint scale
    unit_ms: int
    to_x: Callable[..., float]
    #: explicit ticks (the checkpoint scale), else None
    ticks: list[tuple[float, str]] | None
    #: top to bottom: the checkpoints' row, then a row per subtask
    rows: list[str]
    rects: list[Rect] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)

    def levels(self, band: str) -> int:
        return 1 + max((lb.level for lb in self.labels if lb.band == band), default=-1)


# --- the geometry ----------------------------------------------------------------------------


def is_virtual(timeline: Timeline) -> bool:
    """The job ran on the simulation (its clock starts at the simulation's epoch)."""
    return timeline.start_epoch_ms == SIMULATION_EPOCH_MS


def choose_scale(timeline: Timeline) -> str:
    """ "checkpoint" when the checkpoints are too short to see on one time axis (under 8 px
    each, as the median), else "time"."""
    if not timeline.checkpoints:
        return "time"
    start, end = timeline.window()
    typical = median(c.end - c.start for c in timeline.checkpoints)
    return "checkpoint" if typical * PLOT_PX < 8 * max(end - start, 1) else "time"


def layout(timeline: Timeline, scale: str | None = None) -> Layout:
    """The geometry of ``timeline`` on ``scale`` ("time", "checkpoint"; None: chosen)."""
    scale = scale or choose_scale(timeline)
    if scale not in ("time", "checkpoint"):
        raise ValueError(f"unknown scale {scale!r}: use 'time' or 'checkpoint'")
    axis = _TimeAxis(timeline) if scale == "time" else _CheckpointAxis(timeline)
    lo, hi = axis.x_range
    px_unit = (hi - lo) / PLOT_PX  # axis units per pixel
    out = Layout(
        title=_title(timeline),
        subtitle=_subtitle(timeline),
        scale=scale,
        x_title=axis.title(is_virtual(timeline)),
        x_range=axis.x_range,
        unit_ms=axis.unit_ms,
        to_x=axis.x,
        ticks=axis.ticks(),
        rows=[CHECKPOINT_ROW, *timeline.rows],
    )
    nexts = _next_triggers(timeline.checkpoints)
    spans = {c.checkpoint_id: c for c in timeline.checkpoints}

    def rect(
        trace: str,
        row: str,
        span: CheckpointSpan,
        t0: int,
        t1: int,
        lane: tuple[float, float],
        color: str,
        hover: str,
    ) -> Rect:
        cid = span.checkpoint_id
        x0, true_x1 = axis.x(t0, cid), axis.x(t1, cid)
        # the room: up to the next checkpoint's trigger, within this checkpoint's slot
        following = nexts.get(cid)
        room = min(
            hi if following is None else max(axis.x(*following), true_x1),
            axis.slot_end(cid),
        )
        wanted = max(true_x1, x0 + MIN_PX * px_unit)
        if t1 - t0 < 1:  # under the resolution of the timestamps: 1 ms at least
            wanted = max(wanted, axis.x(t0 + 1, cid))
        x1 = max(true_x1, min(wanted, room))
        widened = x1 - true_x1 > 1e-9
        return Rect(
            trace=trace,
            row=row,
            checkpoint_id=cid,
            x0=x0,
            x1=x1,
            true_x1=true_x1,
            offset=lane[0],
            height=lane[1],
            color=color,
            widened=widened,
            failed=span.status == "FAILED",
            hover=hover + (f" ({WIDENED})" if widened else ""),
        )

    for span in timeline.checkpoints:
        out.rects.append(
            rect(
                "checkpoint",
                CHECKPOINT_ROW,
                span,
                span.start,
                span.end,
                CHECKPOINT_LANE,
                VERMILLION if span.status == "FAILED" else GREY,
                _checkpoint_hover(span),
            )
        )
    for phase in (*PHASES, UNACKNOWLEDGED):
        for bar in (b for b in timeline.bars if b.phase == phase):
            span = spans[bar.checkpoint_id]
            failed = span.status == "FAILED"
            color = FAILED_FILL if failed and phase == "end to end" else COLORS[phase]
            lane = PHASE_LANES.get(phase, END_TO_END_LANE)
            out.rects.append(
                rect(phase, bar.row, span, bar.start, bar.end, lane, color, _bar_hover(bar, span))
            )
    _lines_and_labels(out, timeline, axis, px_unit)
    return out


class _TimeAxis:
    """ms (or seconds) since the job started, over the window."""

    def __init__(self, timeline: Timeline) -> None:
        start, end = timeline.window()
        self.unit_ms = 1 if end - start < 2000 else 1000
        pad = max((end - start) * 0.02, 1)
        self.x_range = (self.x(start - pad), self.x(end + pad))

    def x(self, t: float, checkpoint_id: int | None = None) -> float:
        return t / self.unit_ms

    def slot_end(self, checkpoint_id: int) -> float:
        return self.x_range[1]

    def title(self, virtual: bool) -> str:
        unit = "ms" if self.unit_ms == 1 else "seconds"
        return (
            f"{unit}{' of virtual time (the simulation)' if virtual else ''} since the job started"
        )

    def ticks(self) -> list[tuple[float, str]] | None:
        return None


class _CheckpointAxis:
    """A slot per checkpoint (per group of overlapping ones), each on its own time scale from
    its trigger to its end (1 ms at least: the resolution of the timestamps); the time between
    two squeezed into a gap. x: slots of ``SLOT``, gaps of ``GAP``."""

    unit_ms = 0

    def __init__(self, timeline: Timeline) -> None:
        start, end = timeline.window()
        ends: dict[int, int] = {c.checkpoint_id: c.end for c in timeline.checkpoints}
        for bar in timeline.bars:
            ends[bar.checkpoint_id] = max(ends[bar.checkpoint_id], bar.end)
        clusters: list[tuple[int, int, list[int]]] = []  # (a, b) ms, checkpoint ids
        for c in sorted(timeline.checkpoints, key=lambda c: (c.start, c.checkpoint_id)):
            if clusters and c.start < clusters[-1][1]:
                a, b, ids = clusters[-1]
                clusters[-1] = (a, max(b, ends[c.checkpoint_id]), [*ids, c.checkpoint_id])
            else:
                clusters.append((c.start, ends[c.checkpoint_id], [c.checkpoint_id]))
        #: (t0, t1, x0, x1): slots and gaps in order
        self.pieces: list[tuple[float, float, float, float]] = []
        self.slots: dict[int, tuple[float, float, float, float]] = {}
        self.starts: list[tuple[float, int]] = []  # x, ms
        x = 0.0
        for n, (a, b, ids) in enumerate(clusters):
            if n > 0:
                self.pieces.append((clusters[n - 1][1], a, x, x + GAP))
                x += GAP
            piece = (float(a), float(max(b, a + 1)), x, x + SLOT)
            self.pieces.append(piece)
            self.slots.update((cid, piece) for cid in ids)
            self.starts.append((x, a))
            x += SLOT
        self.first = float(clusters[0][0]) if clusters else 0.0
        self.start = start
        last = max(clusters[-1][1], clusters[-1][0] + 1) if clusters else end
        if end > last:
            self.pieces.append((last, end, x, x + GAP))
            x += GAP
        self.x_range = (-0.15, x + 0.15)
        self.seconds = end >= 10_000

    def x(self, t: float, checkpoint_id: int | None = None) -> float:
        piece = self.slots.get(checkpoint_id) if checkpoint_id is not None else None
        if piece is None:
            if not self.pieces or t < self.first:
                return -GAP * min((self.first - t) / max(self.first - self.start, 1), 1)
            piece = next((p for p in self.pieces if p[0] <= t <= p[1]), self.pieces[-1])
        t0, t1, x0, x1 = piece
        return x0 + min(max((t - t0) / max(t1 - t0, 1e-9), 0.0), 1.0) * (x1 - x0)

    def slot_end(self, checkpoint_id: int) -> float:
        return self.slots[checkpoint_id][3] if checkpoint_id in self.slots else self.x_range[1]

    def title(self, virtual: bool) -> str:
        return (
            "checkpoints, each on its own time scale: a slot from its trigger to its end (1 ms "
            f"at least), the time between them squeezed\nticks: {self.unit}"
            f"{' of virtual time (the simulation)' if virtual else ''} since the job started"
        )

    def ticks(self) -> list[tuple[float, str]]:
        """A tick at every slot's start that has room for its text."""
        px_unit = (self.x_range[1] - self.x_range[0]) / PLOT_PX
        ticks = [(x0, self._tick(ms)) for x0, ms in self.starts]
        items = [(x0, (len(text) * CHAR_PX + 8) * px_unit) for x0, text in ticks]
        levels = _place(items, 1, centred=True)
        return [tick for tick, level in zip(ticks, levels, strict=True) if level == 0]

    @property
    def unit(self) -> str:
        return "seconds" if self.seconds else "ms"

    def _tick(self, ms: int) -> str:
        return f"{ms / 1000:g} s" if self.seconds else f"{ms} ms"


_Axis = _TimeAxis | _CheckpointAxis


def _next_triggers(checkpoints: Sequence[CheckpointSpan]) -> dict[int, tuple[int, int]]:
    """For each checkpoint, the next one's trigger and id (no bar may be widened past it)."""
    ordered = sorted(checkpoints, key=lambda c: (c.start, c.checkpoint_id))
    return {c.checkpoint_id: (d.start, d.checkpoint_id) for c, d in itertools.pairwise(ordered)}


def _place(
    items: Sequence[tuple[float, float]], max_levels: int, *, centred: bool = False
) -> list[int | None]:
    """Greedy levels for (x, width) labels in x order: the lowest level where a label clears
    the one before it; None when none of ``max_levels`` has room."""
    ends: list[float] = []
    out: list[int | None] = [None] * len(items)
    order = sorted(range(len(items)), key=lambda i: items[i][0])
    for i in order:
        x, width = items[i]
        left = x - width / 2 if centred else x
        for level, last in enumerate(ends):
            if left >= last:
                ends[level] = left + width
                out[i] = level
                break
        else:
            if len(ends) < max_levels:
                ends.append(left + width)
                out[i] = len(ends) - 1
    return out


def _lines_and_labels(out: Layout, timeline: Timeline, axis: _Axis, px_unit: float) -> None:
    start, _ = timeline.window()
    lo, hi = out.x_range

    def width(text: str) -> float:
        return (len(text) * CHAR_PX + 6) * px_unit

    def fit(x: float, text: str) -> float:
        """Where a label starts: at ``x``, or left of it so as to end inside the axis."""
        return max(lo, min(x, hi - width(text)))

    # the checkpoint ids (failed ones say so; unaligned ones carry their persisted bytes)
    ids = []
    for span in timeline.checkpoints:
        text = str(span.checkpoint_id)
        if span.status == "FAILED":
            text += " failed"
        elif span.status == "IN_PROGRESS":
            text += " …"
        if span.persisted > 0:
            text += f" · {_size(span.persisted)}"
        ids.append((span, text))
    xs = [fit(axis.x(s.start, s.checkpoint_id), t) for s, t in ids]
    levels = _place([(x, width(t)) for x, (_, t) in zip(xs, ids, strict=True)], ID_LEVELS)
    for (span, text), x, level in zip(ids, xs, levels, strict=True):
        if level is not None:
            out.labels.append(
                Label(
                    x=x,
                    level=level,
                    text=text,
                    width=width(text),
                    color=VERMILLION if span.status == "FAILED" else "#333333",
                    hover=_checkpoint_hover(span),
                    band="ids",
                    checkpoint_id=span.checkpoint_id,
                )
            )
    # failures and restarts on the axis (those before it are in the subtitle)
    events = [m for m in timeline.markers if m.kind in MARKER_COLORS and m.at >= start]
    texts = [_short(m) for m in events]
    xs = [min(max(axis.x(m.at), lo), hi) for m in events]
    starts = [fit(x, t) for x, t in zip(xs, texts, strict=True)]
    levels = _place([(x, width(t)) for x, t in zip(starts, texts, strict=True)], len(events) or 1)
    for marker, x, left, text, level in zip(events, xs, starts, texts, levels, strict=True):
        out.lines.append(Line(x=x, kind=marker.kind, hover=marker.detail or marker.label))
        out.labels.append(
            Label(
                x=left,
                level=level or 0,
                text=text,
                width=width(text),
                color=MARKER_COLORS[marker.kind],
                hover=marker.detail or marker.label,
                band="events",
                checkpoint_id=marker.checkpoint_id,
                kind=marker.kind,
            )
        )


def _short(marker: Marker, limit: int = 44) -> str:
    """A marker's label on the chart (the full text is its tooltip)."""
    if marker.kind == "job failure":
        text = f"failure {marker.number}" + (
            marker.label[len("failure") :] if marker.label.startswith("failure") else ""
        )
    else:
        text = marker.label
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _title(timeline: Timeline) -> str:
    mode = f"{timeline.alignment} checkpoints" if timeline.alignment else "checkpoints"
    return f"{timeline.name!r} ({timeline.status}), {mode}, job {timeline.job_id[:8]}"


def _subtitle(timeline: Timeline) -> str:
    """Which checkpoints are drawn (the history), and what happened before them."""
    parts = []
    history = timeline.history
    ids = [c.checkpoint_id for c in timeline.checkpoints]
    if ids:
        drawn = f"checkpoints {min(ids)} to {max(ids)}" if len(ids) > 1 else f"checkpoint {ids[0]}"
        if history.not_kept and history.size is not None:
            parts.append(
                f"{drawn} of {history.total}: the history keeps the latest {history.size} "
                f"(web.checkpoints.history = {history.size}); {history.not_kept} not in it"
            )
        elif history.not_kept:
            parts.append(
                f"{drawn} of {history.total}: the {history.kept} the history kept "
                f"(web.checkpoints.history); {history.not_kept} not in it (older, or failed "
                "as they were triggered)"
            )
        else:
            parts.append(f"{drawn}, all of the job's")
    else:
        parts.append("no checkpoint in the history")
    before = [m for m in timeline.outside() if m.kind in MARKER_COLORS]
    if before:
        unit = 1000 if max(m.at for m in before) >= 2000 else 1
        shown = "; ".join(f"{_short(m, 60)} at {_time(m.at, unit)}" for m in before[:4])
        more = f" and {len(before) - 4} more" if len(before) > 4 else ""
        parts.append(f"before the axis: {shown}{more}")
    if timeline.failures_truncated:
        parts.append("older failures are not in the exception history")
    return "; ".join(parts)


def _time(ms: float, unit: int) -> str:
    return f"{ms / 1000:g} s" if unit == 1000 else f"{ms:g} ms"


def _size(n: float) -> str:
    """Bytes as Flink's dashboard writes them (1000-based)."""
    if n < 1000:
        return f"{n:g} B"
    for unit in ("KB", "MB", "GB"):
        n /= 1000
        if n < 1000 or unit == "GB":
            break
    return f"{n:.1f} {unit}"


def _checkpoint_hover(span: CheckpointSpan) -> str:
    kind = "savepoint" if span.is_savepoint else "checkpoint"
    text = (
        f"{kind} {span.checkpoint_id} ({span.status}, {span.checkpoint_type}): triggered at "
        f"{span.start} ms, {span.end - span.start} ms to its "
        f"{'failure' if span.status == 'FAILED' else 'end'}; {span.acknowledged}/{span.subtasks}"
        f" subtasks acknowledged, state {_size(span.state_size)}"
    )
    if span.persisted:
        text += f", in-flight data persisted {_size(span.persisted)}"
    if span.failure:
        text += f"; {span.failure}"
    return text


def _bar_hover(bar: Any, span: CheckpointSpan) -> str:
    head = f"checkpoint {bar.checkpoint_id} ({span.status}), {bar.row}: "
    if bar.phase == "end to end":
        parts = ", ".join(f"{p} {d}" for p, d in bar.breakdown)
        text = f"{head}end to end {bar.duration} ms, {bar.start} to {bar.end} ms: {parts} ms"
        if bar.persisted:
            text += f"; in-flight data persisted {_size(bar.persisted)}"
        return text
    if bar.phase == UNACKNOWLEDGED:
        ended = "failed" if span.status == "FAILED" else "still pending"
        return f"{head}not acknowledged ({ended} at {bar.end} ms){': ' + span.failure if span.failure else ''}"
    text = f"checkpoint {bar.checkpoint_id}, {bar.row}: {bar.phase} {bar.duration} ms, "
    text += f"{bar.start} to {bar.end} ms"
    if bar.clipped:
        text += " (reported longer than the acknowledgement allows: cut at it)"
    return text


# --- plotly: the web page ---------------------------------------------------------------------

#: the traces, in drawing order (the end-to-end bars first: the page's tests find them there)
TRACES = ("end to end", UNACKNOWLEDGED, "start delay", "alignment", "sync", "async", "checkpoint")
ID_LINE_PX, EVENT_LINE_PX = 14, 16


def _pattern(r: Rect) -> str:
    """ "/": drawn wider than it lasted; "x": a subtask that did not acknowledge a failed
    checkpoint; ".": one that has not acknowledged yet (in progress)."""
    if r.widened:
        return "/"
    if r.trace == UNACKNOWLEDGED:
        return "x" if r.failed else "."
    return ""


def _ink(r: Rect) -> str:
    """The colour of a bar's hatching: vermillion on a failed checkpoint's subtask bars."""
    if r.failed and r.trace in ("end to end", UNACKNOWLEDGED):
        return VERMILLION
    return GREY if r.trace == UNACKNOWLEDGED and not r.widened else BLACK


def _outline(r: Rect) -> tuple[str, float]:
    if r.trace == "checkpoint" and not r.widened:  # white: two checkpoints side by side
        return "#FFFFFF", 1.0
    if r.widened:
        return _ink(r), 1.0
    if r.failed and r.trace in ("end to end", UNACKNOWLEDGED):
        return VERMILLION, 1.0
    if r.trace == "end to end":
        return GREY, 0.8
    return GREY, 0.0


def plotly_figure(timeline: Timeline, scale: str | None = None) -> Any:
    """The page's figure: a horizontal bar trace per phase (the end-to-end bars first, a point
    per acknowledged subtask and checkpoint, ``customdata`` its checkpoint id), a row of
    checkpoints on top, failures and restarts as lines with labels, checkpoint ids above."""
    import plotly.graph_objects as go  # noqa: PLC0415 - plotly only when drawing

    lay = layout(timeline, scale)
    figure = go.Figure()
    for trace in TRACES:
        rects = [r for r in lay.rects if r.trace == trace]
        if not rects and trace in (UNACKNOWLEDGED, "checkpoint"):
            continue
        outlines = [_outline(r) for r in rects]
        figure.add_trace(
            go.Bar(
                name=trace,
                orientation="h",
                y=[r.row for r in rects],
                base=[r.x0 for r in rects],
                x=[r.x1 - r.x0 for r in rects],
                offset=[r.offset for r in rects],
                width=[r.height for r in rects],
                customdata=[r.checkpoint_id for r in rects],
                hovertext=[r.hover for r in rects],
                hoverinfo="text",
                legendgroup=trace,
                showlegend=False,
                marker={
                    "color": [r.color for r in rects],
                    "line": {"color": [c for c, _ in outlines], "width": [w for _, w in outlines]},
                    "pattern": {
                        "shape": [_pattern(r) for r in rects],
                        "fgcolor": [_ink(r) for r in rects],
                        "size": 5,
                        "solidity": 0.25,
                    },
                },
            )
        )
    for name, fill, edge, shape in _legend_bars([lay]):
        figure.add_trace(  # the legend: an entry per meaning, the bars' traces in its groups
            go.Bar(
                name=name,
                legendgroup=name,
                orientation="h",
                y=[None],
                x=[None],
                hoverinfo="skip",
                marker={
                    "color": fill,
                    "line": {"color": edge, "width": 1},
                    "pattern": {"shape": shape, "fgcolor": edge, "size": 5, "solidity": 0.25},
                },
            )
        )
    for kind in (k for k in MARKER_COLORS if any(line.kind == k for line in lay.lines)):
        figure.add_trace(
            go.Scatter(
                name=_LINE_NAMES[kind],
                x=[None],
                y=[None],
                mode="lines",
                hoverinfo="skip",
                line={"color": MARKER_COLORS[kind], "dash": MARKER_DASH[kind]},
            )
        )
    ids = lay.levels("ids")
    for line in lay.lines:
        figure.add_shape(
            type="line",
            x0=line.x,
            x1=line.x,
            y0=0,
            y1=1,
            yref="paper",
            line={"color": MARKER_COLORS[line.kind], "width": 1.5, "dash": MARKER_DASH[line.kind]},
        )
    for label in lay.labels:
        base = 4 if label.band == "ids" else 4 + ids * ID_LINE_PX
        step = ID_LINE_PX if label.band == "ids" else EVENT_LINE_PX
        figure.add_annotation(
            x=label.x,
            y=1,
            yref="paper",
            xanchor="left",
            yanchor="bottom",
            yshift=base + label.level * step,
            text=html.escape(label.text),
            hovertext=html.escape(label.hover),
            showarrow=False,
            font={"color": label.color, "size": 10 if label.band == "ids" else 11},
        )
    bands = 8 + ids * ID_LINE_PX + lay.levels("events") * EVENT_LINE_PX
    xaxis: dict[str, Any] = {
        "title": {"text": html.escape(lay.x_title).replace("\n", "<br>")},
        "range": list(lay.x_range),
        "zeroline": False,
    }
    if lay.ticks is not None:
        xaxis.update(tickvals=[x for x, _ in lay.ticks], ticktext=[t for _, t in lay.ticks])
    figure.update_layout(
        title={
            "text": html.escape(lay.title),
            "subtitle": {"text": html.escape(lay.subtitle)},
            "x": 0.01,
            "xanchor": "left",
            "y": 1,
            "yref": "container",
            "yanchor": "top",
            "pad": {"t": 10},
        },
        barmode="overlay",
        height=190 + bands + 34 * len(lay.rows),
        margin={"l": 220, "r": 20, "t": 70 + bands, "b": 100},
        xaxis=xaxis,
        yaxis={"categoryorder": "array", "categoryarray": list(reversed(lay.rows))},
        legend={
            "orientation": "h",
            "yref": "container",
            "y": 0,
            "yanchor": "bottom",
            "x": 0,
            "xanchor": "left",
        },
        plot_bgcolor="#FFFFFF",
    )
    return figure


# --- matplotlib: PNG, SVG and HTML files ----------------------------------------------------------

#: inches per row, per label level (ids, events), and for the title and axis
ROW_IN, LEVEL_IN, FRAME_IN = 0.34, 0.16, 1.25
HATCH = {"/": "////", "x": "xxxx", ".": "..."}


def matplotlib_figure(
    timelines: list[Timeline], scale: str | None = None, *, tooltips: dict[str, str] | None = None
) -> Any:
    """The timelines one above the other, a common legend. ``tooltips`` (when given) gets an
    SVG id -> text for every bar, line and label (``write_timeline`` puts them into the
    SVG)."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    layouts = [layout(t, scale) for t in timelines]
    heights = [
        FRAME_IN + ROW_IN * len(lay.rows) + LEVEL_IN * (lay.levels("ids") + lay.levels("events"))
        for lay in layouts
    ]
    figure, axes = plt.subplots(
        len(layouts),
        1,
        figsize=(12, sum(heights) + 0.5),
        height_ratios=heights,
        layout="constrained",
        squeeze=False,
    )
    tips = tooltips if tooltips is not None else {}
    for n, (ax, lay) in enumerate(zip(axes[:, 0], layouts, strict=True)):
        _draw(ax, lay, tips, prefix=f"tl{n}-")
    figure.legend(
        handles=_legend_handles(layouts),
        loc="outside lower center",
        ncols=6,
        fontsize=8,
        frameon=False,
    )
    return figure


_LINE_NAMES = {
    "job failure": "job failure",
    "restart": "restart (the checkpoint it restored)",
    "restore": "restore",
}


def _legend_bars(layouts: Sequence[Layout]) -> list[tuple[str, str, str, str]]:
    """(name, fill, edge, pattern) of every kind of bar drawn."""
    traces = {r.trace for lay in layouts for r in lay.rects}
    out = [
        (p, COLORS[p], GREY if p == "end to end" else COLORS[p], "")
        for p in PHASES
        if p in traces or p == "end to end"
    ]
    if any(r.failed for lay in layouts for r in lay.rects):
        out.append((FAILED, VERMILLION, VERMILLION, ""))
    if any(r.trace == UNACKNOWLEDGED and r.failed for lay in layouts for r in lay.rects):
        out.append((UNACKNOWLEDGED, "#FFFFFF", VERMILLION, "x"))
    if any(r.trace == UNACKNOWLEDGED and not r.failed for lay in layouts for r in lay.rects):
        out.append((PENDING, "#FFFFFF", GREY, "."))
    if any(r.widened for lay in layouts for r in lay.rects):
        out.append((WIDENED, "#FFFFFF", BLACK, "/"))
    return out


def _legend_handles(layouts: Sequence[Layout]) -> list[Any]:
    from matplotlib.lines import Line2D  # noqa: PLC0415
    from matplotlib.patches import Patch  # noqa: PLC0415

    handles: list[Any] = [
        Patch(facecolor=fill, edgecolor=edge, hatch=HATCH.get(shape), label=name)
        for name, fill, edge, shape in _legend_bars(layouts)
    ]
    kinds = {line.kind for lay in layouts for line in lay.lines}
    handles += [
        Line2D([], [], color=MARKER_COLORS[k], linestyle=MPL_DASH[k], label=_LINE_NAMES[k])
        for k in MARKER_COLORS
        if k in kinds
    ]
    return handles


def _draw(ax: Any, lay: Layout, tips: dict[str, str], prefix: str) -> None:
    rows = lay.rows
    index = {row: len(rows) - 1 - n for n, row in enumerate(rows)}
    from matplotlib.patches import Rectangle  # noqa: PLC0415

    for n, r in enumerate(lay.rects):
        edge, width = _outline(r)
        patch = Rectangle(
            (r.x0, index.get(r.row, 0) + r.offset),
            r.x1 - r.x0,
            r.height,
            facecolor=r.color,
            edgecolor=edge if width else "none",
            linewidth=width * 0.7,
            hatch=HATCH.get(_pattern(r)),
            hatchcolor=_ink(r),
            gid=f"{prefix}bar{n}",
        )
        ax.add_artist(patch)  # the limits are set: no need to update them per patch
        tips[f"{prefix}bar{n}"] = r.hover
    for n, line in enumerate(lay.lines):
        artist = ax.axvline(
            line.x,
            color=MARKER_COLORS[line.kind],
            linestyle=MPL_DASH[line.kind],
            linewidth=1.3,
        )
        artist.set_gid(f"{prefix}line{n}")
        tips[f"{prefix}line{n}"] = line.hover
    ids = lay.levels("ids")
    points_per_px = 72 / 110
    for n, label in enumerate(lay.labels):
        base = 4 if label.band == "ids" else 4 + ids * ID_LINE_PX
        step = ID_LINE_PX if label.band == "ids" else EVENT_LINE_PX
        text = ax.annotate(
            label.text,
            (label.x, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(0, (base + label.level * step) * points_per_px),
            textcoords="offset points",
            fontsize=7 if label.band == "ids" else 7.5,
            color=label.color,
            va="bottom",
            ha="left",
            annotation_clip=False,
        )
        text.set_gid(f"{prefix}label{n}")
        tips[f"{prefix}label{n}"] = label.hover
    ax.set_xlim(*lay.x_range)
    if lay.ticks is not None:
        ax.set_xticks([x for x, _ in lay.ticks], [t for _, t in lay.ticks], fontsize=7)
    ax.set_yticks(range(len(rows)), list(reversed(rows)), fontsize=8)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel(lay.x_title, fontsize=8)
    bands = (8 + ids * ID_LINE_PX + lay.levels("events") * EVENT_LINE_PX) * points_per_px
    ax.set_title(f"{lay.title}\n{lay.subtitle}", fontsize=9, pad=bands + 4)
    ax.grid(axis="x", color="#E4E4E4", linewidth=0.6)
    ax.set_axisbelow(True)


def write_timeline(
    timelines: list[Timeline], path: str | Path, *, scale: str | None = None
) -> Path:
    """Draw one or more timelines (e.g. the same job aligned, then unaligned) into ``path``
    (``.png``, ``.svg`` or ``.html``), one above the other."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"cannot draw {target.name}: use one of {', '.join(FORMATS)}")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    tips: dict[str, str] = {}
    figure = matplotlib_figure(timelines, scale, tooltips=tips)
    try:
        if suffix == ".png":
            figure.savefig(target, dpi=110)
            return target
        buffer = io.StringIO()
        with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "ckptsim"}):
            figure.savefig(buffer, format="svg")
        svg = _with_tooltips(buffer.getvalue(), tips)
    finally:
        plt.close(figure)
    if suffix == ".svg":
        target.write_text(svg, encoding="utf-8")
    else:
        target.write_text(_html(timelines, svg), encoding="utf-8")
    return target


_GROUP = re.compile(r'<g id="(tl\d+-(?:bar|line|label)\d+)">')


_NUMBER = r"(-?[\d.]+)"
#: a rectangle as matplotlib writes it: four corners and a close
_RECT = re.compile(
    rf'd="M {_NUMBER} {_NUMBER} \s*L {_NUMBER} \2 \s*L \3 {_NUMBER} \s*L \1 \4 \s*z\s*"'
)


_BAR_CLIP = re.compile(
    r'(<g id="tl\d+-bar\d+">(?:<title>[^<]*</title>)?\s*<path d="[^"]*") clip-path="[^"]*"'
)
_STYLE = re.compile(r'style="([^"]*)"')
_INDENT = re.compile(r"\n[ \t]+")


def _with_tooltips(svg: str, tips: dict[str, str]) -> str:
    """A ``<title>`` (the browser's tooltip) in every group that has one; rectangles written
    short (``M x y H x V y H x z``, 0.01 px), so that thousands of bars stay small."""

    def title(match: re.Match[str]) -> str:
        tip = tips.get(match.group(1))
        return match.group(0) + (f"<title>{html.escape(tip)}</title>" if tip else "")

    def rect(match: re.Match[str]) -> str:
        x0, y0, x1, y1 = (f"{float(v):.2f}".rstrip("0").rstrip(".") for v in match.groups())
        return f'd="M{x0} {y0}H{x1}V{y1}H{x0}z"'

    def style(match: re.Match[str]) -> str:
        return 'style="' + match.group(1).replace(": ", ":").replace("; ", ";") + '"'

    svg = _RECT.sub(rect, _GROUP.sub(title, svg))
    svg = _BAR_CLIP.sub(r"\1", svg)  # a bar lies inside the axes: no clipping to do
    svg = _STYLE.sub(style, svg.replace("; stroke-linejoin: miter", ""))
    return _INDENT.sub("\n", svg)


def _html(timelines: list[Timeline], svg: str) -> str:
    """A self-contained page: the SVG inline, no script, nothing fetched."""
    body = svg[svg.index("<svg") :]
    names = ", ".join(sorted({t.name for t in timelines}))
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>ckptsim timeline: {html.escape(names)}</title>"
        "<style>body{font-family:sans-serif;margin:1em}svg{max-width:100%;height:auto}"
        "p{color:#555;font-size:90%;max-width:60em}</style></head><body>"
        "<p>Each row is a subtask; each checkpoint's bar runs from its trigger to the "
        "subtask's acknowledgement, its phases (start delay, alignment, synchronous and "
        "asynchronous part) in lanes inside it. Hover over a bar, a line or a label for its "
        "figures. Hatched black: drawn wider than it lasted, to be seen.</p>"
        f"{body}</body></html>"
    )
