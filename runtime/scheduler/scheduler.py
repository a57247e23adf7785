"""``Scheduler``: the JobMaster's decisions, as a pure state machine (Flink's ``SchedulerBase``
with its ``ExecutionFailureHandler`` and ``RestartBackoffTimeStrategy``, for one region).

``handle(msg, now)`` takes a ``SchedulerMessage`` and returns ``SchedulerEffect``s; the
JobMaster actor only routes messages to it and carries the effects out. What it decides:

- the job status, with Flink's transitions (``runtime.job.JobStatusMachine``); every change is
  told to the checkpoint coordinator (``CheckpointCoordinatorDeActivator``) and a terminal one
  shuts it down;
- deployment: the coordinator, then the tasks (``StartCoordinator``, ``DeployTasks``, each
  answered by a message); a failed deployment fails the job;
- failover: a task failure or the failure manager's verdict aborts the pending checkpoints
  (``JOB_FAILOVER_REGION``), and the restart strategy says whether and after how long; the job
  goes RESTARTING, its tasks are cancelled, and once all are down a timer waits out the delay;
  then the retained checkpoints are asked for, loaded one after the other (``LoadCheckpoint``,
  answered by ``CheckpointLoaded`` / ``CheckpointLoadFailed``) until one is usable
  (``runtime.scheduler.restore``), and the tasks are deployed again restoring it; when the
  strategy says no, or no candidate is usable, the job fails (FAILING, tasks cancelled, FAILED);
- savepoints the job was started with (at a time, after a number of source records) and those
  asked for from outside, with typed request ids (``SavepointRequestId``,
  ``CheckpointRequestId``); a stop-with-savepoint stops the tasks once it completed;
- finishing (every task finished), cancelling, and the ``JobResult`` once the coordinator has
  reported its statistics; the collect sinks' output (``runtime.collected``).

It never sends, sleeps, reads files or the clock: log lines are ``Traced`` effects too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, assert_never

from runtime.checkpoint import SavepointRequest, SnapshotType, TaskId
from runtime.collected import CollectedOutput
from runtime.descriptors import SinkDescriptor, SinkKind
from runtime.effects import Role, ScheduleTimer, Send, Traced
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
    CancelJob,
    CancelTask,
    CheckpointFailure,
    CheckpointLoaded,
    CheckpointLoadFailed,
    CheckpointRequestId,
    CoordinatorCrashed,
    CoordinatorMessage,
    CoordinatorReport,
    CoordinatorStarted,
    DeploymentFailed,
    ExecutionStateChanged,
    JobRequestId,
    JobStatusChanged,
    ListRetainedCheckpoints,
    ReportedWatermark,
    RequestOutcome,
    RestoredFromCheckpoint,
    RetainedCheckpoints,
    RuntimeFailed,
    SavepointRequestId,
    SchedulerMessage,
    ShutdownCoordinator,
    SinkResults,
    SnapshotRequested,
    SourceProgress,
    StartCheckpointScheduler,
    StartJob,
    StartTask,
    StopCheckpointScheduler,
    StopTask,
    TasksDeployed,
    TaskStateUpdate,
    TasksUnreachable,
    TimerFired,
    TriggerCheckpointRequest,
)
from runtime.reasons import CheckpointFailureReason
from runtime.restart import NoRestart, RestartStrategy
from runtime.scheduler.alignment import AnnounceCombinedWatermark, WatermarkAlignmentCoordinator
from runtime.scheduler.effects import (
    CompleteJob,
    DeployTasks,
    LoadCheckpoint,
    ReplyToSnapshotRequest,
    SchedulerEffect,
    SnapshotOutcome,
    StartCoordinator,
    StopCoordinator,
    StopDeployment,
)
from runtime.scheduler.restore import RestoreChoice, restore_candidates
from runtime.snapshot import LoadedCheckpoint
from runtime.stats import CheckpointStatsTracker
from runtime.status import ExecutionState, JobStatus
from runtime.task import TaskRestore

_DOWN = (ExecutionState.FINISHED, ExecutionState.FAILED, ExecutionState.CANCELED)
_Level = Literal["info", "warning", "error"]


@dataclass(frozen=True, slots=True)
class RestartTimer:
    """Timer key: the restart delay after attempt ``attempt`` failed is over."""

    attempt: int


@dataclass(frozen=True, slots=True)
class SavepointTimer:
    """Timer key: the ``index``-th savepoint request is due (``SavepointRequest.at_ms``)."""

    index: int


def empty_report() -> CoordinatorReport:
    """Statistics of a job that never got (or lost) its checkpoint coordinator."""
    return CoordinatorReport(
        stats=CheckpointStatsTracker(0).to_json(), details={}, completed=[], retained=[]
    )


class Scheduler:
    def __init__(
        self,
        *,
        plan: ExecutionPlan,
        job_id: str,
        checkpoint_dir: str | None = None,
        restart: RestartStrategy | None = None,
        restored_from: RestoredFromCheckpoint | None = None,
        savepoint_requests: Sequence[SavepointRequest] = (),
        ignore_unclaimed_state: bool = False,
        epoch_ms: int = 0,
        virtual_time: bool = False,
    ) -> None:
        self.plan = plan
        self.job_id = job_id
        self.checkpoint_dir = checkpoint_dir
        self.restart: RestartStrategy = restart or NoRestart()
        self.restored_from = restored_from
        self.savepoint_requests = list(savepoint_requests)
        self.ignore_unclaimed_state = ignore_unclaimed_state
        self.epoch_ms = epoch_ms
        self.virtual_time = virtual_time
        self.status = JobStatusMachine()
        self.task_states = TaskStates()
        #: the tasks' IO metrics as they last reported them (the REST API's vertex metrics)
        self.task_metrics: dict[TaskId, dict[str, Any]] = {}
        #: what collect sinks return, per transaction
        self.collected = CollectedOutput(_collect_sinks(plan))
        self.failure: str | None = None
        self.failures: list[str] = []
        #: the user-code failure behind each entry of ``failures`` (None for another cause)
        self.failure_causes: list[TaskFailure | None] = []
        self.savepoints: list[str] = []
        self.started_at = 0
        self.attempt = 0
        #: the checkpoint coordinator runs (started, and did not crash)
        self.has_coordinator = False
        self.result: JobResult | None = None
        self._restart_delay = 0
        self._restore: RestoreChoice | None = None
        self._source_records: dict[TaskId, int] = {}
        #: FLIP-182: the alignment groups' watermarks (the SourceCoordinators' part)
        self.alignment = WatermarkAlignmentCoordinator()
        #: savepoint requests (by index) already triggered or failed
        self._requested: set[int] = set()
        #: outside requests waiting for their outcome -> the runtime's reply token
        self._replies: dict[JobRequestId, int] = {}
        self._checkpoint_requests = 0
        self._now = 0
        self._out: list[SchedulerEffect] = []

    # --- entry point ------------------------------------------------------------------------

    def handle(self, msg: SchedulerMessage, now: int) -> list[SchedulerEffect]:
        self._now = now
        out: list[SchedulerEffect] = []
        self._out = out
        match msg:
            case StartJob():
                if self.status.status is JobStatus.CREATED and not self.has_coordinator:
                    self.started_at = now
                    self._emit(StartCoordinator(plan=self.plan))
            case CoordinatorStarted():
                self.has_coordinator = True
                if self.restored_from is not None:  # started from a savepoint or checkpoint
                    self._tell_coordinator(self.restored_from)
                self._deploy()
            case TasksDeployed(attempt=attempt):
                if attempt == self.attempt:
                    self._start_tasks()
            case DeploymentFailed(attempt=attempt, cause=cause):
                self._trace("job_deployment_failed", "error", attempt=attempt, error=cause)
                again = "re" if attempt > 0 else ""
                self._give_up(f"{again}deployment failed: {cause}")
            case TaskStateUpdate(attempt=attempt):
                if attempt == self.attempt:  # an earlier deployment's news is stale
                    self._task_state(msg)
            case TasksUnreachable(tasks=tasks, attempt=attempt):
                if attempt == self.attempt:
                    self._unreachable(tasks)
            case SinkResults():
                self._sink_results(msg)
            case ReportedWatermark():
                if self.status.status is JobStatus.RUNNING:
                    self._out.extend(self.alignment.report(msg, now))
            case TimerFired(key=AnnounceCombinedWatermark() as key):
                if self.status.status is JobStatus.RUNNING:
                    self._out.extend(self.alignment.tick(key, now, self._running))
                else:
                    self.alignment.stop()
            case SourceProgress(task=task, records=records):
                self._source_records[task] = records
                self._check_record_savepoints()
            case CoordinatorCrashed(cause=cause):
                self._trace("checkpoint_coordinator_crashed", "error", cause=cause)
                self.has_coordinator = False  # no statistics will come from it
                self.failures.append(cause)
                self.failure_causes.append(None)
                self._give_up(cause)
            case CheckpointFailure(message=text, reason=reason, cause=cause):
                last = reason.name if cause is None else f"{reason.name}: {cause}"
                self._on_failure(f"{text} (last failure: {last})")
            case CancelJob():
                self._cancel()
            case RuntimeFailed(cause=cause):
                self._give_up(cause)
            case TimerFired(key=RestartTimer(attempt=attempt)):
                if self.status.status is JobStatus.RESTARTING and attempt == self.attempt:
                    self._emit(Send(to=Role.COORDINATOR, message=ListRetainedCheckpoints()))
            case TimerFired(key=SavepointTimer(index=index)):
                if self.status.status is JobStatus.RESTARTING:  # as Flink: not RUNNING, fails
                    self._savepoint_not_running(index)
                self._trigger_savepoint(index)
            case TimerFired():
                pass  # not a timer of the scheduler's
            case RetainedCheckpoints(checkpoints=retained):
                if self.status.status is JobStatus.RESTARTING and self._restore is None:
                    self._choose_restore(retained)
            case CheckpointLoaded(attempt=attempt, checkpoint=loaded):
                if self._loading(attempt, loaded.checkpoint_id):
                    self._loaded(loaded)
            case CheckpointLoadFailed(attempt=attempt, checkpoint_id=cid, error=error):
                if self._loading(attempt, cid):
                    self._unusable(error)
            case RequestOutcome(request_id=rid, path=path, failure=failure):
                if isinstance(rid, SavepointRequestId):
                    self._savepoint_outcome(rid.index, path, failure)
                reply = self._replies.pop(rid, None)
                if reply is not None:
                    outcome = SnapshotOutcome(
                        path=path, failure=failure, checkpoint_id=msg.checkpoint_id
                    )
                    self._emit(ReplyToSnapshotRequest(reply=reply, outcome=outcome))
            case SnapshotRequested():
                self._snapshot_from_outside(msg)
            case CoordinatorReport():
                self._complete(msg)
            case _ as unreachable:
                assert_never(unreachable)
        return out

    def _emit(self, effect: SchedulerEffect) -> None:
        self._out.append(effect)

    def _trace(self, event: str, level: _Level = "info", **fields: Any) -> None:
        self._emit(Traced(event=event, fields=fields, level=level))

    def _tell_tasks(
        self, tasks: Sequence[TaskId], message: StartTask | CancelTask | StopTask
    ) -> None:
        """Tell the tasks of this attempt; the runtime answers ``TasksUnreachable`` for those
        that are gone."""
        for task in tasks:
            self._emit(Send(to=task, message=message))

    def _tell_coordinator(self, message: CoordinatorMessage) -> None:
        if self.has_coordinator:
            self._emit(Send(to=Role.COORDINATOR, message=message))

    # --- views ------------------------------------------------------------------------------

    def view(self, now: int) -> dict[str, Any]:
        """The job as the REST API shows it (without the runtime's actor references)."""
        return {
            "job_id": self.job_id,
            "status": self.status.status.value,
            "status_history": [(s.value, t) for s, t in self.status.history],
            "now": now,
            "epoch_ms": self.epoch_ms,
            "attempt": self.attempt,
            "task_states": {str(t): s.value for t, s in self.task_states.states.items()},
            "task_metrics": {str(t): m for t, m in self.task_metrics.items()},
            "failure": self.failure,
            "failures": list(self.failures),
            "failure_causes": list(self.failure_causes),
            "savepoints": list(self.savepoints),
        }

    # --- deployment ---------------------------------------------------------------------------

    def _running(self, task: TaskId) -> bool:
        return self.task_states.states.get(task) is ExecutionState.RUNNING

    def _deploy(self) -> None:
        self.alignment = WatermarkAlignmentCoordinator(self.attempt)
        self._emit(
            DeployTasks(
                attempt=self.attempt, plan=self.plan, report_records_every=self._progress_step()
            )
        )

    def _start_tasks(self) -> None:
        """Every task of the attempt exists: start them, and the job runs."""
        tasks = tuple(self.plan.tasks)
        self._tell_tasks(tasks, StartTask())
        for task in tasks:
            self.task_states.set(task, ExecutionState.RUNNING)
            self._tell_coordinator(
                ExecutionStateChanged(task=task, state=ExecutionState.RUNNING, attempt=self.attempt)
            )
        self._transition(JobStatus.RUNNING)
        if self.attempt == 0:
            for index, request in enumerate(self.savepoint_requests):
                if request.at_ms is not None:
                    self._emit(
                        ScheduleTimer(key=SavepointTimer(index), due=self._now + request.at_ms)
                    )

    def _progress_step(self) -> int:
        """How often a source reports its record count: often enough for the savepoints asked
        for after a number of records."""
        counts = [r.after_records for r in self.savepoint_requests if r.after_records]
        if not counts:
            return 0
        sources = max(1, len(self.plan.job.source_tasks()))
        return max(1, min(counts) // (4 * sources))

    # --- status -------------------------------------------------------------------------------

    def _transition(self, status: JobStatus) -> None:
        self.status.transition(status, self._now)
        self._trace("job_status_changed", status=status.value)
        if self.has_coordinator:
            self._tell_coordinator(JobStatusChanged(status=status))
            if status.is_globally_terminal:
                self._tell_coordinator(ShutdownCoordinator(job_status=status))
        elif status.is_globally_terminal:  # it ended without a coordinator to report
            self._complete(empty_report())

    def _task_state(self, update: TaskStateUpdate) -> None:
        task, state = update.task, update.state
        if update.metrics is not None:
            self.task_metrics[task] = {**update.metrics, "state": state.value}
        self.task_states.set(task, state)
        self._trace("task_state_changed", task=str(task), state=state.value, message=update.message)
        self._tell_coordinator(
            ExecutionStateChanged(
                task=task,
                state=state,
                attempt=self.attempt,
                final_positions=update.final_positions,
            )
        )
        current = self.status.status
        if state is ExecutionState.FAILED and current is JobStatus.RUNNING:
            # the pending checkpoints end with the fail-over (Flink 2.3's coordinator has no
            # failUnacknowledgedPendingCheckpointsFor any more)
            self._on_failure(f"task {task} failed: {update.message}", update.failure)
        elif current is JobStatus.RUNNING and self.task_states.all_in(ExecutionState.FINISHED):
            self._transition(JobStatus.FINISHED)
        else:
            self._when_all_down()

    def _unreachable(self, tasks: Sequence[TaskId]) -> None:
        """Tasks asked to cancel whose actors are gone count as cancelled."""
        for task in tasks:
            if self.task_states.states.get(task) is ExecutionState.CANCELING:
                self.task_states.set(task, ExecutionState.CANCELED)
        self._when_all_down()

    def _when_all_down(self) -> None:
        """Every task is down: a restarting job waits out its delay, an ending one ends."""
        if not self.task_states.all_in(*_DOWN):
            return
        current = self.status.status
        if current is JobStatus.RESTARTING:
            self._schedule_restart()
        elif current in (JobStatus.FAILING, JobStatus.CANCELLING):
            self._terminate()

    def _cancel(self) -> None:
        current = self.status.status
        if current is JobStatus.RUNNING:
            self._transition(JobStatus.CANCELLING)
            self._cancel_tasks()
        elif current in (JobStatus.RESTARTING, JobStatus.CREATED):  # no task runs
            self._transition(JobStatus.CANCELLING)
            self._terminate()

    def _cancel_tasks(self) -> None:
        """Ask every running task to cancel; the job moves on once every task has reported a
        terminal state (Flink's CANCELING tasks), so what sinks collected arrives."""
        running = tuple(
            t for t, s in self.task_states.states.items() if s is ExecutionState.RUNNING
        )
        for task in running:
            self.task_states.set(task, ExecutionState.CANCELING)
        if running:
            self._tell_tasks(running, CancelTask())
        self._when_all_down()

    def _terminate(self) -> None:
        if self.status.status is JobStatus.FAILING:
            self._transition(JobStatus.FAILED)
        elif self.status.status is JobStatus.CANCELLING:
            self._transition(JobStatus.CANCELED)

    def _give_up(self, cause: str) -> None:
        """The job fails for good: FAILING (tasks cancelled) then FAILED."""
        self.failure = self.failure or cause
        self._trace("job_failing", "warning", cause=cause)
        current = self.status.status
        if current in (JobStatus.RUNNING, JobStatus.CREATED):
            self._transition(JobStatus.FAILING)
            self._cancel_tasks()
        elif current is JobStatus.RESTARTING:
            self._transition(JobStatus.FAILED)  # its tasks are down already

    # --- failover -----------------------------------------------------------------------------

    def _on_failure(self, cause: str, user: TaskFailure | None = None) -> None:
        """A task failed, or the failure manager gave up on checkpoints: restart every task
        from the latest usable checkpoint if the restart strategy allows, else fail."""
        if self.status.status is not JobStatus.RUNNING:
            return  # restarting already, or ending
        self.failures.append(cause)
        self.failure_causes.append(user)
        self.restart.notify_failure(self._now)
        if not self.restart.can_restart:
            self._give_up(f"{cause}; recovery is suppressed by {self.restart.describe()}")
            return
        self._restart_delay = self.restart.backoff_ms
        self._trace(
            "job_failover",
            "warning",
            cause=cause,
            restart=len(self.failures),
            delay_ms=self._restart_delay,
        )
        # as Flink's CheckpointCoordinatorDeActivator on RESTARTING: the coordinator suspends
        self._tell_coordinator(
            AbortPendingCheckpoints(reason=CheckpointFailureReason.CHECKPOINT_COORDINATOR_SUSPEND)
        )
        self._transition(JobStatus.RESTARTING)
        self._cancel_tasks()

    def _schedule_restart(self) -> None:
        """Every task is down: stop them and their channels; restart after the delay."""
        self._emit(StopDeployment())
        self._emit(
            ScheduleTimer(key=RestartTimer(self.attempt), due=self._now + self._restart_delay)
        )

    def _choose_restore(self, retained: Sequence[RestoredFromCheckpoint]) -> None:
        candidates = restore_candidates(
            retained, self.restored_from, num_retained=self.plan.checkpoint.num_retained
        )
        self._restore = RestoreChoice(candidates)
        self._load_next()

    def _load_next(self) -> None:
        choice = self._restore
        assert choice is not None
        candidate = choice.next()
        if candidate is not None:
            self._emit(LoadCheckpoint(attempt=self.attempt, checkpoint=candidate))
            return
        self._restore = None
        if choice.exhausted:
            self._give_up(
                f"{self.failures[-1]}; no usable checkpoint to restore from: "
                + "; ".join(choice.unusable)
            )
        else:
            self._restart_with(None, {}, frozenset())

    def _loading(self, attempt: int, checkpoint_id: int) -> bool:
        """The answer is the one the restart of this attempt waits for."""
        return (
            self.status.status is JobStatus.RESTARTING
            and attempt == self.attempt
            and self._restore is not None
            and self._restore.is_waiting_for(checkpoint_id)
        )

    def _loaded(self, loaded: LoadedCheckpoint) -> None:
        choice = self._restore
        assert choice is not None and choice.current is not None
        try:
            restores = restore_plan(self.plan, loaded, ignore_unclaimed=self.ignore_unclaimed_state)
        except RestoreError as error:
            self._unusable(str(error))
            return
        self._restore = None
        restored = dataclasses.replace(choice.current, final_positions=loaded.final_positions)
        self._restart_with(restored, restores, loaded.finished_tasks)

    def _unusable(self, error: str) -> None:
        """The candidate is missing, damaged or does not fit: try the one before it."""
        choice = self._restore
        assert choice is not None and choice.current is not None
        # the trace checker accepts a restore of an older checkpoint only when each newer one
        # it skipped is named by this event (runtime/tracecheck.py)
        self._trace(
            "checkpoint_unusable",
            "warning",
            checkpoint_id=choice.current.checkpoint_id,
            error=error,
        )
        choice.skip(error)
        self._load_next()

    def _restart_with(
        self,
        restored: RestoredFromCheckpoint | None,
        restores: dict[TaskId, TaskRestore],
        finished: frozenset[TaskId],
    ) -> None:
        self.attempt += 1
        restore_point = restored.checkpoint_id if restored is not None else 0
        dropped = self.collected.restored(self.attempt, restore_point, {str(t) for t in finished})
        for sink, transactions in dropped.items():
            self._trace(
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
        if restored is not None:
            self._tell_coordinator(restored)
        self._trace(
            "job_restarting",
            attempt=self.attempt,
            checkpoint_id=restored.checkpoint_id if restored else None,
        )
        self._deploy()

    # --- collect sinks ------------------------------------------------------------------------

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

    # --- savepoints ---------------------------------------------------------------------------

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
        fields: dict[str, Any] = {"stop": request.stop, "directory": request.directory}
        if request.drain:
            fields["drain"] = True  # the trace of a stop without drain stays as it was
        self._trace("savepoint_requested", **fields)
        if request.stop:
            # only the savepoint's data is committed: no periodic checkpoint from now on
            # (Flink's stopWithSavepoint stops the checkpoint scheduler first)
            self._tell_coordinator(StopCheckpointScheduler())
        self._tell_coordinator(
            TriggerCheckpointRequest(
                request_id=SavepointRequestId(index),
                snapshot_type=SnapshotType.SYNC_SAVEPOINT
                if request.stop
                else SnapshotType.SAVEPOINT,
                target_location=request.directory,
                drain=request.stop and request.drain,
            )
        )

    def _savepoint_not_running(self, index: int) -> None:
        """A savepoint due while the job restarts fails (Flink refuses to trigger one while
        not every task runs); it is reported, not silently dropped."""
        if index in self._requested:
            return
        self._requested.add(index)
        reason = f"the job was {self.status.status.value}, not RUNNING"
        self._trace(
            "savepoint_failed", "warning", reason=reason, stop=self.savepoint_requests[index].stop
        )
        self.failures.append(f"savepoint failed: {reason}")
        self.failure_causes.append(None)

    def _savepoint_outcome(self, index: int, path: str | None, failure: str | None) -> None:
        if not 0 <= index < len(self.savepoint_requests):
            return
        request = self.savepoint_requests[index]
        if path is None:
            self._trace("savepoint_failed", "warning", reason=failure, stop=request.stop)
            self.failures.append(f"savepoint failed: {failure}")
            self.failure_causes.append(None)
            if request.stop and self.status.status is JobStatus.RUNNING:
                self._tell_coordinator(StartCheckpointScheduler())  # the job runs on
            return
        self.savepoints.append(path)
        self._trace("savepoint_completed", path=path, stop=request.stop)
        if request.stop and self.status.status is JobStatus.RUNNING:
            # stop-with-savepoint: the tasks stop, the job FINISHES
            running = tuple(
                t for t, s in self.task_states.states.items() if s is ExecutionState.RUNNING
            )
            if running:
                self._tell_tasks(running, StopTask())

    def _snapshot_from_outside(self, request: SnapshotRequested) -> None:
        """A savepoint (as one the job asked for itself), a stop-with-savepoint or a
        checkpoint; its outcome goes to ``request.reply``."""
        if self.status.status is not JobStatus.RUNNING or not self.has_coordinator:
            status = self.status.status.value
            self._emit(
                ReplyToSnapshotRequest(
                    reply=request.reply,
                    outcome=SnapshotOutcome(failure=f"the job is {status}, not RUNNING"),
                )
            )
            return
        if request.kind in ("savepoint", "stop"):
            self.savepoint_requests.append(
                SavepointRequest(
                    directory=request.directory,
                    stop=request.kind == "stop",
                    drain=request.kind == "stop" and request.drain,
                )
            )
            index = len(self.savepoint_requests) - 1
            self._replies[SavepointRequestId(index)] = request.reply
            self._trigger_savepoint(index)
            return
        self._checkpoint_requests += 1
        rid = CheckpointRequestId(self._checkpoint_requests)
        self._replies[rid] = request.reply
        full = request.kind == "full_checkpoint"
        self._tell_coordinator(
            TriggerCheckpointRequest(
                request_id=rid,
                snapshot_type=SnapshotType.FULL_CHECKPOINT if full else SnapshotType.CHECKPOINT,
            )
        )

    # --- the end ------------------------------------------------------------------------------

    def _complete(self, report: CoordinatorReport) -> None:
        if self.result is not None:
            return
        for reply in self._replies.values():
            self._emit(
                ReplyToSnapshotRequest(
                    reply=reply,
                    outcome=SnapshotOutcome(failure=f"the job ended ({self.status.status.value})"),
                )
            )
        self._replies.clear()
        self._emit(StopDeployment())
        self._emit(StopCoordinator())
        self.has_coordinator = False
        result = self.result_from(self.status.status, report)
        self._trace(
            "job_finished",
            status=result.status.value,
            duration_ms=result.duration_ms,
            restarts=result.restarts,
        )
        self._emit(CompleteJob(result=result))

    def result_from(self, status: JobStatus, report: CoordinatorReport) -> JobResult:
        """The job's result with ``status``; the collect sinks' records go with it (the
        scheduler keeps none of them afterwards)."""
        output = self.collected.result(max(report.completed, default=0))
        self.collected = CollectedOutput()
        self.result = JobResult(
            job_id=self.job_id,
            name=self.plan.job.name,
            status=status,
            output=output,
            checkpoints=report.stats,
            checkpoint_details=report.details,
            checkpoint_types=report.types,
            completed_checkpoint_ids=report.completed,
            retained_checkpoints=report.retained,
            failure=self.failure,
            duration_ms=self._now - self.started_at,
            checkpoint_dir=self.checkpoint_dir,
            status_history=[(s.value, t) for s, t in self.status.history],
            restarts=self.attempt,
            failures=list(self.failures),
            failure_causes=list(self.failure_causes),
            savepoints=list(self.savepoints),
            task_metrics={str(task): m for task, m in self.task_metrics.items()},
            epoch_ms=self.epoch_ms,
            virtual_time=self.virtual_time,
        )
        return self.result

    def crashed(self, cause: str, now: int) -> JobResult:
        """What the JobMaster itself crashing leaves (it may have crashed in this object): a
        FAILED result with ``cause``, once. No transition, no effect."""
        if self.result is not None:
            return self.result
        self._now = now
        self.failure = self.failure or cause
        return self.result_from(JobStatus.FAILED, empty_report())


def _collect_sinks(plan: ExecutionPlan) -> list[str]:
    return [
        op.name
        for vertex in plan.job.vertices
        for op in vertex.operators
        if isinstance(op.operator, SinkDescriptor) and op.operator.sink is SinkKind.COLLECT
    ]
