"""``pyflink.common.JobClient``: what ``env.execute_async()`` returns.

ckptsim's ``execute_async`` runs the job to its end before it returns (one job at a time, as
``ckptsim run`` reports it); the client then answers with that job's final state.
"""

from __future__ import annotations

from ckptsim.pyflink._unsupported import missing, unsupported
from ckptsim.pyflink.common.completable_future import CompletableFuture
from ckptsim.pyflink.common.job_execution_result import JobExecutionResult
from ckptsim.pyflink.common.job_id import JobID
from ckptsim.pyflink.common.job_status import JobStatus


class JobClient:
    def __init__(self, result: JobExecutionResult) -> None:
        self._result = result

    def get_job_id(self) -> JobID:
        return self._result.get_job_id()

    def get_job_status(self) -> CompletableFuture:
        return CompletableFuture(JobStatus[self._result.job_result.status.value])

    def cancel(self) -> CompletableFuture:
        return CompletableFuture(None)

    def stop_with_savepoint(
        self, advance_to_end_of_event_time: bool, savepoint_directory: str | None = None
    ) -> CompletableFuture:
        unsupported(
            "JobClient.stop_with_savepoint() (execute_async returns when the job has ended)",
            "use `ckptsim stop JOB_ID` while the job runs under `ckptsim run --web`",
        )

    def trigger_savepoint(self, savepoint_directory: str | None = None) -> CompletableFuture:
        unsupported(
            "JobClient.trigger_savepoint() (execute_async returns when the job has ended)",
            "use `ckptsim savepoint JOB_ID` while the job runs under `ckptsim run --web`",
        )

    def get_accumulators(self) -> CompletableFuture:
        return CompletableFuture({})

    def get_job_execution_result(self) -> CompletableFuture:
        return CompletableFuture(self._result)

    def __repr__(self) -> str:
        return f"JobClient({self.get_job_id()})"


__getattr__ = missing("pyflink.common.job_client")

__all__ = ["JobClient"]
