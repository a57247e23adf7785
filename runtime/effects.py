"""Effects out of the protocol core: what a runtime must carry out after a ``handle`` call.

Frozen, slotted, keyword-only dataclasses. A runtime (actor shell, deterministic simulation,
conformance harness) interprets them; the core never sends, sleeps or writes on its own.

Every core uses the same three for time, messages and the trace: ``ScheduleTimer`` /
``CancelTimer``, ``Send`` (a message to a task or to the JobMaster or the coordinator) and
``Traced`` (a fact the runtime only logs). Then one union per core: ``GateEffect``,
``TaskEffect``, ``CoordinatorEffect`` here; the scheduler's, which carry the job model, live
with it (``runtime.scheduler.effects``).
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from runtime.checkpoint import (
    CheckpointOptions,
    CheckpointProperties,
    CompletedCheckpoint,
    StateHandle,
    TaskId,
)
from runtime.failure import TaskFailure
from runtime.messages import Message, RequestId
from runtime.network import ChannelItem, CheckpointBarrier
from runtime.reasons import CheckpointDeclineReason, CheckpointFailureReason
from runtime.snapshot import TaskSnapshot

# --- timers (any core object) ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleTimer:
    """Deliver ``TimerFired(key)`` at ``due`` (ms); replaces an earlier timer with the same key."""

    key: Hashable
    due: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelTimer:
    key: Hashable


# --- messages and trace facts (any core) -----------------------------------------------------


class Role(enum.Enum):
    """The job's actors a core addresses by their role (a task is addressed by its ``TaskId``)."""

    JOB_MASTER = "job_master"
    COORDINATOR = "checkpoint_coordinator"


#: whom a message goes to
Address = TaskId | Role


@dataclass(frozen=True, slots=True, kw_only=True)
class Send:
    """Deliver ``message`` to the mailbox of ``to`` (the current attempt of a task, the
    JobMaster or the checkpoint coordinator). A receiver that is gone drops it; only the
    scheduler hears of tasks it could not reach (``TasksUnreachable``)."""

    to: Address
    message: Message


@dataclass(frozen=True, slots=True, kw_only=True)
class Traced:
    """Informational: a protocol fact for the trace (the runtime logs it as ``event``, at
    ``level``; ``debug`` facts reach only a debug trace)."""

    event: str
    fields: dict[str, Any]
    level: Literal["debug", "info", "warning", "error"] = "info"


# --- barrier handler / input gate -> its task (GateEffect) ---------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TriggerCheckpointOnBarrier:
    """Take the snapshot now (the barrier's options say whether it is unaligned).

    ``alignment_duration_ms`` is ``None`` while the alignment is still going on (an unaligned
    checkpoint triggers on its first barrier); an ``AllBarriersReceived`` for the same
    checkpoint follows then, unless the checkpoint is aborted first.
    """

    barrier: CheckpointBarrier
    start_delay_ms: int
    alignment_duration_ms: int | None = 0
    bytes_processed_during_alignment: int | None = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class AllBarriersReceived:
    """The alignment of an already triggered checkpoint ended (see ``TriggerCheckpointOnBarrier``)."""

    checkpoint_id: int
    alignment_duration_ms: int
    bytes_processed_during_alignment: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortCheckpointOnBarrier:
    """Decline the checkpoint to the coordinator and broadcast a cancel marker downstream."""

    checkpoint_id: int
    reason: CheckpointFailureReason


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumeConsumption:
    """The handler resumed a channel it had paused after an aligned barrier (Flink's
    ``CheckpointableInput.resumeConsumption``, done to the gate's channel already); the task
    traces it."""

    channel: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ConvertToPriorityEvent:
    """The handler moved the announced barrier at ``sequence_number`` to the front of its
    channel (the alignment timed out; Flink's ``convertToPriorityEvent``, done already): the
    gate has a priority event to process; the task traces it."""

    channel: int
    sequence_number: int


# --- checkpoint coordinator (CoordinatorEffect) -----------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscardState:
    """Delete these state handles (late, unknown or aborted acknowledgements, subsumed checkpoints)."""

    checkpoint_id: int
    handles: tuple[StateHandle, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class InitializeLocation:
    """Storage work: make checkpoint ``checkpoint_id``'s location (a savepoint's under
    ``target``, if given). The runtime does it off the coordinator's thread and answers with
    ``LocationInitialized`` or ``LocationInitializationFailed``."""

    checkpoint_id: int
    props: CheckpointProperties
    target: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalizeCheckpoint:
    """Storage work: write the fully acknowledged checkpoint's metadata. The runtime answers
    with ``CheckpointFinalized`` or ``CheckpointFinalizationFailed``."""

    checkpoint: CompletedCheckpoint


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscardLocation:
    """Storage work: delete the location of a checkpoint that did not complete (Flink's
    ``disposeOnFailure``), if the job made it. Nothing answers."""

    checkpoint_id: int


#: the storage work whose completion comes back as a message (``runtime.messages``)
StorageEffect = InitializeLocation | FinalizeCheckpoint


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestCompleted:
    request_id: RequestId
    checkpoint: CompletedCheckpoint


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestFailed:
    request_id: RequestId
    reason: CheckpointFailureReason
    checkpoint_id: int | None = None
    #: what went wrong beyond the reason (a storage error: the storage and the errno's text)
    cause: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestDeclined:
    """Flink 1.7 trigger semantics: the request was declined before a checkpoint existed."""

    request_id: RequestId
    reason: CheckpointDeclineReason
    cause: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointTriggered:
    """A pending checkpoint was created (informational: traces and statistics)."""

    checkpoint_id: int
    request_id: RequestId
    timestamp: int
    options: CheckpointOptions


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointCompleted:
    """A checkpoint completed and (unless it is a plain savepoint) entered the store."""

    checkpoint: CompletedCheckpoint
    subsumed: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointAborted:
    """A pending checkpoint was aborted (informational: traces and statistics)."""

    checkpoint_id: int
    reason: CheckpointFailureReason
    cause: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FailJob:
    """The failure manager's verdict: too many checkpoint failures, fail (over) the job."""

    message: str
    reason: CheckpointFailureReason
    task: TaskId | None = None
    #: what made the last checkpoint fail, beyond its reason (e.g. a storage error)
    cause: str | None = None


# --- stream task -> its channels, itself, its sinks, the JobMaster (TaskEffect) ------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SendToOutput:
    """Send an item to the channel behind output ``channel`` (a buffer the consumer has credit
    for, or an event)."""

    channel: int
    item: ChannelItem


@dataclass(frozen=True, slots=True, kw_only=True)
class AnnounceCredit:
    """The task freed ``credits`` buffers of input ``channel``: the channel passes them to the
    producer (Flink's credit announcement)."""

    channel: int
    credits: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class AcknowledgeAllRecordsProcessed:
    """The task processed the end of data of input ``channel``: the producer's output to it is
    processed (Flink's ``acknowledgeAllRecordsProcessed``, FLIP-147)."""

    channel: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestDefaultAction:
    """Put the default action back in the mailbox (Flink's mailbox loop)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteSnapshot:
    """The asynchronous part: store the snapshot (at the checkpoint's storage location), then
    report ``SnapshotWritten`` or ``SnapshotFailed``."""

    snapshot: TaskSnapshot
    location: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SinkWrite:
    """Hand records to the sink's connector (Flink's ``SinkWriter.write``)."""

    sink: str
    records: Sequence[Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class SinkPreCommit:
    """The snapshot of ``checkpoint_id``: the connector closes its current transaction under
    that id (Flink's ``prepareCommit``; a non-transactional connector flushes)."""

    sink: str
    checkpoint_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SinkCommit:
    """Commit these transactions (Flink's ``Committer.commit``), in this order."""

    sink: str
    checkpoint_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SinkRecover:
    """After a restore of checkpoint ``checkpoint_id``: commit the restored pending
    transactions (``states``, one per subtask that ran the sink: ``{"pending": [ids]}``),
    discard whatever else was staged, and retract what was committed after that checkpoint
    (the replay writes it again)."""

    sink: str
    states: tuple[Any, ...]
    checkpoint_id: int = 0
    #: the committed output the restored checkpoint stands for, (writer, up to checkpoint)
    #: pairs of every former subtask of the sink (``runtime.task.sinks.output_lineage``): what
    #: a file sink keeps committed; None: its states recorded no lineage (an older checkpoint)
    output: tuple[tuple[str, int], ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SinkClose:
    """The task ends: ``finished`` (committing what is left when no final checkpoint does it),
    or cancelled/failed (nothing more is committed)."""

    sink: str
    finished: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class PrecommitCollected:
    """A collect sink's pre-committed transaction ``txn`` (the checkpoint id): its buffers wait
    at the JobMaster, as Flink's two-phase commit leaves a pre-committed transaction in the
    external system and only its handle in the checkpoint, until ``PublishCollected`` commits
    it (or a restore to an earlier checkpoint drops it)."""

    name: str
    txn: int
    buffers: tuple[Sequence[Any], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishCollected:
    """A collect sink's committed transaction ``txn`` (or, without checkpointing, everything it
    collected: ``txn`` None): its buffers join ``JobResult.output[name]``. No buffers: commit
    the pre-committed transaction ``txn`` of ``writer`` (the subtask that wrote it, as a
    restored state names it; None: this one)."""

    name: str
    txn: int | str | None
    buffers: tuple[Sequence[Any], ...]
    writer: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskFinished:
    task: TaskId
    #: the final position of each source the task ran (source uid to position)
    final_positions: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStopped:
    """Stopped by stop-with-savepoint: FINISHED, but its sinks' uncommitted data is dropped."""

    task: TaskId


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskCanceled:
    """The task stopped on request; what its sinks collected so far still counts."""

    task: TaskId


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskFailed:
    task: TaskId
    message: str
    #: set when user code failed: the operator, exception and the user's traceback
    failure: TaskFailure | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointTakenOnTask:
    """Informational: the task took its (synchronous) snapshot."""

    checkpoint_id: int
    unaligned: bool
    start_delay_ms: int
    alignment_ms: int | None
    #: the cut, per channel: records emitted per output channel before the snapshot (the
    #: unsent ones an unaligned barrier overtook included, and counted in
    #: ``output_persisted``), records consumed per input channel before it
    emitted: dict[int, int] = field(default_factory=dict)
    consumed: dict[int, int] = field(default_factory=dict)
    output_persisted: dict[int, int] = field(default_factory=dict)
    #: pending timers in the snapshot, per keyed operator uid (event time + processing time)
    timers: dict[str, int] = field(default_factory=dict)
    #: keyed state entries in the snapshot, per keyed operator uid (window contents included)
    state_entries: dict[str, int] = field(default_factory=dict)


#: what a barrier handler and its input gate return
GateEffect = (
    TriggerCheckpointOnBarrier
    | AllBarriersReceived
    | AbortCheckpointOnBarrier
    | ResumeConsumption
    | ConvertToPriorityEvent
    | ScheduleTimer
    | CancelTimer
)

#: what a stream task's core returns (``StreamTaskCore.handle``)
TaskEffect = (
    SendToOutput
    | AnnounceCredit
    | AcknowledgeAllRecordsProcessed
    | RequestDefaultAction
    | WriteSnapshot
    | Send
    | SinkWrite
    | SinkPreCommit
    | SinkCommit
    | SinkRecover
    | SinkClose
    | PrecommitCollected
    | PublishCollected
    | TaskFinished
    | TaskStopped
    | TaskCanceled
    | TaskFailed
    | CheckpointTakenOnTask
    | Traced
    | ScheduleTimer
    | CancelTimer
)

#: what the checkpoint coordinator's core asks its shell to do
CoordinatorEffect = (
    ScheduleTimer
    | CancelTimer
    | Send
    | InitializeLocation
    | FinalizeCheckpoint
    | DiscardLocation
    | DiscardState
    | RequestCompleted
    | RequestFailed
    | RequestDeclined
    | CheckpointTriggered
    | CheckpointCompleted
    | CheckpointAborted
    | FailJob
)

Effect = CoordinatorEffect | GateEffect | TaskEffect
