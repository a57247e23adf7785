"""The vocabulary of a checkpoint: snapshot types, options carried by barriers, properties,
metrics a task reports, state handles and task identities. Names follow Flink's."""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any

#: Flink's ``CheckpointOptions.NO_ALIGNED_CHECKPOINT_TIME_OUT``: the barrier never times out.
NO_ALIGNED_CHECKPOINT_TIMEOUT = -1
#: Flink's ``CheckpointStoreUtil.INVALID_CHECKPOINT_ID``.
INVALID_CHECKPOINT_ID = -1


class SnapshotType(enum.Enum):
    """Flink's ``SnapshotType`` (``CheckpointType`` / ``SavepointType``)."""

    CHECKPOINT = "CHECKPOINT"
    FULL_CHECKPOINT = "FULL_CHECKPOINT"
    SAVEPOINT = "SAVEPOINT"
    SYNC_SAVEPOINT = "SYNC_SAVEPOINT"  # stop-with-savepoint (terminate)
    SYNC_SAVEPOINT_SUSPEND = "SYNC_SAVEPOINT_SUSPEND"

    @property
    def is_savepoint(self) -> bool:
        return self in _SAVEPOINTS

    @property
    def is_synchronous(self) -> bool:
        return self in (SnapshotType.SYNC_SAVEPOINT, SnapshotType.SYNC_SAVEPOINT_SUSPEND)


_SAVEPOINTS = frozenset(
    {SnapshotType.SAVEPOINT, SnapshotType.SYNC_SAVEPOINT, SnapshotType.SYNC_SAVEPOINT_SUSPEND}
)


class AlignmentType(enum.Enum):
    """How the barrier of a checkpoint is aligned (Flink's ``CheckpointOptions.AlignmentType``)."""

    AT_LEAST_ONCE = "AT_LEAST_ONCE"
    ALIGNED = "ALIGNED"
    UNALIGNED = "UNALIGNED"
    FORCED_ALIGNED = "FORCED_ALIGNED"


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointOptions:
    """What a barrier tells every task about its checkpoint (Flink's ``CheckpointOptions``)."""

    snapshot_type: SnapshotType = SnapshotType.CHECKPOINT
    alignment: AlignmentType = AlignmentType.ALIGNED
    aligned_checkpoint_timeout: int = NO_ALIGNED_CHECKPOINT_TIMEOUT
    target_location: str | None = None
    #: stop-with-savepoint with drain (Flink's ``SavepointType.shouldDrain``, a terminating
    #: savepoint): the sources advance to the end of event time (``MAX_WATERMARK``) before
    #: they emit the barrier, so every event-time timer fires and the windows flush
    drain: bool = False

    @classmethod
    def for_config(
        cls,
        snapshot_type: SnapshotType,
        *,
        exactly_once: bool = True,
        unaligned_enabled: bool = False,
        aligned_checkpoint_timeout: int = 0,
        target_location: str | None = None,
        drain: bool = False,
    ) -> CheckpointOptions:
        """The options the coordinator puts on a new checkpoint's barriers (``forConfig``)."""
        if snapshot_type.is_savepoint:
            alignment, timeout = AlignmentType.ALIGNED, NO_ALIGNED_CHECKPOINT_TIMEOUT
        elif not exactly_once:
            alignment, timeout = AlignmentType.AT_LEAST_ONCE, NO_ALIGNED_CHECKPOINT_TIMEOUT
        elif unaligned_enabled and aligned_checkpoint_timeout <= 0:
            alignment, timeout = AlignmentType.UNALIGNED, NO_ALIGNED_CHECKPOINT_TIMEOUT
        elif unaligned_enabled:
            alignment, timeout = AlignmentType.ALIGNED, aligned_checkpoint_timeout
        else:
            alignment, timeout = AlignmentType.ALIGNED, NO_ALIGNED_CHECKPOINT_TIMEOUT
        return cls(
            snapshot_type=snapshot_type,
            alignment=alignment,
            aligned_checkpoint_timeout=timeout,
            target_location=target_location,
            drain=drain and snapshot_type.is_synchronous,
        )

    @property
    def is_unaligned(self) -> bool:
        return self.alignment is AlignmentType.UNALIGNED

    @property
    def is_exactly_once(self) -> bool:
        return self.alignment is not AlignmentType.AT_LEAST_ONCE

    @property
    def needs_alignment(self) -> bool:
        """Whether the sender pauses its subpartition after emitting this barrier."""
        return self.is_exactly_once and (self.snapshot_type.is_savepoint or not self.is_unaligned)

    @property
    def is_timeoutable(self) -> bool:
        return self.alignment is AlignmentType.ALIGNED and self.aligned_checkpoint_timeout > 0

    def to_unaligned(self) -> CheckpointOptions:
        """Unaligned version of timeoutable aligned options; other options stay as they are."""
        if self.is_timeoutable:
            return dataclasses.replace(
                self,
                alignment=AlignmentType.UNALIGNED,
                aligned_checkpoint_timeout=NO_ALIGNED_CHECKPOINT_TIMEOUT,
            )
        return self


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointProperties:
    """Flink's ``CheckpointProperties``: forced, type and when the checkpoint is discarded."""

    forced: bool = False
    snapshot_type: SnapshotType = SnapshotType.CHECKPOINT
    discard_on_subsumed: bool = True
    discard_on_job_finished: bool = True
    discard_on_job_cancelled: bool = True
    discard_on_job_failed: bool = True
    discard_on_job_suspended: bool = True

    @property
    def is_savepoint(self) -> bool:
        return self.snapshot_type.is_savepoint

    @property
    def is_synchronous(self) -> bool:
        return self.snapshot_type.is_synchronous

    @property
    def can_be_subsumed(self) -> bool:
        return not self.is_savepoint

    @classmethod
    def for_checkpoint(cls, retention: ExternalizedCheckpointRetention) -> CheckpointProperties:
        if retention is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION:
            return cls(
                discard_on_job_cancelled=False,
                discard_on_job_failed=False,
                discard_on_job_suspended=False,
            )
        if retention is ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION:
            return cls(discard_on_job_failed=False, discard_on_job_suspended=False)
        return cls()

    @classmethod
    def for_savepoint(cls, *, forced: bool, synchronous: bool = False) -> CheckpointProperties:
        return cls(
            forced=forced,
            snapshot_type=SnapshotType.SYNC_SAVEPOINT if synchronous else SnapshotType.SAVEPOINT,
            discard_on_subsumed=False,
            discard_on_job_finished=False,
            discard_on_job_cancelled=False,
            discard_on_job_failed=False,
            discard_on_job_suspended=False,
        )


class ExternalizedCheckpointRetention(enum.Enum):
    """``execution.checkpointing.externalized-checkpoint-retention``."""

    DELETE_ON_CANCELLATION = "DELETE_ON_CANCELLATION"
    RETAIN_ON_CANCELLATION = "RETAIN_ON_CANCELLATION"
    NO_EXTERNALIZED_CHECKPOINTS = "NO_EXTERNALIZED_CHECKPOINTS"


@dataclass(frozen=True, slots=True)
class TaskId:
    """One subtask of a job vertex (Flink's ``ExecutionVertexID``)."""

    vertex: str
    subtask: int = 0

    def __str__(self) -> str:
        return f"{self.vertex}#{self.subtask}"


@dataclass(frozen=True, slots=True, kw_only=True)
class StateHandle:
    """A piece of snapshotted state: a key (file path or in-memory name) and its size in bytes."""

    key: str
    size: int = 0
    #: ``sha256:<hex>`` of the stored bytes, when the writer knows it
    checksum: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStateSnapshot:
    """The state one subtask acknowledges for one checkpoint."""

    handles: tuple[StateHandle, ...] = ()
    #: incremental (persisted this time) size; equals the full size for full snapshots
    checkpointed_size: int | None = None
    #: FLIP-147 (Flink's ``TaskStateSnapshot.isTaskFinished``): every operator of the subtask
    #: had ended when it took this snapshot; once the checkpoint completes the task finishes
    task_finished: bool = False

    @property
    def state_size(self) -> int:
        return sum(h.size for h in self.handles)

    @property
    def persisted_size(self) -> int:
        return self.state_size if self.checkpointed_size is None else self.checkpointed_size


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointMetrics:
    """What a task reports with its acknowledgement (Flink's ``CheckpointMetrics``), in ms/bytes."""

    bytes_processed_during_alignment: int = 0
    bytes_persisted_during_alignment: int = 0
    alignment_duration_ms: int = 0
    sync_duration_ms: int = 0
    async_duration_ms: int = 0
    checkpoint_start_delay_ms: int = 0
    unaligned_checkpoint: bool = False
    total_bytes_persisted: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletedCheckpoint:
    """A finished checkpoint or savepoint: what the completed-checkpoint store retains."""

    checkpoint_id: int
    timestamp: int
    completion_timestamp: int
    props: CheckpointProperties
    task_states: dict[TaskId, TaskStateSnapshot] = dataclasses.field(default_factory=dict)
    external_path: str | None = None
    #: tasks that had finished when the checkpoint was triggered (FLIP-147): not restarted
    finished_tasks: frozenset[TaskId] = frozenset()
    #: the final source positions of finished tasks that ran a source (``TaskStateSnapshot
    #: .final_positions`` of their last checkpoint)
    final_positions: dict[TaskId, dict[str, Any]] = dataclasses.field(default_factory=dict)

    @property
    def is_savepoint(self) -> bool:
        return self.props.is_savepoint

    @property
    def state_size(self) -> int:
        return sum(s.state_size for s in self.task_states.values())

    def handles(self) -> tuple[StateHandle, ...]:
        return tuple(h for s in self.task_states.values() for h in s.handles)


@dataclass(frozen=True, slots=True, kw_only=True)
class SavepointRequest:
    """A savepoint a job takes on its own: ``at_ms`` after it started, or once its sources
    read ``after_records`` records; ``stop``: stop-with-savepoint (a synchronous savepoint,
    then the job finishes); ``drain`` (with ``stop``): the sources first advance to the end of
    event time, as ``flink stop --drain``."""

    at_ms: int | None = None
    after_records: int | None = None
    directory: str | None = None
    stop: bool = False
    drain: bool = False
