"""``StreamTaskCore``: one subtask as a pure state machine (Flink's ``StreamTask``).

``handle(msg, now) -> effects`` is its only entry point; the actor shell delivers mails and
carries out the effects. It is composed of Flink's seams:

- ``MailboxProcessor`` (``mailbox``): when the default action runs;
- ``OperatorChain`` (``chain``): the operators, one call per buffer; user code is wrapped;
- ``StreamInputProcessor`` (``input``): the input gate (the conformance harness's gate) with
  its channels' queues and the barrier handler;
- ``SubtaskCheckpointCoordinator`` (``checkpointing``): snapshots, channel state, the sinks'
  transactions (``sinks``);
- ``RecordWriter`` over a ``ResultPartition`` (``result_partition``): output buffers, the
  buffer pool, credits;
- the task's status (``status``), with its transition table.

The end of a bounded input follows FLIP-147 as Flink does it: when its input ends (a source
reads no more; every input channel delivered end of data) the task ends its operators and
sends ``EndOfData``; it keeps taking checkpoints; once its inputs' partitions ended, its output
was processed downstream and a checkpoint taken after its end of data completed (its final
checkpoint, which commits its sinks' last transactions), it sends ``EndOfPartition`` and
finishes. Every task of a bounded job thus ends its data before the same final checkpoint.

An exception in user code fails the task (``TaskFailed`` naming the operator, with the
user's traceback); any other exception is a bug and propagates.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import length_hint
from typing import Any, assert_never

from runtime.barrier.handler import AlignmentTimer
from runtime.checkpoint import CheckpointOptions
from runtime.effects import (
    AbortCheckpointOnBarrier,
    AllBarriersReceived,
    CancelTimer,
    ConvertToPriorityEvent,
    GateEffect,
    ResumeConsumption,
    Role,
    ScheduleTimer,
    Send,
    TaskCanceled,
    TaskEffect,
    TaskFailed,
    TaskFinished,
    TaskStopped,
    Traced,
    TriggerCheckpointOnBarrier,
)
from runtime.failure import TaskFailure, UserCodeError, describe_user_error
from runtime.messages import (
    AllDataProcessed,
    CancelTask,
    InjectFailure,
    InputItem,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    OutputCredit,
    ReportedWatermark,
    RunDefaultAction,
    SnapshotFailed,
    SnapshotWritten,
    StartTask,
    StopTask,
    SyncPartMeasured,
    TaskMessage,
    TimerFired,
    TriggerCheckpoint,
    UserCodeFailed,
    WatermarkAlignment,
)
from runtime.network import (
    Buffer,
    CheckpointBarrier,
    EndOfData,
    EndOfPartition,
    Watermark,
    WatermarkStatus,
)
from runtime.operators import OperatorContext, TaskTime
from runtime.partition import ChannelSelector
from runtime.reasons import CheckpointFailureReason
from runtime.state import key_group_range
from runtime.task.chain import ChainOutput, OperatorChain
from runtime.task.checkpointing import SubtaskCheckpointCoordinator, record_counts
from runtime.task.input import InputPoll, StreamInputProcessor
from runtime.task.mailbox import MailboxProcessor, MailboxStep
from runtime.task.result_partition import RecordWriter, ResultPartition
from runtime.task.spec import TaskSpec
from runtime.task.status import TaskEvent, TaskStatus, transition
from runtime.watermarks import MAX_WATERMARK, MIN_WATERMARK


@dataclass(frozen=True, slots=True)
class SourceWakeUp:
    """Timer key: a rate-limited source may read again."""


@dataclass(frozen=True, slots=True)
class ReportWatermark:
    """Timer key: a source of a watermark alignment group reports its watermark (every
    update interval, as Flink's ``SourceOperator``)."""


@dataclass(frozen=True, slots=True)
class OutputFlush:
    """Timer key: the output flusher's tick (``execution.buffer-timeout.interval``)."""


@dataclass(frozen=True, slots=True)
class ProcessingTimeWakeUp:
    """Timer key: an operator's processing-time timer (or periodic watermark) is due."""


def _is_source_wake_up(msg: TaskMessage) -> bool:
    return type(msg) is TimerFired and type(msg.key) is SourceWakeUp


class StreamTaskCore:
    def __init__(
        self,
        spec: TaskSpec,
        *,
        epoch_ms: int = 0,
        sink_writers: Mapping[str, str] | None = None,
    ) -> None:
        """``sink_writers``: by sink uid, the writer id its connector names part files by
        (a file sink's snapshots record its lineage by them)."""
        self.spec = spec
        #: the clocks the operators read: processing time is the job clock plus its epoch
        self.time = TaskTime(epoch_ms)
        #: the processing-time wake-up asked for (job clock ms), if any
        self._wakeup: int | None = None
        #: Flink's ``OutputFlusher``: partly filled buffers leave the task on ticks every
        #: ``flush_interval`` ms from its start (0: after every write; None: never); a tick is
        #: asked for only while a buffer is partly filled (a tick with none flushes nothing)
        self._flush_interval = spec.network.flush_interval
        self._flush_epoch = 0
        self._flush_due: int | None = None
        self.task = spec.task
        self.status = TaskStatus.CREATED
        self.chain = OperatorChain(
            spec.operators,
            checkpointing=spec.checkpointing,
            task=str(spec.task),
            writer_ids=sink_writers,
            side_outputs=frozenset(e.side_output for e in spec.outputs if e.side_output),
        )
        self.is_source = self.chain.source is not None
        self.writer: RecordWriter | None = None
        if spec.outputs:
            net = spec.network
            partition = ResultPartition(
                sum(edge.num_channels for edge in spec.outputs),
                pool_size=net.pool_size,
                max_buffers_per_channel=net.max_buffers_per_channel,
                initial_credits=net.initial_credits,
                segment_size=net.segment_size,
                max_records=net.max_records,
            )
            selectors = [
                (
                    ChannelSelector(
                        edge.partitioner,
                        edge.num_channels,
                        key_selector=edge.key_selector,
                        start=spec.task.subtask,
                        max_parallelism=spec.max_parallelism,
                    ),
                    edge.target,
                )
                for edge in spec.outputs
            ]
            self.writer = RecordWriter(
                selectors, partition, [edge.side_output for edge in spec.outputs]
            )
        self.inputs: StreamInputProcessor | None = None
        if spec.num_inputs:
            self.inputs = StreamInputProcessor(
                spec.num_inputs,
                spec.gate_mode,
                checkpoints_after_tasks_finish=spec.checkpoints_after_tasks_finish,
                max_buffered_bytes=spec.max_buffered_bytes,
                local_channels=spec.local_inputs,
                channel_inputs=spec.channel_inputs,
            )
        restore = spec.restore
        if restore is not None:
            # channel state first: recovered in-flight data comes before anything the network
            # delivers (Flink recovers the gates before it requests the partitions)
            if self.writer is not None:
                for channel, buffers in sorted(restore.output_channels.items()):
                    self.writer.partition.restore(channel, buffers)
            if self.inputs is not None:
                self.inputs.restore(restore.input_channels)
        self.mailbox = MailboxProcessor()
        self.checkpoints = SubtaskCheckpointCoordinator(
            spec.task,
            attempt=spec.attempt,
            chain=self.chain,
            writer=self.writer,
            inputs=self.inputs,
        )
        #: the operators ended (in this attempt, or before the restored checkpoint)
        self._operators_ended = False
        #: restored as finished (FLIP-147): no final checkpoint to wait for
        self._finished_on_restore = False
        #: FLIP-147: the first checkpoint taken after the end of data, and whether a
        #: checkpoint at least that new completed
        self._final_checkpoint_min: int | None = None
        self._final_checkpoint_done = False
        #: ready to finish: the next mailbox step finishes, after the mails already queued
        #: (Flink drains the mailbox before it closes: a trigger that came with the final
        #: notification is still taken, not declined)
        self._finish_pending = False
        self._out: list[TaskEffect] = []
        self._now = 0
        self.failure: TaskFailure | None = None
        #: records read (a source) or taken from the input channels, for progress reports
        self.records_in = 0
        #: the last checkpoint's alignment and start delay, ms (Flink's task metrics)
        self.last_alignment_ms = 0
        self.last_start_delay_ms = 0
        #: FLIP-182: a source of a watermark alignment group: its watermark generator and
        #: (group, max drift, update interval); the largest watermark it may have emitted and
        #: go on reading (the scheduler's last ``WatermarkAlignment``), and whether it paused
        self._aligned = self.chain.source_watermarks()
        alignment = self._aligned.strategy.alignment if self._aligned is not None else None
        self.alignment: tuple[str, int, int] | None = alignment
        if alignment is None:
            self._aligned = None
        self.max_watermark = MAX_WATERMARK
        self.paused_for_alignment = False
        #: whether the scheduler announced a maximum yet (Flink registers the source's
        #: ``watermarkAlignmentDrift`` gauge at the first announcement)
        self._max_announced = False
        #: Flink 2.3's ``WatermarkSampler``: the watermark emitted, sampled every update
        #: interval; the oldest sample is what is checked (empty buffer: the latest)
        self._samples: deque[int] = deque([MIN_WATERMARK] * spec.alignment_buffer_size)

    # --- entry point ------------------------------------------------------------------------------

    def handle(self, msg: TaskMessage, now: int) -> list[TaskEffect]:
        self._now = now
        self.time.set_now(now)
        out: list[TaskEffect] = []
        self._out = out
        status = self.status
        if status is TaskStatus.CANCELED or status is TaskStatus.FAILED:
            return out  # a task that is gone ignores its mail
        try:
            if status is TaskStatus.FINISHED:
                self._handle_finished(msg)
            else:
                if self.mailbox.waiting_for_timer and not _is_source_wake_up(msg):
                    self._catch_up_source()
                self._dispatch(msg)
        except UserCodeError as error:
            cause = error.__cause__ if error.__cause__ is not None else error
            self._fail(describe_user_error(cause, operator=error.operator, task=str(self.task)))
        self._flush_chain_effects()
        self._schedule()
        return out

    def _dispatch(self, msg: TaskMessage) -> None:
        match msg:
            case RunDefaultAction():
                priority = self.inputs is not None and self.inputs.has_priority_event
                if self.mailbox.step(priority_pending=priority) is MailboxStep.PRIORITY_EVENTS:
                    self._process_priority_event()
                elif self._finish_pending:
                    self._finish_pending = False
                    if self._ready_to_finish():
                        self._finish()
                else:
                    self._default_action()
            case InputItem(channel=channel, item=item):
                assert self.inputs is not None, f"{self.task} has no inputs"
                self.inputs.receive(channel, item)
            case OutputCredit(channel=channel, credits=credits):
                assert self.writer is not None, f"{self.task} has no outputs"
                self.writer.partition.add_credit(channel, credits)
                self._send()
            case AllDataProcessed(channel=channel):
                assert self.writer is not None, f"{self.task} has no outputs"
                self.writer.partition.all_data_processed(channel)
                self._maybe_finish()
            case TriggerCheckpoint(checkpoint_id=cid, timestamp=ts, options=options):
                self._on_trigger(cid, ts, options)
            case NotifyCheckpointComplete(checkpoint_id=cid):
                self.checkpoints.notify_complete(cid)
                minimum = self._final_checkpoint_min
                if minimum is not None and cid >= minimum:
                    self._final_checkpoint_done = True
                self._maybe_finish()
            case NotifyCheckpointAborted(checkpoint_id=cid):
                self.checkpoints.notify_aborted(cid)
                self._maybe_finish()
            case SyncPartMeasured(checkpoint_id=cid, duration_ms=ms):
                self.checkpoints.sync_part_measured(cid, ms)
            case SnapshotWritten():
                self._emit_all(self.checkpoints.snapshot_written(msg))
                self._maybe_finish()
            case SnapshotFailed():
                self._emit_all(self.checkpoints.snapshot_failed(msg))
                self._maybe_finish()
            case UserCodeFailed(failure=failure):
                self._fail(failure)
            case InjectFailure(message=message):
                self._fail(None, message)
            case WatermarkAlignment(max_watermark=allowed):
                self.max_watermark = allowed
                self._max_announced = True
            case TimerFired(key=key):
                if isinstance(key, ReportWatermark):
                    self._report_watermark()
                elif isinstance(key, SourceWakeUp):
                    self.mailbox.waiting_for_timer = False
                elif isinstance(key, OutputFlush):
                    self._flush_due = None
                    if self.writer is not None and self.status.is_running:
                        self.writer.partition.flush()
                        self._send()
                elif isinstance(key, ProcessingTimeWakeUp):
                    self._wakeup = None
                    if self.status.is_running:
                        self._emit_outputs(self.chain.on_processing_time(self.time.processing))
                elif isinstance(key, AlignmentTimer) and self.inputs is not None:
                    self._gate_effects(self.inputs.on_timer(key, self._now))
            case StartTask():
                self._start()
            case CancelTask():
                self._end(TaskEvent.CANCEL)
            case StopTask():
                self._end(TaskEvent.STOP)
            case _:
                assert_never(msg)

    def _handle_finished(self, msg: TaskMessage) -> None:
        """A finished task's partition may still send what it holds; checkpoints are declined
        (it is not running: Flink's ``CHECKPOINT_DECLINED_TASK_NOT_READY``)."""
        match msg:
            case OutputCredit(channel=channel, credits=credits):
                assert self.writer is not None
                self.writer.partition.add_credit(channel, credits)
                self._send()
            case AllDataProcessed(channel=channel):
                assert self.writer is not None
                self.writer.partition.all_data_processed(channel)
            case TriggerCheckpoint(checkpoint_id=cid):
                self._decline_not_ready(cid)
            case UserCodeFailed(failure=failure):
                # a sink's connector failed as it closed: the runtime had not reported the
                # task FINISHED (its close comes first), so the task fails (Flink: the
                # exception of closing the operators fails the task)
                self._fail(failure)
            case _:
                pass  # late mail of a finished task (notifications, timers, cancel)

    # --- lifecycle --------------------------------------------------------------------------------

    def _transition(self, event: TaskEvent) -> None:
        self.status = transition(self.status, event)

    def _start(self) -> None:
        spec = self.spec
        ctx = OperatorContext(
            subtask=spec.task.subtask,
            parallelism=spec.parallelism,
            max_parallelism=spec.max_parallelism,
            key_groups=key_group_range(spec.task.subtask, spec.parallelism, spec.max_parallelism),
            buffer_records=spec.network.max_records,
            time=self.time,
            task_name=spec.name,
            attempt=spec.attempt,
            auto_watermark_interval=spec.auto_watermark_interval,
            batch=spec.batch,
            job_parameters=dict(spec.job_parameters),
        )
        restore = spec.restore
        # a restart with no checkpoint to restore restores "nothing": its sinks drop what the
        # earlier attempts staged or committed (the replay writes it again)
        fresh: dict[str, list[Any]] | None = {} if spec.attempt else None
        self.chain.open(
            ctx,
            restore.operator_states if restore is not None else fresh,
            restored_checkpoint=restore.checkpoint_id if restore is not None else 0,
            other_sink_states=restore.other_sink_states if restore is not None else None,
        )
        if restore is not None:
            self.checkpoints.restored(restore.checkpoint_id)
            self._emit(
                Traced(
                    event="task_restored",
                    fields={
                        "checkpoint_id": restore.checkpoint_id,
                        # records of recovered in-flight data, per input and output channel
                        "input": record_counts(restore.input_channels),
                        "output": record_counts(restore.output_channels),
                        # pending timers and keyed state entries restored, per keyed operator
                        "timers": self.chain.timer_counts(),
                        "state_entries": self.chain.state_entry_counts(),
                    },
                )
            )
            self._operators_ended = restore.ended_input or restore.finished
            self._finished_on_restore = restore.finished
        self._transition(TaskEvent.START)
        self._flush_epoch = self._now
        self._send()
        if self.alignment is not None:
            self._report_watermark()
        if self.is_source and self._finished_on_restore:
            self._end_of_data()

    def _end_of_data(self) -> None:
        """No more records: the operators end (unless they had before the restored
        checkpoint), their last output goes out, then ``EndOfData`` on every output channel."""
        if not self._operators_ended:
            self._operators_ended = True
            if self.is_source:
                # the end of event time first: every pending event-time timer fires, in this
                # task and (through the channels) downstream (Flink's advanceToEndOfEventTime)
                self._emit_outputs(self.chain.advance_watermark(MAX_WATERMARK))
            self._write(self.chain.end_input())
        if self.alignment is not None:
            self._report_watermark(final=True)  # the end of event time: out of the group
        if self.writer is not None:
            self.writer.partition.broadcast_event(EndOfData())
            self._send()
        self._transition(TaskEvent.END_OF_DATA)
        if self.spec.final_checkpoint and not self._finished_on_restore:
            self._emit(
                Traced(
                    event="waiting_for_final_checkpoint",
                    fields={"after_checkpoint": self.checkpoints.last_checkpoint_id},
                )
            )
        else:
            self._final_checkpoint_done = True
        self._maybe_finish()

    def _maybe_finish(self) -> None:
        if self._ready_to_finish():
            self._finish_pending = True  # the next mailbox step finishes

    def _ready_to_finish(self) -> bool:
        """Flink's ``afterInvoke``: a task whose data ended finishes once its inputs' partitions
        ended and, with FLIP-147 final checkpoints, its output was processed downstream, its
        final checkpoint completed and no snapshot of it is pending."""
        if self.status is not TaskStatus.DATA_ENDED:
            return False
        if self.inputs is not None and not self.inputs.all_partitions_ended:
            return False
        if self.spec.final_checkpoint:
            if not self._final_checkpoint_done or self.checkpoints.pending:
                return False
            if self.writer is not None and not self.writer.partition.is_all_data_processed:
                return False
        return True

    def _finish(self) -> None:
        """The partitions end (``EndOfPartition``), the sinks close, the task is FINISHED."""
        if self.writer is not None:
            partition = self.writer.partition
            self._emit(Traced(event="output_ended", fields={"emitted": partition.emitted()}))
            partition.broadcast_event(EndOfPartition())
            self._send()
        self._transition(TaskEvent.FINISH)
        self.chain.close_functions()
        self.chain.close_sinks(commit=True, keep_collected=True)
        # a task restored as finished never read: the checkpoint's final positions stand
        final = None if self._finished_on_restore else self.chain.source_position()
        self._emit(TaskFinished(task=self.task, final_positions=final))

    def _end(self, event: TaskEvent) -> None:
        """Cancelled, or stopped by stop-with-savepoint (FINISHED; uncommitted output is
        dropped)."""
        self._transition(event)
        self.chain.close_sinks(commit=False, keep_collected=True)
        if event is TaskEvent.CANCEL:
            self._emit(TaskCanceled(task=self.task))
        else:
            self._emit(TaskStopped(task=self.task))

    def _fail(self, failure: TaskFailure | None, message: str | None = None) -> None:
        """User code raised (``failure``), or a fault was injected (``message``)."""
        self._transition(TaskEvent.FAIL)
        self.failure = failure
        self.chain.close_sinks(commit=False, keep_collected=False)
        # the JobMaster names the task: "task source-1#0 failed: map 'M' (map-2) raised ..."
        text = failure.describe(with_task=False) if failure is not None else message or "failed"
        self._emit(TaskFailed(task=self.task, message=text, failure=failure))

    # --- the mailbox's steps ----------------------------------------------------------------------

    def _schedule(self) -> None:
        inputs, writer, status = self.inputs, self.writer, self.status
        running = status is TaskStatus.RUNNING or status is TaskStatus.DATA_ENDED  # is_running
        priority = running and inputs is not None and inputs.has_priority_event
        if self._finish_pending:
            input_available = True
        elif self.is_source:
            input_available = status is TaskStatus.RUNNING and not self._alignment_pause()
        else:
            input_available = inputs is not None and inputs.is_available
        request = self.mailbox.update(
            running=running,
            priority_pending=priority,
            output_available=writer is None
            or writer.partition.is_available
            or self._finish_pending,
            input_available=input_available,
        )
        if request is not None:
            self._out.append(request)
        if self.chain.has_timers:
            self._schedule_wakeup(running)
        if (
            self._flush_due is None
            and writer is not None
            and writer.partition.has_partial
            and running
            and self._flush_interval  # 0 flushes after every write; None never
        ):
            interval = self._flush_interval
            ticks = (self._now - self._flush_epoch) // interval + 1
            self._flush_due = self._flush_epoch + ticks * interval
            self._out.append(ScheduleTimer(key=OutputFlush(), due=self._flush_due))

    def _alignment_pause(self) -> bool:
        """FLIP-182: a source whose last watermark is above the group's allowed maximum emits
        nothing (checkpoints, timers and watermarks go on) until the group catches up."""
        aligned = self._aligned
        if aligned is None:
            return False
        checked = self._samples[0] if self._samples else aligned.current_watermark
        paused = checked > self.max_watermark
        if paused is not self.paused_for_alignment:
            self.paused_for_alignment = paused
            self._emit(
                Traced(
                    event="source_paused_for_alignment" if paused else "source_resumed",
                    fields={
                        "watermark": aligned.current_watermark,
                        "checked": checked,
                        "max_watermark": self.max_watermark,
                    },
                )
            )
        return paused

    def _report_watermark(self, *, final: bool = False) -> None:
        """Sample the watermark last emitted, then tell the scheduler (Flink's
        ``ReportedWatermarkEvent``; nothing before the first one; an idle source or one whose
        input ended reports the end of event time, so it does not hold its group back); again
        every update interval while it runs."""
        aligned, alignment = self._aligned, self.alignment
        assert aligned is not None and alignment is not None
        group, drift, interval = alignment
        if self._samples:
            self._samples.append(aligned.current_watermark)
            self._samples.popleft()
        watermark = MAX_WATERMARK if aligned.idle else aligned.current_watermark
        if watermark != MIN_WATERMARK:
            self._emit(
                Send(
                    to=Role.JOB_MASTER,
                    message=ReportedWatermark(
                        task=self.task,
                        attempt=self.spec.attempt,
                        group=group,
                        watermark=watermark,
                        max_drift=drift,
                        update_interval=interval,
                    ),
                )
            )
        if self.status is TaskStatus.RUNNING and not final:
            self._emit(ScheduleTimer(key=ReportWatermark(), due=self._now + interval))

    def _schedule_wakeup(self, running: bool) -> None:
        """One timer for the earliest processing time an operator waits for (its timers, a
        periodic watermark)."""
        due_at = self.chain.next_processing_time() if running else None
        due = None if due_at is None else max(due_at - self.time.epoch, self._now)
        if due == self._wakeup:
            return
        if due is None:
            self._out.append(CancelTimer(key=ProcessingTimeWakeUp()))
        else:
            self._out.append(ScheduleTimer(key=ProcessingTimeWakeUp(), due=due))
        self._wakeup = due

    def _default_action(self) -> None:
        if not self.status.is_running:
            return
        if self.writer is not None and not self.writer.partition.is_available:
            return  # back-pressure (the mailbox suspended the default action)
        if self.is_source:
            if self.status is TaskStatus.RUNNING and not self._alignment_pause():
                self._read_source()
            return
        assert self.inputs is not None
        poll = self.inputs.poll_next(self._now)
        if poll is not None:
            self._on_input(poll)

    def _process_priority_event(self) -> None:
        """Flink's ``processPriorityEvents``: a priority event (an unaligned barrier, an
        announcement, a barrier moved to the front) comes before any input; one per step, the
        next step takes the next one."""
        assert self.inputs is not None
        poll = self.inputs.poll_priority(self._now)
        if poll is not None:
            self._on_input(poll)

    def _source_limit(self) -> int:
        """The most records a source's read may emit: a buffer's worth, or what its output
        still takes."""
        limit = self.spec.network.max_records
        if self.writer is not None:
            fit = self.writer.partition.records_that_fit()
            if fit is not None and fit < limit:
                limit = fit
        return limit

    def _read_source(self) -> None:
        limit = self._source_limit()
        batch = self.chain.read_source(limit, self._now)
        if batch is None:
            self._end_of_data()
            return
        if not len(batch):
            self._wait_for_source(short_batch=False)
            return
        self._run_read(batch)
        if self.status is TaskStatus.RUNNING and (
            len(batch) < limit or self.chain.source_knows_its_pace
        ):
            self._wait_for_source(short_batch=True)  # unless more is ready now

    def _wait_for_source(self, *, short_batch: bool) -> None:
        """A rate-limited source with nothing (more) ready sleeps until its reader says records
        will be: the wake-up timer runs the default action again. After a short batch (the
        reader gave what was ready) only a time still to come counts."""
        first = self.chain.source_ready_at(self._now)
        if first is None or (short_batch and first <= self._now):
            return
        self._emit(ScheduleTimer(key=SourceWakeUp(), due=self._source_wake(first)))
        self.mailbox.waiting_for_timer = True

    def _source_wake(self, first: int) -> int:
        """When a waiting source reads again, its next record being ready at ``first``: once a
        buffer's worth is ready, or just before the output flusher's tick that would send
        the first of them, whichever comes sooner; at ``first`` where its reads are seen
        before they are sent (a sink, a clock or timers in its chain) or every write is
        flushed (interval 0). Reading any earlier would change nothing that leaves the task:
        a mail that comes meanwhile (a checkpoint's trigger, a timer, a credit) has the source
        catch up first (``_catch_up_source``), as if it had read each record on time."""
        interval = self._flush_interval
        if interval == 0 or self.writer is None or not self.chain.source_read_is_unseen_until_sent:
            return first
        full = self.chain.source_ready_at(self._now, self._source_limit())
        if full is None or full <= first:
            return first
        if interval is not None:
            epoch = self._flush_epoch
            tick = epoch + ((first - epoch) // interval + 1) * interval
            full = min(full, max(first, tick - 1))
        return full

    def _catch_up_source(self) -> None:
        """A mail comes while a rate-limited source waits for its wake-up (which waits for a
        buffer's worth, ``_source_wake``): the source first reads what became ready
        meanwhile, as far as its default action would (running, not paused for alignment,
        not back-pressured). A full read leaves the rest to the default action."""
        if not self.is_source or self.status is not TaskStatus.RUNNING or self._alignment_pause():
            return
        writer = self.writer
        if writer is not None and not writer.partition.is_available:
            return
        limit = self._source_limit()
        batch = self.chain.read_source(limit, self._now)
        if not batch:
            return  # nothing ready yet, or the end, which the default action meets
        self._run_read(batch)
        if len(batch) >= limit:
            self.mailbox.waiting_for_timer = False

    def _run_read(self, batch: Sequence[Any]) -> None:
        """What the source read runs through its chain and leaves the task."""
        self.records_in += len(batch)
        self._write(*self.chain.run(batch, None, self.chain.read_through))

    def _on_input(self, poll: InputPoll) -> None:
        inputs = self.inputs
        assert inputs is not None
        self._emit_all(poll.effects)
        self._gate_effects(poll.gate_effects)
        delivered = poll.delivered
        if isinstance(delivered, Buffer):
            self.records_in += len(delivered.records)
            keys = delivered.keys if self.spec.keyed_input else None
            self._write(
                *self.chain.run(delivered.records, keys, 0, delivered.timestamps, poll.input_index)
            )
        elif isinstance(delivered, (Watermark, WatermarkStatus)):
            if poll.watermark is not None:
                self._emit_outputs(
                    self.chain.advance_watermark(poll.watermark, 0, poll.input_index)
                )
            if poll.idle is not None and self.writer is not None:
                self.writer.partition.broadcast_event(WatermarkStatus(poll.idle))
                self._send()
        elif delivered is not None:
            if self.status is TaskStatus.RUNNING and inputs.all_data_ended:
                self._end_of_data()
            elif isinstance(delivered, EndOfPartition):
                self._maybe_finish()

    def _write(
        self, records: Sequence[Any], timestamps: Sequence[int | None] | None = None
    ) -> None:
        """What the chain emitted: ``records`` on the main output, then what it emitted to side
        outputs."""
        if self.writer is not None:
            side = self.chain.side_outputs
            if len(records):
                self.writer.emit(records, timestamps)
            elif side is None or not side.pending:
                return
            if side is not None and side.pending:
                for tag, side_records, stamps in self.chain.take_side_outputs():
                    self.writer.emit_side(tag, side_records, stamps)
            if self._flush_interval == 0:
                self.writer.partition.flush()
            self._send()

    def _emit_outputs(self, outputs: list[ChainOutput]) -> None:
        """What the chain emitted on a watermark or timer, in order: records, and the watermark
        it hands downstream (after the side outputs' records emitted before it)."""
        for output in outputs:
            if isinstance(output, int):
                if self.writer is not None:
                    self._write(())
                    self.writer.partition.broadcast_event(Watermark(output))
                    self._send()
            elif isinstance(output, WatermarkStatus):
                if self.writer is not None:
                    self._write(())
                    self.writer.partition.broadcast_event(output)
                    self._send()
            else:
                self._write(*output)
        self._write(())

    def _send(self) -> None:
        if self.writer is not None:
            self._emit_all(self.writer.poll_output())

    # --- checkpoints ------------------------------------------------------------------------------

    def _on_trigger(self, checkpoint_id: int, timestamp: int, options: CheckpointOptions) -> None:
        if not self.status.is_running:
            self._decline_not_ready(checkpoint_id)
            return
        if options.drain and self.is_source and not self._operators_ended:
            # stop-with-savepoint with drain: the end of event time before the barrier, so
            # every event-time timer fires and the windows flush into the savepoint (Flink's
            # sources advanceToEndOfEventTime on a terminating savepoint)
            self._emit_outputs(self.chain.advance_watermark(MAX_WATERMARK))
        barrier = CheckpointBarrier(
            checkpoint_id=checkpoint_id, timestamp=timestamp, options=options
        )
        inputs = self.inputs
        if inputs is not None and not inputs.all_partitions_ended:
            facts, effects = inputs.trigger_unfinished_channels(barrier, self._now)
            self._emit_all(facts)
            self._gate_effects(effects)
            return
        self._perform_checkpoint(barrier, 0, 0, 0)

    def _decline_not_ready(self, checkpoint_id: int) -> None:
        self._emit_all(
            self.checkpoints.decline(
                checkpoint_id,
                CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_NOT_READY,
                f"task is {self.status.value}",
            )
        )

    def _perform_checkpoint(
        self,
        barrier: CheckpointBarrier,
        start_delay_ms: int,
        alignment_ms: int | None,
        processed_bytes: int | None,
    ) -> None:
        self._flush_chain_effects()
        self.last_alignment_ms = alignment_ms or 0
        self.last_start_delay_ms = start_delay_ms
        taken, effects = self.checkpoints.checkpoint_state(
            barrier,
            start_delay_ms=start_delay_ms,
            alignment_ms=alignment_ms,
            processed_bytes=processed_bytes,
            ended_input=self._operators_ended,
            finishing=self.status is TaskStatus.DATA_ENDED,
        )
        self._emit_all(effects)
        if (
            taken
            and self.status is TaskStatus.DATA_ENDED
            and self._final_checkpoint_min is None
            and not self._final_checkpoint_done
        ):
            self._final_checkpoint_min = barrier.checkpoint_id

    def _gate_effects(self, effects: list[GateEffect]) -> None:
        for effect in effects:
            match effect:
                case TriggerCheckpointOnBarrier(
                    barrier=barrier,
                    start_delay_ms=delay,
                    alignment_duration_ms=alignment,
                    bytes_processed_during_alignment=processed,
                ):
                    self._perform_checkpoint(barrier, delay, alignment, processed)
                case AllBarriersReceived(
                    checkpoint_id=cid, alignment_duration_ms=ms, bytes_processed_during_alignment=b
                ):
                    self._emit_all(self.checkpoints.all_barriers_received(cid, ms, b))
                case AbortCheckpointOnBarrier(checkpoint_id=cid, reason=reason):
                    self._emit_all(self.checkpoints.abort_on_barrier(cid, reason))
                    self._maybe_finish()
                case ResumeConsumption(channel=channel):
                    self._emit(
                        Traced(event="channel_resumed", fields={"channel": channel}, level="debug")
                    )
                case ConvertToPriorityEvent(channel=channel, sequence_number=seq):
                    self._emit(
                        Traced(event="barrier_prioritized", fields={"channel": channel, "seq": seq})
                    )
                case ScheduleTimer() | CancelTimer():
                    self._emit(effect)
                case _:
                    assert_never(effect)

    # --- effects ----------------------------------------------------------------------------------

    def _emit(self, effect: TaskEffect) -> None:
        if self.chain.sinks:
            self._flush_chain_effects()
        self._out.append(effect)

    def _emit_all(self, effects: list[TaskEffect]) -> None:
        if effects:
            if self.chain.sinks:
                self._flush_chain_effects()
            self._out.extend(effects)

    def _flush_chain_effects(self) -> None:
        if self.chain.sinks:
            self._out.extend(self.chain.take_effects())

    # --- views --------------------------------------------------------------------------------

    def take_cost(self) -> float:
        """Milliseconds of declared operator cost since the last call (the runtime spends
        them: for real on threads, in virtual time in the simulation)."""
        return self.chain.take_cost()

    def metrics(self) -> dict[str, Any]:
        """Flink's task and operator metrics that the task's IO metrics do not have: the
        input watermark, the last checkpoint's alignment time and start delay (ns, as Flink's),
        and each operator's (``OperatorChain.operator_metrics``, by uid)."""
        head = self.chain.operators[0]
        out: dict[str, Any] = {
            "currentInputWatermark": head.current_watermark,
            "checkpointAlignmentTime": self.last_alignment_ms * 1_000_000,
            "checkpointStartDelayNanos": self.last_start_delay_ms * 1_000_000,
            "operators": self.chain.operator_metrics(),
        }
        aligned = self._aligned
        if aligned is not None and self._max_announced:
            # FLIP-182's gauge on the source operator: its last watermark minus the largest
            # it may reach (the group's minimum plus the drift); positive while it is ahead
            # (the last watermark it emitted before the end of event time; 0 before any)
            watermark = aligned.current_watermark
            if watermark == MAX_WATERMARK:
                watermark = aligned.before_end
            last = watermark if watermark > MIN_WATERMARK else 0
            head = self.chain.operators[0]
            out["operators"][head.uid]["watermarkAlignmentDrift"] = last - self.max_watermark
        # Flink's Shuffle.Netty buffer gauges: the output pool's buffers in use (queued or
        # being filled) and those queued; the input channels' buffers queued (of the gate's
        # exclusive and floating buffers)
        if self.writer is not None:
            partition = self.writer.partition
            # a source's batch may overdraw the pool by a few buffers; Flink's pool cannot
            # be used past its size, and its gauge never reads above 1
            out["outPoolUsage"] = min(1.0, partition.in_use / partition.pool_size)
            out["outputQueueLength"] = sum(len(sub.queue) for sub in partition.subpartitions)
        if self.inputs is not None:
            queued = self.inputs.queued_buffers()
            out["inputQueueLength"] = queued
            pool = self.spec.input_pool_size
            out["inPoolUsage"] = min(1.0, queued / pool) if pool else 0.0
        return out

    @property
    def records_out(self) -> int:
        return self.writer.records_out if self.writer is not None else 0

    def live_counts(self) -> tuple[int, int]:
        """The task's records in and out as of now, also in the middle of a buffer: records
        of the buffer under way that its first operator has not taken yet are not counted in,
        and what a one-to-one last operator has emitted of it is counted out
        (``OperatorChain.live_counts``). Read from another thread too (ints, racily)."""
        records_in, records_out = self.records_in, self.records_out
        chain = self.chain
        if self.inputs is not None:
            head = chain.operators[0]
            loop = head.loop
            if loop is not None:
                records_in -= length_hint(loop)
        if self.writer is not None:
            last = len(chain.operators) - 1
            tail = chain.operators[last]
            if tail.loop is not None and tail.one_to_one and tail.side is None:
                records_out += max(0, chain.live_counts(last)[1] - chain.records_out[last])
        return records_in, records_out

    @property
    def is_backpressured(self) -> bool:
        return self.writer is not None and not self.writer.partition.is_available
