"""Effects out of the protocol core: what a runtime must carry out after a ``handle`` call.

Frozen, slotted, keyword-only dataclasses. A runtime (actor shell, deterministic simulation,
conformance harness) interprets them; the core never sends, sleeps or writes on its own.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from runtime.checkpoint import CheckpointOptions, CompletedCheckpoint, StateHandle, TaskId
from runtime.network import CheckpointBarrier
from runtime.reasons import CheckpointDeclineReason, CheckpointFailureReason

# --- timers (any core object) ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleTimer:
    """Deliver ``TimerFired(key)`` at ``due`` (ms); replaces an earlier timer with the same key."""

    key: Hashable
    due: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelTimer:
    key: Hashable


# --- barrier handler -> its task ---------------------------------------------------------------


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


# --- barrier handler -> its input channels -------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumeConsumption:
    """Unblock a channel paused after it delivered an aligned barrier."""

    channel: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointStarted:
    """All input channels start persisting in-flight data of this (unaligned) checkpoint."""

    barrier: CheckpointBarrier


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointStopped:
    """All input channels stop persisting in-flight data of this checkpoint."""

    checkpoint_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ConvertToPriorityEvent:
    """Move the announced barrier at ``sequence_number`` to the front of its channel."""

    channel: int
    sequence_number: int


# --- coordinator -> tasks and the job ------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SendTriggerCheckpoint:
    task: TaskId
    attempt: int
    checkpoint_id: int
    timestamp: int
    options: CheckpointOptions


@dataclass(frozen=True, slots=True, kw_only=True)
class SendNotifyCheckpointComplete:
    task: TaskId
    attempt: int
    checkpoint_id: int
    timestamp: int
    last_subsumed_checkpoint_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SendNotifyCheckpointAborted:
    task: TaskId
    attempt: int
    checkpoint_id: int
    latest_completed_checkpoint_id: int
    timestamp: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscardState:
    """Delete these state handles (late, unknown or aborted acknowledgements, subsumed checkpoints)."""

    checkpoint_id: int
    handles: tuple[StateHandle, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestCompleted:
    request_id: int
    checkpoint: CompletedCheckpoint


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestFailed:
    request_id: int
    reason: CheckpointFailureReason
    checkpoint_id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestDeclined:
    """Flink 1.7 trigger semantics: the request was declined before a checkpoint existed."""

    request_id: int
    reason: CheckpointDeclineReason


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointTriggered:
    """A pending checkpoint was created (informational: traces and statistics)."""

    checkpoint_id: int
    request_id: int
    timestamp: int
    options: CheckpointOptions


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointCompleted:
    """A checkpoint completed and (unless it is a plain savepoint) entered the store."""

    checkpoint: CompletedCheckpoint
    subsumed: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointAborted:
    checkpoint_id: int
    reason: CheckpointFailureReason


@dataclass(frozen=True, slots=True, kw_only=True)
class FailJob:
    """The failure manager's verdict: too many checkpoint failures, fail (over) the job."""

    message: str
    reason: CheckpointFailureReason
    task: TaskId | None = None


Effect = (
    ScheduleTimer
    | CancelTimer
    | TriggerCheckpointOnBarrier
    | AllBarriersReceived
    | AbortCheckpointOnBarrier
    | ResumeConsumption
    | CheckpointStarted
    | CheckpointStopped
    | ConvertToPriorityEvent
    | SendTriggerCheckpoint
    | SendNotifyCheckpointComplete
    | SendNotifyCheckpointAborted
    | DiscardState
    | RequestCompleted
    | RequestFailed
    | RequestDeclined
    | CheckpointTriggered
    | CheckpointCompleted
    | CheckpointAborted
    | FailJob
)
