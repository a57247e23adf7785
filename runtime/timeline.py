"""The checkpoint timeline: for each checkpoint and each subtask, where its time went (start
delay, alignment, synchronous and asynchronous part) on one time axis, with the job's
failures, its restarts (and the checkpoint each restored) and the failed checkpoints marked.
What Flink's web UI lacks.

Built from REST bodies only (``/jobs/:jobid``, ``/checkpoints``, ``/checkpoints/details/:id
/subtasks/:vertexid``, ``/exceptions``, and ``/jobmanager/config`` when there is one), so a
live job, a ckptsim archive and an archive of Flink's own give the same picture. Pure: the web
page and ``ckptsim timeline`` draw it (``ckptsim._timeline_plot``).

A subtask's phases follow one another from the trigger, as Flink measures them: the start
delay (trigger to the first barrier), the alignment (first to last barrier), the synchronous
part, then the asynchronous part; its acknowledgement closes the ``end to end`` bar. Every
time here is in ms since the job started, every extent the one the bodies report: a phase is
cut at its subtask's acknowledgement only where the reported phases add up to more than the
acknowledgement allows (``Bar.clipped``), so no bar ever reaches into a later checkpoint.

Only the checkpoints the statistics history keeps are known: Flink keeps the latest
``web.checkpoints.history`` of them (10 by default), in-progress ones included, and counts
the others (``counts.total``) without their details. ``Timeline.window`` is the span over the
checkpoints drawn, not over the whole job.

Restarts: each entry of the exception history is a failure; each failure restarted the job
but for one that ended it (the job ``FAILED``). Flink reports only the latest restore
(``latest.restored``: the checkpoint and the time); an earlier restart restored the latest
checkpoint completed before its failure, as Flink's failover does (its pending checkpoints
are aborted as the job fails over), so that one is found in the history (``inferred``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

PHASES = ("end to end", "start delay", "alignment", "sync", "async")
#: a subtask that did not acknowledge a checkpoint that failed (or is still in progress)
UNACKNOWLEDGED = "not acknowledged"
HISTORY_KEYS = ("web.checkpoints.history", "jobmanager.web.checkpoints.history")

JsonDict = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Bar:
    row: str
    checkpoint_id: int
    #: one of ``PHASES``, or ``UNACKNOWLEDGED``
    phase: str
    #: ms since the job started; ``end - start`` is the reported duration unless ``clipped``
    start: int
    end: int
    status: str
    #: the duration the body reports (an end-to-end bar: acknowledgement - trigger)
    duration: int = 0
    #: the reported phases add up to more than the acknowledgement allows: this one was cut
    #: at the acknowledgement
    clipped: bool = False
    #: in-flight data this subtask persisted (unaligned checkpoints; end-to-end bars)
    persisted: int = 0
    #: an end-to-end bar: every phase with its reported duration in ms
    breakdown: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Marker:
    #: "checkpoint failed" | "job failure" | "restart" | "restore" (a restore that no failure
    #: caused: the job started from a savepoint or a retained checkpoint)
    kind: str
    at: int
    label: str
    #: the failed checkpoint; the restored one (restart, restore), None when not known
    checkpoint_id: int | None = None
    #: failures and restarts are numbered from 1, in order
    number: int = 0
    #: the full text (the exception's first line, how the restored checkpoint is known)
    detail: str = ""
    #: how the restored checkpoint is known: "reported" (``latest.restored``), "inferred"
    #: (the latest completed before the failure), "" (not known, or none)
    source: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointSpan:
    checkpoint_id: int
    status: str
    checkpoint_type: str
    #: trigger; the latest acknowledgement (completed), the failure (failed), or now (in
    #: progress): ms since the job started
    start: int
    end: int
    is_savepoint: bool = False
    #: in-flight data persisted (unaligned checkpoints), bytes
    persisted: int = 0
    state_size: int = 0
    acknowledged: int = 0
    subtasks: int = 0
    failure: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class History:
    """What the statistics history held (``web.checkpoints.history`` as Flink reads it)."""

    #: the configured size, when the job's configuration says it (else None)
    size: int | None
    #: ``counts.total``: every checkpoint triggered, also those no longer in the history and
    #: those that failed as they were triggered (Flink counts them, with no entry)
    total: int
    #: entries in the history (the checkpoints drawn)
    kept: int

    @property
    def not_kept(self) -> int:
        return max(self.total - self.kept, 0)


@dataclass(slots=True, kw_only=True)
class Timeline:
    job_id: str
    name: str
    status: str
    #: epoch ms of the job's start: every time here is ms after it
    start_epoch_ms: int
    #: the job's end, or now while it runs (ms since it started)
    end: int = 0
    #: "aligned", "unaligned" or "" (no checkpoint configuration known)
    alignment: str = ""
    rows: list[str] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    checkpoints: list[CheckpointSpan] = field(default_factory=list)
    history: History = field(default_factory=lambda: History(size=None, total=0, kept=0))
    #: the exception history was cut (``web.exception-history-size``): older failures unknown
    failures_truncated: bool = False

    def window(self) -> tuple[int, int]:
        """The span to draw, in ms since the job started: from the first checkpoint drawn to
        the last one's end, and over the failures and restarts in between or after. With no
        checkpoint, the whole job."""
        if not self.checkpoints:
            times = [m.at for m in self.markers]
            return 0, max([self.end, *times, 0])
        start = min(c.start for c in self.checkpoints)
        end = max(
            [
                *(c.end for c in self.checkpoints),
                *(b.end for b in self.bars),
                *(m.at for m in self.markers if m.at >= start),
            ]
        )
        return start, end

    def outside(self) -> list[Marker]:
        """Failures and restarts before the first checkpoint drawn (not on the axis)."""
        start, _ = self.window()
        return [m for m in self.markers if m.at < start]

    def to_json(self) -> JsonDict:
        start, end = self.window()
        return {
            "job_id": self.job_id,
            "name": self.name,
            "status": self.status,
            "start_epoch_ms": self.start_epoch_ms,
            "end": self.end,
            "alignment": self.alignment,
            "rows": list(self.rows),
            "phases": list(PHASES),
            "bars": [asdict(b) for b in self.bars],
            "markers": [asdict(m) for m in self.markers],
            "checkpoints": [asdict(c) for c in self.checkpoints],
            "history": {**asdict(self.history), "not_kept": self.history.not_kept},
            "failures_truncated": self.failures_truncated,
            "window": [start, end],
        }


Get = Callable[[str], Any]


def build_timeline(job_id: str, get: Get) -> Timeline:
    """The timeline of job ``job_id``; ``get(path)`` returns a REST body or None."""
    base = f"/jobs/{job_id}"
    job = get(base) or {}
    start = int(job.get("start-time", 0))
    config = get(f"{base}/checkpoints/config") or {}
    unaligned = config.get("unaligned_checkpoints")
    state = str(job.get("state", ""))

    def rel(t: int) -> int:
        return t - start

    end = _job_end(job, start)
    checkpoints = get(f"{base}/checkpoints") or {}
    history = checkpoints.get("history", []) or []
    timeline = Timeline(
        job_id=job_id,
        name=str(job.get("name", job_id)),
        status=state,
        start_epoch_ms=start,
        end=end,
        alignment="" if unaligned is None else ("unaligned" if unaligned else "aligned"),
        history=History(
            size=_history_size(get(f"{base}/jobmanager/config")),
            total=int((checkpoints.get("counts") or {}).get("total", len(history))),
            kept=len(history),
        ),
    )
    vertices = job.get("vertices", [])
    for vertex in vertices:
        for index in range(int(vertex.get("parallelism", 0))):
            timeline.rows.append(_row(vertex, index))

    for entry in sorted(history, key=lambda e: int(e["id"])):
        span = _span(entry, rel, start + end)
        timeline.checkpoints.append(span)
        cid = span.checkpoint_id
        if span.status == "FAILED":
            timeline.markers.append(
                Marker(
                    kind="checkpoint failed",
                    at=span.end,
                    label=f"checkpoint {cid} failed",
                    checkpoint_id=cid,
                    detail=f"checkpoint {cid} failed: {span.failure}",
                )
            )
        trigger = int(entry["trigger_timestamp"])
        for vertex in vertices:
            body = get(f"{base}/checkpoints/details/{cid}/subtasks/{vertex['id']}")
            if not body:
                continue
            for sub in body.get("subtasks", []):
                row = _row(vertex, int(sub["index"]))
                if "ack_timestamp" in sub:
                    timeline.bars.extend(_subtask_bars(row, span, trigger, sub, rel))
                elif span.status != "COMPLETED":
                    timeline.bars.append(
                        Bar(
                            row=row,
                            checkpoint_id=cid,
                            phase=UNACKNOWLEDGED,
                            start=span.start,
                            end=span.end,
                            status=span.status,
                            duration=span.end - span.start,
                        )
                    )
    exceptions = (get(f"{base}/exceptions") or {}).get("exceptionHistory", {}) or {}
    timeline.failures_truncated = bool(exceptions.get("truncated"))
    restored = (checkpoints.get("latest") or {}).get("restored")
    timeline.markers += _failures_and_restarts(
        exceptions.get("entries", []) or [], restored, timeline, job, rel
    )
    timeline.markers.sort(key=lambda m: (m.at, m.kind))
    return timeline


def _job_end(job: Mapping[str, Any], start: int) -> int:
    """ms since the start: the job's end, or now while it runs."""
    end_time = int(job.get("end-time", -1) or -1)
    if end_time > 0:
        return end_time - start
    now = int(job.get("now", 0) or 0)
    if now > 0:
        return now - start
    return max(int(job.get("duration", 0) or 0), 0)


def _history_size(config: Any) -> int | None:
    """``web.checkpoints.history`` from ``/jobs/:jobid/jobmanager/config`` (a list of
    ``{key, value}``), as Flink reads it (its deprecated key as a fallback)."""
    if not isinstance(config, list):
        return None
    values = {e.get("key"): e.get("value") for e in config if isinstance(e, dict)}
    for key in HISTORY_KEYS:
        if key in values:
            try:
                return int(str(values[key]).strip())
            except ValueError:
                return None
    return None


def _span(entry: Mapping[str, Any], rel: Callable[[int], int], now: int) -> CheckpointSpan:
    """A history entry; ``now`` (epoch ms) ends an in-progress checkpoint."""
    status = str(entry["status"])
    trigger = int(entry["trigger_timestamp"])
    if status == "FAILED" and entry.get("failure_timestamp"):
        last = int(entry["failure_timestamp"])
    elif status == "IN_PROGRESS":
        last = now
    else:
        last = trigger + max(int(entry.get("end_to_end_duration", 0) or 0), 0)
    return CheckpointSpan(
        checkpoint_id=int(entry["id"]),
        status=status,
        checkpoint_type=str(entry.get("checkpoint_type", "")),
        start=rel(trigger),
        end=rel(max(last, trigger)),
        is_savepoint=bool(entry.get("is_savepoint", False)),
        persisted=int(entry.get("persisted_data", 0) or 0),
        state_size=int(entry.get("state_size", 0) or 0),
        acknowledged=int(entry.get("num_acknowledged_subtasks", 0) or 0),
        subtasks=int(entry.get("num_subtasks", 0) or 0),
        failure=str(entry.get("failure_message") or ""),
    )


def _row(vertex: Mapping[str, Any], index: int) -> str:
    return f"{vertex.get('name', vertex.get('id'))} ({index + 1}/{vertex.get('parallelism', 1)})"


def _subtask_bars(
    row: str,
    span: CheckpointSpan,
    trigger: int,
    sub: Mapping[str, Any],
    rel: Callable[[int], int],
) -> list[Bar]:
    ack = max(int(sub["ack_timestamp"]), trigger)
    phases = (
        ("start delay", int(sub.get("start_delay", 0) or 0)),
        ("alignment", int((sub.get("alignment") or {}).get("duration", 0) or 0)),
        ("sync", int((sub.get("checkpoint") or {}).get("sync", 0) or 0)),
        ("async", int((sub.get("checkpoint") or {}).get("async", 0) or 0)),
    )
    cid, status = span.checkpoint_id, span.status
    bars = [
        Bar(
            row=row,
            checkpoint_id=cid,
            phase="end to end",
            start=rel(trigger),
            end=rel(ack),
            status=status,
            duration=ack - trigger,
            persisted=int((sub.get("alignment") or {}).get("persisted", 0) or 0),
            breakdown=phases,
        )
    ]
    t = trigger
    for phase, duration in phases:
        if duration > 0:
            begin = min(t, ack)
            finish = min(t + duration, ack)
            if finish > begin:
                bars.append(
                    Bar(
                        row=row,
                        checkpoint_id=cid,
                        phase=phase,
                        start=rel(begin),
                        end=rel(finish),
                        status=status,
                        duration=duration,
                        clipped=finish - begin < duration,
                    )
                )
        t += max(duration, 0)
    return bars


def _failures_and_restarts(
    entries: list[Mapping[str, Any]],
    restored: Mapping[str, Any] | None,
    timeline: Timeline,
    job: Mapping[str, Any],
    rel: Callable[[int], int],
) -> list[Marker]:
    """A marker per failure, and one per restart naming the checkpoint it restored."""
    markers: list[Marker] = []
    failures = sorted(entries, key=lambda e: int(e.get("timestamp", 0)))
    last_restore = _last_restore(restored, rel)
    terminal = timeline.status in ("FAILED", "FAILING")
    cancelling = int((job.get("timestamps") or {}).get("CANCELLING", 0) or 0)
    restart = 0
    for n, entry in enumerate(failures, start=1):
        at = rel(int(entry.get("timestamp", 0)))
        first_line = str(entry.get("stacktrace", "")).splitlines()[:1]
        text = first_line[0] if first_line else str(entry.get("exceptionName", ""))
        task = entry.get("taskName")
        where = f" in {task}" if task else ""
        markers.append(
            Marker(
                kind="job failure",
                at=at,
                label=f"failure{where}: {text}",
                number=n,
                detail=f"failure {n}{where}: {text}",
            )
        )
        is_last = n == len(failures)
        after_cancel = cancelling > 0 and int(entry.get("timestamp", 0)) >= cancelling
        if is_last and (terminal or after_cancel):
            continue
        restart += 1
        markers.append(_restart(restart, at, is_last, last_restore, timeline))
    reported = any(m.source == "reported" for m in markers)
    if last_restore is not None and not reported:
        cid, at, is_savepoint, _ = last_restore
        what = "savepoint" if is_savepoint else "checkpoint"
        markers.append(
            Marker(
                kind="restore",
                at=at,
                label=f"restored {what} {cid}",
                checkpoint_id=cid,
                detail=f"the job started from {what} {cid} (latest.restored)",
                source="reported",
            )
        )
    return markers


def _last_restore(
    restored: Mapping[str, Any] | None, rel: Callable[[int], int]
) -> tuple[int, int, bool, str] | None:
    if not restored or restored.get("id") is None:
        return None
    return (
        int(restored["id"]),
        rel(int(restored.get("restore_timestamp", 0))),
        bool(restored.get("is_savepoint", False)),
        str(restored.get("external_path") or ""),
    )


def _restart(
    number: int,
    failure_at: int,
    is_last: bool,
    last_restore: tuple[int, int, bool, str] | None,
    timeline: Timeline,
) -> Marker:
    """Restart ``number`` after the failure at ``failure_at``: at the restore, with the
    checkpoint restored (reported for the latest restart, found in the history otherwise)."""
    if is_last and last_restore is not None and last_restore[1] >= failure_at:
        cid, at, is_savepoint, _ = last_restore
        what = "savepoint" if is_savepoint else "checkpoint"
        return Marker(
            kind="restart",
            at=at,
            label=f"restart {number}: restored {what} {cid}",
            checkpoint_id=cid,
            number=number,
            detail=f"restart {number}: restored {what} {cid} (reported: latest.restored)",
            source="reported",
        )
    completed = [
        c
        for c in timeline.checkpoints
        if c.status == "COMPLETED" and not c.is_savepoint and c.end <= failure_at
    ]
    if completed:
        cid = max(c.checkpoint_id for c in completed)
        return Marker(
            kind="restart",
            at=failure_at,
            label=f"restart {number}: restored checkpoint {cid}",
            checkpoint_id=cid,
            number=number,
            detail=(
                f"restart {number}: restored checkpoint {cid} (the latest completed before the "
                "failure; Flink reports only the latest restore, so its time is not known and "
                "the restart is drawn at the failure)"
            ),
            source="inferred",
        )
    oldest = min((c.checkpoint_id for c in timeline.checkpoints), default=1)
    if oldest <= 1 and timeline.history.not_kept == 0:
        return Marker(
            kind="restart",
            at=failure_at,
            label=f"restart {number}: no checkpoint to restore",
            number=number,
            detail=f"restart {number}: no checkpoint had completed: restarted from the start",
        )
    return Marker(
        kind="restart",
        at=failure_at,
        label=f"restart {number}: restored an older checkpoint",
        number=number,
        detail=(
            f"restart {number}: restored a checkpoint older than those the history keeps "
            "(web.checkpoints.history)"
        ),
    )
