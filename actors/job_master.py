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
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pykka

from actors.coordinator import CoordinatorActor
from actors.execution import ActorRuntime
from actors.logs import get_logger
from actors.protocol import (
    CancelJob,
    CheckpointFailure,
    CoordinatorCrashed,
    Deploy,
    FailJob,
    JobTimer,
    ListRetainedCheckpoints,
    QueryJob,
    QueryProgress,
    RequestOutcome,
    RestartJob,
    RetainedCheckpoints,
    SinkResults,
    SnapshotOutcome,
    SnapshotRequest,
    SourceProgress,
    TaskStateUpdate,
    WireChannel,
    WireCoordinator,
    WireTask,
)
from actors.stream_task import StreamTask
from runtime.checkpoint import SavepointRequest, SnapshotType, TaskId
from runtime.collected import CollectedOutput
from runtime.coordinator import CheckpointCoordinator
from runtime.descriptors import SinkDescriptor, SinkKind
from runtime.failure import TaskFailure
from runtime.job import (
    ExecutionPlan,
    JobResult,
    JobStatusMachine,
    RestoreError,
    TaskStates,
    restore_plan,
)
from runtime.messages import (
    AbortPendingCheckpoints,
    CancelTask,
    ExecutionStateChanged,
    FailUnacknowledgedCheckpoints,
    JobStatusChanged,
    RestoredFromCheckpoint,
    ShutdownCoordinator,
    StartTask,
    StopTask,
    TimerFired,
    TriggerCheckpointRequest,
)
from runtime.reasons import CheckpointFailureReason
from runtime.restart import NoRestart, RestartStrategy
from runtime.stats import CheckpointStatsTracker
from runtime.status import ExecutionState, JobStatus
from runtime.storage import FileSystemCheckpointStorage, load_checkpoint
from runtime.task import TaskRestore

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class CoordinatorReport:
    """The coordinator's last word: statistics after its shutdown."""

    stats: dict[str, Any]
    details: dict[int, dict[str, Any]]
    completed: list[int]
    retained: list[str]
    #: checkpoint id -> the type it was triggered as (``CheckpointStats.triggered_type``)
    types: dict[int, str] = dataclasses.field(default_factory=dict)


class ReportingCoordinator(CoordinatorActor):
    """Reports its statistics to the JobMaster once shut down."""

    def on_receive(self, message: Any) -> None:
        super().on_receive(message)
        if isinstance(message, ShutdownCoordinator):
            retained = [
                c.external_path for c in self.core.retained_after_shutdown if c.external_path
            ]
            report = CoordinatorReport(
                self.core.stats.to_json(),
                self.details(),
                list(self.completed_ids),
                retained,
                {s.checkpoint_id: s.triggered_type for s in self.core.stats.history},
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
        restart: RestartStrategy | None = None,
        restored_from: RestoredFromCheckpoint | None = None,
        savepoint_requests: Sequence[SavepointRequest] = (),
        ignore_unclaimed_state: bool = False,
    ) -> None:
        super().__init__()
        self.plan = plan
        self.runtime = runtime
        self.storage = storage
        self.job_id = job_id
        self.result = result
        self.seed = seed
        self.restart: RestartStrategy = restart or NoRestart()
        self.restored_from = restored_from
        self.savepoint_requests = list(savepoint_requests)
        self.ignore_unclaimed_state = ignore_unclaimed_state
        self.status = JobStatusMachine()
        self.status.listeners.append(self._on_status)
        self.task_states = TaskStates()
        self.tasks: dict[TaskId, pykka.ActorRef[Any]] = {}
        self.channels: list[pykka.ActorRef[Any]] = []
        self.coordinator: pykka.ActorRef[Any] | None = None
        #: what collect sinks return, per transaction
        self.collected = CollectedOutput(self._collect_sinks())
        self.failure: str | None = None
        self.failures: list[str] = []
        #: the user-code failure behind each entry of ``failures`` (None for another cause)
        self.failure_causes: list[TaskFailure | None] = []
        self.savepoints: list[str] = []
        self.started_at = 0
        self.attempt = 0
        self._restart_delay = 0
        self._stopping = False
        self._result_set = False
        self._source_records: dict[TaskId, int] = {}
        self._requested: set[int] = set()
        #: the tasks' IO metrics as they last reported them (the REST API's vertex metrics)
        self.task_metrics: dict[TaskId, dict[str, Any]] = {}
        #: futures of snapshots asked for from outside, by request id
        self._replies: dict[int, Any] = {}
        self._checkpoint_requests = 0

    def _collect_sinks(self) -> list[str]:
        return [
            op.name
            for vertex in self.plan.job.vertices
            for op in vertex.operators
            if isinstance(op.operator, SinkDescriptor) and op.operator.sink is SinkKind.COLLECT
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
        self.collected = CollectedOutput()

    def on_receive(self, message: Any) -> Any:
        now = self.runtime.clock.now()
        match message:
            case Deploy():
                self.started_at = now
                try:
                    self._start_coordinator()
                    self._deploy_tasks(now)
                except Exception as error:  # e.g. a sink that cannot open its file
                    self.log.error(
                        "job_deployment_failed", error=f"{type(error).__name__}: {error}"
                    )
                    self._give_up(f"deployment failed: {type(error).__name__}: {error}", now)
                    return None
                self._schedule_savepoints(now)
            case TaskStateUpdate(task=task, state=state, message=text, attempt=attempt):
                if attempt == self.attempt:  # an earlier deployment's news is stale
                    if message.metrics is not None:
                        self.task_metrics[task] = {**message.metrics, "state": state.value}
                    self._task_state(task, state, text, now, message.failure)
            case SinkResults():
                self._sink_results(message)
            case CoordinatorCrashed(cause=cause):
                self.log.error("checkpoint_coordinator_crashed", cause=cause)
                self.coordinator = None  # no statistics will come from it
                self.failures.append(cause)
                self.failure_causes.append(None)
                self._give_up(cause, now)
            case CheckpointFailure(message=text, reason=reason):
                self._on_failure(f"{text} (last failure: {reason.name})", now)
            case CancelJob():
                if self.status.status in (JobStatus.RUNNING, JobStatus.RESTARTING):
                    restarting = self.status.status is JobStatus.RESTARTING
                    self.status.transition(JobStatus.CANCELLING, now)
                    if restarting:  # tasks are down already
                        self._terminate(now)
                    else:
                        self._cancel_tasks()
                elif self.status.status is JobStatus.CREATED:
                    self.status.transition(JobStatus.CANCELLING, now)
                    self._terminate(now)
            case FailJob(cause=cause):
                self._give_up(cause, now)
            case TimerFired(key=RestartJob(attempt=attempt)):
                if self.status.status is JobStatus.RESTARTING and attempt == self.attempt:
                    assert self.coordinator is not None
                    self.coordinator.tell(ListRetainedCheckpoints())
            case RetainedCheckpoints(checkpoints=retained):
                if self.status.status is JobStatus.RESTARTING:
                    self._restart_from(retained, now)
            case TimerFired(key=JobTimer(index=index)):
                if self.status.status is JobStatus.RESTARTING:  # as Flink: not RUNNING, fails
                    self._savepoint_not_running(index)
                self._trigger_savepoint(index)
            case SourceProgress(task=task, records=records):
                self._source_records[task] = records
                self._check_record_savepoints()
            case RequestOutcome(request_id=rid, path=path, failure=failure):
                self._savepoint_outcome(rid, path, failure, now)
                self._reply(
                    rid,
                    SnapshotOutcome(
                        path=path, failure=failure, checkpoint_id=message.checkpoint_id
                    ),
                )
            case SnapshotRequest():
                self._snapshot_from_outside(message)
            case QueryJob():
                return self._job_view(now)
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
        return None

    # --- deployment -----------------------------------------------------------------------------

    def _start_coordinator(self) -> None:
        plan = self.plan
        core = CheckpointCoordinator(
            plan.coordinator_config(seed=self.seed),
            plan.plan_calculator(),
            seed=self.seed,
            storage=self.storage,
        )
        self.coordinator = self.runtime.spawn(
            ReportingCoordinator,
            core=core,
            runtime=self.runtime,
            storage=self.storage,
            job_master=self.actor_ref,
            job_id=self.job_id,
        )
        if self.restored_from is not None:  # started from a savepoint or checkpoint
            self.coordinator.tell(self.restored_from)

    def _deploy_tasks(self, now: int) -> None:
        plan, runtime = self.plan, self.runtime
        assert self.coordinator is not None
        self.tasks, self.channels = {}, []
        sources = set(plan.job.source_tasks())
        step = self._progress_step()
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
        self.coordinator.tell(WireCoordinator(self.tasks))
        self.log.info(
            "job_deployed",
            attempt=self.attempt,
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
            self.coordinator.tell(
                ExecutionStateChanged(task=task, state=ExecutionState.RUNNING, attempt=self.attempt)
            )
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

    def _sink_results(self, message: SinkResults) -> None:
        """A collect sink's records (``runtime.collected``)."""
        buffers = (message.records, *message.buffers) if message.records else message.buffers
        if message.txn is None:
            self.collected.publish(message.sink, buffers, attempt=message.attempt)
            return
        txn = (message.writer or str(message.task), message.txn)
        if message.precommit:
            self.collected.precommit(message.sink, txn, buffers, attempt=message.attempt)
        else:
            self.collected.commit(message.sink, txn, buffers, attempt=message.attempt)

    def _task_state(
        self,
        task: TaskId,
        state: ExecutionState,
        text: str | None,
        now: int,
        cause: TaskFailure | None = None,
    ) -> None:
        self.task_states.set(task, state)
        self.log.info("task_state_changed", task=str(task), state=state.value, message=text)
        if self.coordinator is not None:
            self.coordinator.tell(
                ExecutionStateChanged(task=task, state=state, attempt=self.attempt)
            )
        current = self.status.status
        all_down = self.task_states.all_in(
            ExecutionState.FINISHED, ExecutionState.FAILED, ExecutionState.CANCELED
        )
        if state is ExecutionState.FAILED and current is JobStatus.RUNNING:
            if self.coordinator is not None:
                self.coordinator.tell(
                    FailUnacknowledgedCheckpoints(task=task, attempt=self.attempt, cause=text)
                )
            self._on_failure(f"task {task} failed: {text}", now, cause)
        elif current is JobStatus.RUNNING and self.task_states.all_in(ExecutionState.FINISHED):
            self.status.transition(JobStatus.FINISHED, now)
        elif current is JobStatus.RESTARTING and all_down:
            self._schedule_restart(now)
        elif current in (JobStatus.FAILING, JobStatus.CANCELLING) and all_down:
            self._terminate(now)

    # --- failure and recovery ---------------------------------------------------------------------

    def _on_failure(self, cause: str, now: int, user: TaskFailure | None = None) -> None:
        """A task failed, or the failure manager gave up on checkpoints: restart every task
        from the latest completed checkpoint if the restart strategy allows, else fail."""
        if self.status.status is not JobStatus.RUNNING:
            return  # restarting already, or ending
        self.failures.append(cause)
        self.failure_causes.append(user)
        self.restart.notify_failure(now)
        if not self.restart.can_restart:
            self._give_up(f"{cause}; recovery is suppressed by {self.restart.describe()}", now)
            return
        self._restart_delay = self.restart.backoff_ms
        self.log.warning(
            "job_failover",
            cause=cause,
            restart=len(self.failures),
            delay_ms=self._restart_delay,
        )
        assert self.coordinator is not None
        self.coordinator.tell(
            AbortPendingCheckpoints(reason=CheckpointFailureReason.JOB_FAILOVER_REGION)
        )
        self.status.transition(JobStatus.RESTARTING, now)
        self._cancel_tasks()

    def _schedule_restart(self, now: int) -> None:
        """Every task is down: stop them and their channels; restart after the delay."""
        self._stop_tasks()
        self.runtime.schedule(self.actor_ref, RestartJob(self.attempt), now + self._restart_delay)

    def _restart_from(self, retained: tuple[tuple[int, str, bool], ...], now: int) -> None:
        restores: dict[TaskId, TaskRestore] = {}
        restored: RestoredFromCheckpoint | None = None
        finished: frozenset[TaskId] = frozenset()
        unusable: list[str] = []
        candidates = list(retained)
        initial = self.restored_from
        if (
            initial is not None
            and initial.external_path is not None
            and len(retained) < self.plan.checkpoint.num_retained
        ):
            # the job started from a savepoint or checkpoint: as in Flink's store, it counts
            # as completed until as many newer checkpoints as are retained subsume it
            candidates.append((initial.checkpoint_id, initial.external_path, initial.is_savepoint))
        for checkpoint_id, path, is_savepoint in candidates:
            try:
                loaded = load_checkpoint(path)
                restores = restore_plan(
                    self.plan, loaded, ignore_unclaimed=self.ignore_unclaimed_state
                )
            except (OSError, RestoreError) as error:  # missing or damaged: try the one before
                # the trace checker accepts a restore of an older checkpoint only when each
                # newer one it skipped is named by this event (runtime/tracecheck.py)
                self.log.warning(
                    "checkpoint_unusable", checkpoint_id=checkpoint_id, error=str(error)
                )
                unusable.append(str(error))
                continue
            restored = RestoredFromCheckpoint(
                checkpoint_id=checkpoint_id, external_path=path, is_savepoint=is_savepoint
            )
            finished = loaded.finished_tasks
            break
        if restored is None and unusable:
            self._give_up(
                f"{self.failures[-1]}; no usable checkpoint to restore from: "
                + "; ".join(unusable),
                now,
            )
            return
        self.attempt += 1
        restore_point = restored.checkpoint_id if restored is not None else 0
        dropped = self.collected.restored(self.attempt, restore_point, {str(t) for t in finished})
        for sink, transactions in dropped.items():
            self.log.info(
                "collected_output_retracted",
                sink=sink,
                after_checkpoint=restore_point,
                transactions=transactions,
            )
        self.plan = dataclasses.replace(
            self.plan,
            tasks={
                task: dataclasses.replace(spec, attempt=self.attempt, restore=restores.get(task))
                for task, spec in self.plan.tasks.items()
            },
        )
        assert self.coordinator is not None
        if restored is not None:
            self.coordinator.tell(restored)
        self.log.info(
            "job_restarting",
            attempt=self.attempt,
            checkpoint_id=restored.checkpoint_id if restored else None,
        )
        try:
            self._deploy_tasks(now)
        except Exception as error:
            self._give_up(f"redeployment failed: {type(error).__name__}: {error}", now)

    def _give_up(self, cause: str, now: int) -> None:
        """The job fails for good: FAILING (tasks cancelled) then FAILED."""
        self.failure = self.failure or cause
        self.log.warning("job_failing", cause=cause)
        current = self.status.status
        if current in (JobStatus.RUNNING, JobStatus.CREATED):
            self.status.transition(JobStatus.FAILING, now)
            self._cancel_tasks()
        elif current is JobStatus.RESTARTING:
            self.status.transition(JobStatus.FAILED, now)  # its tasks are down already

    def _cancel_tasks(self) -> None:
        """Ask every running task to cancel; the job moves on once every task has reported a
        terminal state (Flink's CANCELING tasks), so what sinks collected arrives."""
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
            now = self.runtime.clock.now()
            if self.status.status is JobStatus.RESTARTING:
                self._schedule_restart(now)
            else:
                self._terminate(now)

    def _terminate(self, now: int) -> None:
        if self.status.status is JobStatus.FAILING:
            self.status.transition(JobStatus.FAILED, now)
        elif self.status.status is JobStatus.CANCELLING:
            self.status.transition(JobStatus.CANCELED, now)

    def _stop_tasks(self) -> None:
        for ref in [*self.tasks.values(), *self.channels]:
            with contextlib.suppress(pykka.ActorDeadError):
                ref.stop(block=False)

    # --- savepoints -------------------------------------------------------------------------------

    def _progress_step(self) -> int:
        counts = [r.after_records for r in self.savepoint_requests if r.after_records]
        if not counts:
            return 0
        sources = max(1, len(self.plan.job.source_tasks()))
        return max(1, min(counts) // (4 * sources))

    def _schedule_savepoints(self, now: int) -> None:
        for index, request in enumerate(self.savepoint_requests):
            if request.at_ms is not None:
                self.runtime.schedule(self.actor_ref, JobTimer(index), now + request.at_ms)

    def _check_record_savepoints(self) -> None:
        total = sum(self._source_records.values())
        for index, request in enumerate(self.savepoint_requests):
            if request.after_records is not None and total >= request.after_records:
                self._trigger_savepoint(index)

    def _trigger_savepoint(self, index: int) -> None:
        if index in self._requested or self.status.status is not JobStatus.RUNNING:
            return
        self._requested.add(index)
        request = self.savepoint_requests[index]
        self.log.info("savepoint_requested", stop=request.stop, directory=request.directory)
        assert self.coordinator is not None
        self.coordinator.tell(
            TriggerCheckpointRequest(
                request_id=SAVEPOINT_REQUEST_BASE + index,
                snapshot_type=SnapshotType.SYNC_SAVEPOINT
                if request.stop
                else SnapshotType.SAVEPOINT,
                target_location=request.directory,
            )
        )

    def _savepoint_not_running(self, index: int) -> None:
        """A savepoint due while the job restarts fails (Flink refuses to trigger one while
        not every task runs); it is reported, not silently dropped."""
        if index in self._requested:
            return
        self._requested.add(index)
        reason = f"the job was {self.status.status.value}, not RUNNING"
        self.log.warning(
            "savepoint_failed", reason=reason, stop=self.savepoint_requests[index].stop
        )
        self.failures.append(f"savepoint failed: {reason}")
        self.failure_causes.append(None)

    def _savepoint_outcome(self, rid: int, path: str | None, failure: str | None, now: int) -> None:
        index = rid - SAVEPOINT_REQUEST_BASE
        if not 0 <= index < len(self.savepoint_requests):
            return
        request = self.savepoint_requests[index]
        if path is None:
            self.log.warning("savepoint_failed", reason=failure, stop=request.stop)
            self.failures.append(f"savepoint failed: {failure}")
            self.failure_causes.append(None)
            return
        self.savepoints.append(path)
        self.log.info("savepoint_completed", path=path, stop=request.stop)
        if request.stop and self.status.status is JobStatus.RUNNING:
            self._stopping = True  # stop-with-savepoint: the tasks stop, the job FINISHES
            for task, ref in self.tasks.items():
                if self.task_states.states.get(task) is ExecutionState.RUNNING:
                    with contextlib.suppress(pykka.ActorDeadError):
                        ref.tell(StopTask())

    # --- the end ----------------------------------------------------------------------------------

    def _complete(self, report: CoordinatorReport) -> None:
        for rid in list(self._replies):
            self._reply(rid, SnapshotOutcome(failure=f"the job ended ({self.status.status.value})"))
        self._stop_tasks()
        if self.coordinator is not None:
            with contextlib.suppress(pykka.ActorDeadError):
                self.coordinator.stop(block=False)
        result = self._result_from(self.status.status, report)
        self.log.info(
            "job_finished",
            status=result.status.value,
            duration_ms=result.duration_ms,
            restarts=result.restarts,
        )
        self._set_result(result)

    def _result_from(self, status: JobStatus, report: CoordinatorReport) -> JobResult:
        now = self.runtime.clock.now()
        return JobResult(
            job_id=self.job_id,
            name=self.plan.job.name,
            status=status,
            output=self.collected.result(max(report.completed, default=0)),
            checkpoints=report.stats,
            checkpoint_details=report.details,
            checkpoint_types=report.types,
            completed_checkpoint_ids=report.completed,
            retained_checkpoints=report.retained,
            failure=self.failure,
            duration_ms=now - self.started_at,
            checkpoint_dir=str(self.storage.root),
            status_history=[(s.value, t) for s, t in self.status.history],
            restarts=self.attempt,
            failures=list(self.failures),
            failure_causes=list(self.failure_causes),
            savepoints=list(self.savepoints),
            task_metrics={str(task): m for task, m in self.task_metrics.items()},
            epoch_ms=self.runtime.epoch_ms,
            virtual_time=self.runtime.deterministic,
        )

    def _set_result(self, result: JobResult) -> None:
        if not self._result_set:
            self._result_set = True
            self.result.set(result)

    # --- from outside the actor system (the REST API, actors/web.py) -------------------------------

    def _job_view(self, now: int) -> dict[str, Any]:
        """What ``QueryJob`` answers: the job as the REST API shows it."""
        return {
            "job_id": self.job_id,
            "status": self.status.status.value,
            "status_history": [(s.value, t) for s, t in self.status.history],
            "now": now,
            "epoch_ms": self.runtime.epoch_ms,
            "attempt": self.attempt,
            "task_states": {str(t): s.value for t, s in self.task_states.states.items()},
            "task_metrics": {str(t): m for t, m in self.task_metrics.items()},
            "tasks": {str(t): ref for t, ref in self.tasks.items()},
            "coordinator": self.coordinator,
            "failure": self.failure,
            "failures": list(self.failures),
            "failure_causes": list(self.failure_causes),
            "savepoints": list(self.savepoints),
        }

    def _snapshot_from_outside(self, request: SnapshotRequest) -> None:
        """A savepoint (as one the job asked for itself), a stop-with-savepoint or a
        checkpoint; its outcome completes ``request.reply``."""
        if self.status.status is not JobStatus.RUNNING or self.coordinator is None:
            status = self.status.status.value
            request.reply.set(SnapshotOutcome(failure=f"the job is {status}, not RUNNING"))
            return
        if request.kind in ("savepoint", "stop"):
            self.savepoint_requests.append(
                SavepointRequest(directory=request.directory, stop=request.kind == "stop")
            )
            index = len(self.savepoint_requests) - 1
            self._replies[SAVEPOINT_REQUEST_BASE + index] = request.reply
            self._trigger_savepoint(index)
            return
        self._checkpoint_requests += 1
        rid = CHECKPOINT_REQUEST_BASE + self._checkpoint_requests
        self._replies[rid] = request.reply
        full = request.kind == "full_checkpoint"
        self.coordinator.tell(
            TriggerCheckpointRequest(
                request_id=rid,
                snapshot_type=SnapshotType.FULL_CHECKPOINT if full else SnapshotType.CHECKPOINT,
            )
        )

    def _reply(self, rid: int, outcome: SnapshotOutcome) -> None:
        reply = self._replies.pop(rid, None)
        if reply is not None:
            reply.set(outcome)


#: request ids of savepoints the JobMaster asks for (periodic checkpoints use negative ids)
SAVEPOINT_REQUEST_BASE = 1_000_000
#: request ids of checkpoints asked for from outside (the REST API)
CHECKPOINT_REQUEST_BASE = 2_000_000


def _empty_report() -> CoordinatorReport:
    """Statistics of a job that never got a checkpoint coordinator."""
    return CoordinatorReport(CheckpointStatsTracker(0).to_json(), {}, [], [])
