"""Drawing the checkpoint timeline (``runtime.timeline``): a plotly figure (the web page and
``.html`` files, plotly.js inlined from the plotly package, nothing fetched) and a
matplotlib figure (``.png``, ``.svg``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.timeline import PHASES, Timeline

COLORS = {
    "end to end": "#d9e2ec",
    "start delay": "#f0b429",
    "alignment": "#d64545",
    "sync": "#2680c2",
    "async": "#3f9142",
}
MARKER_COLORS = {"checkpoint failed": "#f0b429", "job failure": "#d64545", "restart": "#9446ed"}
FORMATS = (".png", ".svg", ".html")


def _title(timeline: Timeline) -> str:
    mode = f"{timeline.alignment} checkpoints" if timeline.alignment else "checkpoints"
    return f"{timeline.name!r} ({timeline.status}), {mode}, job {timeline.job_id[:8]}"


def _min_width(timeline: Timeline) -> float:
    span = max([1, *(b.end for b in timeline.bars), *(m.at for m in timeline.markers)])
    return span / 400


def plotly_figure(timeline: Timeline) -> Any:
    """One horizontal bar trace per phase; every subtask's end-to-end bar of every
    checkpoint is drawn (a 0 ms one thin), the phases over it."""
    import plotly.graph_objects as go  # noqa: PLC0415 - plotly only when drawing

    minimum = _min_width(timeline)
    figure = go.Figure()
    for phase in PHASES:
        bars = [b for b in timeline.bars if b.phase == phase]
        figure.add_trace(
            go.Bar(
                name=phase,
                orientation="h",
                y=[b.row for b in bars],
                base=[b.start / 1000 for b in bars],
                x=[max(b.end - b.start, minimum) / 1000 for b in bars],
                customdata=[b.checkpoint_id for b in bars],
                text=[
                    f"checkpoint {b.checkpoint_id} ({b.status}): {phase} {b.end - b.start} ms"
                    for b in bars
                ],
                hoverinfo="text",
                textposition="none",
                width=0.8 if phase == "end to end" else 0.45,
                marker={
                    "color": COLORS[phase],
                    "line": {"width": 1 if phase == "end to end" else 0, "color": "#829ab1"},
                },
            )
        )
    for marker in timeline.markers:
        figure.add_vline(
            x=marker.at / 1000,
            line={
                "color": MARKER_COLORS.get(marker.kind, "#d64545"),
                "width": 2,
                "dash": "dot" if marker.kind == "checkpoint failed" else "dash",
            },
        )
        if marker.kind != "checkpoint failed":
            figure.add_annotation(
                x=marker.at / 1000,
                y=1,
                yref="paper",
                yanchor="bottom",
                text=marker.kind,
                showarrow=False,
                font={"color": MARKER_COLORS.get(marker.kind, "#d64545"), "size": 11},
            )
    figure.update_layout(
        title=_title(timeline),
        barmode="overlay",
        height=160 + 34 * max(1, len(timeline.rows)),
        margin={"l": 220, "r": 20, "t": 60, "b": 40},
        xaxis={"title": {"text": "seconds since the job started"}, "zeroline": False},
        yaxis={"categoryorder": "array", "categoryarray": list(reversed(timeline.rows))},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1.0, "xanchor": "right"},
        plot_bgcolor="#ffffff",
    )
    return figure


def matplotlib_figure(timelines: list[Timeline]) -> Any:
    """The timelines one above the other, a common legend."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.patches import Patch  # noqa: PLC0415

    heights = [1.3 + 0.42 * max(1, len(t.rows)) for t in timelines]
    figure, axes = plt.subplots(
        len(timelines),
        1,
        figsize=(12, sum(heights)),
        height_ratios=heights,
        layout="constrained",
        squeeze=False,
    )
    for ax, timeline in zip(axes[:, 0], timelines, strict=True):
        _draw(ax, timeline)
    kinds = {m.kind for t in timelines for m in t.markers}
    handles = [Patch(color=COLORS[p], label=p) for p in PHASES]
    handles += [Patch(color=MARKER_COLORS[k], label=k) for k in MARKER_COLORS if k in kinds]
    axes[0, 0].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return figure


def _draw(ax: Any, timeline: Timeline) -> None:
    rows = timeline.rows or ["(no subtask)"]
    index = {row: len(rows) - 1 - n for n, row in enumerate(rows)}
    minimum = _min_width(timeline)
    for phase in PHASES:
        height = 0.8 if phase == "end to end" else 0.45
        for bar in (b for b in timeline.bars if b.phase == phase):
            ax.barh(
                index.get(bar.row, 0),
                max(bar.end - bar.start, minimum) / 1000,
                left=bar.start / 1000,
                height=height,
                color=COLORS[phase],
                edgecolor="#829ab1" if phase == "end to end" else "none",
                linewidth=0.6,
            )
    for span in timeline.checkpoints:
        ax.annotate(
            str(span.checkpoint_id),
            (span.start / 1000, len(rows) - 0.45),
            fontsize=7,
            color="#486581",
            annotation_clip=False,
        )
    for marker in timeline.markers:
        ax.axvline(
            marker.at / 1000,
            color=MARKER_COLORS.get(marker.kind, "#d64545"),
            linestyle=":" if marker.kind == "checkpoint failed" else "--",
            linewidth=1.4,
        )
    ax.set_yticks(range(len(rows)), list(reversed(rows)), fontsize=8)
    ax.set_ylim(-0.6, len(rows) - 0.1)
    ax.set_xlabel("seconds since the job started")
    ax.set_title(_title(timeline), fontsize=10)
    ax.grid(axis="x", color="#e4e7eb", linewidth=0.6)
    ax.set_axisbelow(True)


def write_timeline(timelines: list[Timeline], path: str | Path) -> Path:
    """Draw one or more timelines (e.g. the same job aligned, then unaligned) into ``path``
    (``.png``, ``.svg`` or ``.html``), one above the other."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"cannot draw {target.name}: use one of {', '.join(FORMATS)}")
    if suffix == ".html":
        import plotly.io as pio  # noqa: PLC0415

        parts = [
            pio.to_html(
                plotly_figure(t), full_html=False, include_plotlyjs="inline" if n == 0 else False
            )
            for n, t in enumerate(timelines)
        ]
        target.write_text(
            '<!doctype html><html><head><meta charset="utf-8"><title>ckptsim timeline</title>'
            "</head><body>" + "\n".join(parts) + "</body></html>",
            encoding="utf-8",
        )
        return target
    import matplotlib.pyplot as plt  # noqa: PLC0415

    figure = matplotlib_figure(timelines)
    figure.savefig(target, dpi=110)
    plt.close(figure)
    return target
