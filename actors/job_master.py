"""``JobMaster``: the shell around the job's scheduler (``runtime.scheduler.Scheduler``).

It routes what arrives (task states, collect sinks' records, the coordinator's verdicts and
answers, timers, requests from outside) to the scheduler and carries out its effects: start the
``CheckpointCoordinator`` actor, deploy one ``StreamTask`` actor per subtask and one
``InputChannel`` per connected pair of subtasks and wire them, tell tasks and the coordinator,
stop them, run timers, load a checkpoint for a restore off its thread (the answer comes back
through its mailbox), log, answer requests from outside and complete the result future. It
decides nothing itself.
"""

from __future__ import annotations

import contextlib
import itertools
import typing
from collections import deque
from dataclasses import dataclass
from typing import Any, assert_never

import pykka

from actors.actor_runtime import ActorRuntime
from actors.coordinator import CoordinatorActor
from actors.logs import get_logger
from actors.protocol import (
    Deploy,
    FailJob,
    QueryJob,
    QueryProgress,
    SnapshotRequest,
    WireChannel,
    WireCoordinator,
    WireTask,
)
from actors.stream_task import StreamTask
from actors.trace import EventLog
from runtime.checkpoint import SavepointRequest, TaskId
from runtime.coordinator import CheckpointCoordinator
from runtime.effects import CancelTimer, Role, ScheduleTimer, Send, Traced
from runtime.job import ExecutionPlan, JobResult
from runtime.messages import (
    CheckpointLoaded,
    CheckpointLoadFailed,
    CoordinatorCrashed,
    CoordinatorStarted,
    DeploymentFailed,
    RestoredFromCheckpoint,
    RuntimeFailed,
    SchedulerMessage,
    SnapshotKind,
    SnapshotRequested,
    StartJob,
    TasksDeployed,
    TasksUnreachable,
)
from runtime.restart import RestartStrategy
from runtime.scheduler import Scheduler
from runtime.scheduler.effects import (
    CompleteJob,
    DeployTasks,
    LoadCheckpoint,
    ReplyToSnapshotRequest,
    SchedulerEffect,
    StartCoordinator,
    StopCoordinator,
    StopDeployment,
)
from runtime.status import JobStatus
from runtime.storage import FileSystemCheckpointStorage

log = get_logger(__name__)


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
        restart: RestartStrategy | None = None,
        restored_from: RestoredFromCheckpoint | None = None,
        savepoint_requests: tuple[SavepointRequest, ...] | list[SavepointRequest] = (),
        ignore_unclaimed_state: bool = False,
    ) -> None:
        super().__init__()
        self.runtime = runtime
        self.storage = storage
        self.job_id = job_id
        self.result = result
        self.seed = seed
        self.scheduler = Scheduler(
            plan=plan,
            job_id=job_id,
            checkpoint_dir=str(storage.root),
            restart=restart,
            restored_from=restored_from,
            savepoint_requests=savepoint_requests,
            ignore_unclaimed_state=ignore_unclaimed_state,
            epoch_ms=runtime.epoch_ms,
            virtual_time=runtime.deterministic,
        )
        #: the deployed attempt's tasks and channels
        self.tasks: dict[TaskId, pykka.ActorRef[Any]] = {}
        self.channels: list[pykka.ActorRef[Any]] = []
        self.attempt = 0
        self.coordinator: pykka.ActorRef[Any] | None = None
        #: futures of snapshots asked for from outside, by the token the scheduler returns
        self._replies: dict[int, pykka.Future[Any]] = {}
        self._tokens = itertools.count(1)
        self._result_set = False

    def on_start(self) -> None:
        self.log = EventLog(log, self.runtime.tracer, self.runtime.stamp).bind(
            role="job_master", job=self.job_id
        )

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        """The JobMaster itself crashed: the job fails with that cause (nobody else would end
        it), and whatever it deployed is stopped."""
        cause = (
            f"job master crashed: {getattr(exception_type, '__name__', 'error')}: {exception_value}"
        )
        for ref in [*self.tasks.values(), *self.channels, self.coordinator]:
            if ref is not None:
                with contextlib.suppress(pykka.ActorDeadError):
                    ref.stop(block=False)
        if not self._result_set:
            self._set_result(self.scheduler.crashed(cause, self.runtime.clock.now()))

    def on_receive(self, message: Any) -> Any:
        match message:
            case QueryJob():
                view = self.scheduler.view(self.runtime.clock.now())
                return {
                    **view,
                    "tasks": {str(t): ref for t, ref in self.tasks.items()},
                    "coordinator": self.coordinator,
                }
            case QueryProgress():
                if (
                    self.coordinator is None
                    or self.scheduler.status.status is not JobStatus.RUNNING
                ):
                    return None
                return {
                    "status": self.scheduler.status.status.value,
                    "tasks": dict(self.tasks),
                    "sources": set(self.scheduler.plan.job.source_tasks()),
                    "coordinator": self.coordinator,
                }
            case Deploy():
                self._handle(StartJob())
            case FailJob(cause=cause):
                self._handle(RuntimeFailed(cause=cause))
            case SnapshotRequest(kind=kind, directory=directory, reply=reply, drain=drain):
                token = next(self._tokens)
                self._replies[token] = reply
                self._handle(
                    SnapshotRequested(
                        kind=_snapshot_kind(kind), directory=directory, reply=token, drain=drain
                    )
                )
            case CoordinatorCrashed():
                self.coordinator = None  # no statistics will come from it
                self._handle(message)
            case _LoadCrashed(error=error):
                raise error
            case _ if isinstance(message, _SCHEDULER_MESSAGES):
                self._handle(message)
            case _:
                raise TypeError(f"JobMaster cannot handle {message!r}")
        return None

    # --- the scheduler ----------------------------------------------------------------------------

    def _handle(self, message: SchedulerMessage) -> None:
        """Hand ``message`` to the scheduler and carry out its effects; what carrying them out
        answers (a deployment's outcome, tasks that are gone) goes to the scheduler next."""
        queue: deque[SchedulerMessage] = deque([message])
        while queue:
            now = self.runtime.clock.now()
            for effect in self.scheduler.handle(queue.popleft(), now):
                answer = self._carry_out(effect)
                if answer is not None:
                    queue.append(answer)

    def _carry_out(self, effect: SchedulerEffect) -> SchedulerMessage | None:
        match effect:
            case StartCoordinator(plan=plan):
                try:
                    self._start_coordinator(plan)
                except Exception as error:  # e.g. a setting the coordinator refuses
                    return DeploymentFailed(attempt=0, cause=f"{type(error).__name__}: {error}")
                return CoordinatorStarted()
            case DeployTasks(attempt=attempt, plan=plan, report_records_every=step):
                try:
                    self._deploy_tasks(attempt, plan, step)
                except Exception as error:  # e.g. a sink that cannot open its file
                    return DeploymentFailed(
                        attempt=attempt, cause=f"{type(error).__name__}: {error}"
                    )
                return TasksDeployed(attempt=attempt)
            case Send(to=TaskId() as task, message=task_message):
                try:
                    self.tasks[task].tell(task_message)
                except pykka.ActorDeadError:
                    return TasksUnreachable(tasks=(task,), attempt=self.attempt)
            case Send(to=to, message=coordinator_message):
                assert to is Role.COORDINATOR, f"the scheduler sends itself nothing: {effect}"
                if self.coordinator is not None:
                    # if it has died, CoordinatorCrashed is on its way
                    with contextlib.suppress(pykka.ActorDeadError):
                        self.coordinator.tell(coordinator_message)
            case StopDeployment():
                for ref in [*self.tasks.values(), *self.channels]:
                    with contextlib.suppress(pykka.ActorDeadError):
                        ref.stop(block=False)
            case LoadCheckpoint(attempt=attempt, checkpoint=checkpoint):
                self._load_in_background(attempt, checkpoint)
            case ScheduleTimer(key=key, due=due):
                self.runtime.schedule(self.actor_ref, key, due)
            case CancelTimer(key=key):
                self.runtime.cancel(self.actor_ref, key)
            case Traced(event=event, fields=fields, level=level):
                getattr(self.log, level)(event, **fields)
            case ReplyToSnapshotRequest(reply=token, outcome=outcome):
                future = self._replies.pop(token, None)
                if future is not None:
                    future.set(outcome)
            case StopCoordinator():
                if self.coordinator is not None:
                    with contextlib.suppress(pykka.ActorDeadError):
                        self.coordinator.stop(block=False)
            case CompleteJob(result=result):
                self._set_result(result)
            case _ as unreachable:
                assert_never(unreachable)
        return None

    # --- carrying out -------------------------------------------------------------------------------

    def _start_coordinator(self, plan: ExecutionPlan) -> None:
        core = CheckpointCoordinator(
            plan.coordinator_config(seed=self.seed), plan.plan_calculator(), seed=self.seed
        )
        self.coordinator = self.runtime.spawn(
            CoordinatorActor,
            core=core,
            runtime=self.runtime,
            storage=self.storage,
            job_master=self.actor_ref,
            job_id=self.job_id,
        )

    def _deploy_tasks(self, attempt: int, plan: ExecutionPlan, step: int) -> None:
        runtime = self.runtime
        assert self.coordinator is not None
        self.tasks, self.channels, self.attempt = {}, [], attempt
        deploy = getattr(runtime, "deploy_tasks", None)
        if deploy is not None:  # the tasks run elsewhere (actors.processes: TaskManagers)
            self.tasks = deploy(
                attempt=attempt,
                plan=plan,
                report_records_every=step,
                storage=self.storage,
                job_master=self.actor_ref,
                coordinator=self.coordinator,
            )
        else:
            self._spawn_tasks(plan, step)
        self.coordinator.tell(WireCoordinator(self.tasks))
        self.log.info(
            "job_deployed",
            attempt=attempt,
            tasks=len(self.tasks),
            channels=len(plan.channels),
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

    def _spawn_tasks(self, plan: ExecutionPlan, step: int) -> None:
        """One ``StreamTask`` actor per subtask and one channel actor per connected pair, on
        this runtime, wired."""
        runtime = self.runtime
        assert self.coordinator is not None
        sources = set(plan.job.source_tasks())
        for task, spec in plan.tasks.items():
            self.tasks[task] = runtime.spawn(
                StreamTask,
                spec=spec,
                runtime=runtime,
                storage=self.storage,
                job_master=self.actor_ref,
                report_records_every=step if task in sources else 0,
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

    def _load_in_background(self, attempt: int, checkpoint: RestoredFromCheckpoint) -> None:
        """Read and verify a checkpoint off this thread (Flink's I/O executor); the outcome
        comes back through the mailbox."""
        me = self.actor_ref
        path = checkpoint.external_path
        assert path is not None

        def run() -> None:
            answer: SchedulerMessage | _LoadCrashed
            try:
                answer = CheckpointLoaded(attempt=attempt, checkpoint=self.storage.load(path))
            except OSError as error:  # missing or damaged (CorruptCheckpointError names it)
                answer = CheckpointLoadFailed(
                    attempt=attempt, checkpoint_id=checkpoint.checkpoint_id, error=str(error)
                )
            except Exception as error:  # a bug: crash the JobMaster with it, in its own thread
                answer = _LoadCrashed(error)
            with contextlib.suppress(pykka.ActorDeadError):  # the job ended meanwhile
                me.tell(answer)

        self.runtime.run_async(run)

    def _set_result(self, result: JobResult) -> None:
        if not self._result_set:
            self._result_set = True
            self.result.set(result)


@dataclass(frozen=True, slots=True)
class _LoadCrashed:
    """Loading a checkpoint raised something other than an ``OSError``: a bug, which crashes
    the JobMaster (and so fails the job, naming it) instead of vanishing on a pool thread."""

    error: BaseException


_SCHEDULER_MESSAGES = typing.get_args(SchedulerMessage)


def _snapshot_kind(kind: str) -> SnapshotKind:
    match kind:
        case "savepoint" | "stop" | "checkpoint" | "full_checkpoint":
            return kind
    raise ValueError(f"unknown snapshot kind {kind!r}")
