"""Job and execution (task) status, with Flink's names."""

from __future__ import annotations

import enum


class JobStatus(enum.Enum):
    """Flink's ``JobStatus``."""

    INITIALIZING = "INITIALIZING"
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    FAILING = "FAILING"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELED = "CANCELED"
    FINISHED = "FINISHED"
    RESTARTING = "RESTARTING"
    SUSPENDED = "SUSPENDED"
    RECONCILING = "RECONCILING"

    @property
    def is_globally_terminal(self) -> bool:
        return self in (JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED)

    @property
    def is_terminal(self) -> bool:
        return self.is_globally_terminal or self is JobStatus.SUSPENDED


class ExecutionState(enum.Enum):
    """Flink's ``ExecutionState`` of one task attempt."""

    CREATED = "CREATED"
    SCHEDULED = "SCHEDULED"
    DEPLOYING = "DEPLOYING"
    INITIALIZING = "INITIALIZING"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELING = "CANCELING"
    CANCELED = "CANCELED"
    FAILED = "FAILED"
    RECONCILING = "RECONCILING"

    @property
    def is_terminal(self) -> bool:
        return self in (
            ExecutionState.FINISHED,
            ExecutionState.CANCELED,
            ExecutionState.FAILED,
        )
