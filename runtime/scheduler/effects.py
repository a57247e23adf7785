"""What the scheduler (``runtime.scheduler.Scheduler``, the JobMaster's decisions) asks its
runtime to do besides sending messages (``runtime.effects.Send``), running timers and tracing:
start the checkpoint coordinator, deploy and stop the tasks, load a checkpoint for a restore,
answer requests from outside, complete the job.

Frozen, slotted, keyword-only dataclasses, as ``runtime.effects``; they live with their owner
because they carry the job model (``ExecutionPlan``, ``JobResult``), which sits above the
protocol's shared vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.effects import CancelTimer, ScheduleTimer, Send, Traced
from runtime.job import ExecutionPlan, JobResult
from runtime.messages import RestoredFromCheckpoint


@dataclass(frozen=True, slots=True, kw_only=True)
class StartCoordinator:
    """Start the job's checkpoint coordinator for ``plan``; answer ``CoordinatorStarted`` or
    ``DeploymentFailed``."""

    plan: ExecutionPlan


@dataclass(frozen=True, slots=True, kw_only=True)
class DeployTasks:
    """Deploy attempt ``attempt`` of ``plan``: one task per subtask (a source reports its record
    count every ``report_records_every`` records; 0: never), one channel per connected pair,
    wired to each other and to the coordinator. Answer ``TasksDeployed`` or
    ``DeploymentFailed``."""

    attempt: int
    plan: ExecutionPlan
    report_records_every: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class StopDeployment:
    """Stop every task and channel of the current deployment (they are all down)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadCheckpoint:
    """Storage work: read and verify ``checkpoint`` for a restart of ``attempt``, off the
    scheduler's thread (Flink's I/O executor); answer ``CheckpointLoaded`` or
    ``CheckpointLoadFailed``."""

    attempt: int
    checkpoint: RestoredFromCheckpoint


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotOutcome:
    """How a snapshot asked for from outside ended: its path (a savepoint), its id, or why it
    failed."""

    path: str | None = None
    checkpoint_id: int | None = None
    failure: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyToSnapshotRequest:
    """Complete the outside request that gave ``reply`` (``SnapshotRequested``)."""

    reply: int
    outcome: SnapshotOutcome


@dataclass(frozen=True, slots=True, kw_only=True)
class StopCoordinator:
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class CompleteJob:
    """The job ended: hand ``result`` to whoever waits for it."""

    result: JobResult


#: what the scheduler returns (``runtime.scheduler``)
SchedulerEffect = (
    StartCoordinator
    | DeployTasks
    | Send
    | StopDeployment
    | LoadCheckpoint
    | ScheduleTimer
    | CancelTimer
    | Traced
    | ReplyToSnapshotRequest
    | StopCoordinator
    | CompleteJob
)
