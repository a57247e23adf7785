"""The checkpoint timeline: for each checkpoint and each subtask, where its time went (start
delay, alignment, synchronous and asynchronous part) on one time axis, with the job's
failures and the failed checkpoints marked. What Flink's web UI lacks.

Built from REST bodies only (``/jobs/:jobid``, ``/checkpoints``, ``/checkpoints/details/:id``
``/subtasks/:vertexid``, ``/exceptions``), so a live job, a ckptsim archive and an archive
of Flink's own give the same picture. Pure: the web page and ``ckptsim timeline`` draw it.

A subtask's phases follow one another from the trigger, as Flink measures them: the start
delay (trigger to the first barrier), the alignment (first to last barrier), the synchronous
part, then the asynchronous part; its acknowledgement closes the ``end to end`` bar.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

PHASES = ("end to end", "start delay", "alignment", "sync", "async")

JsonDict = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Bar:
    row: str
    checkpoint_id: int
    phase: str
    #: ms since the job started
    start: int
    end: int
    status: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Marker:
    kind: str  # "checkpoint failed" | "job failure" | "restart"
    at: int
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointSpan:
    checkpoint_id: int
    status: str
    checkpoint_type: str
    start: int
    end: int


@dataclass(slots=True, kw_only=True)
class Timeline:
    job_id: str
    name: str
    status: str
    #: epoch ms of the job's start: every time here is ms after it
    start_epoch_ms: int
    #: "aligned", "unaligned" or "" (no checkpoint configuration known)
    alignment: str = ""
    rows: list[str] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    checkpoints: list[CheckpointSpan] = field(default_factory=list)

    def to_json(self) -> JsonDict:
        return {
            "job_id": self.job_id,
            "name": self.name,
            "status": self.status,
            "start_epoch_ms": self.start_epoch_ms,
            "alignment": self.alignment,
            "rows": list(self.rows),
            "phases": list(PHASES),
            "bars": [asdict(b) for b in self.bars],
            "markers": [asdict(m) for m in self.markers],
            "checkpoints": [asdict(c) for c in self.checkpoints],
        }


Get = Callable[[str], Any]


def build_timeline(job_id: str, get: Get) -> Timeline:
    """The timeline of job ``job_id``; ``get(path)`` returns a REST body or None."""
    base = f"/jobs/{job_id}"
    job = get(base) or {}
    start = int(job.get("start-time", 0))
    config = get(f"{base}/checkpoints/config") or {}
    unaligned = config.get("unaligned_checkpoints")
    timeline = Timeline(
        job_id=job_id,
        name=str(job.get("name", job_id)),
        status=str(job.get("state", "")),
        start_epoch_ms=start,
        alignment="" if unaligned is None else ("unaligned" if unaligned else "aligned"),
    )
    vertices = job.get("vertices", [])
    for vertex in vertices:
        for index in range(int(vertex.get("parallelism", 0))):
            timeline.rows.append(_row(vertex, index))

    def rel(t: int) -> int:
        return t - start

    checkpoints = get(f"{base}/checkpoints") or {}
    for entry in sorted(checkpoints.get("history", []), key=lambda e: e["id"]):
        cid = int(entry["id"])
        trigger = int(entry["trigger_timestamp"])
        status = str(entry["status"])
        end = int(entry["trigger_timestamp"]) + max(int(entry["end_to_end_duration"]), 0)
        timeline.checkpoints.append(
            CheckpointSpan(
                checkpoint_id=cid,
                status=status,
                checkpoint_type=str(entry.get("checkpoint_type", "")),
                start=rel(trigger),
                end=rel(end),
            )
        )
        if status == "FAILED" and entry.get("failure_timestamp"):
            timeline.markers.append(
                Marker(
                    kind="checkpoint failed",
                    at=rel(int(entry["failure_timestamp"])),
                    label=f"checkpoint {cid} failed: {entry.get('failure_message') or ''}",
                )
            )
        for vertex in vertices:
            body = get(f"{base}/checkpoints/details/{cid}/subtasks/{vertex['id']}")
            if not body:
                continue
            for sub in body.get("subtasks", []):
                if "ack_timestamp" not in sub:
                    continue
                timeline.bars.extend(
                    _subtask_bars(_row(vertex, int(sub["index"])), cid, status, trigger, sub, rel)
                )
    exceptions = (get(f"{base}/exceptions") or {}).get("exceptionHistory", {})
    for e in reversed(exceptions.get("entries", [])):
        first_line = str(e.get("stacktrace", "")).splitlines()[:1]
        where = f" in {e['taskName']}" if e.get("taskName") else ""
        timeline.markers.append(
            Marker(
                kind="job failure",
                at=rel(int(e["timestamp"])),
                label=f"failure{where}: {first_line[0] if first_line else e.get('exceptionName')}",
            )
        )
    restarting = int(job.get("timestamps", {}).get("RESTARTING", 0) or 0)
    if restarting > 0:
        timeline.markers.append(
            Marker(kind="restart", at=rel(restarting), label="job restarting (last restart)")
        )
    timeline.markers.sort(key=lambda m: m.at)
    return timeline


def _row(vertex: Mapping[str, Any], index: int) -> str:
    return f"{vertex.get('name', vertex.get('id'))} ({index + 1}/{vertex.get('parallelism', 1)})"


def _subtask_bars(
    row: str,
    checkpoint_id: int,
    status: str,
    trigger: int,
    sub: Mapping[str, Any],
    rel: Callable[[int], int],
) -> list[Bar]:
    ack = int(sub["ack_timestamp"])
    bars = [
        Bar(
            row=row,
            checkpoint_id=checkpoint_id,
            phase="end to end",
            start=rel(trigger),
            end=rel(max(ack, trigger)),
            status=status,
        )
    ]
    t = trigger
    phases = (
        ("start delay", int(sub.get("start_delay", 0))),
        ("alignment", int(sub.get("alignment", {}).get("duration", 0))),
        ("sync", int(sub.get("checkpoint", {}).get("sync", 0))),
        ("async", int(sub.get("checkpoint", {}).get("async", 0))),
    )
    for phase, duration in phases:
        if duration > 0:
            bars.append(
                Bar(
                    row=row,
                    checkpoint_id=checkpoint_id,
                    phase=phase,
                    start=rel(t),
                    end=rel(t + duration),
                    status=status,
                )
            )
        t += max(duration, 0)
    return bars
