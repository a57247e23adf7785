"""``SubtaskCheckpointCoordinator``: how one task takes a checkpoint (Flink's
``SubtaskCheckpointCoordinatorImpl`` with its ``AsyncCheckpointRunnable``).

``checkpoint_state`` runs when the task is triggered (a source, or a task whose upstream all
finished) or when its barrier handler triggers on barriers:

1. the operators may emit records ahead of the barrier (``prepareSnapshotPreBarrier``);
2. the barrier goes out on every output channel: behind the queued buffers when aligned,
   ahead of them when unaligned (the buffers it overtook are the output channel state);
3. the synchronous snapshot of every operator (the sinks pre-commit their transaction);
4. the asynchronous part (``WriteSnapshot``; the runtime reports ``SnapshotWritten`` or
   ``SnapshotFailed``) once the alignment is over: an unaligned checkpoint waits for its last
   barrier, so that its input channel state (the in-flight buffers the gate persisted) is
   complete;
5. the acknowledgement with the state handles and the metrics, or a decline with its reason.

An abort on barrier (a cancel marker, a subsumed or timed-out alignment) declines and sends a
cancel marker downstream; an abort notification from the coordinator drops the pending
snapshot. Notifications of completion commit the sinks' transactions (``notify`` the chain).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass
from typing import Any

from runtime.checkpoint import CheckpointMetrics, CheckpointOptions, TaskId
from runtime.effects import (
    CheckpointTakenOnTask,
    Role,
    Send,
    TaskEffect,
    Traced,
    WriteSnapshot,
)
from runtime.messages import (
    AcknowledgeCheckpoint,
    DeclineCheckpoint,
    SnapshotFailed,
    SnapshotWritten,
)
from runtime.network import Buffer, CancelCheckpointMarker, CheckpointBarrier
from runtime.reasons import CheckpointFailureReason
from runtime.snapshot import TaskSnapshot
from runtime.task.chain import OperatorChain
from runtime.task.input import StreamInputProcessor
from runtime.task.result_partition import RecordWriter

#: ids of checkpoints notified aborted that a task remembers (Flink: 128)
MAX_REMEMBERED_ABORTS = 128


@dataclass(slots=True)
class PendingSnapshot:
    checkpoint_id: int
    options: CheckpointOptions
    operator_states: dict[str, Any]
    output_channels: dict[int, list[Buffer]]
    start_delay_ms: int
    #: None while an unaligned checkpoint still waits for barriers
    alignment_ms: int | None
    processed_bytes: int | None
    ended_input: bool = False
    #: taken after the task's data ended (FLIP-147): once a checkpoint this new completes, the
    #: task finishes (its acknowledgement says ``task_finished``)
    finishing: bool = False
    persisted_bytes: int = 0
    sync_ms: int = 0


class SubtaskCheckpointCoordinator:
    def __init__(
        self,
        task: TaskId,
        *,
        attempt: int,
        chain: OperatorChain,
        writer: RecordWriter | None,
        inputs: StreamInputProcessor | None,
    ) -> None:
        self.task = task
        self.attempt = attempt
        self.chain = chain
        self.writer = writer
        self.inputs = inputs
        self.pending: dict[int, PendingSnapshot] = {}
        self._aborted: deque[int] = deque(maxlen=MAX_REMEMBERED_ABORTS)
        #: the newest checkpoint this task took (or restored)
        self.last_checkpoint_id = -1

    def restored(self, checkpoint_id: int) -> None:
        self.last_checkpoint_id = checkpoint_id

    # --- taking a checkpoint ----------------------------------------------------------------------

    def checkpoint_state(
        self,
        barrier: CheckpointBarrier,
        *,
        start_delay_ms: int,
        alignment_ms: int | None,
        processed_bytes: int | None,
        ended_input: bool,
        finishing: bool = False,
    ) -> tuple[bool, list[TaskEffect]]:
        """Take checkpoint ``barrier`` (steps 1 to 4); returns whether it was taken (not when
        it is older than the last one, or was notified aborted already) and the effects.
        ``ended_input``: the operators had ended (recorded in the snapshot, for a restore);
        ``finishing``: the task's data ended in this attempt, so it finishes once this
        checkpoint completes (the acknowledgement's ``task_finished``)."""
        cid = barrier.checkpoint_id
        out: list[TaskEffect] = []
        if cid <= self.last_checkpoint_id:
            return False, out  # out of order
        self.last_checkpoint_id = cid
        if cid in self._aborted:
            out.extend(self._cancel_downstream(cid))
            return False, out
        # 1. the operators may emit records ahead of the barrier
        produced = self.chain.prepare_snapshot_pre_barrier(cid)
        # 2. the barrier goes out (ahead of the unsent buffers when unaligned)
        output_state: dict[int, list[Buffer]] = {}
        emitted: dict[int, int] = {}
        if self.writer is not None:
            self.writer.emit(produced)
            partition = self.writer.partition
            emitted = partition.emitted()
            output_state = partition.broadcast_event(barrier, priority=barrier.is_unaligned)
            out.extend(self.writer.poll_output())
        # 3. the synchronous snapshot
        states = self.chain.snapshot_state(cid)
        out.extend(self.chain.take_effects())
        consumed = dict(enumerate(self.inputs.consumed)) if self.inputs is not None else {}
        out.append(
            CheckpointTakenOnTask(
                checkpoint_id=cid,
                unaligned=barrier.is_unaligned,
                start_delay_ms=start_delay_ms,
                alignment_ms=alignment_ms,
                emitted=emitted,
                consumed=consumed,
                output_persisted=record_counts(output_state),
                timers=self.chain.timer_counts(),
                state_entries=self.chain.state_entry_counts(),
            )
        )
        if alignment_ms is not None and self.inputs is not None:
            out.append(_alignment_completed(cid, alignment_ms, processed_bytes or 0))
        pending = PendingSnapshot(
            checkpoint_id=cid,
            options=barrier.options,
            operator_states=states,
            output_channels=output_state,
            start_delay_ms=start_delay_ms,
            alignment_ms=alignment_ms,
            processed_bytes=processed_bytes,
            ended_input=ended_input,
            finishing=finishing,
        )
        self.pending[cid] = pending
        # 4. the asynchronous part, once the alignment is over
        if alignment_ms is not None:
            out.extend(self._write(pending))
        return True, out

    def all_barriers_received(
        self, checkpoint_id: int, alignment_ms: int, processed_bytes: int
    ) -> list[TaskEffect]:
        """An unaligned checkpoint's last barrier arrived: its in-flight data is complete."""
        pending = self.pending.get(checkpoint_id)
        if pending is None or pending.alignment_ms is not None:
            return []
        pending.alignment_ms, pending.processed_bytes = alignment_ms, processed_bytes
        out: list[TaskEffect] = [_alignment_completed(checkpoint_id, alignment_ms, processed_bytes)]
        out.extend(self._write(pending))
        return out

    def _write(self, pending: PendingSnapshot) -> list[TaskEffect]:
        cid = pending.checkpoint_id
        inflight = self.inputs.take_inflight(cid) if self.inputs is not None else {}
        snapshot = TaskSnapshot(
            checkpoint_id=cid,
            task=self.task,
            operator_states=pending.operator_states,
            input_channels=inflight,
            output_channels=pending.output_channels,
            ended_input=pending.ended_input,
        )
        pending.persisted_bytes = snapshot.persisted_bytes
        return [
            Traced(
                event="channel_state_captured",
                fields={
                    "checkpoint_id": cid,
                    "input": record_counts(snapshot.input_channels),
                    "output": record_counts(snapshot.output_channels),
                },
            ),
            WriteSnapshot(snapshot=snapshot, location=pending.options.target_location),
        ]

    def sync_part_measured(self, checkpoint_id: int, duration_ms: int) -> None:
        pending = self.pending.get(checkpoint_id)
        if pending is not None:
            pending.sync_ms = duration_ms

    # --- the asynchronous part's outcome ---------------------------------------------------------

    def snapshot_written(self, msg: SnapshotWritten) -> list[TaskEffect]:
        pending = self.pending.pop(msg.checkpoint_id, None)
        if pending is None:
            return []  # aborted meanwhile
        metrics = CheckpointMetrics(
            bytes_processed_during_alignment=pending.processed_bytes or 0,
            bytes_persisted_during_alignment=pending.persisted_bytes,
            alignment_duration_ms=pending.alignment_ms or 0,
            sync_duration_ms=pending.sync_ms,
            async_duration_ms=msg.async_duration_ms,
            checkpoint_start_delay_ms=pending.start_delay_ms,
            unaligned_checkpoint=pending.options.is_unaligned,
            total_bytes_persisted=msg.state.state_size,
        )
        # the fact goes to the trace before the acknowledgement leaves: once sent, the
        # checkpoint may complete (and a test may kill this task's process) before a fact
        # traced after it is written, and the trace would show a completion nobody acknowledged
        return [
            Traced(event="checkpoint_acknowledged", fields={"checkpoint_id": msg.checkpoint_id}),
            Send(
                to=Role.COORDINATOR,
                message=AcknowledgeCheckpoint(
                    task=self.task,
                    attempt=self.attempt,
                    checkpoint_id=msg.checkpoint_id,
                    state=(
                        dataclasses.replace(msg.state, task_finished=True)
                        if pending.finishing
                        else msg.state
                    ),
                    metrics=metrics,
                ),
            ),
        ]

    def snapshot_failed(self, msg: SnapshotFailed) -> list[TaskEffect]:
        if self.pending.pop(msg.checkpoint_id, None) is None:
            return []
        return self.decline(
            msg.checkpoint_id, CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION, msg.message
        )

    # --- aborts and notifications ----------------------------------------------------------------

    def abort_on_barrier(
        self, checkpoint_id: int, reason: CheckpointFailureReason
    ) -> list[TaskEffect]:
        """The barrier handler gave up on the checkpoint: decline it, tell downstream."""
        self.pending.pop(checkpoint_id, None)
        if self.inputs is not None:
            self.inputs.discard_inflight(checkpoint_id)
        out = self.decline(checkpoint_id, reason, None)
        out.extend(self._cancel_downstream(checkpoint_id))
        return out

    def notify_aborted(self, checkpoint_id: int) -> None:
        if checkpoint_id > self.last_checkpoint_id:
            self._aborted.append(checkpoint_id)
        if self.pending.pop(checkpoint_id, None) is not None and self.inputs is not None:
            self.inputs.discard_inflight(checkpoint_id)
        self.chain.notify_checkpoint_aborted(checkpoint_id)

    def notify_complete(self, checkpoint_id: int) -> None:
        self.chain.notify_checkpoint_complete(checkpoint_id)

    def decline(
        self, checkpoint_id: int, reason: CheckpointFailureReason, message: str | None
    ) -> list[TaskEffect]:
        return [  # traced first, as an acknowledgement (``snapshot_written``)
            Traced(
                event="checkpoint_declined",
                fields={"checkpoint_id": checkpoint_id, "reason": reason.name},
            ),
            Send(
                to=Role.COORDINATOR,
                message=DeclineCheckpoint(
                    task=self.task,
                    attempt=self.attempt,
                    checkpoint_id=checkpoint_id,
                    reason=reason,
                    message=message,
                ),
            ),
        ]

    def _cancel_downstream(self, checkpoint_id: int) -> list[TaskEffect]:
        if self.writer is None:
            return []
        self.writer.partition.broadcast_event(CancelCheckpointMarker(checkpoint_id))
        return self.writer.poll_output()


def record_counts(channels: dict[int, list[Buffer]]) -> dict[int, int]:
    """Records of channel state (in-flight buffers), per channel in channel order."""
    return {c: sum(len(b.records) for b in buffers) for c, buffers in sorted(channels.items())}


def _alignment_completed(checkpoint_id: int, alignment_ms: int, processed_bytes: int) -> Traced:
    """Every barrier of the checkpoint reached the task."""
    return Traced(
        event="alignment_completed",
        fields={
            "checkpoint_id": checkpoint_id,
            "alignment_ms": alignment_ms,
            "bytes_processed": processed_bytes,
        },
    )
