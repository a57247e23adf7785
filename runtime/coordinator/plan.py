"""Which tasks a checkpoint triggers, waits for and commits to (``DefaultCheckpointPlanCalculator``).

With every task running: trigger the sources, wait for and commit to every task. Once some
tasks have finished (FLIP-147, ``execution.checkpointing.checkpoints-after-tasks-finish``):
trigger the running tasks whose predecessors have all finished, wait for and commit to the
running tasks; with the flag off, any finished task fails the plan.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from runtime.checkpoint import TaskId
from runtime.reasons import CheckpointFailureReason
from runtime.status import ExecutionState


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointPlan:
    """Tasks (with their current attempt numbers) of one checkpoint."""

    tasks_to_trigger: dict[TaskId, int]
    tasks_to_wait_for: dict[TaskId, int]
    tasks_to_commit_to: dict[TaskId, int]
    finished_tasks: frozenset[TaskId] = frozenset()


class CheckpointPlanCalculator:
    def __init__(
        self,
        *,
        trigger: Sequence[TaskId],
        ack: Sequence[TaskId],
        commit: Sequence[TaskId],
        predecessors: Mapping[TaskId, Collection[TaskId]] | None = None,
        allow_checkpoints_after_tasks_finish: bool = True,
        initial_state: ExecutionState = ExecutionState.CREATED,
    ) -> None:
        self.trigger = list(trigger)
        self.ack = list(ack)
        self.commit = list(commit)
        self.allow_checkpoints_after_tasks_finish = allow_checkpoints_after_tasks_finish
        every = dict.fromkeys([*self.trigger, *self.ack, *self.commit])
        self.tasks: list[TaskId] = list(every)
        sources = set(self.trigger)
        if predecessors is None:
            # without a topology: every non-source task reads from every source
            predecessors = {t: () if t in sources else tuple(self.trigger) for t in self.tasks}
        self.predecessors = {t: tuple(predecessors.get(t, ())) for t in self.tasks}
        self.states: dict[TaskId, ExecutionState] = dict.fromkeys(self.tasks, initial_state)
        self.attempts: dict[TaskId, int] = dict.fromkeys(self.tasks, 0)

    def set_state(self, task: TaskId, state: ExecutionState, attempt: int | None = None) -> None:
        if task not in self.states:
            raise KeyError(f"unknown task {task}")
        self.states[task] = state
        if attempt is not None:
            self.attempts[task] = attempt

    def _finished(self, task: TaskId) -> bool:
        return self.states[task] is ExecutionState.FINISHED

    def calculate(self) -> CheckpointPlan | CheckpointFailureReason:
        finished = frozenset(t for t in self.tasks if self._finished(t))
        if finished and not self.allow_checkpoints_after_tasks_finish:
            return CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING
        if finished:
            to_trigger = [
                t
                for t in self.tasks
                if not self._finished(t) and all(self._finished(p) for p in self.predecessors[t])
            ]
        else:
            to_trigger = list(self.trigger)
        if not to_trigger:
            return CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING
        if any(self.states[t] is not ExecutionState.RUNNING for t in to_trigger):
            return CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING
        return CheckpointPlan(
            tasks_to_trigger={t: self.attempts[t] for t in to_trigger},
            tasks_to_wait_for={t: self.attempts[t] for t in self.ack if t not in finished},
            tasks_to_commit_to={t: self.attempts[t] for t in self.commit if t not in finished},
            finished_tasks=finished,
        )
