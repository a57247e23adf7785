"""Messages into the protocol core: every core object's ``handle(msg, now)`` takes one of these.

Frozen, slotted, keyword-only dataclasses; one union per receiver at the bottom.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from runtime.checkpoint import (
    CheckpointMetrics,
    CheckpointOptions,
    SnapshotType,
    TaskId,
    TaskStateSnapshot,
)
from runtime.failure import TaskFailure
from runtime.network import ChannelItem, CheckpointBarrier
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
class RestoredFromCheckpoint:
    """The job (re)started from this checkpoint or savepoint: new checkpoints continue after
    its id, and the statistics count the restore."""

    checkpoint_id: int
    external_path: str | None = None
    is_savepoint: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ShutdownCoordinator:
    job_status: JobStatus = JobStatus.FINISHED


# --- stream task -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class StopTask:
    """Stop-with-savepoint completed: stop where you are and finish (nothing is ended or
    drained; what the sinks have not committed is dropped)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StartTask:
    """Deployed: open the operators (restoring state if given) and start working."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InputItem:
    """The network delivered an item of input ``channel`` into the task's input gate (Flink:
    the netty thread adds a buffer to the input channel's queue of received buffers)."""

    channel: int
    item: ChannelItem


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputCredit:
    """The receiving channel freed buffers: this many more may be sent on the output channel."""

    channel: int
    credits: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class AllDataProcessed:
    """The consumer of an output channel processed its end of data: nothing this task sent on
    it is in flight any more (Flink's all-data-processed future, FLIP-147)."""

    channel: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RunDefaultAction:
    """One step of the mailbox: process pending priority events, else the default action
    (the next input buffer or event, or for a source, the next batch)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TriggerCheckpoint:
    """Coordinator -> source task (Flink's ``triggerCheckpointAsync``)."""

    checkpoint_id: int
    timestamp: int
    options: CheckpointOptions


@dataclass(frozen=True, slots=True, kw_only=True)
class NotifyCheckpointComplete:
    checkpoint_id: int
    last_subsumed_checkpoint_id: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class NotifyCheckpointAborted:
    checkpoint_id: int
    latest_completed_checkpoint_id: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncPartMeasured:
    """The runtime measured how long the synchronous part of the snapshot took (the core
    cannot read the clock); it is reported with the acknowledgement."""

    checkpoint_id: int
    duration_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotWritten:
    """The asynchronous part stored the snapshot."""

    checkpoint_id: int
    state: TaskStateSnapshot
    async_duration_ms: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotFailed:
    checkpoint_id: int
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UserCodeFailed:
    """User code the runtime ran for the task (a sink connector) raised: the task fails."""

    failure: TaskFailure


@dataclass(frozen=True, slots=True, kw_only=True)
class InjectFailure:
    """An injected fault: the task fails as if its user code had raised."""

    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelTask:
    pass


TaskMessage = (
    StartTask
    | InputItem
    | OutputCredit
    | AllDataProcessed
    | RunDefaultAction
    | TriggerCheckpoint
    | NotifyCheckpointComplete
    | NotifyCheckpointAborted
    | SyncPartMeasured
    | SnapshotWritten
    | SnapshotFailed
    | UserCodeFailed
    | InjectFailure
    | CancelTask
    | StopTask
    | TimerFired
)

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
    | RestoredFromCheckpoint
    | ShutdownCoordinator
    | TimerFired
)
