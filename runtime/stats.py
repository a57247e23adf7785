"""Checkpoint statistics (``DefaultCheckpointStatsTracker``), rendered as Flink's REST API
renders them (``/jobs/:jobid/checkpoints`` and its ``details`` endpoints), value for value.

All sizes are bytes, durations ms. Timestamps are the job clock's milliseconds (``now`` as the
core is given it); ``runtime.rest`` maps them onto epoch milliseconds, as Flink shows them.

Flink's conventions kept here (checked against bodies a Flink 2.3.0 returned, see
``tests/rest/flink``): a task or checkpoint with no acknowledgement has
``latest_ack_timestamp`` and ``end_to_end_duration`` -1; a failed checkpoint's
``end_to_end_duration`` is its failure time minus its trigger time; per-subtask summaries
have no percentiles (the string ``"NaN"``, but ``0.0`` for ``alignment.buffered``).
"""

from __future__ import annotations

import enum
import math
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from runtime.checkpoint import CheckpointMetrics, SnapshotType, TaskId, TaskStateSnapshot

#: ``web.checkpoints.history`` default
DEFAULT_HISTORY_SIZE = 10
#: values kept per summary for percentiles (Flink's ``StatsSummary`` histogram window)
HISTOGRAM_WINDOW = 10_000

JsonDict = dict[str, Any]

#: what Flink's Jackson writes for a percentile that has no value
NAN = "NaN"
PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0), ("p999", 99.9))


class CheckpointStatsStatus(enum.Enum):
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


class StatsSummary:
    """min / max / avg over all values, percentiles over the most recent window."""

    __slots__ = ("_count", "_max", "_min", "_sum", "_window")

    def __init__(self) -> None:
        self._count = 0
        self._sum = 0
        self._min = 0
        self._max = 0
        self._window: deque[int] = deque(maxlen=HISTOGRAM_WINDOW)

    def add(self, value: int) -> None:
        if self._count == 0:
            self._min = self._max = value
        else:
            self._min = min(self._min, value)
            self._max = max(self._max, value)
        self._count += 1
        self._sum += value
        self._window.append(value)

    @property
    def count(self) -> int:
        return self._count

    def to_json(self, *, percentiles: bool = True) -> JsonDict:
        """Flink's ``StatsSummaryDto``: ``percentiles=False`` for a summary without a histogram
        (a checkpoint's per-subtask summary), whose percentiles are ``"NaN"``; so are those of
        a summary with no values yet."""
        out: JsonDict = {
            "min": self._min,
            "max": self._max,
            "avg": self._sum // self._count if self._count else 0,
        }
        ordered = sorted(self._window) if percentiles and self._count else None
        for key, p in PERCENTILES:
            out[key] = _percentile(ordered, p) if ordered is not None else NAN
        return out

    @classmethod
    def of(cls, values: Iterable[int]) -> StatsSummary:
        summary = cls()
        for value in values:
            summary.add(value)
        return summary


def _percentile(ordered: list[int], p: float) -> float:
    """Commons Math ``Percentile`` (legacy estimation), as Flink's histograms use it."""
    n = len(ordered)
    if n == 0:
        return 0.0
    if n == 1:
        return float(ordered[0])
    pos = p * (n + 1) / 100
    if pos < 1:
        return float(ordered[0])
    if pos >= n:
        return float(ordered[-1])
    lower = ordered[math.floor(pos) - 1]
    upper = ordered[math.floor(pos)]
    return lower + (pos - math.floor(pos)) * (upper - lower)


@dataclass(slots=True, kw_only=True)
class SubtaskStats:
    index: int
    ack_timestamp: int
    state_size: int
    checkpointed_size: int
    metrics: CheckpointMetrics

    def end_to_end(self, trigger_timestamp: int) -> int:
        return max(0, self.ack_timestamp - trigger_timestamp)


@dataclass(slots=True, kw_only=True)
class CheckpointStats:
    checkpoint_id: int
    trigger_timestamp: int
    snapshot_type: SnapshotType
    num_subtasks: dict[str, int]
    status: CheckpointStatsStatus = CheckpointStatsStatus.IN_PROGRESS
    subtasks: dict[str, dict[int, SubtaskStats]] = field(default_factory=dict)
    failure_timestamp: int | None = None
    failure_message: str | None = None
    failure_reason: str | None = None
    external_path: str | None = None
    discarded: bool = False
    #: triggered with unaligned barriers (ckptsim's own: Flink's REST types a checkpoint by
    #: what its acknowledgements report, so one that failed before any is ``CHECKPOINT``)
    triggered_unaligned: bool = False

    @property
    def is_savepoint(self) -> bool:
        return self.snapshot_type.is_savepoint

    def all_subtasks(self) -> list[SubtaskStats]:
        return [s for per_vertex in self.subtasks.values() for s in per_vertex.values()]

    @property
    def latest_ack_timestamp(self) -> int:
        acks = [s.ack_timestamp for s in self.all_subtasks()]
        return max(acks) if acks else -1

    @property
    def end_to_end_duration(self) -> int:
        """Flink: a failed checkpoint's runs to its failure (acknowledged or not); otherwise to
        the latest acknowledgement, -1 while there is none."""
        if self.status is CheckpointStatsStatus.FAILED and self.failure_timestamp is not None:
            return max(0, self.failure_timestamp - self.trigger_timestamp)
        latest = self.latest_ack_timestamp
        return max(0, latest - self.trigger_timestamp) if latest >= 0 else -1

    def _sum(self, subtasks: Iterable[SubtaskStats], attr: str) -> int:
        total = 0
        for s in subtasks:
            total += getattr(s, attr) if hasattr(s, attr) else getattr(s.metrics, attr)
        return total

    @property
    def state_size(self) -> int:
        return self._sum(self.all_subtasks(), "state_size")

    @property
    def checkpointed_size(self) -> int:
        return self._sum(self.all_subtasks(), "checkpointed_size")

    @property
    def processed_data(self) -> int:
        return self._sum(self.all_subtasks(), "bytes_processed_during_alignment")

    @property
    def persisted_data(self) -> int:
        return self._sum(self.all_subtasks(), "bytes_persisted_during_alignment")

    @property
    def is_unaligned(self) -> bool:
        return any(
            s.metrics.unaligned_checkpoint or s.metrics.bytes_persisted_during_alignment > 0
            for s in self.all_subtasks()
        )

    @property
    def checkpoint_type(self) -> str:
        if self.snapshot_type.is_savepoint:
            return "SYNC_SAVEPOINT" if self.snapshot_type.is_synchronous else "SAVEPOINT"
        return "UNALIGNED_CHECKPOINT" if self.is_unaligned else "CHECKPOINT"

    @property
    def triggered_type(self) -> str:
        """The type the checkpoint was triggered as (an unaligned one that fell back to
        aligned barriers after the aligned-checkpoint timeout is typed by its acks)."""
        if self.triggered_unaligned and not self.all_subtasks():
            return "UNALIGNED_CHECKPOINT"
        return self.checkpoint_type

    def to_json(self, *, with_tasks: bool) -> JsonDict:
        class_name = {
            CheckpointStatsStatus.IN_PROGRESS: "in_progress",
            CheckpointStatsStatus.COMPLETED: "completed",
            CheckpointStatsStatus.FAILED: "failed",
        }[self.status]
        out: JsonDict = {
            "className": class_name,
            "id": self.checkpoint_id,
            "status": self.status.value,
            "is_savepoint": self.is_savepoint,
            "savepointFormat": "CANONICAL" if self.is_savepoint else None,
            "trigger_timestamp": self.trigger_timestamp,
            "latest_ack_timestamp": self.latest_ack_timestamp,
            "checkpointed_size": self.checkpointed_size,
            "state_size": self.state_size,
            "end_to_end_duration": self.end_to_end_duration,
            "alignment_buffered": 0,
            "processed_data": self.processed_data,
            "persisted_data": self.persisted_data,
            "num_subtasks": sum(self.num_subtasks.values()),
            "num_acknowledged_subtasks": len(self.all_subtasks()),
            "checkpoint_type": self.checkpoint_type,
            "tasks": {v: self.task_json(v) for v in self.num_subtasks} if with_tasks else {},
        }
        if self.status is CheckpointStatsStatus.COMPLETED:
            out["external_path"] = self.external_path
            out["discarded"] = self.discarded
        elif self.status is CheckpointStatsStatus.FAILED:
            out["failure_timestamp"] = self.failure_timestamp
            out["failure_message"] = self.failure_message
        return out

    def task_json(self, vertex: str) -> JsonDict:
        subtasks = list(self.subtasks.get(vertex, {}).values())
        latest = max((s.ack_timestamp for s in subtasks), default=-1)
        return {
            "id": self.checkpoint_id,
            "status": self.status.value,
            "latest_ack_timestamp": latest,
            "checkpointed_size": self._sum(subtasks, "checkpointed_size"),
            "state_size": self._sum(subtasks, "state_size"),
            "end_to_end_duration": max(0, latest - self.trigger_timestamp) if latest >= 0 else -1,
            "alignment_buffered": 0,
            "processed_data": self._sum(subtasks, "bytes_processed_during_alignment"),
            "persisted_data": self._sum(subtasks, "bytes_persisted_during_alignment"),
            "num_subtasks": self.num_subtasks.get(vertex, 0),
            "num_acknowledged_subtasks": len(subtasks),
        }

    def subtasks_json(self, vertex: str) -> JsonDict:
        """``/jobs/:jobid/checkpoints/details/:id/subtasks/:vertexid``."""
        acked = self.subtasks.get(vertex, {})
        ts = self.trigger_timestamp

        def summary(values: Iterable[int]) -> JsonDict:
            return StatsSummary.of(values).to_json(percentiles=False)

        rows: list[JsonDict] = []
        for index in range(self.num_subtasks.get(vertex, 0)):
            s = acked.get(index)
            if s is None:
                rows.append({"className": "pending", "index": index, "status": "pending_or_failed"})
                continue
            m = s.metrics
            rows.append(
                {
                    "className": "completed",
                    "index": index,
                    "ack_timestamp": s.ack_timestamp,
                    "end_to_end_duration": s.end_to_end(ts),
                    "checkpointed_size": s.checkpointed_size,
                    "state_size": s.state_size,
                    "checkpoint": {"sync": m.sync_duration_ms, "async": m.async_duration_ms},
                    "alignment": {
                        "buffered": 0,
                        "processed": m.bytes_processed_during_alignment,
                        "persisted": m.bytes_persisted_during_alignment,
                        "duration": m.alignment_duration_ms,
                    },
                    "start_delay": m.checkpoint_start_delay_ms,
                    "unaligned_checkpoint": m.unaligned_checkpoint,
                    "aborted": False,
                    "status": "completed",
                }
            )
        subs = list(acked.values())
        return {
            **self.task_json(vertex),
            "summary": {
                "checkpointed_size": summary(s.checkpointed_size for s in subs),
                "state_size": summary(s.state_size for s in subs),
                "end_to_end_duration": summary(s.end_to_end(ts) for s in subs),
                "checkpoint_duration": {
                    "sync": summary(s.metrics.sync_duration_ms for s in subs),
                    "async": summary(s.metrics.async_duration_ms for s in subs),
                },
                "alignment": {
                    # the one per-subtask summary Flink gives percentiles: all zero
                    "buffered": {
                        **summary(0 for _ in subs),
                        **{key: 0.0 for key, _ in PERCENTILES},
                    },
                    "processed": summary(s.metrics.bytes_processed_during_alignment for s in subs),
                    "persisted": summary(s.metrics.bytes_persisted_during_alignment for s in subs),
                    "duration": summary(s.metrics.alignment_duration_ms for s in subs),
                },
                "start_delay": summary(s.metrics.checkpoint_start_delay_ms for s in subs),
            },
            "subtasks": rows,
        }


def _newer(current: CheckpointStats | None, candidate: CheckpointStats) -> CheckpointStats:
    """Flink keeps the checkpoint with the highest id as the latest of its kind."""
    if current is None or candidate.checkpoint_id > current.checkpoint_id:
        return candidate
    return current


class CheckpointStatsTracker:
    def __init__(self, history_size: int = DEFAULT_HISTORY_SIZE) -> None:
        self.history_size = history_size
        self.restored = 0
        self.total = 0
        self.in_progress = 0
        self.completed = 0
        self.failed = 0
        self._history: deque[CheckpointStats] = deque(maxlen=max(history_size, 0))
        self._by_id: dict[int, CheckpointStats] = {}
        #: Flink's CheckpointStatsCache: completed and failed checkpoints that left the history
        #: keep their details, the most recent ``history_size`` of them
        self._evicted: OrderedDict[int, CheckpointStats] = OrderedDict()
        self._summary = {
            k: StatsSummary()
            for k in (
                "checkpointed_size",
                "state_size",
                "end_to_end_duration",
                "alignment_buffered",
                "processed_data",
                "persisted_data",
            )
        }
        self.latest_completed: CheckpointStats | None = None
        self.latest_savepoint: CheckpointStats | None = None
        self.latest_failed: CheckpointStats | None = None
        self.latest_restored: JsonDict | None = None

    # --- reports -------------------------------------------------------------------------------

    def report_pending(
        self,
        checkpoint_id: int,
        trigger_timestamp: int,
        snapshot_type: SnapshotType,
        num_subtasks: Mapping[str, int],
        *,
        unaligned: bool = False,
        finished: Iterable[TaskId] = (),
    ) -> None:
        """A checkpoint was triggered, waiting for ``num_subtasks`` subtasks of each vertex;
        the ``finished`` ones (FLIP-147) count as acknowledged at once, with no state, as
        Flink's coordinator reports them: each vertex counts its whole parallelism."""
        counts = dict(num_subtasks)
        done = list(finished)
        for task in done:
            counts[task.vertex] = counts.get(task.vertex, 0) + 1
        stats = CheckpointStats(
            checkpoint_id=checkpoint_id,
            trigger_timestamp=trigger_timestamp,
            snapshot_type=snapshot_type,
            num_subtasks=counts,
            triggered_unaligned=unaligned,
        )
        for task in done:
            stats.subtasks.setdefault(task.vertex, {})[task.subtask] = SubtaskStats(
                index=task.subtask,
                ack_timestamp=trigger_timestamp,
                state_size=0,
                checkpointed_size=0,
                metrics=CheckpointMetrics(),
            )
        self._by_id[checkpoint_id] = stats
        if self._history.maxlen and len(self._history) == self._history.maxlen:
            evicted = self._history.pop()
            if evicted.status is not CheckpointStatsStatus.IN_PROGRESS:
                self._by_id.pop(evicted.checkpoint_id, None)
                self._cache(evicted)
        if self._history.maxlen:
            self._history.appendleft(stats)
        self.in_progress += 1
        self.total += 1

    def report_subtask(
        self,
        checkpoint_id: int,
        task: TaskId,
        ack_timestamp: int,
        state: TaskStateSnapshot | None,
        metrics: CheckpointMetrics | None,
    ) -> None:
        stats = self._by_id.get(checkpoint_id)
        if stats is None or stats.status is not CheckpointStatsStatus.IN_PROGRESS:
            return
        stats.subtasks.setdefault(task.vertex, {})[task.subtask] = SubtaskStats(
            index=task.subtask,
            ack_timestamp=ack_timestamp,
            state_size=state.state_size if state else 0,
            checkpointed_size=state.persisted_size if state else 0,
            metrics=metrics or CheckpointMetrics(),
        )

    def report_completed(self, checkpoint_id: int, external_path: str | None) -> None:
        stats = self._by_id.get(checkpoint_id)
        if stats is None or stats.status is not CheckpointStatsStatus.IN_PROGRESS:
            return
        stats.status = CheckpointStatsStatus.COMPLETED
        stats.external_path = external_path
        self._left_history(stats)
        self.in_progress -= 1
        self.completed += 1
        for key, summary in self._summary.items():
            summary.add(0 if key == "alignment_buffered" else int(getattr(stats, key)))
        if stats.is_savepoint:
            self.latest_savepoint = _newer(self.latest_savepoint, stats)
        else:
            self.latest_completed = _newer(self.latest_completed, stats)

    def report_failed(
        self, checkpoint_id: int, failure_timestamp: int, message: str, reason: str | None = None
    ) -> None:
        stats = self._by_id.get(checkpoint_id)
        if stats is None or stats.status is not CheckpointStatsStatus.IN_PROGRESS:
            return
        stats.status = CheckpointStatsStatus.FAILED
        stats.failure_timestamp = failure_timestamp
        stats.failure_message = message
        stats.failure_reason = reason
        self._left_history(stats)
        self.in_progress -= 1
        self.failed += 1
        self.latest_failed = _newer(self.latest_failed, stats)

    def report_failed_without_in_progress(self) -> None:
        self.failed += 1
        self.total += 1

    def report_discarded(self, checkpoint_id: int) -> None:
        stats = self._by_id.get(checkpoint_id)
        if stats is not None:
            stats.discarded = True

    def report_restored(
        self,
        checkpoint_id: int,
        restore_timestamp: int,
        is_savepoint: bool,
        external_path: str | None,
    ) -> None:
        self.restored += 1
        self.latest_restored = {
            "id": checkpoint_id,
            "restore_timestamp": restore_timestamp,
            "is_savepoint": is_savepoint,
            "external_path": external_path,
        }

    def _cache(self, stats: CheckpointStats) -> None:
        if self.history_size <= 0:
            return
        self._evicted[stats.checkpoint_id] = stats
        self._evicted.move_to_end(stats.checkpoint_id)
        while len(self._evicted) > self.history_size:
            self._evicted.popitem(last=False)

    def _left_history(self, stats: CheckpointStats) -> None:
        """A checkpoint that ended after it left the history (it was still in progress then):
        into the cache, no longer tracked by id."""
        if all(s is not stats for s in self._history):
            self._by_id.pop(stats.checkpoint_id, None)
            self._cache(stats)

    # --- views ---------------------------------------------------------------------------------

    def get(self, checkpoint_id: int) -> CheckpointStats | None:
        return self._by_id.get(checkpoint_id)

    @property
    def history(self) -> list[CheckpointStats]:
        return list(self._history)

    @property
    def with_details(self) -> list[CheckpointStats]:
        """The checkpoints whose details the REST API serves: the history, the latest
        completed, savepoint and failed (Flink's ``CheckpointStatsHistory`` finds them by id
        too), and the recently evicted ones (Flink's ``CheckpointStatsCache``)."""
        found: dict[int, CheckpointStats] = {s.checkpoint_id: s for s in self._history}
        for stats in (self.latest_completed, self.latest_savepoint, self.latest_failed):
            if stats is not None:
                found.setdefault(stats.checkpoint_id, stats)
        for checkpoint_id, stats in reversed(self._evicted.items()):
            found.setdefault(checkpoint_id, stats)
        return list(found.values())

    def to_json(self) -> JsonDict:
        """``GET /jobs/:jobid/checkpoints``."""

        def latest(stats: CheckpointStats | None) -> JsonDict | None:
            return stats.to_json(with_tasks=False) if stats is not None else None

        return {
            "counts": {
                "restored": self.restored,
                "total": self.total,
                "in_progress": self.in_progress,
                "completed": self.completed,
                "failed": self.failed,
            },
            "summary": {k: s.to_json() for k, s in self._summary.items()},
            "latest": {
                "completed": latest(self.latest_completed),
                "savepoint": latest(self.latest_savepoint),
                "failed": latest(self.latest_failed),
                "restored": self.latest_restored,
            },
            "history": [s.to_json(with_tasks=False) for s in self._history],
        }

    def details_json(self, checkpoint_id: int) -> JsonDict | None:
        """``GET /jobs/:jobid/checkpoints/details/:checkpointid`` (None: neither in the
        history, nor a latest one, nor recently evicted: ``with_details``)."""
        for stats in self.with_details:
            if stats.checkpoint_id == checkpoint_id:
                return stats.to_json(with_tasks=True)
        return None
