"""The JobMaster's decisions, as a pure core: the job status, deployment, failover and the
restart strategy, the choice of the checkpoint to restore, savepoints, the job's result."""

from runtime.scheduler.restore import RestoreChoice, restore_candidates
from runtime.scheduler.scheduler import RestartTimer, SavepointTimer, Scheduler, empty_report

__all__ = [
    "RestartTimer",
    "RestoreChoice",
    "SavepointTimer",
    "Scheduler",
    "empty_report",
    "restore_candidates",
]
