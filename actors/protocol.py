"""Messages between actors that are transport, not protocol decisions: what a channel actor
(the network between two tasks) receives from its producer and its consumer, the JobMaster's
bookkeeping.

Protocol messages (triggers, acknowledgements, barriers inside ``Deliver``) are the runtime
core's own dataclasses (``runtime.messages``); everything here is frozen and slotted too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runtime.checkpoint import TaskId
from runtime.failure import TaskFailure
from runtime.network import ChannelItem
from runtime.reasons import CheckpointFailureReason
from runtime.status import ExecutionState

# --- to an input channel (the network between two tasks) -----------------------------------------


@dataclass(frozen=True, slots=True)
class Deliver:
    """The producer sends an item (a buffer it has a credit for, or an event)."""

    item: ChannelItem


@dataclass(frozen=True, slots=True)
class Credit:
    """The consumer freed buffers of this channel: credits for the producer."""

    credits: int = 1


@dataclass(frozen=True, slots=True)
class AllRecordsProcessed:
    """The consumer processed the channel's end of data (for the producer, FLIP-147)."""


# --- wiring (JobMaster -> the actors it deployed, before StartTask) -------------------------------


@dataclass(frozen=True, slots=True)
class WireChannel:
    producer: Any  # ActorRef of the upstream task


@dataclass(frozen=True, slots=True)
class WireTask:
    coordinator: Any
    outputs: list[Any]
    inputs: list[Any]


@dataclass(frozen=True, slots=True)
class WireCoordinator:
    tasks: dict[TaskId, Any]


# --- to the JobMaster -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStateUpdate:
    task: TaskId
    state: ExecutionState
    message: str | None = None
    #: which deployment of the task (updates of an earlier attempt are stale)
    attempt: int = 0
    #: FAILED in user code: the operator, the exception and the user's traceback
    failure: TaskFailure | None = None
    #: the task's IO metrics at this moment (``TaskIOMetrics.snapshot``), for the REST API
    metrics: dict[str, Any] | None = None


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
class CoordinatorCrashed:
    """The checkpoint coordinator's actor crashed (a bug of ckptsim, not of the job): the
    job fails with this cause instead of waiting for checkpoints that never come."""

    cause: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointFailure:
    """The coordinator's failure manager asks to fail the job."""

    message: str
    reason: CheckpointFailureReason


@dataclass(frozen=True, slots=True)
class CancelJob:
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class FailJob:
    """What runs the job broke (its timer thread died): the job fails for good with ``cause``
    instead of waiting for timers that never fire."""

    cause: str


@dataclass(frozen=True, slots=True)
class Deploy:
    """Start the job."""


@dataclass(frozen=True, slots=True)
class RestartJob:
    """Timer key: the restart delay after a failure is over."""

    attempt: int


@dataclass(frozen=True, slots=True)
class JobTimer:
    """Timer key: a savepoint or stop-with-savepoint asked for at a time."""

    index: int


@dataclass(frozen=True, slots=True)
class ListRetainedCheckpoints:
    """JobMaster -> coordinator: which completed checkpoints could a restart restore?"""


@dataclass(frozen=True, slots=True)
class RetainedCheckpoints:
    """Coordinator -> JobMaster: (id, path, is savepoint) of the retained checkpoints,
    newest first."""

    checkpoints: tuple[tuple[int, str, bool], ...]


@dataclass(frozen=True, slots=True)
class RequestOutcome:
    """Coordinator -> JobMaster: how a checkpoint or savepoint it asked for ended."""

    request_id: int
    path: str | None
    failure: str | None
    checkpoint_id: int | None = None


@dataclass(frozen=True, slots=True)
class SourceProgress:
    """A source task -> JobMaster: records it has read so far (for savepoints at a count)."""

    task: TaskId
    records: int


@dataclass(frozen=True, slots=True)
class QueryProgress:
    """Ask (from outside the actor system only) for a progress snapshot."""


# --- from outside the actor system (the REST API: actors/web.py) -----------------------------------


@dataclass(frozen=True, slots=True)
class QueryJob:
    """Ask (from outside the actor system only) for the job as the REST API shows it: status
    and its history, task states and their last metrics, the task and coordinator refs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotRequest:
    """A savepoint, a stop-with-savepoint or a checkpoint asked for from outside (Flink's
    ``POST /jobs/:jobid/savepoints``, ``/stop``, ``/checkpoints``); ``reply`` (a future) is
    completed with a ``SnapshotOutcome``."""

    kind: str  # "savepoint" | "stop" | "checkpoint" | "full_checkpoint"
    directory: str | None = None
    reply: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotOutcome:
    path: str | None = None
    checkpoint_id: int | None = None
    failure: str | None = None
