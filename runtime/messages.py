"""Messages into the protocol core: every core object's ``handle(msg, now)`` takes one of these.

Frozen, slotted, keyword-only dataclasses; one union per receiver at the bottom.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from runtime.checkpoint import CheckpointMetrics, SnapshotType, TaskId, TaskStateSnapshot
from runtime.network import CheckpointBarrier
from runtime.reasons import CheckpointFailureReason
from runtime.status import ExecutionState, JobStatus

# --- barrier handler (task input side) ------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class BarrierReceived:
    channel: int
    barrier: CheckpointBarrier


@dataclass(frozen=True, slots=True, kw_only=True)
class AnnouncementReceived:
    channel: int
    barrier: CheckpointBarrier
    sequence_number: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelMarkerReceived:
    channel: int
    checkpoint_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class EndOfPartitionReceived:
    channel: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TimerFired:
    """A timer asked for with ``ScheduleTimer(key=...)`` is due."""

    key: Hashable


# --- checkpoint coordinator (JobManager side) ------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TriggerCheckpointRequest:
    """A checkpoint or savepoint request (manual, periodic tick, savepoint, stop-with-savepoint)."""

    request_id: int
    snapshot_type: SnapshotType = SnapshotType.CHECKPOINT
    periodic: bool = False
    target_location: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AcknowledgeCheckpoint:
    task: TaskId
    checkpoint_id: int
    attempt: int = 0
    state: TaskStateSnapshot | None = None
    metrics: CheckpointMetrics | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DeclineCheckpoint:
    task: TaskId
    checkpoint_id: int
    attempt: int = 0
    reason: CheckpointFailureReason = CheckpointFailureReason.CHECKPOINT_DECLINED
    message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class JobStatusChanged:
    """Drives the periodic scheduler (``CheckpointCoordinatorDeActivator``)."""

    status: JobStatus


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionStateChanged:
    task: TaskId
    state: ExecutionState
    attempt: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class FailUnacknowledgedCheckpoints:
    """A task attempt failed: abort every pending checkpoint it has not acknowledged."""

    task: TaskId
    attempt: int = 0
    cause: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortPendingCheckpoints:
    """Abort all pending checkpoints (e.g. ``JOB_FAILOVER_REGION`` on failover)."""

    reason: CheckpointFailureReason


@dataclass(frozen=True, slots=True, kw_only=True)
class ShutdownCoordinator:
    job_status: JobStatus = JobStatus.FINISHED


HandlerMessage = (
    BarrierReceived
    | AnnouncementReceived
    | CancelMarkerReceived
    | EndOfPartitionReceived
    | TimerFired
)

CoordinatorMessage = (
    TriggerCheckpointRequest
    | AcknowledgeCheckpoint
    | DeclineCheckpoint
    | JobStatusChanged
    | ExecutionStateChanged
    | FailUnacknowledgedCheckpoints
    | AbortPendingCheckpoints
    | ShutdownCoordinator
    | TimerFired
)
