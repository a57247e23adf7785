"""``PendingCheckpoint``: a triggered checkpoint collecting acknowledgements."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from runtime.checkpoint import (
    CheckpointMetrics,
    CheckpointOptions,
    CheckpointProperties,
    CompletedCheckpoint,
    StateHandle,
    TaskId,
    TaskStateSnapshot,
)
from runtime.coordinator.plan import CheckpointPlan
from runtime.messages import RequestId


class AckResult(enum.Enum):
    """Flink's ``PendingCheckpoint.TaskAcknowledgeResult``."""

    SUCCESS = "SUCCESS"
    DUPLICATE = "DUPLICATE"
    UNKNOWN = "UNKNOWN"
    DISCARDED = "DISCARDED"


@dataclass(frozen=True, slots=True, kw_only=True)
class SubtaskAck:
    """What one subtask reported with its acknowledgement."""

    ack_timestamp: int
    metrics: CheckpointMetrics
    state: TaskStateSnapshot | None


@dataclass(slots=True, kw_only=True)
class PendingCheckpoint:
    checkpoint_id: int
    timestamp: int
    props: CheckpointProperties
    options: CheckpointOptions
    plan: CheckpointPlan
    request_id: RequestId
    periodic: bool = False
    not_yet_acknowledged: dict[TaskId, int] = field(default_factory=dict)
    acknowledged: dict[TaskId, SubtaskAck] = field(default_factory=dict)
    acknowledged_attempts: dict[TaskId, int] = field(default_factory=dict)
    disposed: bool = False
    #: fully acknowledged, its metadata being written (``FinalizeCheckpoint``): from then on
    #: only the storage's answer, or an abort of the whole job's checkpoints, ends it
    finalizing: CompletedCheckpoint | None = None
    #: the final source positions of the plan's finished tasks (``CompletedCheckpoint``'s)
    final_positions: dict[TaskId, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.not_yet_acknowledged:
            self.not_yet_acknowledged = dict(self.plan.tasks_to_wait_for)

    @property
    def is_fully_acknowledged(self) -> bool:
        return not self.not_yet_acknowledged and not self.disposed

    @property
    def can_be_subsumed(self) -> bool:
        return self.props.can_be_subsumed

    def is_acknowledged_by(self, task: TaskId, attempt: int) -> bool:
        return self.acknowledged_attempts.get(task) == attempt

    def acknowledge_task(
        self,
        task: TaskId,
        attempt: int,
        state: TaskStateSnapshot | None,
        metrics: CheckpointMetrics | None,
        now: int,
    ) -> AckResult:
        if self.disposed:
            return AckResult.DISCARDED
        expected_attempt = self.not_yet_acknowledged.get(task)
        if expected_attempt is None or expected_attempt != attempt:
            if self.acknowledged_attempts.get(task) == attempt:
                return AckResult.DUPLICATE
            return AckResult.UNKNOWN
        del self.not_yet_acknowledged[task]
        self.acknowledged_attempts[task] = attempt
        self.acknowledged[task] = SubtaskAck(
            ack_timestamp=now, metrics=metrics or CheckpointMetrics(), state=state
        )
        return AckResult.SUCCESS

    def state_handles(self) -> tuple[StateHandle, ...]:
        return tuple(
            h
            for ack in self.acknowledged.values()
            if ack.state is not None
            for h in ack.state.handles
        )

    def abort(self) -> tuple[StateHandle, ...]:
        """Dispose of the checkpoint; returns the acknowledged state, which must be discarded."""
        if self.disposed:
            return ()
        self.disposed = True
        return self.state_handles()

    def finalize(self, now: int, external_path: str | None) -> CompletedCheckpoint:
        """Dispose of the pending checkpoint *keeping* its state in a completed checkpoint."""
        completed = self.to_completed(now, external_path)
        self.disposed = True
        return completed

    def to_completed(self, now: int, external_path: str | None) -> CompletedCheckpoint:
        if not self.is_fully_acknowledged:
            raise RuntimeError(f"checkpoint {self.checkpoint_id} is not fully acknowledged")
        return CompletedCheckpoint(
            checkpoint_id=self.checkpoint_id,
            timestamp=self.timestamp,
            completion_timestamp=now,
            props=self.props,
            task_states={t: a.state for t, a in self.acknowledged.items() if a.state is not None},
            external_path=external_path,
            finished_tasks=self.plan.finished_tasks,
            final_positions=self.final_positions,
        )
