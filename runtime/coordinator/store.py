"""The completed-checkpoint store (``StandaloneCompletedCheckpointStore``) with retention.

Checkpoints are kept oldest to newest, at most ``max_retained``
(``execution.checkpointing.num-retained``). Adding one subsumes older ones
(``CheckpointSubsumeHelper``): never the newest; savepoints always (their files are kept); after a
stop-with-savepoint anything; otherwise never the latest non-savepoint checkpoint.
"""

from __future__ import annotations

from collections import deque

from runtime.checkpoint import INVALID_CHECKPOINT_ID, CompletedCheckpoint
from runtime.status import JobStatus


class CompletedCheckpointStore:
    def __init__(self, max_retained: int = 1) -> None:
        if max_retained < 1:
            raise ValueError(f"max_retained must be >= 1, got {max_retained}")
        self.max_retained = max_retained
        self._checkpoints: deque[CompletedCheckpoint] = deque()

    @property
    def checkpoints(self) -> list[CompletedCheckpoint]:
        return list(self._checkpoints)

    @property
    def latest(self) -> CompletedCheckpoint | None:
        return self._checkpoints[-1] if self._checkpoints else None

    @property
    def latest_checkpoint_id(self) -> int:
        latest = self.latest
        return latest.checkpoint_id if latest is not None else INVALID_CHECKPOINT_ID

    def __len__(self) -> int:
        return len(self._checkpoints)

    def add_checkpoint_and_subsume_oldest(
        self, checkpoint: CompletedCheckpoint
    ) -> list[CompletedCheckpoint]:
        """Add; returns the subsumed checkpoints, oldest first (the last one is the newest)."""
        self._checkpoints.append(checkpoint)
        if len(self._checkpoints) <= self.max_retained:
            return []
        newest = self._checkpoints[-1]
        latest_non_savepoint = next(
            (c for c in reversed(self._checkpoints) if not c.is_savepoint), None
        )
        subsumed: list[CompletedCheckpoint] = []
        for candidate in list(self._checkpoints):
            if len(self._checkpoints) <= self.max_retained:
                break
            if self._can_subsume(candidate, newest, latest_non_savepoint):
                self._checkpoints.remove(candidate)
                subsumed.append(candidate)
        return subsumed

    @staticmethod
    def _can_subsume(
        candidate: CompletedCheckpoint,
        newest: CompletedCheckpoint,
        latest_non_savepoint: CompletedCheckpoint | None,
    ) -> bool:
        if candidate is newest:
            return False
        if candidate.is_savepoint or newest.props.is_synchronous:
            return True
        return latest_non_savepoint is not None and latest_non_savepoint is not candidate

    def shutdown(self, job_status: JobStatus) -> list[CompletedCheckpoint]:
        """The job ended: empty the store; returns the checkpoints to discard for this status."""
        discard = [c for c in self._checkpoints if _discard_on(c, job_status)]
        self._checkpoints.clear()
        return discard


def _discard_on(checkpoint: CompletedCheckpoint, status: JobStatus) -> bool:
    props = checkpoint.props
    if status is JobStatus.FINISHED:
        return props.discard_on_job_finished
    if status is JobStatus.CANCELED:
        return props.discard_on_job_cancelled
    if status is JobStatus.FAILED:
        return props.discard_on_job_failed
    if status is JobStatus.SUSPENDED:
        return props.discard_on_job_suspended
    return False
