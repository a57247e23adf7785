"""What a finished job prints: the checkpoint summary table; and the live progress line."""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

from runtime.job import JobResult


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _subtask_max(details: dict[str, Any], path: Iterable[str]) -> int:
    best = 0
    for vertex in details.get("subtasks", {}).values():
        for row in vertex.get("subtasks", []):
            value: Any = row
            for key in path:
                if not isinstance(value, dict) or key not in value:
                    value = 0
                    break
                value = value[key]
            best = max(best, int(value or 0))
    return best


def summary_table(result: JobResult) -> str:
    """The summary ``ckptsim run`` prints for a finished job: its status and duration, the
    checkpoint counts, its restarts and their causes, then one row per checkpoint in the
    statistics history (oldest first) with its duration, type, sizes and per-subtask maximums
    of start delay, alignment, sync and async time, and the savepoints and retained
    checkpoints the run left."""
    history = list(reversed(result.checkpoints.get("history", [])))
    counts = result.checkpoints.get("counts", {})
    lines = [
        f"Job {result.name!r} {result.status.value} in {result.duration_ms} ms"
        + (" of virtual time" if result.virtual_time else "")
        + (f": {result.failure}" if result.failure else ""),
        "Checkpoints: {completed} completed, {failed} failed, {in_progress} in progress (total {total}){restored}".format(
            restored=f", restored {counts['restored']}" if counts.get("restored") else "",
            **{k: counts.get(k, 0) for k in ("completed", "failed", "in_progress", "total")},
        ),
    ]
    if result.restarts or result.failures:
        lines.append(f"Restarts: {result.restarts}")
        lines += _failure_lines(result)
    lines += [f"Savepoint: {path}" for path in result.savepoints if path]
    lines += [f"Retained checkpoint: {path}" for path in result.retained_checkpoints]
    if not history:
        return "\n".join(lines)
    header = (
        f"{'id':>4}  {'status':<9} {'type':<20} {'duration':>9} {'state':>9} {'persisted':>9} "
        f"{'max delay':>9} {'max align':>9} {'max sync':>8} {'max async':>9}"
    )
    failures = []
    lines += ["", header, "-" * len(header)]
    for entry in history:
        details = result.checkpoint_details.get(int(entry["id"]), {})
        status = entry["status"]
        kind = result.checkpoint_types.get(int(entry["id"]), entry["checkpoint_type"])
        row = f"{entry['id']:>4}  {status:<9} {kind:<20} {entry['end_to_end_duration']:>7}ms "
        if status != "COMPLETED":
            # no state, no persisted data, no per-subtask figures: nothing completed
            dash = "-"
            row += f"{dash:>9} {dash:>9} {dash:>9} {dash:>9} {dash:>8} {dash:>9}"
        else:
            row += (
                f"{_size(entry['state_size']):>9} {_size(entry['persisted_data']):>9} "
                f"{_subtask_max(details, ['start_delay']):>7}ms "
                f"{_subtask_max(details, ['alignment', 'duration']):>7}ms "
                f"{_subtask_max(details, ['checkpoint', 'sync']):>6}ms "
                f"{_subtask_max(details, ['checkpoint', 'async']):>7}ms"
            )
        lines.append(row.rstrip())
        if status == "FAILED":
            failures.append(f"  checkpoint {entry['id']} failed: {entry.get('failure_message')}")
    lines += failures
    total = counts.get("total", 0)
    if total > len(history):
        # Flink's history keeps the latest web.checkpoints.history entries, and a checkpoint
        # that failed before it started (at its trigger) is counted but has no entry
        lines.append(
            f"({total - len(history)} more not shown: older than the history keeps "
            "(web.checkpoints.history), or failed as they were triggered)"
        )
    return "\n".join(lines)


def _failure_lines(result: JobResult) -> list[str]:
    """Each restart with its cause, in order; then a failure that did not restart the job
    (the one that failed it, or one while it was cancelled) and failed savepoints."""
    lines, restart = [], 0
    for text in result.failures:
        if text.startswith("savepoint failed:"):
            lines.append(f"  {text}")
        elif restart < result.restarts:
            restart += 1
            lines.append(f"  restart {restart} after: {text}")
        else:
            lines.append(f"  not restarted after: {text}")
    return lines


def progress_line(snapshot: dict[str, Any]) -> str:
    counts = snapshot.get("counts", {})
    pressure = snapshot.get("backpressured", [])
    bp = f"back-pressured: {', '.join(pressure)}" if pressure else "no back-pressure"
    virtual = snapshot.get("virtual_ms")
    when = f" at {virtual:,} ms of virtual time" if virtual is not None else ""
    line = (
        f"{snapshot.get('status', '?')}{when}: {snapshot.get('records', 0):,} records read, "
        f"checkpoints {counts.get('completed', 0)} completed / {counts.get('failed', 0)} failed / "
        f"{counts.get('in_progress', 0)} in progress, {bp}"
    )
    waiting = snapshot.get("waiting_for_final_checkpoint", 0)
    if waiting:
        line += (
            f"; {waiting} of {snapshot.get('tasks', waiting)} tasks wait for their final checkpoint"
        )
        if counts.get("in_progress", 0):
            line += " (one is in progress)"
        elif snapshot.get("next_trigger_in_ms") is not None:
            line += f" (next trigger in {snapshot['next_trigger_in_ms']} ms)"
        else:
            line += " (no checkpoint is scheduled: periodic checkpointing is off)"
    return line


class ProgressDisplay:
    """The live progress line on a terminal (stderr): rewritten in place, cut to the
    terminal's width, gone when the job ends; whatever else is written to stderr meanwhile (a
    warning, the failover of a task) is printed above it, not onto it."""

    def __init__(self, console: Console | None = None) -> None:
        self._live = Live(
            console=console or Console(stderr=True),
            transient=True,
            auto_refresh=False,
            redirect_stdout=False,
            redirect_stderr=True,
        )

    def show(self, snapshot: dict[str, Any]) -> None:
        line = Text(progress_line(snapshot), no_wrap=True, overflow="ellipsis")
        self._live.update(line, refresh=True)

    def __enter__(self) -> ProgressDisplay:
        self._live.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._live.stop()
