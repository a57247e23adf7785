"""``pyflink.common.JobStatus``."""

from __future__ import annotations

import enum

from ckptsim.pyflink._unsupported import missing


class JobStatus(enum.Enum):
    CREATED = 0
    RUNNING = 1
    FAILING = 2
    FAILED = 3
    CANCELLING = 4
    CANCELED = 5
    FINISHED = 6
    RESTARTING = 7
    SUSPENDED = 8
    RECONCILING = 9

    def is_globally_terminal_state(self) -> bool:
        return self in (JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED)

    def is_terminal_state(self) -> bool:
        return self.is_globally_terminal_state() or self is JobStatus.SUSPENDED


__getattr__ = missing("pyflink.common.job_status")

__all__ = ["JobStatus"]
