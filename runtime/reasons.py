"""Why a checkpoint failed: Flink's ``CheckpointFailureReason`` and the legacy decline reasons.

Failures are data in ckptsim: a declined, expired, subsumed or cancelled checkpoint carries one
of these names (Flink's own), never an exception.
"""

from __future__ import annotations

import enum


class CheckpointFailureReason(enum.Enum):
    """Flink's ``CheckpointFailureReason`` (current mainline), with two flags per reason.

    ``pre_flight``: the failure happened before the checkpoint reached the tasks (a job-level
    failure for the failure manager). ``counted``: counts toward
    ``execution.checkpointing.tolerable-failed-checkpoints``.
    """

    PERIODIC_SCHEDULER_SHUTDOWN = (True, False, "Periodic checkpoint scheduler is shut down.")
    TOO_MANY_CHECKPOINT_REQUESTS = (
        True,
        False,
        "The maximum number of queued checkpoint requests exceeded",
    )
    MINIMUM_TIME_BETWEEN_CHECKPOINTS = (
        True,
        False,
        "The minimum time between checkpoints is still pending. "
        "Checkpoint will be triggered at a later time.",
    )
    NOT_ALL_REQUIRED_TASKS_RUNNING = (True, False, "Not all required tasks are currently running.")
    IO_EXCEPTION = (
        True,
        True,
        "An Exception occurred while triggering the checkpoint. IO-problem detected.",
    )
    BLOCKING_OUTPUT_EXIST = (True, False, "Blocking output edge exists in running tasks.")
    CHECKPOINT_ASYNC_EXCEPTION = (False, True, "Asynchronous task checkpoint failed.")
    CHANNEL_STATE_SHARED_STREAM_EXCEPTION = (
        False,
        False,
        "The checkpoint was aborted due to exception of other subtasks sharing the ChannelState file.",
    )
    CHECKPOINT_EXPIRED = (False, True, "Checkpoint expired before completing.")
    CHECKPOINT_SUBSUMED = (False, False, "Checkpoint has been subsumed.")
    CHECKPOINT_DECLINED = (False, True, "Checkpoint was declined.")
    CHECKPOINT_DECLINED_TASK_NOT_READY = (False, False, "Checkpoint was declined (tasks not ready)")
    CHECKPOINT_DECLINED_TASK_CLOSING = (False, False, "Checkpoint was declined (task is closing)")
    CHECKPOINT_DECLINED_SUBSUMED = (
        False,
        False,
        "Checkpoint was canceled because a barrier from newer checkpoint was received.",
    )
    CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER = (
        False,
        False,
        "Task received cancellation from one of its inputs",
    )
    CHECKPOINT_DECLINED_INPUT_END_OF_STREAM = (
        False,
        False,
        "Checkpoint was declined because one input stream is finished",
    )
    CHECKPOINT_COORDINATOR_SHUTDOWN = (False, False, "CheckpointCoordinator shutdown.")
    CHECKPOINT_COORDINATOR_SUSPEND = (False, False, "Checkpoint Coordinator is suspending.")
    JOB_FAILOVER_REGION = (False, False, "FailoverRegion is restarting.")
    TASK_FAILURE = (False, False, "Task has failed.")
    TASK_CHECKPOINT_FAILURE = (False, False, "Task local checkpoint failure.")
    UNKNOWN_TASK_CHECKPOINT_NOTIFICATION_FAILURE = (
        False,
        False,
        "Unknown task for the checkpoint to notify.",
    )
    FINALIZE_CHECKPOINT_FAILURE = (False, True, "Failure to finalize checkpoint.")
    TRIGGER_CHECKPOINT_FAILURE = (False, False, "Trigger checkpoint failure.")
    # Flink 1.10 only (removed in 1.11); kept for the legacy buffered aligner.
    CHECKPOINT_DECLINED_ALIGNMENT_LIMIT_EXCEEDED = (
        False,
        False,
        "Checkpoint was declined (alignment limit exceeded)",
    )

    def __init__(self, pre_flight: bool, counted: bool, message: str) -> None:
        self.pre_flight = pre_flight
        self.counted = counted
        self.message = message

    @classmethod
    def parse(cls, name: str) -> CheckpointFailureReason:
        try:
            return cls[name]
        except KeyError:
            allowed = ", ".join(r.name for r in cls)
            raise ValueError(
                f"unknown checkpoint failure reason {name!r}; one of: {allowed}"
            ) from None


class CheckpointDeclineReason(enum.Enum):
    """Flink ≤1.9's pre-flight decline reasons, returned by the 1.7 trigger API."""

    COORDINATOR_SHUTDOWN = "Checkpoint coordinator is shut down."
    PERIODIC_SCHEDULER_SHUTDOWN = "Periodic checkpoint scheduler is shut down."
    ALREADY_QUEUED = "Another checkpoint request has already been queued."
    TOO_MANY_CONCURRENT_CHECKPOINTS = "The maximum number of concurrent checkpoints is exceeded"
    MINIMUM_TIME_BETWEEN_CHECKPOINTS = "The minimum time between checkpoints is still pending."
    NOT_ALL_REQUIRED_TASKS_RUNNING = "Not all required tasks are currently running."
    EXCEPTION = "An Exception occurred while triggering the checkpoint."

    @property
    def message(self) -> str:
        return str(self.value)


class CheckpointException(Exception):
    """A checkpoint cannot go on (Flink's ``CheckpointException``); carries the reason.

    Raised only inside the core between collaborators (an input refusing to start persisting);
    what leaves the core is always an effect carrying the reason.
    """

    def __init__(self, reason: CheckpointFailureReason, message: str = "") -> None:
        super().__init__(message or reason.message)
        self.reason = reason
