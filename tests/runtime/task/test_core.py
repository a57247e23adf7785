"""``StreamTaskCore`` driven directly, mail by mail, as its actor shell drives it: the effects
and their order, input to output, checkpoints, the end of a bounded input, failures."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest

from runtime.barrier import ProtocolError
from runtime.barrier.mode import GateMode
from runtime.checkpoint import TaskStateSnapshot
from runtime.effects import (
    AcknowledgeAllRecordsProcessed,
    AnnounceCredit,
    CheckpointTakenOnTask,
    ScheduleTimer,
    Send,
    SendToOutput,
    TaskFailed,
    TaskFinished,
    Traced,
    WriteSnapshot,
)
from runtime.messages import (
    AcknowledgeCheckpoint,
    AllDataProcessed,
    CancelTask,
    DeclineCheckpoint,
    InputItem,
    NotifyCheckpointComplete,
    OutputCredit,
    SnapshotWritten,
    StartTask,
    StopTask,
    TimerFired,
    TriggerCheckpoint,
)
from runtime.network import Buffer, CheckpointBarrier, EndOfData, EndOfPartition
from runtime.reasons import CheckpointFailureReason
from runtime.task import IllegalTaskTransition, NetworkSettings, TaskRestore, TaskStatus
from runtime.task.core import OutputFlush
from tests.runtime.task.helpers import (
    ALIGNED,
    UNALIGNED,
    Driver,
    barrier,
    batch_mapper,
    flat_mapper,
    mapper,
    only,
    source,
    spec,
)


def relay(inputs: int = 2, mode: GateMode = GateMode.ALIGNED, **kw: object) -> Driver:
    """A task with ``inputs`` input channels, a pass-through map and one output channel."""
    driver = Driver(spec([mapper(lambda r: r)], inputs=inputs, outputs=1, mode=mode, **kw))  # type: ignore[arg-type]
    driver.send(StartTask())
    return driver


def sent(effects: Sequence[object]) -> list[object]:
    return [e.item for e in only(effects, SendToOutput)]


def test_aligned_checkpoint_effects_come_in_flinks_order_trigger_then_unblock() -> None:
    """The last barrier triggers the checkpoint: the barrier goes downstream and the snapshot
    is taken before the blocked channels resume (Flink's CollectingBarriers: trigger, then
    unblock)."""
    task = relay()
    task.send(InputItem(channel=0, item=barrier(1)))
    assert task.core.inputs is not None and task.core.inputs.gate.blocked() == [0]
    task.send(InputItem(channel=0, item=Buffer(["after"], 8)), run=False)
    effects = task.send(InputItem(channel=1, item=barrier(1)))
    facts = ("alignment_completed", "channel_resumed")
    kinds = [
        e.event if isinstance(e, Traced) else type(e).__name__
        for e in effects
        if not isinstance(e, Traced) or e.event in facts
    ]
    assert kinds[:3] == ["SendToOutput", "CheckpointTakenOnTask", "alignment_completed"]
    assert kinds.index("WriteSnapshot") < kinds.index("channel_resumed")
    resumed = [e for e in only(effects, Traced) if e.event == "channel_resumed"]
    assert [e.fields["channel"] for e in resumed] == [0, 1]
    assert sent(effects)[0] == barrier(1)
    after = sent(effects)[1]
    assert isinstance(after, Buffer) and list(after.records) == ["after"], (
        "the buffer behind the barrier comes after"
    )


def test_records_flow_through_the_chain_and_credit_goes_back_per_buffer() -> None:
    task = relay(1)
    effects = task.send(InputItem(channel=0, item=Buffer([1, 2, 3], 24)))
    assert only(effects, AnnounceCredit) == [AnnounceCredit(channel=0)]
    (out,) = sent(effects)
    assert isinstance(out, Buffer) and list(out.records) == [1, 2, 3]
    assert task.core.records_in == 3


def flushed_every(interval: int | None) -> Driver:
    """A one-input relay started at t=1000 whose partly filled buffers are flushed every
    ``interval`` ms (None: only full buffers and events leave it)."""
    network = NetworkSettings(pool_size=10, flush_interval=interval)
    task = Driver(spec([mapper(lambda r: r)], inputs=1, outputs=1, network=network))
    task.now = 1000
    task.send(StartTask())
    return task


def test_a_partly_filled_buffer_leaves_on_the_output_flushers_next_tick() -> None:
    """``execution.buffer-timeout.interval`` (Flink's OutputFlusher): records written into a
    buffer that is not full wait for the flusher's next tick, every interval from the task's
    start; a tick is asked for only while a buffer is partly filled."""
    task = flushed_every(100)
    task.now = 1250
    effects = task.send(InputItem(channel=0, item=Buffer([1, 2], 16)))
    assert sent(effects) == [], "not full: it waits for the tick"
    assert only(effects, ScheduleTimer) == [ScheduleTimer(key=OutputFlush(), due=1300)]
    task.now = 1280
    effects = task.send(InputItem(channel=0, item=Buffer([3], 8)))
    assert sent(effects) == [] and only(effects, ScheduleTimer) == [], "one tick asked for"
    task.now = 1300
    effects = task.send(TimerFired(key=OutputFlush()))
    (out,) = sent(effects)
    assert isinstance(out, Buffer) and list(out.records) == [1, 2, 3]
    assert only(effects, ScheduleTimer) == [], "nothing left to flush: no next tick"


def test_with_the_buffer_timeout_disabled_only_full_buffers_and_events_leave_a_task() -> None:
    """``execution.buffer-timeout.enabled: false``: no flusher; a barrier (an event) still
    takes the partly filled buffer out ahead of it."""
    task = flushed_every(None)
    effects = task.send(InputItem(channel=0, item=Buffer([1, 2], 16)))
    assert sent(effects) == [] and only(effects, ScheduleTimer) == []
    effects = task.send(InputItem(channel=0, item=barrier(1)))
    out, event = sent(effects)
    assert isinstance(out, Buffer) and list(out.records) == [1, 2] and event == barrier(1)


def test_at_a_zero_buffer_timeout_every_write_is_flushed() -> None:
    task = flushed_every(0)
    effects = task.send(InputItem(channel=0, item=Buffer([1, 2], 16)))
    (out,) = sent(effects)
    assert isinstance(out, Buffer) and list(out.records) == [1, 2]
    assert only(effects, ScheduleTimer) == []


def test_an_unaligned_barrier_overtakes_queued_input_and_persists_it() -> None:
    # credit for the three buffers it will send (one per input buffer: flushed after each)
    network = NetworkSettings(pool_size=10, initial_credits=3, flush_interval=0)
    task = relay(2, GateMode.ALIGNED_WITH_TIMEOUT, network=network)
    for n in range(3):
        task.send(InputItem(channel=0, item=Buffer([n], 8)), run=False)
    effects = task.send(InputItem(channel=0, item=barrier(1, UNALIGNED)), run=False)
    effects += task.step()  # the priority event first, ahead of the three buffers
    (taken,) = only(effects, CheckpointTakenOnTask)
    assert taken.unaligned and taken.consumed == {0: 0, 1: 0}
    assert not only(effects, WriteSnapshot), "channel 1's barrier is still missing"
    effects = task.run()
    assert [r for b in sent(effects) if isinstance(b, Buffer) for r in b.records] == [0, 1, 2]
    effects = task.send(InputItem(channel=1, item=barrier(1, UNALIGNED)))
    (write,) = only(effects, WriteSnapshot)
    assert [list(b.records) for b in write.snapshot.input_channels[0]] == [[0], [1], [2]]


def test_a_producer_writes_until_its_pool_is_exhausted_not_only_while_it_has_credit() -> None:
    network = NetworkSettings(pool_size=3, initial_credits=1, max_records=2, segment_size=1 << 20)
    task = Driver(spec([source(list(range(100)))], outputs=1, network=network))
    effects = task.send(StartTask())
    buffers = [b for b in sent(effects) if isinstance(b, Buffer)]
    assert len(buffers) == 1, "one credit: one buffer sent"
    partition = task.core.writer.partition  # type: ignore[union-attr]
    assert partition.in_use == 3 and not partition.is_available, "three more were written"
    assert task.core.is_backpressured
    effects = task.send(OutputCredit(channel=0, credits=2))
    assert len([b for b in sent(effects) if isinstance(b, Buffer)]) == 2
    assert task.core.records_in > 8, "sent buffers went back to the pool: the source read on"


def test_a_bounded_source_ends_its_data_then_its_final_checkpoint_then_its_partition() -> None:
    task = Driver(spec([source([1, 2, 3])], outputs=1, final_checkpoint=True))
    effects = task.send(StartTask())
    assert sent(effects)[-1] == EndOfData()
    assert task.core.status is TaskStatus.DATA_ENDED
    task.send(AllDataProcessed(channel=0))
    assert task.core.status is TaskStatus.DATA_ENDED, "no final checkpoint yet"
    effects = task.send(TriggerCheckpoint(checkpoint_id=7, timestamp=0, options=ALIGNED))
    assert sent(effects) == [barrier(7)]
    (write,) = only(effects, WriteSnapshot)
    assert write.snapshot.ended_input
    effects = task.send(SnapshotWritten(checkpoint_id=7, state=TaskStateSnapshot()))
    (report,) = only(effects, Send)
    assert isinstance(report.message, AcknowledgeCheckpoint)
    assert report.message.state is not None and report.message.state.task_finished
    effects = task.send(NotifyCheckpointComplete(checkpoint_id=7))
    assert sent(effects) == [EndOfPartition()]
    assert only(effects, TaskFinished) and task.core.status is TaskStatus.FINISHED


def test_a_downstream_task_ends_its_input_on_end_of_data_before_the_final_barrier() -> None:
    task = relay(2, final_checkpoint=True)
    for channel in (0, 1):
        effects = task.send(InputItem(channel=channel, item=EndOfData()))
        assert only(effects, AcknowledgeAllRecordsProcessed) == [
            AcknowledgeAllRecordsProcessed(channel=channel)
        ]
    assert task.core.status is TaskStatus.DATA_ENDED
    assert sent(effects)[-1] == EndOfData(), "its own end of data goes downstream"
    task.send(InputItem(channel=0, item=barrier(3)))
    effects = task.send(InputItem(channel=1, item=barrier(3)))
    (taken,) = only(effects, CheckpointTakenOnTask)
    assert taken.checkpoint_id == 3, "the final checkpoint covers the ended input"


def test_a_failing_user_function_fails_the_task_naming_the_operator() -> None:
    def explode(record: int) -> int:
        return 1 // (record - record)  # the user's bug

    task = Driver(spec([mapper(lambda r: r, 1, "Ok"), mapper(explode, 2, "Divide")], inputs=1))
    task.send(StartTask())
    effects = task.send(InputItem(channel=0, item=Buffer([5], 8)))
    (failed,) = only(effects, TaskFailed)
    assert failed.failure is not None
    assert failed.failure.operator == "map 'Divide' (map-2)"
    assert failed.failure.task == "task#0"
    assert failed.failure.exception == "ZeroDivisionError"
    assert "return 1 // (record - record)" in failed.failure.traceback
    assert failed.failure.traceback.count('File "') == 1, "trimmed to the user's frames"
    assert "in explode" in failed.failure.traceback
    assert failed.message.startswith("map 'Divide' (map-2) raised ZeroDivisionError")
    assert failed.failure.describe().startswith("map 'Divide' (map-2) (in task#0) raised")
    assert task.core.status is TaskStatus.FAILED
    assert task.send(InputItem(channel=0, item=Buffer([5], 8))) == [], "a failed task is gone"


def test_flat_map_returning_none_is_an_error_naming_the_operator() -> None:
    task = Driver(spec([flat_mapper(lambda r: None, 2, "Words")], inputs=1))
    task.send(StartTask())
    (failed,) = only(task.send(InputItem(channel=0, item=Buffer(["a b"], 8))), TaskFailed)
    assert failed.failure is not None and failed.failure.operator == "flat_map 'Words' (flat_map-2)"
    assert "returned None" in failed.failure.message


def test_map_batch_returning_an_empty_list_drops_the_buffer_and_none_is_an_error() -> None:
    task = Driver(spec([batch_mapper(lambda b: [])], inputs=1, outputs=1))
    task.send(StartTask())
    assert sent(task.send(InputItem(channel=0, item=Buffer([1], 8)))) == []
    task = Driver(spec([batch_mapper(lambda b: None)], inputs=1, outputs=1))
    task.send(StartTask())
    (failed,) = only(task.send(InputItem(channel=0, item=Buffer([1], 8))), TaskFailed)
    assert failed.failure is not None and "map_batch 'MapBatch' (map_batch-2)" in failed.message


def test_a_bug_in_the_core_is_not_a_task_failure_it_propagates() -> None:
    task = relay(2, GateMode.ALIGNED)
    with pytest.raises(ProtocolError, match="unaligned barrier"):
        task.send(InputItem(channel=0, item=barrier(1, UNALIGNED)))


def test_an_illegal_transition_raises_one_error_naming_status_and_event() -> None:
    task = Driver(spec([mapper(lambda r: r)], inputs=1))
    with pytest.raises(IllegalTaskTransition, match="status CREATED cannot take event 'stop'"):
        task.send(StopTask())


def test_a_task_that_is_not_running_declines_a_trigger_as_not_ready() -> None:
    task = Driver(spec([source([1])], outputs=1))
    effects = task.send(TriggerCheckpoint(checkpoint_id=1, timestamp=0, options=ALIGNED))
    (report,) = only(effects, Send)
    assert isinstance(report.message, DeclineCheckpoint)
    assert report.message.reason is CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_NOT_READY
    task.send(CancelTask())
    assert task.core.status is TaskStatus.CANCELED


def test_a_source_reads_no_more_than_its_free_buffers_hold_once_it_knows_its_record_size() -> None:
    """A source reads a batch at a time; a batch bounded only by ``ckptsim.buffer.records``
    filled hundreds of pool buffers at once with large records (outPoolUsage far above 1,
    and as much in-flight data for an unaligned checkpoint). After its first write, a read
    takes at most what the free buffers hold (at 110 estimated bytes a record, 10 fill a
    1100-byte buffer)."""
    network = NetworkSettings(pool_size=4, initial_credits=0, segment_size=1100, max_records=4096)
    task = Driver(spec([source(["x" * 100] * 10_000)], outputs=1, network=network))
    task.send(StartTask())
    partition = task.core.writer.partition  # type: ignore[union-attr]
    assert task.core.records_in == 4096, "the first read knows no record size yet"
    assert partition.in_use == 410 and not partition.is_available
    effects = task.send(OutputCredit(channel=0, credits=408))
    assert len(sent(effects)) == 408
    assert partition.in_use <= network.pool_size + 1, "one read, within the free buffers"
    assert 4096 < task.core.records_in <= 4096 + 4 * 10


def test_triggered_directly_with_unfinished_inputs_counts_the_barrier_on_each() -> None:
    """FLIP-147: a task whose upstream finished is triggered directly; the barrier counts
    as received on every channel whose partition has not ended (Flink's
    triggerUnfinishedChannelsCheckpoint)."""
    task = relay(2)
    task.send(InputItem(channel=0, item=EndOfPartition()))
    effects = task.send(TriggerCheckpoint(checkpoint_id=4, timestamp=0, options=ALIGNED))
    (taken,) = only(effects, CheckpointTakenOnTask)
    assert taken.checkpoint_id == 4
    assert isinstance(sent(effects)[0], CheckpointBarrier)


def test_recovered_in_flight_data_comes_first_even_if_input_arrives_before_the_start() -> None:
    """Channel state is recovered when the task is deployed (Flink recovers its gates before it
    requests its partitions): a buffer the network delivers before ``StartTask`` still comes
    after the recovered ones, and only it returns a credit."""
    restored = TaskRestore(checkpoint_id=3, input_channels={0: [Buffer(["old"], 8)]})
    task_spec = dataclasses.replace(
        spec([mapper(lambda r: r)], inputs=1, outputs=1), restore=restored
    )
    task = Driver(task_spec)
    task.send(InputItem(channel=0, item=Buffer(["new"], 8)))
    effects = task.send(StartTask())
    assert [r for b in sent(effects) if isinstance(b, Buffer) for r in b.records] == ["old", "new"]
    assert only(effects, AnnounceCredit) == [AnnounceCredit(channel=0)]
    (restored_fact,) = [e for e in only(effects, Traced) if e.event == "task_restored"]
    assert restored_fact.fields["input"] == {0: 1}
