"""The coordinator's storage work as effects: ``InitializeLocation`` before the tasks are
triggered, ``FinalizeCheckpoint`` before a checkpoint completes, ``DiscardLocation`` for one that
did not; their completions come back as messages, here delivered by hand (at any later step, as
the actor's background work delivers them). And ``runtime.storage.carry_out``, which does the
work and names the storage and the errno when it fails."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import TypeVar

import pytest

from runtime.checkpoint import (
    CheckpointProperties,
    CompletedCheckpoint,
    SnapshotType,
    StateHandle,
    TaskId,
    TaskStateSnapshot,
)
from runtime.coordinator import (
    CheckpointCanceller,
    CheckpointCoordinator,
    CheckpointPlanCalculator,
    CoordinatorConfig,
)
from runtime.effects import (
    CheckpointAborted,
    CheckpointCompleted,
    CoordinatorEffect,
    DiscardLocation,
    DiscardState,
    FailJob,
    FinalizeCheckpoint,
    InitializeLocation,
    RequestCompleted,
    RequestDeclined,
    RequestFailed,
    Send,
)
from runtime.messages import (
    AbortPendingCheckpoints,
    AcknowledgeCheckpoint,
    CheckpointFinalizationFailed,
    CheckpointFinalized,
    CoordinatorMessage,
    DeclineCheckpoint,
    LocationInitializationFailed,
    LocationInitialized,
    NotifyCheckpointAborted,
    ShutdownCoordinator,
    TimerFired,
    TriggerCheckpoint,
    TriggerCheckpointRequest,
)
from runtime.reasons import CheckpointDeclineReason
from runtime.reasons import CheckpointFailureReason as R
from runtime.status import ExecutionState, JobStatus
from runtime.storage import (
    CheckpointStorageError,
    FileSystemCheckpointStorage,
    carry_out,
    storage_error,
)

E = TypeVar("E", bound=CoordinatorEffect)
M = TypeVar("M")
A, B = TaskId("A"), TaskId("B")
DISK_FULL = "checkpoint storage /c: writing failed: No space left on device (errno 28, ENOSPC)"


class Driver:
    """A coordinator whose storage answers only when told to."""

    def __init__(self, **config: object) -> None:
        plan = CheckpointPlanCalculator(
            trigger=[A], ack=[A, B], commit=[A, B], initial_state=ExecutionState.RUNNING
        )
        self.coordinator = CheckpointCoordinator(CoordinatorConfig(**config), plan)  # type: ignore[arg-type]
        self.now = 0
        self.effects: list[CoordinatorEffect] = []
        self.requests = 0

    def send(self, msg: CoordinatorMessage) -> list[CoordinatorEffect]:
        out = self.coordinator.handle(msg, self.now)
        self.effects.extend(out)
        return out

    def request(self, snapshot: SnapshotType = SnapshotType.CHECKPOINT) -> list[CoordinatorEffect]:
        self.requests += 1
        return self.send(TriggerCheckpointRequest(request_id=self.requests, snapshot_type=snapshot))

    def ack_all(self, checkpoint_id: int) -> list[CoordinatorEffect]:
        out = []
        for task in (A, B):
            state = TaskStateSnapshot(handles=(StateHandle(key=f"{task.vertex}{checkpoint_id}"),))
            out += self.send(
                AcknowledgeCheckpoint(task=task, checkpoint_id=checkpoint_id, state=state)
            )
        return out

    def of(self, kind: type[E], effects: list[CoordinatorEffect] | None = None) -> list[E]:
        return [e for e in (self.effects if effects is None else effects) if isinstance(e, kind)]

    def sent(
        self, kind: type[M], effects: list[CoordinatorEffect] | None = None
    ) -> list[tuple[TaskId, M]]:
        """The messages of ``kind`` sent to tasks, with their task."""
        return [
            (e.to, e.message)
            for e in self.of(Send, effects)
            if isinstance(e.to, TaskId) and isinstance(e.message, kind)
        ]

    def pending_checkpoint(self, checkpoint_id: int = 1) -> None:
        """Request, location made, every task acknowledged: the metadata is being written."""
        self.request()
        self.send(
            LocationInitialized(checkpoint_id=checkpoint_id, location=f"/c/chk-{checkpoint_id}")
        )
        self.ack_all(checkpoint_id)


# --- the location ----------------------------------------------------------------------------------


def test_tasks_are_triggered_once_the_location_exists_and_another_trigger_waits_meanwhile() -> None:
    d = Driver(max_concurrent=2)
    d.now = 10
    asked = d.request()
    assert d.of(InitializeLocation, asked) == [
        InitializeLocation(
            checkpoint_id=1,
            props=CheckpointProperties.for_checkpoint(d.coordinator.config.retention),
        )
    ]
    assert not d.sent(TriggerCheckpoint) and d.coordinator.pending_ids == []
    assert d.coordinator.is_triggering
    d.now = 15
    assert not d.of(InitializeLocation, d.request()), "Flink's isTriggering: the next one queues"
    assert d.coordinator.queued_requests == 1
    d.now = 20
    made = d.send(LocationInitialized(checkpoint_id=1, location="/c/chk-1"))
    ((_, trigger),) = d.sent(TriggerCheckpoint, made)
    assert trigger.checkpoint_id == 1 and trigger.timestamp == 10, "the trigger's own time"
    assert trigger.options.target_location == "/c/chk-1"
    assert [e.checkpoint_id for e in d.of(InitializeLocation, made)] == [2], "then the queued one"
    assert d.coordinator.pending_ids == [1] and d.coordinator.queued_requests == 0


def test_a_failed_location_is_a_trigger_failure_with_io_exception_and_its_cause() -> None:
    d = Driver(tolerable_failures=0)
    d.request()
    failed = d.send(LocationInitializationFailed(checkpoint_id=1, error=DISK_FULL))
    assert d.of(RequestFailed, failed) == [
        RequestFailed(request_id=1, reason=R.IO_EXCEPTION, cause=DISK_FULL)
    ]
    assert d.of(FailJob, failed)[0].cause == DISK_FULL
    assert not d.sent(TriggerCheckpoint) and d.coordinator.pending_ids == []
    assert d.coordinator.stats.failed == 1 and d.coordinator.stats.in_progress == 0
    assert not d.coordinator.is_triggering


def test_flink_1_7_declines_a_failed_location_with_exception() -> None:
    d = Driver(trigger_semantics="flink-1.7")
    d.request()
    declined = d.send(LocationInitializationFailed(checkpoint_id=1, error=DISK_FULL))
    assert d.of(RequestDeclined, declined) == [
        RequestDeclined(request_id=1, reason=CheckpointDeclineReason.EXCEPTION, cause=DISK_FULL)
    ]


def test_a_failover_while_the_location_is_made_fails_the_request_at_once() -> None:
    d = Driver()
    d.request()
    aborted = d.send(AbortPendingCheckpoints(reason=R.JOB_FAILOVER_REGION))
    assert d.of(RequestFailed, aborted) == [
        RequestFailed(request_id=1, reason=R.JOB_FAILOVER_REGION)
    ]
    late = d.send(LocationInitialized(checkpoint_id=1, location="/c/chk-1"))
    assert late == [DiscardLocation(checkpoint_id=1)], "no trigger; what was made goes"


def test_a_shutdown_while_the_location_is_made_fails_the_request() -> None:
    d = Driver()
    d.request()
    d.send(ShutdownCoordinator(job_status=JobStatus.CANCELED))
    assert d.of(RequestFailed) == [
        RequestFailed(request_id=1, reason=R.CHECKPOINT_COORDINATOR_SHUTDOWN)
    ]
    assert d.send(LocationInitialized(checkpoint_id=1, location=None)) == [
        DiscardLocation(checkpoint_id=1)
    ]


# --- finalizing ------------------------------------------------------------------------------------


def test_a_checkpoint_completes_when_its_metadata_is_written() -> None:
    d = Driver()
    d.now = 5
    d.pending_checkpoint()
    (finalize,) = d.of(FinalizeCheckpoint)
    assert finalize.checkpoint.checkpoint_id == 1 and finalize.checkpoint.completion_timestamp == 5
    assert sorted(h.key for h in finalize.checkpoint.handles()) == ["A1", "B1"]
    assert not d.of(CheckpointCompleted) and d.coordinator.pending_ids == [1]
    d.now = 9
    done = d.send(CheckpointFinalized(checkpoint_id=1, external_path="/c/chk-1"))
    (completed,) = d.of(CheckpointCompleted, done)
    assert completed.checkpoint.external_path == "/c/chk-1"
    assert d.of(RequestCompleted, done)[0].request_id == 1
    assert d.coordinator.latest_completed is not None
    assert d.coordinator.latest_completed.checkpoint_id == 1 and d.coordinator.pending_ids == []


def test_a_failed_finalize_aborts_with_finalize_checkpoint_failure_saying_why() -> None:
    d = Driver(tolerable_failures=0)
    d.pending_checkpoint()
    aborted = d.send(CheckpointFinalizationFailed(checkpoint_id=1, error=DISK_FULL))
    assert d.of(RequestFailed, aborted) == [
        RequestFailed(
            request_id=1, reason=R.FINALIZE_CHECKPOINT_FAILURE, checkpoint_id=1, cause=DISK_FULL
        )
    ]
    assert d.of(CheckpointAborted, aborted) == [
        CheckpointAborted(checkpoint_id=1, reason=R.FINALIZE_CHECKPOINT_FAILURE, cause=DISK_FULL)
    ]
    (verdict,) = d.of(FailJob, aborted)
    assert verdict.reason is R.FINALIZE_CHECKPOINT_FAILURE and verdict.cause == DISK_FULL
    assert sorted(h.key for e in d.of(DiscardState, aborted) for h in e.handles) == ["A1", "B1"]
    assert d.of(DiscardLocation, aborted) == [DiscardLocation(checkpoint_id=1)]
    assert {task for task, _ in d.sent(NotifyCheckpointAborted, aborted)} == {A, B}
    failed = d.coordinator.stats.to_json()["latest"]["failed"]
    assert failed["failure_message"] == f"Failure to finalize checkpoint. Cause: {DISK_FULL}"
    assert d.coordinator.store.checkpoints == []


def test_a_checkpoint_being_finalized_neither_expires_nor_is_declined() -> None:
    """In Flink the last acknowledgement completes the checkpoint under the coordinator's
    lock: no timeout or decline can come between."""
    d = Driver(timeout=100)
    d.pending_checkpoint()
    d.now = 100
    assert not d.of(CheckpointAborted, d.send(TimerFired(key=CheckpointCanceller(1))))
    assert not d.of(CheckpointAborted, d.send(DeclineCheckpoint(task=A, checkpoint_id=1)))
    d.send(CheckpointFinalized(checkpoint_id=1, external_path=None))
    assert [e.checkpoint.checkpoint_id for e in d.of(CheckpointCompleted)] == [1]


def test_a_failover_while_finalizing_aborts_and_the_location_goes_after_the_storage_answered() -> (
    None
):
    d = Driver()
    d.pending_checkpoint()
    aborted = d.send(AbortPendingCheckpoints(reason=R.JOB_FAILOVER_REGION))
    assert d.of(CheckpointAborted, aborted)[0].reason is R.JOB_FAILOVER_REGION
    assert not d.of(DiscardLocation, aborted), "the metadata may still be written into it"
    late = d.send(CheckpointFinalized(checkpoint_id=1, external_path="/c/chk-1"))
    assert late == [DiscardLocation(checkpoint_id=1)]
    assert d.coordinator.store.checkpoints == [] and not d.of(CheckpointCompleted)


def test_a_newer_checkpoint_completing_first_subsumes_one_being_finalized() -> None:
    d = Driver(max_concurrent=2)
    d.pending_checkpoint(1)
    d.request()
    d.send(LocationInitialized(checkpoint_id=2, location="/c/chk-2"))
    d.ack_all(2)
    done = d.send(CheckpointFinalized(checkpoint_id=2, external_path="/c/chk-2"))
    assert [e.checkpoint_id for e in d.of(CheckpointAborted, done)] == [1]
    assert d.of(CheckpointAborted, done)[0].reason is R.CHECKPOINT_SUBSUMED
    assert d.send(CheckpointFinalized(checkpoint_id=1, external_path="/c/chk-1")) == [
        DiscardLocation(checkpoint_id=1)
    ]
    assert [c.checkpoint_id for c in d.coordinator.store.checkpoints] == [2]


# --- carrying the work out ------------------------------------------------------------------------


def _completed(checkpoint_id: int) -> CompletedCheckpoint:
    return CompletedCheckpoint(
        checkpoint_id=checkpoint_id,
        timestamp=0,
        completion_timestamp=1,
        props=CheckpointProperties.for_checkpoint(CoordinatorConfig().retention),
        task_states={},
    )


def test_carry_out_makes_the_location_and_writes_the_metadata(tmp_path: Path) -> None:
    storage = FileSystemCheckpointStorage(str(tmp_path), "job")
    props = CheckpointProperties.for_checkpoint(CoordinatorConfig().retention)
    made = carry_out(storage, InitializeLocation(checkpoint_id=3, props=props))
    assert made == LocationInitialized(checkpoint_id=3, location=str(tmp_path / "job" / "chk-3"))
    written = carry_out(storage, FinalizeCheckpoint(checkpoint=_completed(3)))
    assert written == CheckpointFinalized(
        checkpoint_id=3, external_path=str(tmp_path / "job" / "chk-3")
    )
    assert (tmp_path / "job" / "chk-3" / "_metadata").is_file()


def test_a_failed_location_names_the_storage_and_the_errno(tmp_path: Path) -> None:
    storage = FileSystemCheckpointStorage(str(tmp_path), "job")
    (tmp_path / "file").write_text("not a directory")
    props = CheckpointProperties.for_savepoint(forced=True, synchronous=False)
    target = tmp_path / "file" / "savepoints"
    failed = carry_out(
        storage, InitializeLocation(checkpoint_id=4, props=props, target=str(target))
    )
    assert failed == LocationInitializationFailed(
        checkpoint_id=4,
        error=f"savepoint directory {target}: creating the location of savepoint 4 "
        f"failed: Not a directory (errno 20, ENOTDIR): {target / 'savepoint-job-4'}",
    )
    configured = FileSystemCheckpointStorage(
        str(tmp_path), "job2", savepoint_dir=str(tmp_path / "file" / "sp")
    )  # no target: the savepoint-dir it was to go to, not the checkpoint directory
    failed = carry_out(configured, InitializeLocation(checkpoint_id=6, props=props))
    assert isinstance(failed, LocationInitializationFailed)
    assert failed.error.startswith(f"savepoint directory {tmp_path / 'file' / 'sp'}: creating")
    (tmp_path / "job" / "chk-5").mkdir()
    checkpoint = CheckpointProperties.for_checkpoint(CoordinatorConfig().retention)
    taken = carry_out(storage, InitializeLocation(checkpoint_id=5, props=checkpoint))
    assert isinstance(taken, LocationInitializationFailed)
    assert taken.error == (
        f"checkpoint storage {tmp_path / 'job'}: creating the location of checkpoint 5 failed: "
        f"{tmp_path / 'job' / 'chk-5'} exists already: a checkpoint directory is never reused"
    )


class _FullDisk:
    name = "/full"

    def initialize_location(
        self, checkpoint_id: int, props: CheckpointProperties, target: str | None
    ) -> str | None:
        raise OSError(errno.ENOSPC, "No space left on device", f"/full/chk-{checkpoint_id}")

    def finalize(self, checkpoint: CompletedCheckpoint) -> str | None:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_is_named_with_its_errno() -> None:
    props = CheckpointProperties.for_checkpoint(CoordinatorConfig().retention)
    assert carry_out(_FullDisk(), InitializeLocation(checkpoint_id=7, props=props)) == (
        LocationInitializationFailed(
            checkpoint_id=7,
            error="checkpoint storage /full: creating the location of checkpoint 7 failed: "
            "No space left on device (errno 28, ENOSPC): /full/chk-7",
        )
    )
    assert carry_out(_FullDisk(), FinalizeCheckpoint(checkpoint=_completed(7))) == (
        CheckpointFinalizationFailed(
            checkpoint_id=7,
            error="checkpoint storage /full: writing the metadata of checkpoint 7 failed: "
            "No space left on device (errno 28, ENOSPC)",
        )
    )


def test_a_storage_that_cannot_make_its_directory_says_where_and_why(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(CheckpointStorageError) as raised:
        FileSystemCheckpointStorage(str(blocker), "job")
    assert str(raised.value) == (
        f"checkpoint storage {blocker / 'job'}: creating the job's checkpoint directory failed: "
        f"Not a directory (errno 20, ENOTDIR): {blocker / 'job'}"
    )


def test_an_error_without_an_errno_keeps_its_own_text() -> None:
    assert (
        storage_error("/s", "writing", OSError("odd"))
        == "checkpoint storage /s: writing failed: odd"
    )
