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
        #: (finished tasks, tasks to trigger or the failure) as of the last change of a state:
        #: the coordinator asks on every acknowledgement while a task finishes, and the answer
        #: costs O(tasks + edges)
        self._triggers: tuple[frozenset[TaskId], list[TaskId] | CheckpointFailureReason] | None
        self._triggers = None

    def set_state(self, task: TaskId, state: ExecutionState, attempt: int | None = None) -> None:
        if task not in self.states:
            raise KeyError(f"unknown task {task}")
        self.states[task] = state
        self._triggers = None
        if attempt is not None:
            self.attempts[task] = attempt

    def _finished(self, task: TaskId) -> bool:
        return self.states[task] is ExecutionState.FINISHED

    def _tasks_to_trigger(
        self,
    ) -> tuple[frozenset[TaskId], list[TaskId] | CheckpointFailureReason]:
        """The finished tasks, and the tasks a checkpoint started now triggers (or why none
        can start); kept until a state changes."""
        if self._triggers is not None:
            return self._triggers
        finished = frozenset(t for t in self.tasks if self._finished(t))
        to_trigger: list[TaskId] | CheckpointFailureReason
        if finished and not self.allow_checkpoints_after_tasks_finish:
            to_trigger = CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING
        else:
            if finished:
                to_trigger = [
                    t
                    for t in self.tasks
                    if not self._finished(t)
                    and all(self._finished(p) for p in self.predecessors[t])
                ]
            else:
                to_trigger = list(self.trigger)
            if not to_trigger or any(
                self.states[t] is not ExecutionState.RUNNING for t in to_trigger
            ):
                to_trigger = CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING
        self._triggers = (finished, to_trigger)
        return self._triggers

    def triggers(self) -> list[TaskId] | CheckpointFailureReason:
        """``calculate().tasks_to_trigger`` (in its order), or the failure, without building
        the plan."""
        return self._tasks_to_trigger()[1]

    def calculate(self) -> CheckpointPlan | CheckpointFailureReason:
        finished, to_trigger = self._tasks_to_trigger()
        if isinstance(to_trigger, CheckpointFailureReason):
            return to_trigger
        return CheckpointPlan(
            tasks_to_trigger={t: self.attempts[t] for t in to_trigger},
            tasks_to_wait_for={t: self.attempts[t] for t in self.ack if t not in finished},
            tasks_to_commit_to={t: self.attempts[t] for t in self.commit if t not in finished},
            finished_tasks=finished,
        )
