"""``SubtaskCheckpointCoordinator``: the steps of one task's checkpoint, its asynchronous
part's outcome, aborts and notifications."""

from __future__ import annotations

from typing import Any

from runtime.barrier.mode import GateMode
from runtime.checkpoint import StateHandle, TaskId, TaskStateSnapshot
from runtime.effects import (
    CheckpointTakenOnTask,
    PrecommitCollected,
    PublishCollected,
    Role,
    Send,
    SendToOutput,
    Traced,
    WriteSnapshot,
)
from runtime.messages import (
    AcknowledgeCheckpoint,
    DeclineCheckpoint,
    SnapshotFailed,
    SnapshotWritten,
)
from runtime.network import Buffer, CancelCheckpointMarker
from runtime.operators import OperatorContext
from runtime.partition import ChannelSelector, Partitioner
from runtime.reasons import CheckpointFailureReason
from runtime.state import key_group_range
from runtime.task.chain import OperatorChain
from runtime.task.checkpointing import SubtaskCheckpointCoordinator
from runtime.task.input import StreamInputProcessor
from runtime.task.result_partition import RecordWriter, ResultPartition
from tests.runtime.task.helpers import UNALIGNED, barrier, collect, only, reducer


def coordinator(
    inputs: StreamInputProcessor | None = None, credits: int = 0
) -> SubtaskCheckpointCoordinator:
    chain = OperatorChain([reducer(lambda r: r, lambda a, b: a + b)], checkpointing=True)
    chain.open(
        OperatorContext(
            subtask=0, parallelism=1, max_parallelism=128, key_groups=key_group_range(0, 1, 128)
        ),
        None,
    )
    partition = ResultPartition(
        1,
        pool_size=10,
        max_buffers_per_channel=10,
        initial_credits=credits,
        segment_size=1 << 20,
        max_records=1,
    )
    writer = RecordWriter([(ChannelSelector(Partitioner.FORWARD, 1), "next")], partition)
    return SubtaskCheckpointCoordinator(
        TaskId("t", 0), attempt=0, chain=chain, writer=writer, inputs=inputs
    )


def test_an_aligned_checkpoint_sends_the_barrier_snapshots_and_writes_at_once() -> None:
    coord = coordinator()
    coord.chain.process([1, 1])
    taken, effects = coord.checkpoint_state(
        barrier(2), start_delay_ms=3, alignment_ms=4, processed_bytes=10, ended_input=False
    )
    assert taken
    kinds = [type(e) for e in effects if type(e).__name__ != "Traced"]
    assert kinds == [SendToOutput, CheckpointTakenOnTask, WriteSnapshot]
    (write,) = only(effects, WriteSnapshot)
    assert write.snapshot.operator_states["reduce-3"]  # the keyed state of the reduce
    # the snapshot is pending: its written state is acknowledged
    (report,) = only(
        coord.snapshot_written(
            SnapshotWritten(checkpoint_id=2, state=TaskStateSnapshot(), async_duration_ms=0)
        ),
        Send,
    )
    assert report.to is Role.COORDINATOR
    assert isinstance(report.message, AcknowledgeCheckpoint) and report.message.checkpoint_id == 2


def test_an_unaligned_checkpoint_keeps_the_overtaken_output_and_writes_after_its_last_barrier() -> (
    None
):
    inputs = StreamInputProcessor(1, GateMode.ALIGNED_WITH_TIMEOUT)
    coord = coordinator(inputs)
    coord.writer.emit([7, 8])  # type: ignore[union-attr]  # queued: no credit
    _, effects = coord.checkpoint_state(
        barrier(1, UNALIGNED),
        start_delay_ms=0,
        alignment_ms=None,
        processed_bytes=None,
        ended_input=False,
    )
    (taken_event,) = only(effects, CheckpointTakenOnTask)
    assert taken_event.output_persisted == {0: 2}
    assert not only(effects, WriteSnapshot)
    effects = coord.all_barriers_received(1, 9, 100)
    assert isinstance(effects[0], Traced) and effects[0].event == "alignment_completed"
    (write,) = only(effects, WriteSnapshot)
    assert [list(b.records) for b in write.snapshot.output_channels[0]] == [[7], [8]]
    assert write.snapshot.persisted_bytes == sum(b.size for b in write.snapshot.output_channels[0])


def test_the_acknowledgement_carries_the_metrics_the_sync_part_included() -> None:
    coord = coordinator()
    coord.checkpoint_state(
        barrier(1), start_delay_ms=5, alignment_ms=2, processed_bytes=7, ended_input=False
    )
    coord.sync_part_measured(1, 3)
    state = TaskStateSnapshot(handles=(StateHandle(key="k", size=99),))
    (report,) = only(
        coord.snapshot_written(SnapshotWritten(checkpoint_id=1, state=state, async_duration_ms=4)),
        Send,
    )
    assert report.to is Role.COORDINATOR and isinstance(report.message, AcknowledgeCheckpoint)
    metrics = report.message.metrics
    assert metrics is not None
    assert (metrics.checkpoint_start_delay_ms, metrics.alignment_duration_ms) == (5, 2)
    assert (metrics.sync_duration_ms, metrics.async_duration_ms) == (3, 4)
    assert metrics.total_bytes_persisted == 99
    # no longer pending: a second outcome of the same write is not acknowledged again
    assert coord.snapshot_written(SnapshotWritten(checkpoint_id=1, state=state)) == []


def _traced_before_sent(effects: list[Any], event: str) -> bool:
    """The task's fact is traced before its message to the coordinator leaves: once sent, the
    checkpoint may complete (or abort) before a fact traced after it is written."""
    traced = [i for i, e in enumerate(effects) if isinstance(e, Traced) and e.event == event]
    sent = [i for i, e in enumerate(effects) if isinstance(e, Send)]
    return bool(traced) and bool(sent) and traced[0] < sent[0]


def test_the_acknowledgement_is_traced_before_it_leaves() -> None:
    coord = coordinator()
    coord.checkpoint_state(
        barrier(1), start_delay_ms=0, alignment_ms=0, processed_bytes=0, ended_input=False
    )
    state = TaskStateSnapshot(handles=(StateHandle(key="k", size=1),))
    effects = coord.snapshot_written(SnapshotWritten(checkpoint_id=1, state=state))
    assert _traced_before_sent(effects, "checkpoint_acknowledged")


def test_a_failed_asynchronous_part_declines() -> None:
    coord = coordinator()
    coord.checkpoint_state(
        barrier(1), start_delay_ms=0, alignment_ms=0, processed_bytes=0, ended_input=False
    )
    (report,) = only(
        coord.snapshot_failed(SnapshotFailed(checkpoint_id=1, message="disk full")), Send
    )
    assert report.to is Role.COORDINATOR and isinstance(report.message, DeclineCheckpoint)
    assert report.message.reason is CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION
    assert coord.snapshot_failed(SnapshotFailed(checkpoint_id=1, message="again")) == []


def test_an_abort_on_barrier_declines_and_tells_downstream() -> None:
    coord = coordinator()
    effects = coord.abort_on_barrier(3, CheckpointFailureReason.CHECKPOINT_DECLINED_SUBSUMED)
    (decline,) = only(effects, Send)
    assert decline.to is Role.COORDINATOR and isinstance(decline.message, DeclineCheckpoint)
    assert _traced_before_sent(effects, "checkpoint_declined")
    assert only(effects, SendToOutput) == [SendToOutput(channel=0, item=CancelCheckpointMarker(3))]


def test_older_checkpoints_are_ignored_and_one_notified_aborted_is_not_taken() -> None:
    coord = coordinator()
    coord.checkpoint_state(
        barrier(5), start_delay_ms=0, alignment_ms=0, processed_bytes=0, ended_input=False
    )
    assert not coord.checkpoint_state(
        barrier(4), start_delay_ms=0, alignment_ms=0, processed_bytes=0, ended_input=False
    )[0]
    coord.notify_aborted(6)
    taken, effects = coord.checkpoint_state(
        barrier(6), start_delay_ms=0, alignment_ms=0, processed_bytes=0, ended_input=False
    )
    assert not taken
    assert only(effects, SendToOutput) == [SendToOutput(channel=0, item=CancelCheckpointMarker(6))]


def test_a_completed_checkpoint_commits_the_sinks_transaction() -> None:
    chain = OperatorChain([collect()], checkpointing=True, task="t#0")
    chain.open(
        OperatorContext(
            subtask=0, parallelism=1, max_parallelism=128, key_groups=key_group_range(0, 1, 128)
        ),
        None,
    )
    coord = SubtaskCheckpointCoordinator(
        TaskId("t", 0), attempt=0, chain=chain, writer=None, inputs=None
    )
    records = [Buffer([1], 8)]
    chain.process(records)
    _, effects = coord.checkpoint_state(
        barrier(1), start_delay_ms=0, alignment_ms=0, processed_bytes=0, ended_input=True
    )
    (write,) = only(effects, WriteSnapshot)
    assert write.snapshot.operator_states["sink-out"] == {"writer": "t#0", "pending": [1]}
    assert write.snapshot.ended_input
    assert [e.txn for e in only(effects, PrecommitCollected)] == [1]
    coord.notify_complete(1)
    assert [e.txn for e in only(chain.take_effects(), PublishCollected)] == [1]
