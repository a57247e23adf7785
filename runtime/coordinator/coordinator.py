"""``CheckpointCoordinator``: the JobManager side of the protocol, as a pure state machine.

``handle(msg, now)`` takes a message (see ``messages.CoordinatorMessage``) and returns effects:
triggers and notifications to send, timers to schedule, storage work, state to discard, request
results, job failures. It composes the small pieces: ``CheckpointRequestDecider`` (queueing),
``CheckpointPlanCalculator`` (which tasks), ``PendingCheckpoint``, ``CompletedCheckpointStore``
(retention), ``CheckpointFailureManager`` (tolerable failures) and ``CheckpointStatsTracker``.

Storage work is effects too, as in Flink, where the coordinator hands it to its I/O executor
and goes on when the future completes: a trigger first asks for the checkpoint's location
(``InitializeLocation``; meanwhile the coordinator is *triggering* and starts no other
checkpoint) and triggers the tasks once ``LocationInitialized`` comes back
(``LocationInitializationFailed``: the trigger fails with ``IO_EXCEPTION``); a fully
acknowledged checkpoint asks for its metadata to be written (``FinalizeCheckpoint``) and
completes on ``CheckpointFinalized`` (``CheckpointFinalizationFailed``: it is aborted with
``FINALIZE_CHECKPOINT_FAILURE``, saying why). A checkpoint being finalized no longer expires
and ignores declines (in Flink its completion could not be interleaved with them); an abort of
every checkpoint (failover, suspension, shutdown) or a newer completed one still ends it, and
its location is deleted once the storage has answered.

Two trigger semantics: ``current`` (Flink 1.11+, the default: a request queue) and ``flink-1.7``
(no queue: a request is declined at once with a ``CheckpointDeclineReason``, as in the Flink 1.7
sources the project started from).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, assert_never

from runtime.checkpoint import (
    INVALID_CHECKPOINT_ID,
    CheckpointOptions,
    CheckpointProperties,
    CompletedCheckpoint,
    ExternalizedCheckpointRetention,
    SnapshotType,
    StateHandle,
    TaskId,
)
from runtime.coordinator.failure_manager import CheckpointFailureManager
from runtime.coordinator.pending import AckResult, PendingCheckpoint
from runtime.coordinator.plan import CheckpointPlan, CheckpointPlanCalculator
from runtime.coordinator.request_decider import (
    CheckpointRequestDecider,
    CheckpointTriggerRequest,
    Decision,
)
from runtime.coordinator.store import CompletedCheckpointStore
from runtime.effects import (
    CancelTimer,
    CheckpointAborted,
    CheckpointCompleted,
    CheckpointTriggered,
    CoordinatorEffect,
    DiscardLocation,
    DiscardState,
    FailJob,
    FinalizeCheckpoint,
    InitializeLocation,
    RequestCompleted,
    RequestDeclined,
    RequestFailed,
    Role,
    ScheduleTimer,
    Send,
)
from runtime.messages import (
    AbortPendingCheckpoints,
    AcknowledgeCheckpoint,
    CheckpointFinalizationFailed,
    CheckpointFinalized,
    CoordinatorMessage,
    CoordinatorReport,
    DeclineCheckpoint,
    ExecutionStateChanged,
    FailUnacknowledgedCheckpoints,
    JobStatusChanged,
    ListRetainedCheckpoints,
    LocationInitializationFailed,
    LocationInitialized,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    RestoredFromCheckpoint,
    RetainedCheckpoints,
    ShutdownCoordinator,
    StartCheckpointScheduler,
    StopCheckpointScheduler,
    TimerFired,
    TriggerCheckpoint,
    TriggerCheckpointRequest,
)
from runtime.reasons import CheckpointDeclineReason, CheckpointFailureReason
from runtime.stats import CheckpointStatsTracker
from runtime.status import ExecutionState, JobStatus

ONE_YEAR_MS = 365 * 24 * 60 * 60 * 1000
TRIGGER_SEMANTICS = ("current", "flink-1.7")

_PendingPredicate = Callable[[PendingCheckpoint], bool]


@dataclass(frozen=True, slots=True, kw_only=True)
class CoordinatorConfig:
    """The coordinator's settings (Flink's ``CheckpointCoordinatorConfiguration``), in ms."""

    interval: int | None = None
    timeout: int = 600_000
    min_pause: int = 0
    max_concurrent: int = 1
    tolerable_failures: int = 0
    num_retained: int = 1
    exactly_once: bool = True
    unaligned: bool = False
    aligned_checkpoint_timeout: int = 0
    retention: ExternalizedCheckpointRetention = (
        ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
    )
    history_size: int = 10
    trigger_semantics: str = "current"
    #: fixes the periodic trigger's first delay (default: drawn from [min pause, interval])
    initial_delay: int | None = None


@dataclass(frozen=True, slots=True)
class PeriodicTrigger:
    """Timer key of the periodic trigger (a new generation on every (re)schedule)."""

    generation: int


@dataclass(frozen=True, slots=True)
class CheckpointCanceller:
    """Timer key of a pending checkpoint's timeout."""

    checkpoint_id: int


@dataclass(slots=True, kw_only=True)
class _Triggering:
    """A trigger waiting for its checkpoint's location (``InitializeLocation``): Flink's
    ``isTriggering``. No pending checkpoint exists yet."""

    request: CheckpointTriggerRequest
    plan: CheckpointPlan
    checkpoint_id: int
    timestamp: int
    #: aborted meanwhile (failover, suspension, shutdown): the request has failed already and
    #: the location is deleted when it comes
    cancelled: bool = False


class CheckpointCoordinator:
    def __init__(
        self,
        config: CoordinatorConfig,
        plan: CheckpointPlanCalculator,
        *,
        seed: int = 0,
        store: CompletedCheckpointStore | None = None,
        stats: CheckpointStatsTracker | None = None,
    ) -> None:
        if config.trigger_semantics not in TRIGGER_SEMANTICS:
            raise ValueError(
                f"unknown trigger semantics {config.trigger_semantics!r}; one of {TRIGGER_SEMANTICS}"
            )
        self.config = config
        self.plan = plan
        self.min_pause = min(config.min_pause, ONE_YEAR_MS)
        self.base_interval = (
            max(config.interval, self.min_pause) if config.interval is not None else None
        )
        self.store = store or CompletedCheckpointStore(config.num_retained)
        self.stats = stats or CheckpointStatsTracker(config.history_size)
        self.failure_manager = CheckpointFailureManager(config.tolerable_failures)
        self.decider = CheckpointRequestDecider(
            max_concurrent=config.max_concurrent, min_pause=self.min_pause
        )
        self.checkpoint_props = CheckpointProperties.for_checkpoint(config.retention)
        self.pending: dict[int, PendingCheckpoint] = {}
        self.periodic_scheduling = False
        self.is_shutdown = False
        self.retained_after_shutdown: list[CompletedCheckpoint] = []
        #: every checkpoint and savepoint completed, in order
        self.completed_ids: list[int] = []
        self._rng = random.Random(seed)
        self._next_checkpoint_id = 1
        # None until a checkpoint completes: no pause is owed at job start (Flink's relative
        # clock has an arbitrary origin, so its initial 0 is "long ago" in production)
        self._last_completion: int | None = None
        self._periodic_generation = 0
        self._periodic_key: PeriodicTrigger | None = None
        self._next_periodic_due = 0
        self._next_internal_request = -1
        self._trigger_request_queued = False  # flink-1.7 semantics only
        self._draining = False
        self._triggering: _Triggering | None = None
        #: FLIP-147: running tasks that acknowledged a completed checkpoint taken after their
        #: data ended (``task_finished``), or stopped by a completed synchronous savepoint: they
        #: finish on their own, need no further checkpoint, and a trigger sent to them could
        #: only race their closing. No checkpoint starts that would trigger one of them until
        #: the JobMaster reports its new state (FINISHED, or a new attempt).
        self._finishing: set[TaskId] = set()
        #: the final source positions of tasks that finished, from their FINISHED report or the
        #: checkpoint the job restored: every checkpoint that lists such a task as finished
        #: records them (a restore checks them)
        self._final_positions: dict[TaskId, dict[str, Any]] = {}
        self._now = 0
        self._out: list[CoordinatorEffect] = []

    # --- views ------------------------------------------------------------------------------

    @property
    def next_periodic_trigger(self) -> int | None:
        """When the periodic trigger fires next (job clock), or None when it is not scheduled."""
        if not self.periodic_scheduling or self._periodic_key is None:
            return None
        return self._next_periodic_due

    @property
    def is_periodic_checkpointing_configured(self) -> bool:
        return self.base_interval is not None

    @property
    def pending_ids(self) -> list[int]:
        return list(self.pending)

    @property
    def is_triggering(self) -> bool:
        """A trigger waits for its checkpoint's location (no other starts meanwhile)."""
        return self._triggering is not None

    @property
    def queued_requests(self) -> int:
        return len(self.decider)

    @property
    def next_checkpoint_id(self) -> int:
        return self._next_checkpoint_id

    @property
    def latest_completed(self) -> CompletedCheckpoint | None:
        return self.store.latest

    def summary(self, now: int) -> dict[str, Any]:
        """The statistics, the completed ids and when the periodic trigger fires next (the
        progress line, the REST API)."""
        due = self.next_periodic_trigger
        return {
            "stats": self.stats.to_json(),
            "completed": list(self.completed_ids),
            "next_trigger_in_ms": None if due is None else max(due - now, 0),
        }

    def details(self) -> dict[int, dict[str, Any]]:
        """Each checkpoint in the statistics' history with its subtasks, by id (the REST API's
        checkpoint details)."""
        stats = self.stats
        out: dict[int, dict[str, Any]] = {}
        for entry in stats.with_details:
            details = stats.details_json(entry.checkpoint_id)
            if details is not None:
                details["subtasks"] = {v: entry.subtasks_json(v) for v in entry.num_subtasks}
                out[entry.checkpoint_id] = details
        return out

    def report(self) -> CoordinatorReport:
        """What the job's result takes from the coordinator (sent once it shut down)."""
        return CoordinatorReport(
            stats=self.stats.to_json(),
            details=self.details(),
            completed=list(self.completed_ids),
            retained=[c.external_path for c in self.retained_after_shutdown if c.external_path],
            types={s.checkpoint_id: s.triggered_type for s in self.stats.history},
        )

    def restorable_checkpoints(self) -> tuple[RestoredFromCheckpoint, ...]:
        """The retained completed checkpoints a restart could restore (those with a path),
        newest first."""
        return tuple(
            RestoredFromCheckpoint(
                checkpoint_id=c.checkpoint_id,
                external_path=c.external_path,
                is_savepoint=c.is_savepoint,
            )
            for c in reversed(self.store.checkpoints)
            if c.external_path is not None
        )

    # --- entry point --------------------------------------------------------------------------

    def handle(self, msg: CoordinatorMessage, now: int) -> list[CoordinatorEffect]:
        self._now = now
        out: list[CoordinatorEffect] = []
        self._out = out
        match msg:
            case TriggerCheckpointRequest():
                self._on_request(msg)
            case AcknowledgeCheckpoint():
                self._on_ack(msg)
            case DeclineCheckpoint():
                self._on_decline(msg)
            case TimerFired(key=key):
                self._on_timer(key)
            case JobStatusChanged(status=status):
                self._on_job_status(status)
            case StopCheckpointScheduler():
                if not self.is_shutdown:
                    self.stop_checkpoint_scheduler()
            case StartCheckpointScheduler():
                if not self.is_shutdown and self.is_periodic_checkpointing_configured:
                    self.start_checkpoint_scheduler()
            case ExecutionStateChanged(task=task, state=state, attempt=attempt):
                self.plan.set_state(task, state, attempt)
                if state is ExecutionState.FINISHED and msg.final_positions:
                    self._final_positions[task] = msg.final_positions
                if task in self._finishing:
                    self._finishing.discard(task)  # finished, or a new attempt
                    if self.config.trigger_semantics != "flink-1.7" and not self.is_shutdown:
                        self._drain_queue()  # a request may have waited for it
            case FailUnacknowledgedCheckpoints(task=task, attempt=attempt):
                if self._triggering is not None and task in self._triggering.plan.tasks_to_wait_for:
                    self._cancel_triggering(CheckpointFailureReason.TASK_FAILURE)
                self._abort_where(
                    lambda p: not p.is_acknowledged_by(task, attempt),
                    CheckpointFailureReason.TASK_FAILURE,
                )
            case AbortPendingCheckpoints(reason=reason):
                self._cancel_triggering(reason)
                self._abort_where(lambda p: True, reason)
            case RestoredFromCheckpoint(
                checkpoint_id=cid, external_path=path, is_savepoint=is_savepoint
            ):
                self.restore_id_counter(cid + 1)
                self.stats.report_restored(cid, self._now, is_savepoint, path)
                self._final_positions = dict(msg.final_positions)
            case ListRetainedCheckpoints():
                self._emit(
                    Send(
                        to=Role.JOB_MASTER,
                        message=RetainedCheckpoints(checkpoints=self.restorable_checkpoints()),
                    )
                )
            case ShutdownCoordinator(job_status=job_status):
                self._shutdown(job_status)
                # the coordinator's last word: its statistics, for the job's result
                self._emit(Send(to=Role.JOB_MASTER, message=self.report()))
            case LocationInitialized(checkpoint_id=cid, location=location):
                self._on_location(cid, location, None)
            case LocationInitializationFailed(checkpoint_id=cid, error=error):
                self._on_location(cid, None, error)
            case CheckpointFinalized(checkpoint_id=cid, external_path=path):
                self._on_finalized(cid, path, None)
            case CheckpointFinalizationFailed(checkpoint_id=cid, error=error):
                self._on_finalized(cid, None, error)
            case _ as unreachable:
                assert_never(unreachable)
        return out

    def _emit(self, effect: CoordinatorEffect) -> None:
        self._out.append(effect)

    def restore_id_counter(self, next_checkpoint_id: int) -> None:
        """After restoring checkpoint N, new checkpoints continue from N + 1."""
        self._next_checkpoint_id = max(self._next_checkpoint_id, next_checkpoint_id)

    def new_request_id(self) -> int:
        request_id = self._next_internal_request
        self._next_internal_request -= 1
        return request_id

    # --- requests ---------------------------------------------------------------------------

    def _props_for(self, msg: TriggerCheckpointRequest) -> CheckpointProperties:
        if msg.snapshot_type.is_savepoint:
            return CheckpointProperties.for_savepoint(
                forced=not self.config.unaligned, synchronous=msg.snapshot_type.is_synchronous
            )
        if msg.snapshot_type is SnapshotType.FULL_CHECKPOINT:
            return dataclasses.replace(
                self.checkpoint_props, snapshot_type=SnapshotType.FULL_CHECKPOINT
            )
        return self.checkpoint_props

    def _on_request(self, msg: TriggerCheckpointRequest) -> None:
        request = CheckpointTriggerRequest(
            request_id=msg.request_id,
            props=self._props_for(msg),
            periodic=msg.periodic,
            timestamp=self._now,
            target_location=msg.target_location,
            drain=msg.drain,
        )
        if self.config.trigger_semantics == "flink-1.7":
            self._trigger_legacy(request)
            return
        decision = self.decider.submit(
            request,
            is_triggering=self.is_triggering or self._waits_for_finishing_tasks(),
            pending=len(self.pending),
            last_completion=self._last_completion,
            now=self._now,
        )
        self._apply(decision)
        self._drain_queue()

    def _apply(self, decision: Decision) -> None:
        for request, reason in decision.failed:
            self._emit(RequestFailed(request_id=request.request_id, reason=reason))
        if decision.reschedule_in is not None:
            self._reschedule_trigger(decision.reschedule_in)
        if decision.execute is not None:
            self._start_triggering(decision.execute)

    def _drain_queue(self) -> None:
        """Start queued requests while the decider allows (Flink's ``executeQueuedRequest``)."""
        if self._draining:
            return
        self._draining = True
        try:
            while True:
                decision = self.decider.choose_queued(
                    is_triggering=self.is_triggering or self._waits_for_finishing_tasks(),
                    pending=len(self.pending),
                    last_completion=self._last_completion,
                    now=self._now,
                )
                self._apply(decision)
                if decision.execute is None:
                    return
        finally:
            self._draining = False

    def _pre_check(self, periodic: bool) -> CheckpointFailureReason | None:
        if self.is_shutdown:
            return CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN
        if periodic and not self.periodic_scheduling:
            return CheckpointFailureReason.PERIODIC_SCHEDULER_SHUTDOWN
        return None

    def _waits_for_finishing_tasks(self) -> bool:
        """A checkpoint started now would trigger a task that is finishing (``_finishing``): no
        request runs until the JobMaster reports that task's new state; the requests wait in
        the queue as they do while a trigger is under way.

        FLIP-147: a task finishes once a checkpoint taken after its end of data completed and
        its output was processed, on its own; a trigger that reaches it after it closed is
        declined (``CHECKPOINT_DECLINED_TASK_NOT_READY``), and Flink's plan, computed from the
        execution states the JobMaster knows, can send one there. Once the coordinator knows
        the task FINISHED, the plan triggers its successors instead (as Flink's does). Since
        every running task downstream of a finishing one is reached from a finishing task the
        plan triggers, no checkpoint that starts waits for a task that is finishing."""
        if not self._finishing:
            return False
        to_trigger = self.plan.triggers()
        return not isinstance(
            to_trigger, CheckpointFailureReason
        ) and not self._finishing.isdisjoint(to_trigger)

    def _job_is_finishing(self) -> bool:
        """Every task finished or is finishing: no task needs another checkpoint."""
        return all(
            state is ExecutionState.FINISHED or task in self._finishing
            for task, state in self.plan.states.items()
        )

    def _start_triggering(self, request: CheckpointTriggerRequest) -> None:
        failure = self._pre_check(request.periodic)
        if failure is None and request.periodic and self._job_is_finishing():
            # every task ended its data with a checkpoint that completed (or finished): the job
            # is about to finish, which stops Flink's periodic scheduler; a periodic checkpoint
            # now could only fail (tasks closing, or none left to trigger)
            return
        plan: CheckpointPlan | CheckpointFailureReason
        plan = failure if failure is not None else self.plan.calculate()
        if isinstance(plan, CheckpointFailureReason):
            self._on_trigger_failure(request, plan)
            return
        self._initialize_location(request, plan)

    def _initialize_location(self, request: CheckpointTriggerRequest, plan: CheckpointPlan) -> None:
        """The checkpoint gets its id, then its location (``InitializeLocation``); the tasks are
        triggered when the location is there."""
        checkpoint_id = self._next_checkpoint_id
        self._next_checkpoint_id += 1
        self._triggering = _Triggering(
            request=request, plan=plan, checkpoint_id=checkpoint_id, timestamp=self._now
        )
        self._emit(
            InitializeLocation(
                checkpoint_id=checkpoint_id, props=request.props, target=request.target_location
            )
        )

    def _on_location(self, checkpoint_id: int, location: str | None, error: str | None) -> None:
        triggering = self._triggering
        if triggering is None or triggering.checkpoint_id != checkpoint_id:
            if error is None:
                self._emit(DiscardLocation(checkpoint_id=checkpoint_id))  # nobody waits for it
            return
        self._triggering = None
        request = triggering.request
        legacy = self.config.trigger_semantics == "flink-1.7"
        if triggering.cancelled:
            if error is None:
                self._emit(DiscardLocation(checkpoint_id=checkpoint_id))
        elif error is not None:
            if legacy:
                self._emit(
                    RequestDeclined(
                        request_id=request.request_id,
                        reason=CheckpointDeclineReason.EXCEPTION,
                        cause=error,
                    )
                )
            else:
                self._on_trigger_failure(request, CheckpointFailureReason.IO_EXCEPTION, cause=error)
        elif (failure := self._pre_check(request.periodic)) is not None:
            # the state may have changed while the location was made (Flink checks again)
            self._emit(DiscardLocation(checkpoint_id=checkpoint_id))
            if legacy:
                self._emit(
                    RequestDeclined(
                        request_id=request.request_id,
                        reason=CheckpointDeclineReason.COORDINATOR_SHUTDOWN
                        if self.is_shutdown
                        else CheckpointDeclineReason.PERIODIC_SCHEDULER_SHUTDOWN,
                    )
                )
            else:
                self._on_trigger_failure(request, failure)
        else:
            self._create_and_trigger(
                request, triggering.plan, checkpoint_id, location, triggering.timestamp
            )
            if legacy:  # Flink 1.7 retries a queued request only when a checkpoint ends
                return
        self._after_slot_freed()

    def _cancel_triggering(self, reason: CheckpointFailureReason) -> None:
        """Every checkpoint is aborted (failover, suspension, shutdown): so is the one whose
        location is being made. Its request fails now; the location goes when it comes."""
        triggering = self._triggering
        if triggering is None or triggering.cancelled:
            return
        triggering.cancelled = True
        self._on_trigger_failure(triggering.request, reason)

    def _create_and_trigger(
        self,
        request: CheckpointTriggerRequest,
        plan: CheckpointPlan,
        checkpoint_id: int,
        location: str | None,
        timestamp: int,
    ) -> None:
        options = CheckpointOptions.for_config(
            request.props.snapshot_type,
            exactly_once=self.config.exactly_once,
            unaligned_enabled=self.config.unaligned,
            aligned_checkpoint_timeout=self.config.aligned_checkpoint_timeout,
            target_location=location,
            drain=request.drain,
        )
        pending = PendingCheckpoint(
            checkpoint_id=checkpoint_id,
            timestamp=timestamp,
            props=request.props,
            options=options,
            plan=plan,
            request_id=request.request_id,
            periodic=request.periodic,
            final_positions={
                t: self._final_positions[t]
                for t in plan.finished_tasks
                if t in self._final_positions
            },
        )
        subtasks: dict[str, int] = {}
        for task in plan.tasks_to_wait_for:
            subtasks[task.vertex] = subtasks.get(task.vertex, 0) + 1
        self.stats.report_pending(
            checkpoint_id,
            timestamp,
            request.props.snapshot_type,
            subtasks,
            unaligned=options.is_unaligned,
            finished=plan.finished_tasks,
        )
        self.pending[checkpoint_id] = pending
        self._emit(
            ScheduleTimer(
                key=CheckpointCanceller(checkpoint_id), due=self._now + self.config.timeout
            )
        )
        self._emit(
            CheckpointTriggered(
                checkpoint_id=checkpoint_id,
                request_id=request.request_id,
                timestamp=timestamp,
                options=options,
            )
        )
        for task in plan.tasks_to_trigger:
            self._emit(
                Send(
                    to=task,
                    message=TriggerCheckpoint(
                        checkpoint_id=checkpoint_id, timestamp=timestamp, options=options
                    ),
                )
            )
        if pending.is_fully_acknowledged:
            self._finalize(pending)

    def _on_trigger_failure(
        self,
        request: CheckpointTriggerRequest,
        reason: CheckpointFailureReason,
        *,
        cause: str | None = None,
    ) -> None:
        """The request failed before a pending checkpoint existed."""
        self._emit(RequestFailed(request_id=request.request_id, reason=reason, cause=cause))
        self.stats.report_failed_without_in_progress()
        verdict = self.failure_manager.handle_checkpoint_exception(
            checkpoint_id=None, props=request.props, reason=reason, task=None
        )
        if verdict is not None:
            self._emit(
                FailJob(
                    message=verdict.message, reason=verdict.reason, task=verdict.task, cause=cause
                )
            )

    # --- acknowledgements and declines -------------------------------------------------------------

    def _on_ack(self, msg: AcknowledgeCheckpoint) -> None:
        if self.is_shutdown:
            return
        pending = self.pending.get(msg.checkpoint_id)
        if pending is None:
            # late (expired recently) or unknown: the state must not linger
            self._discard(msg.checkpoint_id, msg.state.handles if msg.state else ())
            return
        result = pending.acknowledge_task(msg.task, msg.attempt, msg.state, msg.metrics, self._now)
        if result is AckResult.SUCCESS:
            self.stats.report_subtask(
                msg.checkpoint_id, msg.task, self._now, msg.state, msg.metrics
            )
            if pending.is_fully_acknowledged:
                self._finalize(pending)
        elif result in (AckResult.UNKNOWN, AckResult.DISCARDED):
            self._discard(msg.checkpoint_id, msg.state.handles if msg.state else ())

    def _on_decline(self, msg: DeclineCheckpoint) -> None:
        if self.is_shutdown:
            return
        pending = self.pending.get(msg.checkpoint_id)
        if pending is not None and not pending.disposed and pending.finalizing is None:
            # a task's own failure to write its state says why (a storage error names the
            # storage and the errno); other declines are their reason alone
            cause = (
                msg.message
                if msg.reason is CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION
                else None
            )
            self._abort(pending, msg.reason, task=msg.task, cause=cause)

    # --- completion ---------------------------------------------------------------------------------

    def _finalize(self, pending: PendingCheckpoint) -> None:
        """Every task acknowledged: the storage writes the metadata (``FinalizeCheckpoint``);
        the checkpoint completes when it answers."""
        pending.finalizing = pending.to_completed(self._now, None)
        self._emit(FinalizeCheckpoint(checkpoint=pending.finalizing))

    def _on_finalized(self, checkpoint_id: int, path: str | None, error: str | None) -> None:
        pending = self.pending.get(checkpoint_id)
        if pending is None or pending.disposed or pending.finalizing is None:
            # aborted while its metadata was written: its location goes now
            self._emit(DiscardLocation(checkpoint_id=checkpoint_id))
            return
        if error is not None:
            self._abort(pending, CheckpointFailureReason.FINALIZE_CHECKPOINT_FAILURE, cause=error)
            return
        self._complete(pending, path)

    def _complete(self, pending: PendingCheckpoint, path: str | None) -> None:
        checkpoint_id = pending.checkpoint_id
        assert pending.finalizing is not None
        completed = pending.finalize(pending.finalizing.completion_timestamp, path)
        self._emit(CancelTimer(key=CheckpointCanceller(checkpoint_id)))
        last_subsumed = INVALID_CHECKPOINT_ID
        subsumed_ids: tuple[int, ...] = ()
        if not pending.props.is_savepoint:
            subsumed = self.store.add_checkpoint_and_subsume_oldest(completed)
            subsumed_ids = tuple(c.checkpoint_id for c in subsumed)
            for old in subsumed:
                if old.props.discard_on_subsumed:
                    self._discard(old.checkpoint_id, old.handles())
                    self.stats.report_discarded(old.checkpoint_id)
            if subsumed:
                newest = max(subsumed, key=lambda c: c.checkpoint_id)
                if newest.props.discard_on_subsumed:
                    last_subsumed = newest.checkpoint_id
        del self.pending[checkpoint_id]
        if not pending.props.is_savepoint or pending.props.is_synchronous:
            # FLIP-147: a task that took this checkpoint after its data ended finishes on its
            # notification; a synchronous savepoint stops every task (stop-with-savepoint)
            self._finishing.update(
                task
                for task, state in completed.task_states.items()
                if (state.task_finished or pending.props.is_synchronous)
                and self.plan.states.get(task) is ExecutionState.RUNNING
            )
        # announced at once: the aborts below free slots that start queued checkpoints, which
        # must not appear to run alongside this one
        self.completed_ids.append(checkpoint_id)
        self._emit(CheckpointCompleted(checkpoint=completed, subsumed=subsumed_ids))
        self._emit(RequestCompleted(request_id=pending.request_id, checkpoint=completed))
        self.failure_manager.handle_checkpoint_success(checkpoint_id)
        self.stats.report_completed(checkpoint_id, path)
        self._last_completion = self._now
        if not pending.props.is_savepoint or pending.props.is_synchronous:
            self._abort_where(
                lambda p: p.checkpoint_id < checkpoint_id and p.can_be_subsumed,
                CheckpointFailureReason.CHECKPOINT_SUBSUMED,
            )
            for task in pending.plan.tasks_to_commit_to:
                self._emit(
                    Send(
                        to=task,
                        message=NotifyCheckpointComplete(
                            checkpoint_id=checkpoint_id, last_subsumed_checkpoint_id=last_subsumed
                        ),
                    )
                )
        self._after_slot_freed()

    # --- aborts -------------------------------------------------------------------------------------

    def _abort_where(self, predicate: _PendingPredicate, reason: CheckpointFailureReason) -> None:
        for pending in [p for p in self.pending.values() if predicate(p)]:
            self._abort(pending, reason)

    def _abort(
        self,
        pending: PendingCheckpoint,
        reason: CheckpointFailureReason,
        task: TaskId | None = None,
        *,
        cause: str | None = None,
    ) -> None:
        if pending.disposed:
            return
        if reason is CheckpointFailureReason.CHECKPOINT_SUBSUMED and pending.props.is_savepoint:
            raise AssertionError("a savepoint must never be subsumed")
        checkpoint_id = pending.checkpoint_id
        # its metadata is being written: the location goes once the storage has answered
        writing = pending.finalizing is not None and reason is not (
            CheckpointFailureReason.FINALIZE_CHECKPOINT_FAILURE
        )
        self._discard(checkpoint_id, pending.abort())
        if not writing:
            self._emit(DiscardLocation(checkpoint_id=checkpoint_id))
        self._emit(CancelTimer(key=CheckpointCanceller(checkpoint_id)))
        self._emit(
            RequestFailed(
                request_id=pending.request_id,
                reason=reason,
                checkpoint_id=checkpoint_id,
                cause=cause,
            )
        )
        # Flink's failure_message is the reason's bare message (with the cause, if one is
        # known); its name is kept beside it
        message = reason.message if cause is None else f"{reason.message} Cause: {cause}"
        self.stats.report_failed(checkpoint_id, self._now, message, reason.name)
        verdict = self.failure_manager.handle_checkpoint_exception(
            checkpoint_id=checkpoint_id, props=pending.props, reason=reason, task=task
        )
        if verdict is not None:
            self._emit(
                FailJob(
                    message=verdict.message, reason=verdict.reason, task=verdict.task, cause=cause
                )
            )
        latest = self.store.latest_checkpoint_id
        for commit_task in pending.plan.tasks_to_commit_to:
            self._emit(
                Send(
                    to=commit_task,
                    message=NotifyCheckpointAborted(
                        checkpoint_id=checkpoint_id, latest_completed_checkpoint_id=latest
                    ),
                )
            )
        del self.pending[checkpoint_id]
        self._emit(CheckpointAborted(checkpoint_id=checkpoint_id, reason=reason, cause=cause))
        self._after_slot_freed()

    def _after_slot_freed(self) -> None:
        if self.is_shutdown:
            return
        if self.config.trigger_semantics == "flink-1.7":
            self._trigger_queued_legacy()
        else:
            self._drain_queue()

    def _discard(self, checkpoint_id: int, handles: tuple[StateHandle, ...]) -> None:
        if handles:
            self._emit(DiscardState(checkpoint_id=checkpoint_id, handles=handles))

    # --- timers and scheduling -----------------------------------------------------------------------

    def _on_timer(self, key: object) -> None:
        if isinstance(key, CheckpointCanceller):
            pending = self.pending.get(key.checkpoint_id)
            if pending is not None and not pending.disposed and pending.finalizing is None:
                self._abort(pending, CheckpointFailureReason.CHECKPOINT_EXPIRED)
        elif isinstance(key, PeriodicTrigger) and key == self._periodic_key:
            assert self.base_interval is not None
            # fixed rate, as Flink's scheduleAtFixedRate; periods missed while the timer fired
            # late (a paused process, a jump of virtual time) are skipped, not fired one after
            # another at the same instant (each would only be refused as too early)
            self._next_periodic_due += self.base_interval
            if self._next_periodic_due <= self._now:
                missed = (self._now - self._next_periodic_due) // self.base_interval + 1
                self._next_periodic_due += missed * self.base_interval
            self._emit(ScheduleTimer(key=key, due=self._next_periodic_due))
            self._on_request(
                TriggerCheckpointRequest(request_id=self.new_request_id(), periodic=True)
            )

    def _on_job_status(self, status: JobStatus) -> None:
        # the DeActivator is only registered when periodic checkpointing is configured
        if self.is_shutdown or not self.is_periodic_checkpointing_configured:
            return
        if status is JobStatus.RUNNING:
            self.start_checkpoint_scheduler()
        else:
            self.stop_checkpoint_scheduler()

    def start_checkpoint_scheduler(self) -> None:
        if self.is_shutdown:
            raise RuntimeError("checkpoint coordinator is shut down")
        if self.base_interval is None:
            raise RuntimeError("cannot start the checkpoint scheduler: no interval is configured")
        self.stop_checkpoint_scheduler()
        self.periodic_scheduling = True
        self._schedule_trigger_with_delay(self._random_initial_delay())

    def stop_checkpoint_scheduler(self) -> None:
        self.periodic_scheduling = False
        self._cancel_periodic_trigger()
        self._abort_pending_and_queued(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SUSPEND)

    def _random_initial_delay(self) -> int:
        if self.config.initial_delay is not None:
            return self.config.initial_delay
        assert self.base_interval is not None
        return self._rng.randint(self.min_pause, self.base_interval)

    def _schedule_trigger_with_delay(self, delay: int) -> None:
        self._periodic_generation += 1
        self._periodic_key = PeriodicTrigger(self._periodic_generation)
        self._next_periodic_due = self._now + delay
        self._emit(ScheduleTimer(key=self._periodic_key, due=self._next_periodic_due))

    def _cancel_periodic_trigger(self) -> None:
        if self._periodic_key is not None:
            self._emit(CancelTimer(key=self._periodic_key))
            self._periodic_key = None

    def _reschedule_trigger(self, delay: int) -> None:
        if self.base_interval is None:
            return
        self._cancel_periodic_trigger()
        self._schedule_trigger_with_delay(delay)

    def _abort_pending_and_queued(self, reason: CheckpointFailureReason) -> None:
        self._apply(self.decider.abort_all(reason))
        self._cancel_triggering(reason)
        self._abort_where(lambda p: True, reason)

    def _shutdown(self, job_status: JobStatus) -> None:
        if self.is_shutdown:
            return
        self.is_shutdown = True
        self.periodic_scheduling = False
        self._cancel_periodic_trigger()
        self._abort_pending_and_queued(CheckpointFailureReason.CHECKPOINT_COORDINATOR_SHUTDOWN)
        retained = self.store.checkpoints
        for checkpoint in self.store.shutdown(job_status):
            self._discard(checkpoint.checkpoint_id, checkpoint.handles())
            retained.remove(checkpoint)
        #: what outlives the job (externalized checkpoints), oldest first
        self.retained_after_shutdown = retained

    # --- Flink 1.7 trigger semantics --------------------------------------------------------------------

    def _trigger_legacy(self, request: CheckpointTriggerRequest) -> None:
        reason = self._legacy_pre_check(request)
        if reason is None:
            plan = self.plan.calculate()
            if isinstance(plan, CheckpointFailureReason) or plan.finished_tasks:
                reason = CheckpointDeclineReason.NOT_ALL_REQUIRED_TASKS_RUNNING
        if reason is not None:
            self._emit(RequestDeclined(request_id=request.request_id, reason=reason))
            return
        assert not isinstance(plan, CheckpointFailureReason)
        self._initialize_location(request, plan)

    def _legacy_pre_check(
        self, request: CheckpointTriggerRequest
    ) -> CheckpointDeclineReason | None:
        if self.is_shutdown:
            return CheckpointDeclineReason.COORDINATOR_SHUTDOWN
        if request.periodic and not self.periodic_scheduling:
            return CheckpointDeclineReason.PERIODIC_SCHEDULER_SHUTDOWN
        if request.forced:
            return None
        if self._trigger_request_queued:
            return CheckpointDeclineReason.ALREADY_QUEUED
        # Flink 1.7 made the location within the trigger: one being made counts as pending
        if len(self.pending) + self.is_triggering >= self.config.max_concurrent:
            self._trigger_request_queued = True
            self._cancel_periodic_trigger()
            return CheckpointDeclineReason.TOO_MANY_CONCURRENT_CHECKPOINTS
        last = self._last_completion
        remaining = 0 if last is None else last + self.min_pause - self._now
        if remaining > 0:
            self._cancel_periodic_trigger()
            if self.base_interval is not None:
                self._schedule_trigger_with_delay(remaining)
            return CheckpointDeclineReason.MINIMUM_TIME_BETWEEN_CHECKPOINTS
        return None

    def _trigger_queued_legacy(self) -> None:
        """A slot freed: the queued request runs from the timer (Flink 1.7 ``triggerQueuedRequests``)."""
        if not self._trigger_request_queued:
            return
        self._trigger_request_queued = False
        if self.periodic_scheduling and self.base_interval is not None:
            self._cancel_periodic_trigger()
            self._schedule_trigger_with_delay(0)
