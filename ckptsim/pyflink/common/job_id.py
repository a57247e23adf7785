"""``pyflink.common.JobID``."""

from __future__ import annotations

from ckptsim.pyflink._unsupported import missing


class JobID:
    """A job's id: 32 hexadecimal digits, as Flink prints it."""

    def __init__(self, job_id: str) -> None:
        self._job_id = job_id

    def __str__(self) -> str:
        return self._job_id

    def __repr__(self) -> str:
        return f"JobID({self._job_id})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobID) and self._job_id == other._job_id

    def __hash__(self) -> int:
        return hash(self._job_id)


__getattr__ = missing("pyflink.common.job_id")

__all__ = ["JobID"]
