"""CheckpointCoordinator behaviours the conformance scenarios do not reach: scheduling details,
the Flink 1.7 trigger semantics, storage failures, FLIP-147 plans, savepoints, retention."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TypeVar

import pytest

from runtime.checkpoint import (
    CheckpointProperties,
    CompletedCheckpoint,
    ExternalizedCheckpointRetention,
    SnapshotType,
    StateHandle,
    TaskId,
    TaskStateSnapshot,
)
from runtime.clock import TimerQueue
from runtime.coordinator import (
    CheckpointCoordinator,
    CheckpointFailureManager,
    CheckpointPlanCalculator,
    CheckpointRequestDecider,
    CheckpointTriggerRequest,
    CompletedCheckpointStore,
    CoordinatorConfig,
    PeriodicTrigger,
)
from runtime.effects import (
    CheckpointCompleted,
    CoordinatorEffect,
    DiscardState,
    FailJob,
    RequestCompleted,
    RequestDeclined,
    RequestFailed,
    ScheduleTimer,
    Send,
)
from runtime.messages import (
    AcknowledgeCheckpoint,
    CoordinatorMessage,
    DeclineCheckpoint,
    ExecutionStateChanged,
    FailUnacknowledgedCheckpoints,
    JobStatusChanged,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    ShutdownCoordinator,
    StartCheckpointScheduler,
    StopCheckpointScheduler,
    TimerFired,
    TriggerCheckpoint,
    TriggerCheckpointRequest,
)
from runtime.reasons import CheckpointFailureReason as R
from runtime.status import ExecutionState, JobStatus
from runtime.storage import InMemoryCheckpointStorage, handle_with_storage

E = TypeVar("E", bound=CoordinatorEffect)
M = TypeVar("M")
A, B, C = TaskId("A"), TaskId("B"), TaskId("C")


class Driver:
    """A coordinator with a manual clock and a timer queue; collects every effect."""

    def __init__(
        self, config: CoordinatorConfig, *, tasks: Sequence[TaskId] = (A,), **kw: object
    ) -> None:
        plan = kw.pop("plan", None) or CheckpointPlanCalculator(
            trigger=tasks, ack=tasks, commit=tasks, initial_state=ExecutionState.RUNNING
        )
        assert isinstance(plan, CheckpointPlanCalculator)
        storage = kw.pop("storage", None)
        self.storage = storage if storage is not None else InMemoryCheckpointStorage()
        self.coordinator = CheckpointCoordinator(config, plan, **kw)  # type: ignore[arg-type]
        self.now = 0
        self.timers = TimerQueue()
        self.effects: list[CoordinatorEffect] = []
        self.requests = 0

    def send(self, msg: CoordinatorMessage) -> list[CoordinatorEffect]:
        # the storage's work is done at once (handle_with_storage)
        out = handle_with_storage(self.coordinator, msg, self.now, self.storage)  # type: ignore[arg-type]
        for effect in out:
            if isinstance(effect, ScheduleTimer):
                self.timers.schedule(effect.key, effect.due)
            elif type(effect).__name__ == "CancelTimer":
                self.timers.cancel(effect.key)  # type: ignore[union-attr]
        self.effects.extend(out)
        return out

    def request(
        self, snapshot: SnapshotType = SnapshotType.CHECKPOINT, periodic: bool = False
    ) -> int:
        self.requests += 1
        self.send(
            TriggerCheckpointRequest(
                request_id=self.requests, snapshot_type=snapshot, periodic=periodic
            )
        )
        return self.requests

    def ack(
        self, task: TaskId, checkpoint_id: int, handle: str | None = None
    ) -> list[CoordinatorEffect]:
        state = TaskStateSnapshot(handles=(StateHandle(key=handle, size=1),)) if handle else None
        return self.send(AcknowledgeCheckpoint(task=task, checkpoint_id=checkpoint_id, state=state))

    def advance_to(self, when: int) -> None:
        while (due := self.timers.pop_due(when)) is not None:
            key, at = due
            self.now = max(self.now, at)
            self.send(TimerFired(key=key))
        self.now = when

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.effects if isinstance(e, kind)]

    def sent(self, kind: type[M]) -> list[tuple[TaskId, M]]:
        """The messages of ``kind`` sent to tasks, with their task."""
        return [
            (e.to, e.message)
            for e in self.of(Send)
            if isinstance(e.to, TaskId) and isinstance(e.message, kind)
        ]

    def triggers(self) -> list[tuple[int, int]]:
        """(checkpoint id, time) of every checkpoint triggered (first task's trigger)."""
        seen: dict[int, int] = {}
        for _, trigger in self.sent(TriggerCheckpoint):
            seen.setdefault(trigger.checkpoint_id, trigger.timestamp)
        return sorted(seen.items())

    def result(self, request_id: int) -> str:
        for e in reversed(self.effects):
            if isinstance(e, RequestCompleted) and e.request_id == request_id:
                return f"ok {e.checkpoint.checkpoint_id}"
            if isinstance(e, RequestFailed) and e.request_id == request_id:
                return f"failed {e.reason.name}"
            if isinstance(e, RequestDeclined) and e.request_id == request_id:
                return f"declined {e.reason.name}"
        return "waiting"


# --- periodic scheduling ---------------------------------------------------------------------


def test_initial_delay_is_drawn_from_min_pause_to_interval_and_replays_by_seed() -> None:
    delays = []
    for seed in range(40):
        d = Driver(CoordinatorConfig(interval=100, min_pause=30), seed=seed)
        d.send(JobStatusChanged(status=JobStatus.RUNNING))
        (timer,) = d.of(ScheduleTimer)
        delays.append(timer.due)
        again = Driver(CoordinatorConfig(interval=100, min_pause=30), seed=seed)
        again.send(JobStatusChanged(status=JobStatus.RUNNING))
        assert again.of(ScheduleTimer)[0].due == timer.due
    assert all(30 <= d <= 100 for d in delays)
    assert len(set(delays)) > 10, "the delay is random, not fixed"


def test_periodic_trigger_runs_at_a_fixed_rate_whatever_checkpoints_take() -> None:
    d = Driver(CoordinatorConfig(interval=100, initial_delay=50, max_concurrent=5))
    d.send(JobStatusChanged(status=JobStatus.RUNNING))
    d.advance_to(60)
    d.ack(A, 1)
    d.advance_to(370)  # checkpoints 2, 3, 4 stay pending
    assert d.triggers() == [(1, 50), (2, 150), (3, 250), (4, 350)]


def test_a_late_periodic_timer_skips_the_missed_periods_instead_of_firing_them_at_once() -> None:
    """A trigger timer that fires long after it was due (a paused process, a jump of virtual
    time) schedules the next one a period ahead of now, not at now again for every missed
    period: one trigger now, then the fixed rate resumes on the original grid."""
    d = Driver(CoordinatorConfig(interval=100, initial_delay=50, max_concurrent=100))
    d.send(JobStatusChanged(status=JobStatus.RUNNING))
    d.now = 100_050  # the timer due at 50 fires a thousand periods late
    d.send(TimerFired(key=d.timers.pop_due(50)[0]))  # type: ignore[index]
    periodic = [e for e in d.of(ScheduleTimer) if isinstance(e.key, PeriodicTrigger)]
    assert periodic[-1].due == 100_150
    assert [t for _, t in d.triggers()] == [100_050]


def test_no_periodic_checkpoint_after_the_final_one_of_every_running_task() -> None:
    """FLIP-147: once every running task acknowledged a completed checkpoint taken after its
    data ended (``task_finished``), the tasks finish on its notification; a periodic trigger
    queued behind that checkpoint is dropped instead of triggering tasks that are closing
    (which would decline it, or see it aborted as the job finishes). A manual checkpoint waits
    for the tasks' new states: they finished (it fails, nothing is left to checkpoint), or
    they restarted (it runs)."""
    d = Driver(CoordinatorConfig(interval=10, initial_delay=10), tasks=(A, B))
    d.send(JobStatusChanged(status=JobStatus.RUNNING))
    d.advance_to(25)  # checkpoint 1 pending at 10; the trigger at 20 is queued behind it
    assert d.triggers() == [(1, 10)]
    finished = TaskStateSnapshot(task_finished=True)
    d.send(AcknowledgeCheckpoint(task=A, checkpoint_id=1, state=finished))
    d.send(AcknowledgeCheckpoint(task=B, checkpoint_id=1, state=finished))
    d.advance_to(60)
    assert d.triggers() == [(1, 10)], "no checkpoint over tasks that are finishing"
    assert d.coordinator.stats.failed == 0
    manual = d.request()
    assert d.triggers() == [(1, 10)] and d.result(manual) == "waiting"
    d.send(ExecutionStateChanged(task=A, state=ExecutionState.FINISHED))
    assert d.result(manual) == "waiting", "B is still finishing"
    d.send(ExecutionStateChanged(task=B, state=ExecutionState.FINISHED))
    assert d.result(manual) == "failed NOT_ALL_REQUIRED_TASKS_RUNNING"
    assert d.triggers() == [(1, 10)]
    d.advance_to(100)
    assert d.triggers() == [(1, 10)] and d.coordinator.stats.failed == 1  # the manual one only
    # a failover: every task runs again, as a new attempt, and is no longer finishing
    again = Driver(CoordinatorConfig(interval=10, initial_delay=10), tasks=(A, B))
    again.send(JobStatusChanged(status=JobStatus.RUNNING))
    again.advance_to(25)
    again.send(AcknowledgeCheckpoint(task=A, checkpoint_id=1, state=finished))
    again.send(AcknowledgeCheckpoint(task=B, checkpoint_id=1, state=finished))
    manual = again.request()
    for task in (A, B):
        again.send(ExecutionStateChanged(task=task, state=ExecutionState.CANCELING))
    assert again.result(manual) == "failed NOT_ALL_REQUIRED_TASKS_RUNNING"
    for task in (A, B):
        again.send(ExecutionStateChanged(task=task, state=ExecutionState.RUNNING, attempt=1))
    again.advance_to(100)
    assert again.triggers() == [(1, 10), (2, 30)], "a restarted task is no longer finishing"


def test_interval_below_min_pause_is_raised_to_the_min_pause() -> None:
    d = Driver(CoordinatorConfig(interval=20, min_pause=80))  # initial delay in [80, 80]
    assert d.coordinator.base_interval == 80
    d.send(JobStatusChanged(status=JobStatus.RUNNING))
    d.advance_to(100)
    d.ack(A, 1)  # completes at 100; the tick at 160 falls inside the pause
    d.advance_to(400)
    starts = [t for _, t in d.triggers()]
    assert starts[0] == 80
    assert all(b - a >= 80 for a, b in itertools.pairwise(starts))


def test_a_periodic_request_inside_min_pause_fails_and_reschedules_the_trigger() -> None:
    d = Driver(CoordinatorConfig(interval=1000, min_pause=100, initial_delay=1000))
    d.send(JobStatusChanged(status=JobStatus.RUNNING))
    d.now = 150
    first = d.request()
    d.ack(A, 1)  # completion at 150
    d.now = 170
    periodic = d.request(periodic=True)
    assert d.result(first) == "ok 1"
    assert d.result(periodic) == "failed MINIMUM_TIME_BETWEEN_CHECKPOINTS"
    rescheduled = [e for e in d.of(ScheduleTimer) if isinstance(e.key, PeriodicTrigger)][-1]
    assert rescheduled.due == 250  # the remaining 80 ms of the pause


def test_job_status_drives_the_scheduler_and_suspension_aborts_pending_and_queued() -> None:
    d = Driver(CoordinatorConfig(interval=100, initial_delay=10))
    d.send(JobStatusChanged(status=JobStatus.RUNNING))
    assert d.coordinator.periodic_scheduling
    first = d.request()
    queued = d.request()
    d.send(JobStatusChanged(status=JobStatus.RESTARTING))
    assert not d.coordinator.periodic_scheduling
    assert d.result(first) == "failed CHECKPOINT_COORDINATOR_SUSPEND"
    assert d.result(queued) == "failed CHECKPOINT_COORDINATOR_SUSPEND"
    assert not any(isinstance(k, PeriodicTrigger) for k in d.timers.scheduled())
    d.send(JobStatusChanged(status=JobStatus.RUNNING))
    assert any(isinstance(k, PeriodicTrigger) for k in d.timers.scheduled())


def test_without_an_interval_job_status_changes_touch_nothing() -> None:
    d = Driver(CoordinatorConfig(interval=None))
    first = d.request()
    d.send(JobStatusChanged(status=JobStatus.FAILING))
    assert d.result(first) == "waiting"
    assert d.coordinator.pending_ids == [1]


# --- trigger pipeline ------------------------------------------------------------------------


def test_not_all_required_tasks_running_fails_before_an_id_is_taken() -> None:
    d = Driver(CoordinatorConfig(), tasks=(A, B))
    d.send(ExecutionStateChanged(task=B, state=ExecutionState.DEPLOYING))
    failed = d.request()
    assert d.result(failed) == "failed NOT_ALL_REQUIRED_TASKS_RUNNING"
    assert d.coordinator.stats.failed == 1 and d.coordinator.stats.in_progress == 0
    d.send(ExecutionStateChanged(task=B, state=ExecutionState.RUNNING))
    d.request()
    assert d.triggers()[0][0] == 1


class FailingStorage:
    name = "failing"

    def __init__(self, *, init: bool = False, finalize: bool = False) -> None:
        self.fail_init, self.fail_finalize = init, finalize

    def initialize_location(
        self, checkpoint_id: int, props: CheckpointProperties, target: str | None
    ) -> str | None:
        if self.fail_init:
            raise OSError("disk full")
        return None

    def finalize(self, checkpoint: CompletedCheckpoint) -> str | None:
        if self.fail_finalize:
            raise OSError("cannot write _metadata")
        return "/ckpt/chk-1"


def test_storage_init_failure_is_a_counted_io_exception() -> None:
    d = Driver(CoordinatorConfig(tolerable_failures=0), storage=FailingStorage(init=True))
    assert d.result(d.request()) == "failed IO_EXCEPTION"
    assert [e.reason for e in d.of(FailJob)] == [R.IO_EXCEPTION]


def test_finalize_failure_aborts_with_finalize_checkpoint_failure() -> None:
    d = Driver(CoordinatorConfig(tolerable_failures=5), storage=FailingStorage(finalize=True))
    request = d.request()
    d.ack(A, 1, "s1")
    assert d.result(request) == "failed FINALIZE_CHECKPOINT_FAILURE"
    assert d.coordinator.store.checkpoints == []
    assert [h.key for e in d.of(DiscardState) for h in e.handles] == ["s1"]
    assert [m.checkpoint_id for _, m in d.sent(NotifyCheckpointAborted)] == [1]


def test_external_path_comes_from_the_storage() -> None:
    d = Driver(CoordinatorConfig(), storage=FailingStorage())
    d.request()
    d.ack(A, 1)
    (completed,) = d.of(CheckpointCompleted)
    assert completed.checkpoint.external_path == "/ckpt/chk-1"


# --- FLIP-147 plans ---------------------------------------------------------------------------


def _pipeline(**kw: bool) -> CheckpointPlanCalculator:
    source, map_, sink = TaskId("source"), TaskId("map"), TaskId("sink")
    return CheckpointPlanCalculator(
        trigger=[source],
        ack=[source, map_, sink],
        commit=[source, map_, sink],
        predecessors={map_: [source], sink: [map_]},
        initial_state=ExecutionState.RUNNING,
        **kw,
    )


def test_after_a_source_finishes_its_running_successor_is_triggered() -> None:
    d = Driver(CoordinatorConfig(), plan=_pipeline())
    d.send(ExecutionStateChanged(task=TaskId("source"), state=ExecutionState.FINISHED))
    d.request()
    assert [task for task, _ in d.sent(TriggerCheckpoint)] == [TaskId("map")]
    d.ack(TaskId("map"), 1)
    d.ack(TaskId("sink"), 1)
    assert [task.vertex for task, _ in d.sent(NotifyCheckpointComplete)] == ["map", "sink"]


def test_no_checkpoint_triggers_a_finishing_source_its_successor_is_triggered_once_it_finished() -> (
    None
):
    """FLIP-147: the source took checkpoint 1 after its data ended; once 1 completed it
    finishes on its own, and a trigger sent to it could reach it closed (declined,
    TASK_NOT_READY). The next checkpoint waits until the JobMaster reports it FINISHED, then
    the plan triggers its running successor; map and sink, still running, are not finishing."""
    d = Driver(CoordinatorConfig(interval=10, initial_delay=10), plan=_pipeline())
    d.send(JobStatusChanged(status=JobStatus.RUNNING))
    d.advance_to(15)
    source, map_, sink = TaskId("source"), TaskId("map"), TaskId("sink")
    d.send(
        AcknowledgeCheckpoint(
            task=source, checkpoint_id=1, state=TaskStateSnapshot(task_finished=True)
        )
    )
    d.ack(map_, 1)
    d.ack(sink, 1)
    assert d.result(-1) == "ok 1"
    d.advance_to(55)  # periodic requests queue up: the plan would trigger the finishing source
    assert [task for task, _ in d.sent(TriggerCheckpoint)] == [source]
    assert d.coordinator.queued_requests > 0 and d.coordinator.stats.failed == 0
    d.send(ExecutionStateChanged(task=source, state=ExecutionState.FINISHED))
    assert [(task, m.checkpoint_id) for task, m in d.sent(TriggerCheckpoint)] == [
        (source, 1),
        (map_, 2),
    ]
    d.ack(map_, 2)
    d.ack(sink, 2)
    assert d.coordinator.completed_ids == [1, 2] and d.coordinator.stats.failed == 0


def test_with_checkpoints_after_finish_disabled_a_finished_task_fails_the_plan() -> None:
    d = Driver(CoordinatorConfig(), plan=_pipeline(allow_checkpoints_after_tasks_finish=False))
    d.send(ExecutionStateChanged(task=TaskId("source"), state=ExecutionState.FINISHED))
    assert d.result(d.request()) == "failed NOT_ALL_REQUIRED_TASKS_RUNNING"


# --- savepoints, subsumption, notifications -----------------------------------------------------


def test_sync_savepoint_subsumes_pending_notifies_and_stays_out_of_the_store() -> None:
    d = Driver(CoordinatorConfig(max_concurrent=2))
    checkpoint = d.request()
    savepoint = d.request(SnapshotType.SYNC_SAVEPOINT)
    d.ack(A, 2, "sp")
    assert d.result(savepoint) == "ok 2"
    assert d.result(checkpoint) == "failed CHECKPOINT_SUBSUMED"
    assert [m.checkpoint_id for _, m in d.sent(NotifyCheckpointComplete)] == [2]
    assert d.coordinator.store.checkpoints == []


def test_stop_with_savepoint_stops_periodic_checkpoints_and_nothing_is_triggered_after_it() -> None:
    """Flink's stop-with-savepoint: the scheduler stops (a pending periodic checkpoint is
    aborted, CHECKPOINT_COORDINATOR_SUSPEND), the synchronous savepoint runs, its tasks stop;
    no checkpoint is triggered after it (a manual one waits for the tasks' new states).
    When a stop-with-savepoint fails the scheduler starts again."""
    d = Driver(CoordinatorConfig(interval=10, initial_delay=10), tasks=(A, B))
    d.send(JobStatusChanged(status=JobStatus.RUNNING))
    d.advance_to(15)
    assert d.triggers() == [(1, 10)]
    d.send(StopCheckpointScheduler())
    assert d.result(-1) == "failed CHECKPOINT_COORDINATOR_SUSPEND"
    savepoint = d.request(SnapshotType.SYNC_SAVEPOINT)
    d.ack(A, 2, "a")
    d.ack(B, 2, "b")
    assert d.result(savepoint) == "ok 2"
    manual = d.request()
    d.advance_to(200)
    assert d.triggers() == [(1, 10), (2, 15)] and d.result(manual) == "waiting"
    d.send(ExecutionStateChanged(task=A, state=ExecutionState.FINISHED))
    d.send(ExecutionStateChanged(task=B, state=ExecutionState.FINISHED))
    assert d.triggers() == [(1, 10), (2, 15)]
    failed = Driver(CoordinatorConfig(interval=10, initial_delay=10), tasks=(A, B))
    failed.send(JobStatusChanged(status=JobStatus.RUNNING))
    failed.send(StopCheckpointScheduler())
    failed.advance_to(100)
    assert failed.triggers() == []
    failed.send(StartCheckpointScheduler())
    failed.advance_to(150)
    assert failed.triggers(), "periodic checkpoints run again"


def test_a_declined_sync_savepoint_fails_the_job_whatever_the_tolerance() -> None:
    d = Driver(CoordinatorConfig(tolerable_failures=100))
    d.request(SnapshotType.SYNC_SAVEPOINT)
    d.send(DeclineCheckpoint(task=A, checkpoint_id=1, reason=R.CHECKPOINT_DECLINED_TASK_NOT_READY))
    assert len(d.of(FailJob)) == 1


def test_savepoints_are_forced_unless_unaligned_checkpoints_are_enabled() -> None:
    d = Driver(CoordinatorConfig(max_concurrent=1))
    d.request()
    d.request(SnapshotType.SAVEPOINT)
    assert d.coordinator.pending_ids == [1, 2]  # bypassed max concurrent
    u = Driver(CoordinatorConfig(max_concurrent=1, unaligned=True))
    u.request()
    u.request(SnapshotType.SAVEPOINT)
    assert u.coordinator.pending_ids == [1] and u.coordinator.queued_requests == 1


def test_savepoint_barriers_are_aligned_and_never_time_out() -> None:
    d = Driver(CoordinatorConfig(unaligned=True, aligned_checkpoint_timeout=50, max_concurrent=1))
    d.request(SnapshotType.SAVEPOINT)
    options = d.sent(TriggerCheckpoint)[0][1].options
    assert not options.is_unaligned and not options.is_timeoutable
    d2 = Driver(CoordinatorConfig(unaligned=True, aligned_checkpoint_timeout=50))
    d2.request()
    assert d2.sent(TriggerCheckpoint)[0][1].options.is_timeoutable


def test_notifications_carry_last_subsumed_and_latest_completed_ids() -> None:
    d = Driver(CoordinatorConfig(max_concurrent=2, tolerable_failures=5))
    d.request()
    d.ack(A, 1)
    d.request()
    d.ack(A, 2)
    assert [m.last_subsumed_checkpoint_id for _, m in d.sent(NotifyCheckpointComplete)] == [-1, 1]
    d.request()
    d.send(DeclineCheckpoint(task=A, checkpoint_id=3))
    assert [m.latest_completed_checkpoint_id for _, m in d.sent(NotifyCheckpointAborted)] == [2]


def test_task_failure_aborts_only_checkpoints_the_attempt_has_not_acknowledged() -> None:
    d = Driver(CoordinatorConfig(max_concurrent=3), tasks=(A, B))
    for _ in range(2):
        d.request()
    d.ack(A, 1)
    d.send(FailUnacknowledgedCheckpoints(task=A))
    assert d.coordinator.pending_ids == [1]
    assert d.result(2) == "failed TASK_FAILURE"
    assert d.of(FailJob) == []  # TASK_FAILURE is not counted


def test_late_ack_after_expiry_is_recognised_and_its_state_discarded() -> None:
    d = Driver(CoordinatorConfig(timeout=100, tolerable_failures=5))
    d.request()
    d.advance_to(100)
    assert d.result(1) == "failed CHECKPOINT_EXPIRED"
    assert d.coordinator.pending_ids == []
    d.ack(A, 1, "late")
    assert [h.key for e in d.of(DiscardState) for h in e.handles] == ["late"]
    assert d.result(1) == "failed CHECKPOINT_EXPIRED"  # the late ack completes nothing


def test_acks_after_shutdown_are_ignored_and_their_state_left_alone() -> None:
    d = Driver(CoordinatorConfig())
    d.request()
    d.send(ShutdownCoordinator(job_status=JobStatus.CANCELED))
    assert d.result(1) == "failed CHECKPOINT_COORDINATOR_SHUTDOWN"
    before = len(d.effects)
    d.ack(A, 1, "after")
    assert d.effects[before:] == []


@pytest.mark.parametrize(
    ("retention", "status", "discarded"),
    [
        (ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS, JobStatus.CANCELED, True),
        (ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION, JobStatus.CANCELED, False),
        (ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION, JobStatus.CANCELED, True),
        (ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION, JobStatus.FAILED, False),
        (ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION, JobStatus.FINISHED, True),
    ],
)
def test_shutdown_discards_retained_checkpoints_per_retention_policy(
    retention: ExternalizedCheckpointRetention, status: JobStatus, discarded: bool
) -> None:
    d = Driver(CoordinatorConfig(retention=retention))
    d.request()
    d.ack(A, 1, "kept?")
    d.send(ShutdownCoordinator(job_status=status))
    assert bool(d.of(DiscardState)) is discarded


# --- Flink 1.7 trigger semantics ----------------------------------------------------------------


def _legacy(**kw: object) -> Driver:
    config = CoordinatorConfig(trigger_semantics="flink-1.7", **kw)  # type: ignore[arg-type]
    return Driver(config)


def test_legacy_declines_when_the_coordinator_is_shut_down() -> None:
    d = _legacy()
    d.send(ShutdownCoordinator())
    assert d.result(d.request()) == "declined COORDINATOR_SHUTDOWN"


def test_legacy_declines_periodic_requests_when_the_scheduler_is_off() -> None:
    d = _legacy(interval=100)
    assert d.result(d.request(periodic=True)) == "declined PERIODIC_SCHEDULER_SHUTDOWN"


def test_legacy_too_many_concurrent_queues_one_request_and_cancels_the_periodic_trigger() -> None:
    d = _legacy(interval=100, initial_delay=100)
    d.send(JobStatusChanged(status=JobStatus.RUNNING))
    d.request()
    assert d.result(d.request()) == "declined TOO_MANY_CONCURRENT_CHECKPOINTS"
    assert not any(isinstance(k, PeriodicTrigger) for k in d.timers.scheduled())
    assert d.result(d.request()) == "declined ALREADY_QUEUED"
    d.now = 40
    d.ack(A, 1)  # a slot frees: the queued request runs from the periodic trigger, now
    assert [k for k in d.timers.scheduled() if isinstance(k, PeriodicTrigger)]
    d.advance_to(40)
    assert d.triggers() == [(1, 0), (2, 40)]


def test_legacy_min_pause_declines_and_reschedules_after_the_remaining_pause() -> None:
    d = _legacy(interval=1000, min_pause=100, initial_delay=1000)
    d.send(JobStatusChanged(status=JobStatus.RUNNING))
    d.now = 10
    d.request()
    d.ack(A, 1)
    d.now = 30
    assert d.result(d.request()) == "declined MINIMUM_TIME_BETWEEN_CHECKPOINTS"
    due = [e.due for e in d.of(ScheduleTimer) if isinstance(e.key, PeriodicTrigger)][-1]
    assert due == 110


def test_legacy_declines_when_a_task_is_not_running_or_finished() -> None:
    d = _legacy()
    d.send(ExecutionStateChanged(task=A, state=ExecutionState.FINISHED))
    assert d.result(d.request()) == "declined NOT_ALL_REQUIRED_TASKS_RUNNING"


def test_legacy_storage_failure_is_declined_with_exception() -> None:
    config = CoordinatorConfig(trigger_semantics="flink-1.7")
    d = Driver(config, storage=FailingStorage(init=True))
    assert d.result(d.request()) == "declined EXCEPTION"


def test_legacy_savepoints_are_forced_past_the_limits() -> None:
    d = _legacy(max_concurrent=1)
    d.request()
    d.request(SnapshotType.SAVEPOINT)
    assert d.coordinator.pending_ids == [1, 2]


def test_unknown_trigger_semantics_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"flink-1\.7"):
        Driver(CoordinatorConfig(trigger_semantics="flink-1.8"))


# --- decider, failure manager, store -------------------------------------------------------------


def _req(
    request_id: int,
    *,
    periodic: bool = False,
    savepoint: bool = False,
    forced: bool = False,
    ts: int = 0,
) -> CheckpointTriggerRequest:
    props = (
        CheckpointProperties.for_savepoint(forced=True)
        if savepoint
        else CheckpointProperties(forced=forced)
    )
    return CheckpointTriggerRequest(
        request_id=request_id, props=props, periodic=periodic, timestamp=ts
    )


def test_decider_orders_savepoints_forced_manual_periodic_then_age() -> None:
    decider = CheckpointRequestDecider(max_concurrent=1, min_pause=0)
    for request in (
        _req(1, periodic=True, ts=1),
        _req(2, ts=5),
        _req(3, ts=2),
        _req(4, forced=True, ts=9),
        _req(5, savepoint=True, ts=9),
    ):
        decider.submit(request, is_triggering=True, pending=1, last_completion=0, now=0)
    assert [r.request_id for r in decider.queued] == [5, 4, 3, 2, 1]


def test_decider_drops_the_new_request_when_only_manual_ones_are_queued() -> None:
    decider = CheckpointRequestDecider(max_concurrent=1, min_pause=0, max_queued=2)
    for i in (1, 2):
        decider.submit(_req(i), is_triggering=True, pending=1, last_completion=0, now=0)
    decision = decider.submit(_req(3), is_triggering=True, pending=1, last_completion=0, now=0)
    assert [(r.request_id, reason) for r, reason in decision.failed] == [
        (3, R.TOO_MANY_CHECKPOINT_REQUESTS)
    ]


def test_decider_drops_the_lowest_priority_periodic_request_when_full() -> None:
    decider = CheckpointRequestDecider(max_concurrent=1, min_pause=0, max_queued=2)
    decider.submit(_req(1), is_triggering=True, pending=1, last_completion=0, now=0)
    decider.submit(_req(2, periodic=True), is_triggering=True, pending=1, last_completion=0, now=0)
    decision = decider.submit(_req(3), is_triggering=True, pending=1, last_completion=0, now=0)
    assert [r.request_id for r, _ in decision.failed] == [2]
    assert [r.request_id for r in decider.queued] == [1, 3]


def test_failure_manager_counts_each_checkpoint_once_and_resets_on_success() -> None:
    manager = CheckpointFailureManager(1)
    props = CheckpointProperties()
    assert (
        manager.handle_checkpoint_exception(
            checkpoint_id=1, props=props, reason=R.CHECKPOINT_EXPIRED, task=None
        )
        is None
    )
    assert (
        manager.handle_checkpoint_exception(
            checkpoint_id=1, props=props, reason=R.CHECKPOINT_DECLINED, task=A
        )
        is None
    )
    manager.handle_checkpoint_success(2)
    assert manager.continuous_failures == 0
    assert (
        manager.handle_checkpoint_exception(
            checkpoint_id=1, props=props, reason=R.CHECKPOINT_EXPIRED, task=None
        )
        is None
    )
    assert (
        manager.handle_checkpoint_exception(
            checkpoint_id=3, props=props, reason=R.CHECKPOINT_SUBSUMED, task=None
        )
        is None
    )
    assert (
        manager.handle_checkpoint_exception(
            checkpoint_id=3, props=props, reason=R.CHECKPOINT_EXPIRED, task=None
        )
        is None
    )
    verdict = manager.handle_checkpoint_exception(
        checkpoint_id=4, props=props, reason=R.CHECKPOINT_EXPIRED, task=None
    )
    assert (
        verdict is not None
        and verdict.message == "Exceeded checkpoint tolerable failure threshold."
    )


def test_failure_manager_ignores_job_level_savepoint_failures() -> None:
    manager = CheckpointFailureManager(0)
    props = CheckpointProperties.for_savepoint(forced=True)
    assert (
        manager.handle_checkpoint_exception(
            checkpoint_id=None, props=props, reason=R.IO_EXCEPTION, task=None
        )
        is None
    )


def _completed(cid: int, *, savepoint: bool = False, sync: bool = False) -> CompletedCheckpoint:
    props = (
        CheckpointProperties.for_savepoint(forced=True, synchronous=sync)
        if savepoint
        else CheckpointProperties()
    )
    return CompletedCheckpoint(checkpoint_id=cid, timestamp=0, completion_timestamp=0, props=props)


def test_store_keeps_the_latest_non_savepoint_checkpoint_and_subsumes_savepoints() -> None:
    store = CompletedCheckpointStore(1)
    store.add_checkpoint_and_subsume_oldest(_completed(1))
    subsumed = store.add_checkpoint_and_subsume_oldest(_completed(2, savepoint=True))
    assert subsumed == [] and [c.checkpoint_id for c in store.checkpoints] == [1, 2]
    subsumed = store.add_checkpoint_and_subsume_oldest(_completed(3))
    assert [c.checkpoint_id for c in subsumed] == [1, 2]
    assert [c.checkpoint_id for c in store.checkpoints] == [3]


def test_store_subsumes_everything_older_than_a_stop_with_savepoint() -> None:
    store = CompletedCheckpointStore(1)
    store.add_checkpoint_and_subsume_oldest(_completed(1))
    subsumed = store.add_checkpoint_and_subsume_oldest(_completed(2, savepoint=True, sync=True))
    assert [c.checkpoint_id for c in subsumed] == [1]
