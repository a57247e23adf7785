"""JobManager side: the checkpoint coordinator and its collaborators."""

from runtime.coordinator.coordinator import (
    CheckpointCanceller,
    CheckpointCoordinator,
    CoordinatorConfig,
    PeriodicTrigger,
)
from runtime.coordinator.failure_manager import (
    UNLIMITED_TOLERABLE_FAILURES,
    CheckpointFailureManager,
)
from runtime.coordinator.pending import AckResult, PendingCheckpoint
from runtime.coordinator.plan import CheckpointPlan, CheckpointPlanCalculator
from runtime.coordinator.request_decider import CheckpointRequestDecider, CheckpointTriggerRequest
from runtime.coordinator.store import CompletedCheckpointStore

__all__ = [
    "UNLIMITED_TOLERABLE_FAILURES",
    "AckResult",
    "CheckpointCanceller",
    "CheckpointCoordinator",
    "CheckpointFailureManager",
    "CheckpointPlan",
    "CheckpointPlanCalculator",
    "CheckpointRequestDecider",
    "CheckpointTriggerRequest",
    "CompletedCheckpointStore",
    "CoordinatorConfig",
    "PendingCheckpoint",
    "PeriodicTrigger",
]
