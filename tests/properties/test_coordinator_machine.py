"""The checkpoint coordinator as a Hypothesis state machine: requests, acknowledgements,
declines, task failures, job status changes and clock advances in random order.

Invariants (checked after every step): never more than max-concurrent checkpoints pending;
completed checkpoint ids increase; a periodic checkpoint starts no sooner than min pause after
the last completion; every checkpoint ends at most once (exactly once after shutdown); no state
handle is both kept and discarded. A failure prints the steps (and, with ``print_blob``, the
blob that replays them).
"""

from __future__ import annotations

import itertools

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from runtime.checkpoint import SnapshotType, StateHandle, TaskId, TaskStateSnapshot
from runtime.clock import TimerQueue
from runtime.coordinator import CheckpointCoordinator, CheckpointPlanCalculator, CoordinatorConfig
from runtime.effects import (
    CancelTimer,
    CheckpointAborted,
    CheckpointCompleted,
    CheckpointTriggered,
    DiscardState,
    Effect,
    RequestCompleted,
    RequestFailed,
    ScheduleTimer,
)
from runtime.messages import (
    AcknowledgeCheckpoint,
    CoordinatorMessage,
    DeclineCheckpoint,
    FailUnacknowledgedCheckpoints,
    JobStatusChanged,
    ShutdownCoordinator,
    TimerFired,
    TriggerCheckpointRequest,
)
from runtime.reasons import CheckpointFailureReason
from runtime.status import ExecutionState, JobStatus
from runtime.storage import handle_with_storage

TASKS = [TaskId("source", 0), TaskId("source", 1), TaskId("sink", 0)]


class CoordinatorMachine(RuleBasedStateMachine):
    @initialize(
        interval=st.none() | st.integers(10, 100),
        timeout=st.integers(20, 300),
        min_pause=st.integers(0, 60),
        max_concurrent=st.integers(1, 3),
        tolerable=st.integers(0, 3),
        retained=st.integers(1, 3),
        unaligned=st.booleans(),
        seed=st.integers(0, 2**16),
    )
    def start(
        self,
        interval: int | None,
        timeout: int,
        min_pause: int,
        max_concurrent: int,
        tolerable: int,
        retained: int,
        unaligned: bool,
        seed: int,
    ) -> None:
        self.config = CoordinatorConfig(
            interval=interval,
            timeout=timeout,
            min_pause=min_pause,
            max_concurrent=1 if unaligned else max_concurrent,
            tolerable_failures=tolerable,
            num_retained=retained,
            unaligned=unaligned,
        )
        plan = CheckpointPlanCalculator(
            trigger=TASKS[:2], ack=TASKS, commit=TASKS, initial_state=ExecutionState.RUNNING
        )
        self.coordinator = CheckpointCoordinator(self.config, plan, seed=seed)
        self.now = 0
        self.timers = TimerQueue()
        self.request_ids = itertools.count(1)
        self.periodic_requests: set[int] = set()
        self.triggered: dict[int, tuple[int, int, int]] = {}  # checkpoint -> (request, time, step)
        self.savepoints: set[int] = set()
        self.completions: list[tuple[int, int, int]] = []  # (checkpoint, time, step), in order
        self.steps = itertools.count()
        self.ended: dict[int, int] = {}
        self.acked: dict[str, int] = {}  # handle -> checkpoint
        self.discarded: list[str] = []
        self.attempts = dict.fromkeys(TASKS, 0)
        self.handles = itertools.count()
        self._send(JobStatusChanged(status=JobStatus.RUNNING))

    # --- plumbing -------------------------------------------------------------------------

    def _send(self, msg: CoordinatorMessage) -> None:
        # the storage's work (in memory) is done at once
        for effect in handle_with_storage(self.coordinator, msg, self.now):
            self._observe(effect)

    def _observe(self, effect: Effect) -> None:
        match effect:
            case ScheduleTimer(key=key, due=due):
                self.timers.schedule(key, due)
            case CancelTimer(key=key):
                self.timers.cancel(key)
            case CheckpointTriggered(checkpoint_id=cid, request_id=int() as rid, options=options):
                assert cid not in self.triggered, f"checkpoint id {cid} reused"
                self.triggered[cid] = (rid, self.now, next(self.steps))
                if options.snapshot_type.is_savepoint:
                    self.savepoints.add(cid)
            case CheckpointCompleted(checkpoint=checkpoint):
                self._end(checkpoint.checkpoint_id)
                self.completions.append((checkpoint.checkpoint_id, self.now, next(self.steps)))
            case CheckpointAborted(checkpoint_id=cid):
                self._end(cid)
            case DiscardState(handles=handles):
                self.discarded.extend(h.key for h in handles)
            case RequestCompleted() | RequestFailed():
                pass
            case _:
                pass

    def _end(self, checkpoint_id: int) -> None:
        self.ended[checkpoint_id] = self.ended.get(checkpoint_id, 0) + 1

    # --- rules ------------------------------------------------------------------------------

    @rule(kind=st.sampled_from(["manual", "periodic", "savepoint", "sync-savepoint"]))
    def request(self, kind: str) -> None:
        request_id = next(self.request_ids)
        if kind == "periodic":
            self.periodic_requests.add(request_id)
        snapshot = {
            "savepoint": SnapshotType.SAVEPOINT,
            "sync-savepoint": SnapshotType.SYNC_SAVEPOINT,
        }.get(kind, SnapshotType.CHECKPOINT)
        self._send(
            TriggerCheckpointRequest(
                request_id=request_id, snapshot_type=snapshot, periodic=kind == "periodic"
            )
        )

    @rule(millis=st.integers(1, 150))
    def advance(self, millis: int) -> None:
        target = self.now + millis
        while (due := self.timers.pop_due(target)) is not None:
            key, when = due
            self.now = max(self.now, when)
            self._send(TimerFired(key=key))  # periodic ticks get negative request ids
        self.now = target

    @precondition(lambda self: bool(self.coordinator.pending))
    @rule(data=st.data())
    def ack(self, data: st.DataObject) -> None:
        checkpoint_id = data.draw(st.sampled_from(sorted(self.coordinator.pending)))
        task = data.draw(st.sampled_from(TASKS))
        handle = f"h{next(self.handles)}"
        pending = self.coordinator.pending[checkpoint_id]
        expected = pending.not_yet_acknowledged.get(task) == self.attempts[task]
        self._send(
            AcknowledgeCheckpoint(
                task=task,
                attempt=self.attempts[task],
                checkpoint_id=checkpoint_id,
                state=TaskStateSnapshot(handles=(StateHandle(key=handle, size=1),)),
            )
        )
        if expected:
            self.acked[handle] = checkpoint_id
        else:  # a duplicate acknowledgement's state must be left alone or discarded, never kept
            self.acked[handle] = -checkpoint_id

    @rule(checkpoint_id=st.integers(1, 30), task=st.sampled_from(TASKS))
    def late_or_unknown_ack(self, checkpoint_id: int, task: TaskId) -> None:
        if checkpoint_id in self.coordinator.pending:
            return
        handle = f"late{next(self.handles)}"
        self._send(
            AcknowledgeCheckpoint(
                task=task,
                attempt=self.attempts[task],
                checkpoint_id=checkpoint_id,
                state=TaskStateSnapshot(handles=(StateHandle(key=handle, size=1),)),
            )
        )
        assert handle in self.discarded, "the state of a late or unknown ack must be discarded"

    @precondition(lambda self: bool(self.coordinator.pending))
    @rule(data=st.data())
    def decline(self, data: st.DataObject) -> None:
        checkpoint_id = data.draw(st.sampled_from(sorted(self.coordinator.pending)))
        task = data.draw(st.sampled_from(TASKS))
        self._send(
            DeclineCheckpoint(task=task, attempt=self.attempts[task], checkpoint_id=checkpoint_id)
        )

    @rule(task=st.sampled_from(TASKS))
    def task_fails(self, task: TaskId) -> None:
        self._send(FailUnacknowledgedCheckpoints(task=task, attempt=self.attempts[task]))

    @rule(status=st.sampled_from([JobStatus.RUNNING, JobStatus.RESTARTING, JobStatus.FAILING]))
    def job_status(self, status: JobStatus) -> None:
        self._send(JobStatusChanged(status=status))

    # --- invariants -------------------------------------------------------------------------

    @invariant()
    def never_more_than_max_concurrent_checkpoints_pending(self) -> None:
        if not hasattr(self, "coordinator"):
            return
        checkpoints = [p for p in self.coordinator.pending.values() if not p.props.is_savepoint]
        assert len(checkpoints) <= self.config.max_concurrent

    @invariant()
    def completed_checkpoint_ids_increase(self) -> None:
        if not hasattr(self, "coordinator"):
            return
        ids = [c for c, _, _ in self.completions if c not in self.savepoints]
        assert ids == sorted(set(ids))
        store = [c.checkpoint_id for c in self.coordinator.store.checkpoints]
        assert store == sorted(set(store))
        assert len(store) <= self.config.num_retained

    @invariant()
    def periodic_checkpoints_respect_min_pause(self) -> None:
        if not hasattr(self, "coordinator"):
            return
        for checkpoint_id, (request_id, started, step) in self.triggered.items():
            if request_id in self.periodic_requests or request_id < 0:
                if checkpoint_id in self.savepoints:
                    continue
                before = [t for _, t, s in self.completions if s < step]
                if before:  # no pause is owed before the first completion
                    last = max(before)
                    assert started - last >= self.config.min_pause, (
                        f"periodic checkpoint {checkpoint_id} at {started} ms, "
                        f"last completion {last} ms"
                    )

    @invariant()
    def every_checkpoint_ends_at_most_once(self) -> None:
        if not hasattr(self, "coordinator"):
            return
        assert all(count == 1 for count in self.ended.values()), self.ended
        for checkpoint_id in self.coordinator.pending:
            assert checkpoint_id not in self.ended

    @invariant()
    def no_state_handle_is_both_kept_and_discarded(self) -> None:
        if not hasattr(self, "coordinator"):
            return
        kept = {h.key for c in self.coordinator.store.checkpoints for h in c.handles()}
        assert not kept & set(self.discarded)
        assert len(self.discarded) == len(set(self.discarded)), "a handle discarded twice"

    def teardown(self) -> None:
        if not hasattr(self, "coordinator"):
            return
        self._send(ShutdownCoordinator(job_status=JobStatus.FINISHED))
        assert set(self.ended) == set(self.triggered), "every checkpoint ends exactly once"
        assert all(count == 1 for count in self.ended.values())
        savepoint_handles = {
            h
            for h, cid in self.acked.items()
            if cid in self.savepoints and cid in {c for c, _, _ in self.completions}
        }
        for handle, checkpoint_id in self.acked.items():
            if checkpoint_id > 0 and handle not in savepoint_handles:
                assert handle in self.discarded, f"{handle} of checkpoint {checkpoint_id} lingers"


TestCoordinatorMachine = CoordinatorMachine.TestCase


def test_reasons_flags_match_flink() -> None:
    """The counted reasons are exactly Flink's current five."""
    counted = {r.name for r in CheckpointFailureReason if r.counted}
    assert counted == {
        "IO_EXCEPTION",
        "CHECKPOINT_ASYNC_EXCEPTION",
        "CHECKPOINT_DECLINED",
        "CHECKPOINT_EXPIRED",
        "FINALIZE_CHECKPOINT_FAILURE",
    }
