"""Why a script stops before or instead of running its job: the exceptions ``ckptsim run``
turns into one line and its exit status."""

from __future__ import annotations

from runtime.job import JobResult


class ScriptError(Exception):
    """The script cannot be run as a job (exit status 2)."""


class UnsupportedFeature(Exception):
    """The script uses something ckptsim cannot run (a connector that needs Flink's JVM, the
    Table API, ...): it stops before its job starts (exit status 2); the message names it and
    what to use instead."""


class JobFailed(Exception):
    """``execute()`` of an API that raises when its job fails (PyFlink's, as Flink's): the
    script stops there, and the run reports the failed job as any failed job."""

    def __init__(self, result: JobResult) -> None:
        cause = result.root_cause
        why = cause.describe() if cause is not None else (result.failure or result.status.value)
        super().__init__(f"Job execution failed: {why}")
        self.result = result
