"""``runtime.scheduler.Scheduler``: the JobMaster's decisions as a pure object, driven message by
message with a manual clock (no actor, no thread, no file): deployment, the status machine,
failover with the restart strategy's verdict and delay, the choice of the checkpoint to restore
and the fallback past unusable ones, savepoints with typed request ids, cancelling, finishing
and the job's result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import pytest

from ckptsim import StreamExecutionEnvironment
from runtime.checkpoint import SavepointRequest, SnapshotType, TaskId
from runtime.effects import Role, ScheduleTimer, Send, Traced
from runtime.job import ExecutionPlan, plan_execution
from runtime.messages import (
    AbortPendingCheckpoints,
    CancelJob,
    CancelTask,
    CheckpointFailure,
    CheckpointLoaded,
    CheckpointLoadFailed,
    CheckpointRequestId,
    CoordinatorCrashed,
    CoordinatorReport,
    CoordinatorStarted,
    DeploymentFailed,
    ExecutionStateChanged,
    JobStatusChanged,
    ListRetainedCheckpoints,
    RequestOutcome,
    RestoredFromCheckpoint,
    RetainedCheckpoints,
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
from runtime.reasons import CheckpointFailureReason as R
from runtime.restart import FixedDelay, NoRestart, RestartStrategy
from runtime.scheduler import RestartTimer, SavepointTimer, Scheduler
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
from runtime.snapshot import LoadedCheckpoint, LoadedTaskState
from runtime.status import ExecutionState as S
from runtime.status import JobStatus as J

E = TypeVar("E")
SOURCE0, SOURCE1 = TaskId("source-1", 0), TaskId("source-1", 1)
REDUCE0, REDUCE1 = TaskId("reduce-2", 0), TaskId("reduce-2", 1)
TASKS = [SOURCE0, SOURCE1, REDUCE0, REDUCE1]


def _plan(retained: int = 1) -> ExecutionPlan:
    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing("100 ms")
    env.configure({"execution.checkpointing.num-retained": retained})
    env.from_collection([(1, 1)]).key_by(lambda r: r[0]).reduce(lambda a, b: a).collect("out")
    return plan_execution(env.build_job_graph("j"), env.configuration)


def _checkpoint(checkpoint_id: int, *, unknown_operator: bool = False) -> LoadedCheckpoint:
    tasks = (
        {
            SOURCE0: LoadedTaskState(
                operator_states={"ghost": 1}, input_channels={}, output_channels={}
            )
        }
        if unknown_operator
        else {}
    )
    return LoadedCheckpoint(
        path=f"/ckpt/chk-{checkpoint_id}",
        checkpoint_id=checkpoint_id,
        timestamp=0,
        is_savepoint=False,
        job_name="j",
        operator_uids=[],
        tasks=tasks,
    )


def _retained(*ids: int) -> RetainedCheckpoints:
    return RetainedCheckpoints(
        checkpoints=tuple(
            RestoredFromCheckpoint(checkpoint_id=i, external_path=f"/ckpt/chk-{i}") for i in ids
        )
    )


def _report(completed: Sequence[int] = ()) -> CoordinatorReport:
    return CoordinatorReport(
        stats={"counts": {"completed": len(completed)}},
        details={},
        completed=list(completed),
        retained=[],
    )


class Driver:
    """A scheduler, a manual clock, every effect it returned."""

    def __init__(
        self,
        *,
        restart: RestartStrategy | None = None,
        plan: ExecutionPlan | None = None,
        **kw: Any,
    ) -> None:
        self.scheduler = Scheduler(
            plan=plan or _plan(), job_id="job", restart=restart or NoRestart(), **kw
        )
        self.now = 0
        self.effects: list[SchedulerEffect] = []

    def send(self, msg: SchedulerMessage) -> list[SchedulerEffect]:
        out = self.scheduler.handle(msg, self.now)
        self.effects.extend(out)
        return out

    def run(self) -> None:
        """Deploy: the runtime answers every step at once."""
        self.send(StartJob())
        self.send(CoordinatorStarted())
        self.send(TasksDeployed(attempt=self.scheduler.attempt))

    def task(self, task: TaskId, state: S, text: str | None = None) -> list[SchedulerEffect]:
        return self.send(
            TaskStateUpdate(task=task, state=state, message=text, attempt=self.scheduler.attempt)
        )

    def all_tasks(self, state: S) -> None:
        for task in TASKS:
            self.task(task, state)

    @property
    def status(self) -> J:
        return self.scheduler.status.status

    def of(self, kind: type[E], effects: Sequence[object] | None = None) -> list[E]:
        return [e for e in (self.effects if effects is None else effects) if isinstance(e, kind)]

    def told(self, effects: Sequence[object] | None = None) -> list[object]:
        """What the coordinator was told."""
        return [e.message for e in self.of(Send, effects) if e.to is Role.COORDINATOR]

    def told_tasks(self, effects: Sequence[object] | None = None) -> list[tuple[object, object]]:
        """What tasks were told: (task, message)."""
        return [(e.to, e.message) for e in self.of(Send, effects) if isinstance(e.to, TaskId)]

    def traced(self, event: str) -> list[Traced]:
        return [e for e in self.of(Traced) if e.event == event]

    def result(self) -> CompleteJob:
        (done,) = self.of(CompleteJob)
        return done


def _fail_over(d: Driver, task: TaskId = REDUCE0) -> None:
    """``task`` fails; the others report CANCELED."""
    d.task(task, S.FAILED, "boom")
    for other in TASKS:
        if other != task:
            d.task(other, S.CANCELED)


# --- deployment and status ---------------------------------------------------------------------


def test_deployment_is_coordinator_then_tasks_then_running() -> None:
    d = Driver(restored_from=RestoredFromCheckpoint(checkpoint_id=4, external_path="/sp"))
    assert [type(e) for e in d.send(StartJob())] == [StartCoordinator]
    started = d.send(CoordinatorStarted())
    assert d.told(started) == [RestoredFromCheckpoint(checkpoint_id=4, external_path="/sp")]
    (deploy,) = d.of(DeployTasks, started)
    assert deploy.attempt == 0 and list(deploy.plan.tasks) == TASKS
    assert d.status is J.CREATED, "nothing runs before the tasks exist"
    running = d.send(TasksDeployed(attempt=0))
    assert d.told_tasks(running) == [(t, StartTask()) for t in TASKS]
    assert d.told(running) == [
        *(ExecutionStateChanged(task=t, state=S.RUNNING, attempt=0) for t in TASKS),
        JobStatusChanged(status=J.RUNNING),
    ]
    assert d.status is J.RUNNING
    assert [e.fields["status"] for e in d.traced("job_status_changed")] == ["RUNNING"]


def test_the_job_finishes_when_every_task_finished_and_the_result_follows_the_report() -> None:
    d = Driver()
    d.run()
    d.now = 250
    for task in TASKS[:-1]:
        d.task(task, S.FINISHED)
    assert d.status is J.RUNNING
    finished = d.task(TASKS[-1], S.FINISHED)
    assert d.status is J.FINISHED
    assert d.told(finished)[-2:] == [
        JobStatusChanged(status=J.FINISHED),
        ShutdownCoordinator(job_status=J.FINISHED),
    ]
    assert not d.of(CompleteJob), "the result waits for the coordinator's statistics"
    d.now = 260
    end = d.send(_report(completed=[1, 2]))
    assert [type(e) for e in end if not isinstance(e, Traced)] == [
        StopDeployment,
        StopCoordinator,
        CompleteJob,
    ]
    result = d.result().result
    assert result.status is J.FINISHED and result.succeeded
    assert result.completed_checkpoint_ids == [1, 2] and result.duration_ms == 260
    assert [s for s, _ in result.status_history] == ["CREATED", "RUNNING", "FINISHED"]
    assert d.send(_report()) == [], "one result, once"


def test_a_failed_deployment_fails_the_job() -> None:
    d = Driver()
    d.send(StartJob())
    d.send(CoordinatorStarted())
    failed = d.send(DeploymentFailed(attempt=0, cause="OSError: disk"))
    assert d.status is J.FAILED
    assert d.scheduler.failure == "deployment failed: OSError: disk"
    assert ShutdownCoordinator(job_status=J.FAILED) in d.told(failed)


def test_without_a_coordinator_the_result_comes_at_once() -> None:
    d = Driver()
    d.send(StartJob())
    d.send(DeploymentFailed(attempt=0, cause="ValueError: bad"))
    result = d.result().result
    assert result.status is J.FAILED and result.completed_checkpoint_ids == []
    assert not d.told(), "there is no coordinator to tell"


def test_cancel_cancels_the_running_tasks_and_counts_unreachable_ones_as_cancelled() -> None:
    d = Driver()
    d.run()
    cancel = d.send(CancelJob())
    assert d.status is J.CANCELLING
    assert d.told_tasks(cancel) == [(t, CancelTask()) for t in TASKS]
    d.send(TasksUnreachable(tasks=(SOURCE0, SOURCE1), attempt=0))
    d.task(REDUCE0, S.CANCELED)
    assert d.status is J.CANCELLING, "one task still cancels"
    d.task(REDUCE1, S.CANCELED)
    assert d.status is J.CANCELED


def test_updates_of_an_earlier_attempt_are_stale() -> None:
    d = Driver(restart=FixedDelay(attempts=1, delay_ms=0))
    d.run()
    _fail_over(d)
    d.send(TimerFired(key=RestartTimer(0)))
    d.send(_retained())
    d.send(TasksDeployed(attempt=1))
    before = len(d.effects)
    d.send(TaskStateUpdate(task=REDUCE0, state=S.FAILED, message="late", attempt=0))
    assert d.effects[before:] == [] and d.status is J.RUNNING


# --- failover ---------------------------------------------------------------------------------


def test_a_task_failure_restarts_after_the_strategys_delay_from_the_latest_checkpoint() -> None:
    d = Driver(restart=FixedDelay(attempts=2, delay_ms=500))
    d.run()
    d.now = 1000
    failed = d.task(REDUCE0, S.FAILED, "boom")
    assert d.status is J.RESTARTING
    # as Flink 2.3: the pending checkpoints end as the coordinator suspends (issue #25)
    assert d.told(failed)[-2:] == [
        AbortPendingCheckpoints(reason=R.CHECKPOINT_COORDINATOR_SUSPEND),
        JobStatusChanged(status=J.RESTARTING),
    ]
    assert {task for task, _ in d.told_tasks(failed)} == {SOURCE0, SOURCE1, REDUCE1}
    assert not d.of(ScheduleTimer), "the delay starts once every task is down"
    for task in (SOURCE0, SOURCE1, REDUCE1):
        down = d.task(task, S.CANCELED)
    assert d.of(StopDeployment, down) and d.of(ScheduleTimer, down) == [
        ScheduleTimer(key=RestartTimer(0), due=1500)
    ]
    d.now = 1500
    assert d.told(d.send(TimerFired(key=RestartTimer(0)))) == [ListRetainedCheckpoints()]
    (load,) = d.of(LoadCheckpoint, d.send(_retained(7, 6)))
    assert load.checkpoint.checkpoint_id == 7 and load.attempt == 0
    assert d.status is J.RESTARTING, "loading runs off the scheduler"
    restarted = d.send(CheckpointLoaded(attempt=0, checkpoint=_checkpoint(7)))
    assert d.told(restarted) == [
        RestoredFromCheckpoint(checkpoint_id=7, external_path="/ckpt/chk-7")
    ]
    (deploy,) = d.of(DeployTasks, restarted)
    assert deploy.attempt == 1
    assert {
        t: s.restore.checkpoint_id for t, s in deploy.plan.tasks.items() if s.restore
    } == dict.fromkeys(TASKS, 7)
    d.send(TasksDeployed(attempt=1))
    assert d.status is J.RUNNING and d.scheduler.attempt == 1
    assert d.scheduler.failures == ["task reduce-2#0 failed: boom"]


def test_an_unusable_checkpoint_is_skipped_for_the_one_before_and_named() -> None:
    d = Driver(restart=FixedDelay(attempts=1, delay_ms=0), plan=_plan(retained=3))
    d.run()
    _fail_over(d)
    d.send(TimerFired(key=RestartTimer(0)))
    d.send(_retained(9, 8, 7))
    broken = d.send(CheckpointLoadFailed(attempt=0, checkpoint_id=9, error="_metadata fails"))
    assert [e.checkpoint.checkpoint_id for e in d.of(LoadCheckpoint, broken)] == [8]
    unfit = d.send(CheckpointLoaded(attempt=0, checkpoint=_checkpoint(8, unknown_operator=True)))
    assert [e.checkpoint.checkpoint_id for e in d.of(LoadCheckpoint, unfit)] == [7]
    d.send(CheckpointLoaded(attempt=0, checkpoint=_checkpoint(7)))
    skipped = [(e.fields["checkpoint_id"], e.level) for e in d.traced("checkpoint_unusable")]
    assert skipped == [(9, "warning"), (8, "warning")]
    assert "ghost" in d.traced("checkpoint_unusable")[1].fields["error"]
    (restarting,) = d.traced("job_restarting")
    assert restarting.fields == {"attempt": 1, "checkpoint_id": 7}


def test_no_usable_checkpoint_fails_the_job_naming_each() -> None:
    d = Driver(restart=FixedDelay(attempts=1, delay_ms=0))
    d.run()
    _fail_over(d)
    d.send(TimerFired(key=RestartTimer(0)))
    d.send(_retained(3))
    d.send(CheckpointLoadFailed(attempt=0, checkpoint_id=3, error="chk-3/_metadata is missing"))
    assert d.status is J.FAILED
    assert d.scheduler.failure == (
        "task reduce-2#0 failed: boom; no usable checkpoint to restore from: "
        "chk-3/_metadata is missing"
    )


def test_without_a_retained_checkpoint_the_restart_starts_afresh() -> None:
    d = Driver(restart=FixedDelay(attempts=1, delay_ms=0))
    d.run()
    _fail_over(d)
    d.send(TimerFired(key=RestartTimer(0)))
    restarted = d.send(_retained())
    (deploy,) = d.of(DeployTasks, restarted)
    assert deploy.attempt == 1 and all(s.restore is None for s in deploy.plan.tasks.values())
    assert not d.told(restarted)


def test_the_checkpoint_the_job_started_from_counts_until_newer_ones_fill_the_store() -> None:
    started = RestoredFromCheckpoint(checkpoint_id=4, external_path="/sp-4", is_savepoint=True)
    d = Driver(restart=FixedDelay(attempts=2, delay_ms=0), restored_from=started)
    d.run()
    _fail_over(d)
    d.send(TimerFired(key=RestartTimer(0)))
    (load,) = d.of(LoadCheckpoint, d.send(_retained()))
    assert load.checkpoint == started
    d.send(CheckpointLoaded(attempt=0, checkpoint=_checkpoint(4)))
    d.send(TasksDeployed(attempt=1))
    _fail_over(d)
    d.send(TimerFired(key=RestartTimer(1)))
    (load,) = d.of(LoadCheckpoint, d.send(_retained(5)))
    assert load.checkpoint.checkpoint_id == 5
    d.send(CheckpointLoadFailed(attempt=1, checkpoint_id=5, error="damaged"))
    assert d.status is J.FAILED, "num-retained 1: the savepoint was subsumed by checkpoint 5"


def test_the_strategys_no_fails_the_job_and_says_so() -> None:
    d = Driver(restart=FixedDelay(attempts=1, delay_ms=0))
    d.run()
    _fail_over(d)
    d.send(TimerFired(key=RestartTimer(0)))
    d.send(_retained())
    d.send(TasksDeployed(attempt=1))
    d.task(SOURCE1, S.FAILED, "again")
    assert d.status is J.FAILING
    for task in (SOURCE0, REDUCE0, REDUCE1):
        d.task(task, S.CANCELED)
    assert d.status is J.FAILED
    assert d.scheduler.failure == (
        "task source-1#1 failed: again; recovery is suppressed by fixed-delay, 1 attempt(s)"
    )
    assert d.scheduler.failures == ["task reduce-2#0 failed: boom", "task source-1#1 failed: again"]


def test_the_failure_managers_verdict_fails_over_with_the_storage_cause() -> None:
    d = Driver(restart=FixedDelay(attempts=1, delay_ms=0))
    d.run()
    d.send(
        CheckpointFailure(
            message="Exceeded checkpoint tolerable failure threshold.",
            reason=R.FINALIZE_CHECKPOINT_FAILURE,
            cause="checkpoint storage /c: writing the metadata of checkpoint 3 failed: "
            "No space left on device (errno 28, ENOSPC)",
        )
    )
    assert d.status is J.RESTARTING
    assert d.scheduler.failures == [
        "Exceeded checkpoint tolerable failure threshold. (last failure: "
        "FINALIZE_CHECKPOINT_FAILURE: checkpoint storage /c: writing the metadata of "
        "checkpoint 3 failed: No space left on device (errno 28, ENOSPC))"
    ]


def test_a_load_answered_after_a_cancel_is_ignored() -> None:
    d = Driver(restart=FixedDelay(attempts=1, delay_ms=0))
    d.run()
    _fail_over(d)
    d.send(TimerFired(key=RestartTimer(0)))
    d.send(_retained(2))
    d.send(CancelJob())
    assert d.status is J.CANCELED
    assert d.send(CheckpointLoaded(attempt=0, checkpoint=_checkpoint(2))) == []


def test_a_crashed_coordinator_fails_the_job_and_the_result_has_no_statistics() -> None:
    d = Driver(restart=FixedDelay(attempts=3, delay_ms=0))
    d.run()
    crashed = d.send(CoordinatorCrashed(cause="checkpoint coordinator crashed: KeyError: 1"))
    assert d.status is J.FAILING and not d.told(crashed)
    d.all_tasks(S.CANCELED)
    result = d.result().result
    assert (
        result.status is J.FAILED
        and result.failure == "checkpoint coordinator crashed: KeyError: 1"
    )


# --- savepoints ---------------------------------------------------------------------------------


def test_savepoints_have_typed_request_ids_and_a_stop_with_savepoint_stops_the_tasks() -> None:
    requests = [
        SavepointRequest(at_ms=100, directory="/sp"),
        SavepointRequest(at_ms=200, stop=True),
    ]
    d = Driver(savepoint_requests=requests)
    d.run()
    assert d.of(ScheduleTimer) == [
        ScheduleTimer(key=SavepointTimer(0), due=100),
        ScheduleTimer(key=SavepointTimer(1), due=200),
    ]
    d.now = 100
    trigger = d.told(d.send(TimerFired(key=SavepointTimer(0))))
    assert trigger == [
        TriggerCheckpointRequest(
            request_id=SavepointRequestId(0),
            snapshot_type=SnapshotType.SAVEPOINT,
            target_location="/sp",
        )
    ]
    d.send(
        RequestOutcome(request_id=SavepointRequestId(0), path="/sp/savepoint-1", checkpoint_id=1)
    )
    d.now = 200
    (halt, stop) = d.told(d.send(TimerFired(key=SavepointTimer(1))))
    assert halt == StopCheckpointScheduler(), "no periodic checkpoint from the stop on (Flink)"
    assert isinstance(stop, TriggerCheckpointRequest)
    assert stop.request_id == SavepointRequestId(1)
    assert stop.snapshot_type is SnapshotType.SYNC_SAVEPOINT
    stopped = d.send(
        RequestOutcome(request_id=SavepointRequestId(1), path="/sp-2", checkpoint_id=2)
    )
    sent = d.told_tasks(stopped)
    assert {m for _, m in sent} == {StopTask()} and {t for t, _ in sent} == set(TASKS)
    assert d.scheduler.savepoints == ["/sp/savepoint-1", "/sp-2"]


def test_a_failed_stop_with_savepoint_starts_the_checkpoint_scheduler_again() -> None:
    """Flink's stop-with-savepoint stops the periodic checkpoints first; when the savepoint
    fails and the job runs on, they start again."""
    d = Driver(savepoint_requests=[SavepointRequest(at_ms=100, stop=True)])
    d.run()
    d.now = 100
    told = d.told(d.send(TimerFired(key=SavepointTimer(0))))
    assert told[0] == StopCheckpointScheduler()
    failed = d.send(RequestOutcome(request_id=SavepointRequestId(0), failure="TASK_FAILURE"))
    assert d.told(failed) == [StartCheckpointScheduler()]
    assert not d.told_tasks(failed), "the tasks run on"


def test_a_savepoint_after_a_record_count_and_a_failed_one() -> None:
    d = Driver(savepoint_requests=[SavepointRequest(after_records=1000)])
    d.send(StartJob())
    (deploy,) = d.of(DeployTasks, d.send(CoordinatorStarted()))
    assert deploy.report_records_every == 125, "a quarter of the count, per source"
    d.send(TasksDeployed(attempt=0))
    assert not d.told(d.send(SourceProgress(task=SOURCE0, records=600)))
    requested = d.told(d.send(SourceProgress(task=SOURCE1, records=400)))
    assert [r.request_id for r in requested if isinstance(r, TriggerCheckpointRequest)] == [
        SavepointRequestId(0)
    ]
    assert not d.told(d.send(SourceProgress(task=SOURCE1, records=900))), "once"
    d.send(RequestOutcome(request_id=SavepointRequestId(0), failure="IO_EXCEPTION: disk"))
    assert d.scheduler.failures == ["savepoint failed: IO_EXCEPTION: disk"]
    assert d.scheduler.savepoints == []


def test_a_savepoint_due_while_restarting_fails_instead_of_vanishing() -> None:
    d = Driver(
        restart=FixedDelay(attempts=1, delay_ms=0), savepoint_requests=[SavepointRequest(at_ms=5)]
    )
    d.run()
    _fail_over(d)
    assert not d.told(d.send(TimerFired(key=SavepointTimer(0))))
    assert d.scheduler.failures[-1] == "savepoint failed: the job was RESTARTING, not RUNNING"


def test_requests_from_outside_are_answered_by_token() -> None:
    d = Driver()
    not_yet = d.send(SnapshotRequested(kind="checkpoint", reply=1))
    assert (
        d.of(ReplyToSnapshotRequest, not_yet)[0].outcome.failure
        == "the job is CREATED, not RUNNING"
    )
    d.run()
    (full,) = d.told(d.send(SnapshotRequested(kind="full_checkpoint", reply=2)))
    assert full == TriggerCheckpointRequest(
        request_id=CheckpointRequestId(1), snapshot_type=SnapshotType.FULL_CHECKPOINT
    )
    (savepoint,) = d.told(d.send(SnapshotRequested(kind="savepoint", directory="/x", reply=3)))
    assert isinstance(savepoint, TriggerCheckpointRequest)
    assert savepoint.request_id == SavepointRequestId(0)
    answered = d.send(RequestOutcome(request_id=CheckpointRequestId(1), checkpoint_id=6))
    (reply,) = d.of(ReplyToSnapshotRequest, answered)
    assert reply.reply == 2 and reply.outcome.checkpoint_id == 6
    d.send(CancelJob())
    d.all_tasks(S.CANCELED)
    end = d.send(_report())
    (left,) = d.of(ReplyToSnapshotRequest, end)
    assert left.reply == 3 and left.outcome.failure == "the job ended (CANCELED)"


# --- the result ----------------------------------------------------------------------------------


def test_the_result_holds_what_collect_sinks_committed_up_to_the_last_completed_checkpoint() -> (
    None
):
    d = Driver()
    d.run()
    for txn, records in ((1, [1, 2]), (2, [3])):
        d.send(
            SinkResults(
                sink="out", task=REDUCE0, records=[], buffers=(records,), txn=txn, precommit=True
            )
        )
    d.send(SinkResults(sink="out", task=REDUCE0, records=[], txn=1))
    d.all_tasks(S.FINISHED)
    d.send(_report(completed=[1]))
    assert d.result().result.output == {"out": [1, 2]}


def test_a_crash_of_the_jobmaster_gives_a_failed_result_once() -> None:
    d = Driver()
    d.run()
    d.now = 40
    result = d.scheduler.crashed("job master crashed: TypeError: x", d.now)
    assert result.status is J.FAILED and result.failure == "job master crashed: TypeError: x"
    assert d.scheduler.crashed("again", 50) is result


@pytest.mark.parametrize("status", [J.RUNNING, J.RESTARTING])
def test_cancelled_while_running_or_restarting(status: J) -> None:
    d = Driver(restart=FixedDelay(attempts=1, delay_ms=0))
    d.run()
    if status is J.RESTARTING:
        _fail_over(d)
    assert d.status is status
    d.send(CancelJob())
    if status is J.RUNNING:
        d.all_tasks(S.CANCELED)
    assert d.status is J.CANCELED
