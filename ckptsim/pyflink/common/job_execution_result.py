"""``pyflink.common.JobExecutionResult``: what ``env.execute()`` returns."""

from __future__ import annotations

from typing import Any

from ckptsim.pyflink._unsupported import missing
from ckptsim.pyflink.common.job_id import JobID
from runtime.job import JobResult


class JobExecutionResult:
    """The result of a finished job; ``job_result`` is ckptsim's full ``JobResult``
    (checkpoints, failures, metrics)."""

    def __init__(self, job_result: JobResult) -> None:
        self.job_result = job_result

    def get_job_id(self) -> JobID:
        return JobID(self.job_result.job_id)

    def get_net_runtime(self) -> int:
        """Milliseconds the job ran (virtual milliseconds on the simulation)."""
        return self.job_result.duration_ms

    def get_accumulator_result(self, accumulator_name: str) -> Any:
        return None

    def get_all_accumulator_results(self) -> dict[str, Any]:
        return {}

    def __str__(self) -> str:
        return (
            f"Program execution finished\nJob with JobID {self.job_result.job_id} has finished.\n"
            f"Job Runtime: {self.job_result.duration_ms} ms\n"
        )


__getattr__ = missing("pyflink.common.job_execution_result")

__all__ = ["JobExecutionResult"]
