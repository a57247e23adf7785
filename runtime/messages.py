"""Messages into the protocol core: every core object's ``handle(msg, now)`` takes one of these.

Frozen, slotted, keyword-only dataclasses; one union per receiver at the bottom.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

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
from runtime.snapshot import LoadedCheckpoint
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


@dataclass(frozen=True, slots=True)
class SavepointRequestId:
    """A savepoint the scheduler asked for: the ``index``-th of the job's savepoint requests
    (those it was started with, then those asked for from outside)."""

    index: int


@dataclass(frozen=True, slots=True)
class CheckpointRequestId:
    """A checkpoint asked for from outside the job (the REST API), the ``number``-th."""

    number: int


#: requests whose outcome the coordinator reports back to the scheduler
JobRequestId = SavepointRequestId | CheckpointRequestId
#: a request's id: the coordinator's own (periodic ticks: negative ints), a test's or
#: scenario's int, or one of the scheduler's typed ids
RequestId = int | JobRequestId


@dataclass(frozen=True, slots=True, kw_only=True)
class TriggerCheckpointRequest:
    """A checkpoint or savepoint request (manual, periodic tick, savepoint, stop-with-savepoint)."""

    request_id: RequestId
    snapshot_type: SnapshotType = SnapshotType.CHECKPOINT
    periodic: bool = False
    target_location: str | None = None
    #: stop-with-savepoint with drain (``CheckpointOptions.drain``)
    drain: bool = False


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


@dataclass(frozen=True, slots=True)
class StopCheckpointScheduler:
    """Stop periodic checkpoints; pending and queued ones are aborted
    (``CHECKPOINT_COORDINATOR_SUSPEND``). Sent before a stop-with-savepoint, as Flink's
    ``SchedulerBase.stopWithSavepoint`` does, so that only the savepoint's data is committed."""


@dataclass(frozen=True, slots=True)
class StartCheckpointScheduler:
    """Start periodic checkpoints again (when an interval is configured): a stop-with-savepoint
    failed and the job runs on."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionStateChanged:
    task: TaskId
    state: ExecutionState
    attempt: int = 0
    #: FINISHED: the final position of each source the task ran (``TaskStateUpdate``'s)
    final_positions: dict[str, Any] | None = None


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
    #: the final source positions of the tasks it lists as finished (they stay finished: later
    #: checkpoints record these positions again)
    final_positions: dict[TaskId, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ListRetainedCheckpoints:
    """The scheduler asks which completed checkpoints a restart could restore; the coordinator
    answers ``RetainedCheckpoints``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShutdownCoordinator:
    job_status: JobStatus = JobStatus.FINISHED


# --- checkpoint storage -> coordinator: how an ``InitializeLocation`` / ``FinalizeCheckpoint``
# effect ended (Flink's I/O executor completing the future the coordinator waits on)


@dataclass(frozen=True, slots=True, kw_only=True)
class LocationInitialized:
    """The storage made checkpoint ``checkpoint_id``'s location (None: the default one)."""

    checkpoint_id: int
    location: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LocationInitializationFailed:
    """The storage could not make the location: ``error`` names the storage and the cause
    (the errno's text, e.g. "No space left on device")."""

    checkpoint_id: int
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointFinalized:
    """The storage wrote the checkpoint's metadata; ``external_path`` is where it lives (None:
    not externalized)."""

    checkpoint_id: int
    external_path: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointFinalizationFailed:
    """The storage could not write the checkpoint's metadata; ``error`` says why."""

    checkpoint_id: int
    error: str


StorageCompletion = (
    LocationInitialized
    | LocationInitializationFailed
    | CheckpointFinalized
    | CheckpointFinalizationFailed
)


# --- stream task -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class StopTask:
    """Stop-with-savepoint completed: stop where you are and finish (nothing is ended or
    drained; what the sinks have not committed is dropped)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WatermarkAlignment:
    """The scheduler -> a source task of a watermark alignment group (Flink's
    ``WatermarkAlignmentEvent``): emit nothing while your last watermark is above
    ``max_watermark`` (the group's minimum plus the allowed drift)."""

    max_watermark: int


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


# --- the scheduler (the JobMaster's decisions, ``runtime.scheduler``) ---------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class StartJob:
    """Deploy the job: its checkpoint coordinator, then its tasks."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CoordinatorStarted:
    """The runtime carried out ``StartCoordinator``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TasksDeployed:
    """The runtime carried out ``DeployTasks``: every task and channel of ``attempt`` exists
    and is wired."""

    attempt: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeploymentFailed:
    """``StartCoordinator`` or ``DeployTasks`` raised (e.g. a sink could not open its file)."""

    attempt: int
    cause: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStateUpdate:
    """A task -> the scheduler: its execution state changed."""

    task: TaskId
    state: ExecutionState
    message: str | None = None
    #: which deployment of the task (updates of an earlier attempt are stale)
    attempt: int = 0
    #: FAILED in user code: the operator, the exception and the user's traceback
    failure: TaskFailure | None = None
    #: the task's IO metrics at this moment (``TaskIOMetrics.snapshot``), for the REST API
    metrics: dict[str, Any] | None = None
    #: FINISHED: the final position of each source the task ran (source uid to position); the
    #: checkpoints that list the task as finished record it, and a restore checks it
    final_positions: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TasksUnreachable:
    """The runtime could not deliver a ``SendToTasks`` message to these tasks of ``attempt``:
    their actors are gone."""

    tasks: tuple[TaskId, ...]
    attempt: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SinkResults:
    """Records of a collect sink for the job's result: a committed transaction (``txn``, kept
    once however often it is committed) or, without checkpointing, all of them at the end.
    ``buffers``: the records as the task's buffers (no copy per record on the way)."""

    sink: str
    task: TaskId
    records: list[Any]
    attempt: int = 0
    txn: int | str | None = None
    buffers: tuple[Sequence[Any], ...] = ()
    #: pre-committed transaction ``txn``: held until a commit of it (no buffers) arrives
    precommit: bool = False
    #: the subtask that wrote transaction ``txn`` (a restored one; None: ``task``)
    writer: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceProgress:
    """A source task -> the scheduler: records it has read so far (for savepoints at a
    count)."""

    task: TaskId
    records: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportedWatermark:
    """A source task of a watermark alignment group -> the scheduler (Flink's
    ``ReportedWatermarkEvent`` to the ``SourceCoordinator``), every update interval: the
    watermark it last emitted (``MAX_WATERMARK`` once its input ended). ``max_drift`` and
    ``update_interval`` are its strategy's (``with_watermark_alignment``)."""

    task: TaskId
    attempt: int
    group: str
    watermark: int
    max_drift: int
    update_interval: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CoordinatorCrashed:
    """The checkpoint coordinator's actor crashed (a bug of ckptsim, not of the job): the
    job fails with this cause instead of waiting for checkpoints that never come."""

    cause: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointFailure:
    """The coordinator's failure manager asks to fail the job; ``cause``: what made the last
    checkpoint fail beyond its reason (a storage error), if known."""

    message: str
    reason: CheckpointFailureReason
    cause: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelJob:
    """Cancel the job (Ctrl-C, a timeout, the REST API)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeFailed:
    """What runs the job broke (its timer thread died): the job fails for good with ``cause``
    instead of waiting for timers that never fire."""

    cause: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RetainedCheckpoints:
    """Coordinator -> scheduler: the retained completed checkpoints a restart could restore,
    newest first."""

    checkpoints: tuple[RestoredFromCheckpoint, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointLoaded:
    """The runtime carried out ``LoadCheckpoint``: the checkpoint, every file verified."""

    attempt: int
    checkpoint: LoadedCheckpoint


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointLoadFailed:
    """``LoadCheckpoint`` failed: the checkpoint is missing or damaged (``error`` names the
    file)."""

    attempt: int
    checkpoint_id: int
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestOutcome:
    """Coordinator -> scheduler: how a checkpoint or savepoint the scheduler asked for ended
    (``path`` None: it failed, ``failure`` says why)."""

    request_id: JobRequestId
    path: str | None = None
    failure: str | None = None
    checkpoint_id: int | None = None


SnapshotKind = Literal["savepoint", "stop", "checkpoint", "full_checkpoint"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotRequested:
    """A savepoint, a stop-with-savepoint or a checkpoint asked for from outside (Flink's
    ``POST /jobs/:jobid/savepoints``, ``/stop``, ``/checkpoints``); the outcome goes to the
    runtime's ``reply`` token (``ReplyToSnapshotRequest``)."""

    kind: SnapshotKind
    directory: str | None = None
    reply: int
    #: ``stop`` only: drain (Flink's ``{"drain": true}``, ``flink stop --drain``)
    drain: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CoordinatorReport:
    """The coordinator's last word: statistics after its shutdown."""

    stats: dict[str, Any]
    details: dict[int, dict[str, Any]]
    completed: list[int]
    retained: list[str]
    #: checkpoint id -> the type it was triggered as (``CheckpointStats.triggered_type``)
    types: dict[int, str] = field(default_factory=dict)


SchedulerMessage = (
    StartJob
    | CoordinatorStarted
    | TasksDeployed
    | DeploymentFailed
    | TaskStateUpdate
    | TasksUnreachable
    | SinkResults
    | SourceProgress
    | ReportedWatermark
    | CoordinatorCrashed
    | CheckpointFailure
    | CancelJob
    | RuntimeFailed
    | RetainedCheckpoints
    | CheckpointLoaded
    | CheckpointLoadFailed
    | RequestOutcome
    | SnapshotRequested
    | CoordinatorReport
    | TimerFired
)


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
    | WatermarkAlignment
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
    | StopCheckpointScheduler
    | StartCheckpointScheduler
    | ExecutionStateChanged
    | FailUnacknowledgedCheckpoints
    | AbortPendingCheckpoints
    | RestoredFromCheckpoint
    | ListRetainedCheckpoints
    | ShutdownCoordinator
    | TimerFired
    | LocationInitialized
    | LocationInitializationFailed
    | CheckpointFinalized
    | CheckpointFinalizationFailed
)

#: every message a core takes (what ``Send`` delivers)
Message = TaskMessage | CoordinatorMessage | SchedulerMessage
