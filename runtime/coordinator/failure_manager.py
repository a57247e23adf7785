"""``CheckpointFailureManager``: counts consecutive checkpoint failures and fails the job past
``execution.checkpointing.tolerable-failed-checkpoints``.

Only counted reasons increment (``CheckpointFailureReason.counted``), each checkpoint at most
once, and only failures of checkpoints newer than the last success; a success resets the
count. Savepoint failures on the JobManager side are ignored; a task-side failure of a
synchronous savepoint (stop-with-savepoint) always fails the job.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.checkpoint import CheckpointProperties, TaskId
from runtime.reasons import CheckpointFailureReason

#: ``Integer.MAX_VALUE``: never fail the job because of checkpoint failures.
UNLIMITED_TOLERABLE_FAILURES = 2**31 - 1
UNKNOWN_CHECKPOINT_ID = -1
EXCEEDED_MESSAGE = "Exceeded checkpoint tolerable failure threshold."


@dataclass(frozen=True, slots=True, kw_only=True)
class FailJobVerdict:
    message: str
    reason: CheckpointFailureReason
    task: TaskId | None = None


class CheckpointFailureManager:
    def __init__(self, tolerable_failures: int) -> None:
        if tolerable_failures < 0:
            raise ValueError(f"tolerable failures must be >= 0, got {tolerable_failures}")
        self.tolerable_failures = tolerable_failures
        self.continuous_failures = 0
        self._counted_ids: set[int] = set()
        self.last_succeeded_id = -1

    def handle_checkpoint_exception(
        self,
        *,
        checkpoint_id: int | None,
        props: CheckpointProperties,
        reason: CheckpointFailureReason,
        task: TaskId | None,
    ) -> FailJobVerdict | None:
        """A checkpoint failed; returns a verdict when the job must fail (over)."""
        cid = UNKNOWN_CHECKPOINT_ID if checkpoint_id is None else checkpoint_id
        if reason.pre_flight or task is None:
            if props.is_savepoint:
                return None
            return self._against_counter(reason, cid, None)
        if props.is_savepoint and props.is_synchronous:
            return FailJobVerdict(message=reason.message, reason=reason, task=task)
        return self._against_counter(reason, cid, task)

    def handle_checkpoint_success(self, checkpoint_id: int) -> None:
        if checkpoint_id > self.last_succeeded_id:
            self.last_succeeded_id = checkpoint_id
            self._clear()

    def _against_counter(
        self, reason: CheckpointFailureReason, checkpoint_id: int, task: TaskId | None
    ) -> FailJobVerdict | None:
        if checkpoint_id != UNKNOWN_CHECKPOINT_ID and checkpoint_id <= self.last_succeeded_id:
            return None
        if self.tolerable_failures == UNLIMITED_TOLERABLE_FAILURES or not reason.counted:
            return None
        if checkpoint_id == UNKNOWN_CHECKPOINT_ID or checkpoint_id not in self._counted_ids:
            self._counted_ids.add(checkpoint_id)
            self.continuous_failures += 1
        if self.continuous_failures > self.tolerable_failures:
            self._clear()
            return FailJobVerdict(message=EXCEEDED_MESSAGE, reason=reason, task=task)
        return None

    def _clear(self) -> None:
        self.continuous_failures = 0
        self._counted_ids.clear()
