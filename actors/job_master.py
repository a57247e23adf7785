"""``JobMaster``: deploys a job on actors and drives its status.

One ``InputChannel`` actor per channel and one ``StreamTask`` per subtask, wired together; the
``CheckpointCoordinator`` actor hears every job status change (Flink's
``CheckpointCoordinatorDeActivator``: RUNNING starts the periodic scheduler, anything else
stops it) and every task state change (for the checkpoint plan). The job finishes when all
tasks finished; a task failure or the failure manager's verdict fails it; cancel cancels it.
When the job ends, every actor it started is stopped and the result future is completed.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import pykka
import structlog

from actors.coordinator import CoordinatorActor
from actors.execution import ActorRuntime
from actors.protocol import (
    CancelJob,
    CheckpointFailure,
    Deploy,
    QueryProgress,
    SinkResults,
    TaskStateUpdate,
    WireChannel,
    WireCoordinator,
    WireTask,
)
from actors.stream_task import StreamTask
from runtime.checkpoint import TaskId
from runtime.coordinator import CheckpointCoordinator
from runtime.job import ExecutionPlan, JobResult, JobStatusMachine, TaskStates
from runtime.messages import (
    CancelTask,
    ExecutionStateChanged,
    JobStatusChanged,
    ShutdownCoordinator,
    StartTask,
)
from runtime.stats import CheckpointStatsTracker
from runtime.status import ExecutionState, JobStatus
from runtime.storage import FileSystemCheckpointStorage

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class CoordinatorReport:
    """The coordinator's last word: statistics after its shutdown."""

    stats: dict[str, Any]
    details: dict[int, dict[str, Any]]
    completed: list[int]
    retained: list[str]


class ReportingCoordinator(CoordinatorActor):
    """Reports its statistics to the JobMaster once shut down."""

    def on_receive(self, message: Any) -> None:
        super().on_receive(message)
        if isinstance(message, ShutdownCoordinator):
            retained = [
                c.external_path for c in self.core.retained_after_shutdown if c.external_path
            ]
            report = CoordinatorReport(
                self.core.stats.to_json(), self.details(), list(self.completed_ids), retained
            )
            self.job_master.tell(report)


class JobMaster(pykka.ThreadingActor):
    def __init__(
        self,
        *,
        plan: ExecutionPlan,
        runtime: ActorRuntime,
        storage: FileSystemCheckpointStorage,
        job_id: str,
        result: pykka.Future[JobResult],
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.plan = plan
        self.runtime = runtime
        self.storage = storage
        self.job_id = job_id
        self.result = result
        self.seed = seed
        self.status = JobStatusMachine()
        self.status.listeners.append(self._on_status)
        self.task_states = TaskStates()
        self.tasks: dict[TaskId, pykka.ActorRef[Any]] = {}
        self.channels: list[pykka.ActorRef[Any]] = []
        self.coordinator: pykka.ActorRef[Any] | None = None
        self.output: dict[str, list[Any]] = {name: [] for name in self._collect_sinks()}
        self.failure: str | None = None
        self.started_at = 0
        self._result_set = False
        self._committed: set[tuple[str, TaskId, int | str]] = set()

    def _collect_sinks(self) -> list[str]:
        return [
            op.name
            for vertex in self.plan.job.vertices
            for op in vertex.operators
            if op.kind == "sink" and op.spec["sink"] == "collect"
        ]

    def on_start(self) -> None:
        self.log = log.bind(role="job_master", job=self.job_id)

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        """The JobMaster itself crashed: the job fails with that cause (nobody else would end
        it), and whatever it deployed is stopped."""
        cause = (
            f"job master crashed: {getattr(exception_type, '__name__', 'error')}: {exception_value}"
        )
        self.failure = self.failure or cause
        for ref in [*self.tasks.values(), *self.channels, self.coordinator]:
            if ref is not None:
                with contextlib.suppress(pykka.ActorDeadError):
                    ref.stop(block=False)
        if not self._result_set:
            self._set_result(self._result_from(JobStatus.FAILED, _empty_report()))
        self.on_stop()

    def on_stop(self) -> None:
        """Break the actor's reference cycle (its status listener is its own method), so that
        the job's collected records go with the result, not with a later full GC pass."""
        self.status.listeners.clear()
        self.output = {}

    def on_receive(self, message: Any) -> Any:
        now = self.runtime.clock.now()
        match message:
            case Deploy():
                try:
                    self._deploy(now)
                except Exception as error:  # e.g. a sink that cannot open its file
                    self.log.error(
                        "job_deployment_failed", error=f"{type(error).__name__}: {error}"
                    )
                    self._fail(f"deployment failed: {type(error).__name__}: {error}", now)
            case TaskStateUpdate(task=task, state=state, message=text):
                self._task_state(task, state, text, now)
            case SinkResults(sink=sink, task=task, records=records, txn=txn):
                if txn is not None:  # a committed transaction counts once (2PC commits repeat)
                    key = (sink, task, txn)
                    if key in self._committed:
                        return None
                    self._committed.add(key)
                self.output.setdefault(sink, []).extend(records)
            case CheckpointFailure(message=text, reason=reason):
                self._fail(f"{text} (last failure: {reason.name})", now)
            case CancelJob():
                if (
                    not self.status.status.is_globally_terminal
                    and self.status.status is not JobStatus.CANCELLING
                ):
                    self.status.transition(JobStatus.CANCELLING, now)
                    self._cancel_tasks()
            case CoordinatorReport():
                self._complete(message)
            case QueryProgress():
                if self.coordinator is None or self.status.status is not JobStatus.RUNNING:
                    return None
                return {
                    "status": self.status.status.value,
                    "tasks": dict(self.tasks),
                    "sources": set(self.plan.job.source_tasks()),
                    "coordinator": self.coordinator,
                }
            case _:
                raise TypeError(f"JobMaster cannot handle {message!r}")

    # --- deployment -----------------------------------------------------------------------------

    def _deploy(self, now: int) -> None:
        plan, runtime = self.plan, self.runtime
        self.started_at = now
        core = CheckpointCoordinator(
            plan.coordinator_config(seed=self.seed),
            plan.plan_calculator(),
            seed=self.seed,
            storage=self.storage,
        )
        self.coordinator = runtime.spawn(
            ReportingCoordinator,
            core=core,
            runtime=runtime,
            storage=self.storage,
            job_master=self.actor_ref,
            job_id=self.job_id,
        )
        for task, spec in plan.tasks.items():
            self.tasks[task] = runtime.spawn(
                StreamTask,
                spec=spec,
                runtime=runtime,
                storage=self.storage,
                job_master=self.actor_ref,
            )
        outputs: dict[TaskId, dict[int, pykka.ActorRef[Any]]] = {t: {} for t in plan.tasks}
        inputs: dict[TaskId, dict[int, pykka.ActorRef[Any]]] = {t: {} for t in plan.tasks}
        for link in plan.channels:
            channel = runtime.spawn(
                runtime.channel_class,
                channel_id=link.channel_id,
                input_index=link.input_index,
                output_index=link.output_index,
                consumer=self.tasks[link.downstream],
                producer_name=str(link.upstream),
                consumer_name=str(link.downstream),
                runtime=runtime,
            )
            channel.tell(WireChannel(self.tasks[link.upstream]))
            self.channels.append(channel)
            outputs[link.upstream][link.output_index] = channel
            inputs[link.downstream][link.input_index] = channel
        for task, ref in self.tasks.items():
            ref.tell(
                WireTask(
                    self.coordinator,
                    [outputs[task][i] for i in range(len(outputs[task]))],
                    [inputs[task][i] for i in range(len(inputs[task]))],
                )
            )
        self.coordinator.tell(WireCoordinator(self.tasks))
        self.log.info(
            "job_deployed",
            tasks=len(self.tasks),
            channels=len(self.channels),
            vertices=[v.name for v in plan.job.vertices],
            # what a trace checker needs: every channel as [producer, its output index,
            # consumer, its input index], and which tasks are sources
            topology={
                "sources": sorted(str(t) for t in plan.job.source_tasks()),
                "channels": [
                    [str(c.upstream), c.output_index, str(c.downstream), c.input_index]
                    for c in plan.channels
                ],
            },
        )
        for task, ref in self.tasks.items():
            ref.tell(StartTask())
            self.task_states.set(task, ExecutionState.RUNNING)
            self.coordinator.tell(ExecutionStateChanged(task=task, state=ExecutionState.RUNNING))
        self.status.transition(JobStatus.RUNNING, now)

    # --- status -----------------------------------------------------------------------------------

    def _on_status(self, status: JobStatus, now: int) -> None:
        self.log.info("job_status_changed", status=status.value)
        if self.coordinator is not None:
            self.coordinator.tell(JobStatusChanged(status=status))
            if status.is_globally_terminal:
                self.coordinator.tell(ShutdownCoordinator(job_status=status))
        elif status.is_globally_terminal:  # it ended before a coordinator existed
            self._complete(_empty_report())

    def _task_state(self, task: TaskId, state: ExecutionState, text: str | None, now: int) -> None:
        self.task_states.set(task, state)
        self.log.info("task_state_changed", task=str(task), state=state.value, message=text)
        if self.coordinator is not None:
            self.coordinator.tell(ExecutionStateChanged(task=task, state=state))
        current = self.status.status
        if state is ExecutionState.FAILED and current in (JobStatus.RUNNING, JobStatus.CREATED):
            self._fail(f"task {task} failed: {text}", now)
        elif current is JobStatus.RUNNING and self.task_states.all_in(ExecutionState.FINISHED):
            self.status.transition(JobStatus.FINISHED, now)
        elif current in (JobStatus.FAILING, JobStatus.CANCELLING) and self.task_states.all_in(
            ExecutionState.FINISHED, ExecutionState.FAILED, ExecutionState.CANCELED
        ):
            self._terminate(now)

    def _fail(self, cause: str, now: int) -> None:
        if self.status.status not in (JobStatus.RUNNING, JobStatus.CREATED):
            return
        self.failure = self.failure or cause
        self.log.warning("job_failing", cause=cause)
        self.status.transition(JobStatus.FAILING, now)
        self._cancel_tasks()

    def _cancel_tasks(self) -> None:
        """Ask every running task to cancel; the job is FAILED or CANCELED once every task has
        reported a terminal state (Flink's CANCELING tasks), so what sinks collected arrives."""
        for task, ref in self.tasks.items():
            if self.task_states.states.get(task) is ExecutionState.RUNNING:
                self.task_states.set(task, ExecutionState.CANCELING)
                try:
                    ref.tell(CancelTask())
                except pykka.ActorDeadError:
                    self.task_states.set(task, ExecutionState.CANCELED)
        if self.task_states.all_in(
            ExecutionState.FINISHED, ExecutionState.FAILED, ExecutionState.CANCELED
        ):
            self._terminate(self.runtime.clock.now())

    def _terminate(self, now: int) -> None:
        if self.status.status is JobStatus.FAILING:
            self.status.transition(JobStatus.FAILED, now)
        elif self.status.status is JobStatus.CANCELLING:
            self.status.transition(JobStatus.CANCELED, now)

    def _complete(self, report: CoordinatorReport) -> None:
        for ref in [*self.tasks.values(), *self.channels]:
            with contextlib.suppress(pykka.ActorDeadError):
                ref.stop(block=False)
        if self.coordinator is not None:
            with contextlib.suppress(pykka.ActorDeadError):
                self.coordinator.stop(block=False)
        result = self._result_from(self.status.status, report)
        self.log.info("job_finished", status=result.status.value, duration_ms=result.duration_ms)
        self._set_result(result)

    def _result_from(self, status: JobStatus, report: CoordinatorReport) -> JobResult:
        now = self.runtime.clock.now()
        return JobResult(
            job_id=self.job_id,
            name=self.plan.job.name,
            status=status,
            output=self.output,
            checkpoints=report.stats,
            checkpoint_details=report.details,
            completed_checkpoint_ids=report.completed,
            retained_checkpoints=report.retained,
            failure=self.failure,
            duration_ms=now - self.started_at,
            checkpoint_dir=str(self.storage.root),
            status_history=[(s.value, t) for s, t in self.status.history],
        )

    def _set_result(self, result: JobResult) -> None:
        if not self._result_set:
            self._result_set = True
            self.result.set(result)


def _empty_report() -> CoordinatorReport:
    """Statistics of a job that never got a checkpoint coordinator."""
    return CoordinatorReport(CheckpointStatsTracker(0).to_json(), {}, [], [])
