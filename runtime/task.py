"""``StreamTaskCore``: one subtask as a pure state machine (Flink's ``StreamTask`` with its
``SubtaskCheckpointCoordinator``).

The actor shell delivers mails (``TaskMessage``) and carries out effects; the core decides.

- Mailbox: input items from channels queue up; the *default action* (``RunDefaultAction``)
  processes one of them (or, in a source, reads one batch), then asks to be run again, so a
  control mail (trigger, notification, timer) is always handled between two buffers. The
  default action pauses while an output channel lacks credit (back-pressure).
- Input: a barrier handler per task (aligned, alternating aligned/unaligned, or the at-least-once
  tracker). Priority items (unaligned barriers, announcements) are handled as soon as they
  arrive, ahead of queued input.
- Checkpoint (``_perform_checkpoint``): prepare-snapshot-pre-barrier, broadcast the barrier
  (priority when unaligned: the unsent output buffers it overtakes become output channel
  state), synchronous snapshot of every operator, then the asynchronous part (``WriteSnapshot``
  -> ``SnapshotWritten``) and the acknowledgement. An unaligned checkpoint is acknowledged only
  once all its barriers are in, with its in-flight input data.
- In-flight data of an unaligned checkpoint n, per input channel: the buffers its barrier
  overtook (in the channel, and those already handed to the task), and every buffer the task
  consumes from a channel after taking n and before that channel's barrier n.
"""

from __future__ import annotations

import copy
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from runtime.barrier.base import CheckpointBarrierHandler
from runtime.barrier.handler import AlignmentTimer, SingleCheckpointBarrierHandler
from runtime.barrier.tracker import CheckpointBarrierTracker
from runtime.checkpoint import CheckpointMetrics, CheckpointOptions, TaskId
from runtime.datastream import make_operator
from runtime.effects import (
    AbortCheckpointOnBarrier,
    AckInput,
    AlignmentCompleted,
    AllBarriersReceived,
    CheckpointTakenOnTask,
    ConvertToPriorityEvent,
    Effect,
    ReportToCoordinator,
    RequestDefaultAction,
    ResumeConsumption,
    ScheduleTimer,
    SendToOutput,
    SinkNotify,
    SinkWrite,
    TaskCanceled,
    TaskFailed,
    TaskFinished,
    TaskSnapshot,
    TaskStopped,
    Traced,
    TriggerCheckpointOnBarrier,
    WriteSnapshot,
)
from runtime.graph import StreamNode
from runtime.messages import (
    AcknowledgeCheckpoint,
    AllDataProcessed,
    AnnouncementReceived,
    BarrierReceived,
    CancelMarkerReceived,
    CancelTask,
    DeclineCheckpoint,
    EndOfPartitionReceived,
    InputItem,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    OutputCredit,
    RunDefaultAction,
    SnapshotFailed,
    SnapshotWritten,
    StartTask,
    StopTask,
    TaskMessage,
    TimerFired,
    TriggerCheckpoint,
)
from runtime.network import (
    Buffer,
    CancelCheckpointMarker,
    ChannelItem,
    CheckpointBarrier,
    EndOfPartition,
    EventAnnouncement,
)
from runtime.operators import (
    KeyedProcessFunction,
    OperatorContext,
    ProcessOperator,
    ReduceOperator,
    SinkOperator,
    SourceOperator,
)
from runtime.partition import ChannelSelector, KeySelector, Partitioner, RecordWriter
from runtime.reasons import CheckpointFailureReason
from runtime.state import key_group_range

#: ids of checkpoints notified aborted that a task remembers (Flink: 128)
MAX_REMEMBERED_ABORTS = 128


@dataclass(frozen=True, slots=True)
class SourceWakeUp:
    """Timer key: a rate-limited source may read again."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputEdge:
    partitioner: Partitioner
    num_channels: int
    key_selector: KeySelector | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRestore:
    """What a redeployed subtask starts from."""

    checkpoint_id: int
    operator_states: dict[str, list[Any]] = field(default_factory=dict)
    input_channels: dict[int, list[Buffer]] = field(default_factory=dict)
    output_channels: dict[int, list[Buffer]] = field(default_factory=dict)
    #: its input had ended when the checkpoint was taken: do not end the operators again
    ended_input: bool = False
    #: it had finished before the checkpoint (FLIP-147): end at once, without data
    finished: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSpec:
    task: TaskId
    name: str
    operators: list[StreamNode]
    parallelism: int
    max_parallelism: int = 128
    num_inputs: int = 0
    outputs: tuple[OutputEdge, ...] = ()
    handler_mode: str = "aligned"
    checkpoints_after_tasks_finish: bool = True
    #: periodic checkpoints are enabled (sinks are transactional)
    checkpointing: bool = False
    #: FLIP-147: once its input ended, the task waits for a checkpoint to complete (so the
    #: last output is committed) before it ends its partitions and finishes
    final_checkpoint: bool = False
    buffer_records: int = 1000
    initial_credits: int = 2
    #: the head operator is keyed by the key selector of every input edge: use shipped keys
    keyed_input: bool = False
    attempt: int = 0
    restore: TaskRestore | None = None


@dataclass(slots=True)
class _PendingSnapshot:
    checkpoint_id: int
    options: CheckpointOptions
    operator_states: dict[str, Any]
    output_channels: dict[int, list[Buffer]]
    start_delay_ms: int
    alignment_ms: int | None
    processed_bytes: int | None
    persisted_bytes: int = 0
    ended_input: bool = False


class _TaskInputs:
    """The handler's ``CheckpointableInputs`` on the task side (channels are actors)."""

    def __init__(self, core: StreamTaskCore) -> None:
        self.core = core
        self.recording: dict[int, int] = {}  # input channel -> unaligned checkpoint it records for
        self.persisted: dict[int, dict[int, list[Buffer]]] = {}  # checkpoint -> channel -> buffers
        self.barrier_seen: dict[int, int] = {}  # input channel -> newest barrier id it delivered
        self.overtaken: dict[int, tuple[int, list[Buffer]]] = {}  # channel -> (checkpoint, buffers)

    def resume_consumption(self, channel: int) -> None:
        self.core._emit(ResumeConsumption(channel=channel))

    def convert_to_priority_event(self, channel: int, sequence_number: int) -> None:
        self.core._emit(ConvertToPriorityEvent(channel=channel, sequence_number=sequence_number))

    def checkpoint_started(self, barrier: CheckpointBarrier) -> None:
        n = barrier.checkpoint_id
        table = self.persisted.setdefault(n, {})
        for channel in range(self.core.spec.num_inputs):
            if channel in self.core.finished_inputs:
                continue
            if self.barrier_seen.get(channel, -1) < n:
                self.recording[channel] = n
            pending = self.overtaken.get(channel)
            if pending is not None and pending[0] == n:
                table.setdefault(channel, []).extend(pending[1])
                del self.overtaken[channel]

    def checkpoint_stopped(self, checkpoint_id: int) -> None:
        for channel in [c for c, n in self.recording.items() if n == checkpoint_id]:
            del self.recording[channel]

    # --- called by the task --------------------------------------------------------------------

    def barrier_arrives(self, channel: int, checkpoint_id: int, overtaken: list[Buffer]) -> None:
        """Before the handler sees barrier n from ``channel``: what it overtook belongs to n
        if n is (or is about to be) an unaligned checkpoint in progress."""
        self.barrier_seen[channel] = max(self.barrier_seen.get(channel, -1), checkpoint_id)
        if self.recording.get(channel) == checkpoint_id:
            del self.recording[channel]
            if overtaken:
                self.persisted.setdefault(checkpoint_id, {}).setdefault(channel, []).extend(
                    overtaken
                )
        elif overtaken:
            self.overtaken[channel] = (checkpoint_id, list(overtaken))

    def barrier_handled(self, channel: int) -> None:
        self.overtaken.pop(channel, None)

    def on_data(self, channel: int, buffer: Buffer) -> None:
        n = self.recording.get(channel)
        if n is not None:
            self.persisted.setdefault(n, {}).setdefault(channel, []).append(buffer)

    def take(self, checkpoint_id: int) -> dict[int, list[Buffer]]:
        return self.persisted.pop(checkpoint_id, {})

    def drop(self, checkpoint_id: int) -> None:
        self.persisted.pop(checkpoint_id, None)
        self.checkpoint_stopped(checkpoint_id)


class StreamTaskCore:
    def __init__(self, spec: TaskSpec) -> None:
        self.spec = spec
        self.task = spec.task
        self.status = "CREATED"
        self.operators = [make_operator(_own_copy(node)) for node in spec.operators]
        self.is_source = isinstance(self.operators[0], SourceOperator)
        self.writer: RecordWriter | None = None
        if spec.outputs:
            selectors = [
                ChannelSelector(
                    edge.partitioner,
                    edge.num_channels,
                    key_selector=edge.key_selector,
                    start=spec.task.subtask,
                    max_parallelism=spec.max_parallelism,
                )
                for edge in spec.outputs
            ]
            self.writer = RecordWriter(
                selectors, initial_credits=spec.initial_credits, buffer_records=spec.buffer_records
            )
        self.inputs = _TaskInputs(self)
        self.handler: CheckpointBarrierHandler | None = None
        if spec.num_inputs:
            self.handler = self._make_handler()
        self.finished_inputs: set[int] = set()
        self._queue: deque[tuple[int, ChannelItem]] = deque()
        #: per input channel, recovered in-flight buffers still queued (they come before the
        #: channel's own data, and are not acknowledged to the channel)
        self._recovered: dict[int, int] = {}
        self._default_scheduled = False
        self._waiting_for_wake = False
        self._end_of_input = False
        #: the operators' end_input ran (in this attempt, or before the restored checkpoint)
        self._operators_ended = False
        #: restored as finished (FLIP-147): no final checkpoint to wait for
        self._finished_on_restore = False
        #: waiting for a checkpoint with a higher id to complete (FLIP-147 final checkpoint)
        self._final_after = -1
        self._pending: dict[int, _PendingSnapshot] = {}
        self._aborted: deque[int] = deque(maxlen=MAX_REMEMBERED_ABORTS)
        self._last_checkpoint_id = -1
        self._out: list[Effect] = []
        self._now = 0
        self.failure: BaseException | None = None
        #: records processed (input side) and emitted, for progress reports
        self.records_in = 0
        self.records_out = 0
        self._cost_ms = 0.0
        #: records the operators took from each input channel (the consumer's side of a cut)
        self.consumed = [0] * spec.num_inputs

    def take_cost(self) -> float:
        """Milliseconds of declared operator cost since the last call (the runtime spends
        them: for real on threads, in virtual time in the simulation)."""
        cost, self._cost_ms = self._cost_ms, 0.0
        return cost

    def _make_handler(self) -> CheckpointBarrierHandler:
        mode, n, flag = (
            self.spec.handler_mode,
            self.spec.num_inputs,
            self.spec.checkpoints_after_tasks_finish,
        )
        if mode == "at_least_once":
            return CheckpointBarrierTracker(n, checkpoints_after_tasks_finish=flag)
        handler_mode = {"aligned_with_timeout": "alternating"}.get(mode, mode)
        if handler_mode not in ("aligned", "alternating", "unaligned"):
            raise ValueError(f"stream tasks cannot use barrier handling mode {mode!r}")
        return SingleCheckpointBarrierHandler(
            n, mode=handler_mode, checkpoints_after_tasks_finish=flag, inputs=self.inputs
        )

    # --- entry point ------------------------------------------------------------------------------

    def handle(self, msg: TaskMessage, now: int) -> list[Effect]:
        self._now = now
        out: list[Effect] = []
        self._out = out
        if self.status in ("FAILED", "CANCELED"):
            return out
        try:
            self._dispatch(msg)
        except Exception as error:  # user code or a bad record: the task fails, as in Flink
            self.status = "FAILED"
            self.failure = error
            self._out = out = [
                TaskFailed(task=self.task, message=f"{type(error).__name__}: {error}")
            ]
        return out

    def fail(self, message: str) -> list[Effect]:
        """The task fails from outside its operators (an injected fault): as a user error."""
        if self.status in ("FAILED", "CANCELED", "FINISHED"):
            return []
        self.status = "FAILED"
        return [TaskFailed(task=self.task, message=message)]

    def _dispatch(self, msg: TaskMessage) -> None:
        match msg:
            case RunDefaultAction():
                self._default_scheduled = False
                self._default_action()
            case InputItem(channel=channel, item=item, priority=priority, overtaken=overtaken):
                self._on_input(channel, item, priority, overtaken)
            case OutputCredit(channel=channel, credits=credits):
                assert self.writer is not None
                self.writer.add_credit(channel, credits)
                self._send()
                self._maybe_schedule()
                self._maybe_finish()
            case AllDataProcessed(channel=channel):
                assert self.writer is not None
                self.writer.all_data_processed(channel)
                self._maybe_finish()
            case TriggerCheckpoint(checkpoint_id=cid, timestamp=ts, options=options):
                self._on_trigger(cid, ts, options)
            case NotifyCheckpointComplete(checkpoint_id=cid):
                self._on_complete(cid)
            case NotifyCheckpointAborted(checkpoint_id=cid):
                self._on_aborted(cid)
            case SnapshotWritten():
                self._on_written(msg)
            case SnapshotFailed(checkpoint_id=cid, message=message):
                if self._pending.pop(cid, None) is not None:
                    self._decline(cid, CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION, message)
                self._maybe_finish()
            case TimerFired(key=key):
                if isinstance(key, SourceWakeUp):
                    self._waiting_for_wake = False
                    self._maybe_schedule()
                elif isinstance(key, AlignmentTimer) and self.handler is not None:
                    self._handler_effects(self.handler.handle(msg, self._now))
            case StartTask():
                self._start()
            case CancelTask():
                if self.status not in ("FINISHED", "CANCELED", "FAILED"):
                    self.status = "CANCELED"
                    self._emit(TaskCanceled(task=self.task))
            case StopTask():
                if self.status not in ("FINISHED", "CANCELED", "FAILED"):
                    self.status = "FINISHED"
                    self._emit(TaskStopped(task=self.task))

    def _emit(self, effect: Effect) -> None:
        self._out.append(effect)

    # --- lifecycle ----------------------------------------------------------------------------------

    def _start(self) -> None:
        spec = self.spec
        ctx = OperatorContext(
            subtask=spec.task.subtask,
            parallelism=spec.parallelism,
            max_parallelism=spec.max_parallelism,
            key_groups=key_group_range(spec.task.subtask, spec.parallelism, spec.max_parallelism),
            buffer_records=spec.buffer_records,
        )
        for op in self.operators:
            op.open(ctx)
        restore = spec.restore
        if restore is not None:
            for op in self.operators:
                states = restore.operator_states.get(op.uid)
                if states:
                    op.restore_state(states)
            self._last_checkpoint_id = restore.checkpoint_id
            if self.writer is not None:
                for channel, buffers in sorted(restore.output_channels.items()):
                    out = self.writer.channels[channel]
                    out.outgoing.extendleft(reversed(buffers))
                    out.emitted += sum(len(b.records) for b in buffers)  # sent in this attempt
            for channel, buffers in sorted(restore.input_channels.items(), reverse=True):
                for buffer in reversed(buffers):
                    self._queue.appendleft((channel, buffer))
                # recovered in-flight data comes first, and not from the channel: no credit back
                self._recovered[channel] = len(buffers)
            self._emit(
                Traced(
                    event="task_restored",
                    fields={
                        "checkpoint_id": restore.checkpoint_id,
                        # records of recovered in-flight data, per input and output channel
                        "input": {
                            ch: sum(len(b.records) for b in bufs)
                            for ch, bufs in sorted(restore.input_channels.items())
                        },
                        "output": {
                            ch: sum(len(b.records) for b in bufs)
                            for ch, bufs in sorted(restore.output_channels.items())
                        },
                    },
                )
            )
            self._operators_ended = restore.ended_input or restore.finished
            self._finished_on_restore = restore.finished
        self.status = "RUNNING"
        self._send()
        if self.is_source and self._finished_on_restore:
            self._end_input()
            return
        self._maybe_schedule()

    def _maybe_schedule(self) -> None:
        if self._default_scheduled or self._waiting_for_wake or self.status != "RUNNING":
            return
        if self.writer is not None and not self.writer.is_available:
            return  # back-pressure: wait for credit
        if self.is_source:
            if self._end_of_input:
                return
        elif not self._queue:
            return
        self._default_scheduled = True
        self._emit(RequestDefaultAction())

    def _maybe_finish(self) -> None:
        """A task finishes once its input ended, no snapshot of it is pending and everything it
        sent was processed downstream (FLIP-147: so no data is in flight from a finished
        task, and a checkpoint that skips it misses nothing)."""
        if (
            self.status == "FINISHING"
            and not self._pending
            and (
                self.writer is None
                or (self.writer.is_available and self.writer.is_all_data_processed)
            )
        ):
            self.status = "FINISHED"
            self._emit(TaskFinished(task=self.task))

    # --- the default action -------------------------------------------------------------------

    def _default_action(self) -> None:
        if self.status != "RUNNING" or (self.writer is not None and not self.writer.is_available):
            return
        if self.is_source:
            self._read_source()
        elif self._queue:
            channel, item = self._queue.popleft()
            self._process_input(channel, item)
        self._maybe_schedule()

    def _read_source(self) -> None:
        source = self.operators[0]
        assert isinstance(source, SourceOperator) and source.reader is not None
        batch = source.reader.read(self.spec.buffer_records, self._now)
        if batch is None:
            self._end_input()
            return
        if not batch:
            if self.writer is not None:
                self.writer.flush()
                self._send()
            wake = source.reader.next_ready(self._now)
            if wake is not None:
                self._emit(ScheduleTimer(key=SourceWakeUp(), due=wake))
                self._waiting_for_wake = True  # the timer re-runs the default action
            return
        self.records_in += len(batch)
        if source.cost != (0.0, 0.0):
            self._cost_ms += source.cost[0] + source.cost[1] * len(batch)
        self._run_chain(batch, 1)

    def _on_input(
        self, channel: int, item: ChannelItem, priority: bool, overtaken: tuple[Buffer, ...]
    ) -> None:
        if isinstance(item, EventAnnouncement):
            assert self.handler is not None
            self._handler_effects(
                self.handler.handle(
                    AnnouncementReceived(
                        channel=channel, barrier=item.barrier, sequence_number=item.sequence_number
                    ),
                    self._now,
                )
            )
            return
        if isinstance(item, CheckpointBarrier) and priority:
            self._priority_barrier(channel, item, list(overtaken))
            return
        self._queue.append((channel, item))
        self._maybe_schedule()

    def _priority_barrier(
        self, channel: int, barrier: CheckpointBarrier, overtaken: list[Buffer]
    ) -> None:
        """A barrier that jumped ahead: handled now. The buffers of its channel still queued in
        the task, and those it overtook in the channel, come after it."""
        local = [item for c, item in self._queue if c == channel and isinstance(item, Buffer)]
        self.inputs.barrier_arrives(channel, barrier.checkpoint_id, local + overtaken)
        self._trace_barrier(channel, barrier, priority=True, overtaken=len(local + overtaken))
        assert self.handler is not None
        self._handler_effects(
            self.handler.handle(BarrierReceived(channel=channel, barrier=barrier), self._now)
        )
        self.inputs.barrier_handled(channel)

    def _process_input(self, channel: int, item: ChannelItem) -> None:
        handler = self.handler
        assert handler is not None
        if isinstance(item, Buffer):
            self.inputs.on_data(channel, item)
            handler.add_processed_bytes(item.size)
            self.records_in += len(item.records)
            self.consumed[channel] += len(item.records)  # recovered in-flight data included
            self._run_chain(item.records, 0, item.keys if self.spec.keyed_input else None)
            if not self._queue and self.writer is not None:
                self.writer.flush()  # idle: hand out partly filled buffers
                self._send()
        elif isinstance(item, CheckpointBarrier):
            self.inputs.barrier_arrives(channel, item.checkpoint_id, [])
            self._trace_barrier(channel, item, priority=False, overtaken=0)
            self._handler_effects(
                handler.handle(BarrierReceived(channel=channel, barrier=item), self._now)
            )
            self.inputs.barrier_handled(channel)
        elif isinstance(item, CancelCheckpointMarker):
            self._handler_effects(
                handler.handle(
                    CancelMarkerReceived(channel=channel, checkpoint_id=item.checkpoint_id),
                    self._now,
                )
            )
        elif isinstance(item, EndOfPartition):
            self._emit(
                Traced(
                    event="end_of_partition_received",
                    fields={"channel": channel, "consumed": self.consumed[channel]},
                )
            )
            self.finished_inputs.add(channel)
            self._handler_effects(
                handler.handle(EndOfPartitionReceived(channel=channel), self._now)
            )
            if len(self.finished_inputs) == self.spec.num_inputs:
                self._emit(AckInput(channel=channel))
                self._end_input()
                return
        if self._recovered.get(channel):
            self._recovered[channel] -= 1  # recovered, not delivered by the channel
            return
        self._emit(AckInput(channel=channel))

    def _trace_barrier(
        self, channel: int, barrier: CheckpointBarrier, *, priority: bool, overtaken: int
    ) -> None:
        self._emit(
            Traced(
                event="barrier_received",
                fields={
                    "checkpoint_id": barrier.checkpoint_id,
                    "channel": channel,
                    "unaligned": barrier.is_unaligned,
                    "priority": priority,
                    "overtaken": overtaken,
                    "consumed": self.consumed[channel],
                },
            )
        )

    def _run_chain(self, records: Any, start: int, keys: Any = None) -> None:
        for op in self.operators[start:]:
            if not records:
                break
            if op.cost != (0.0, 0.0):
                self._cost_ms += op.cost[0] + op.cost[1] * len(records)
            if keys is not None and isinstance(op, (ReduceOperator, ProcessOperator)):
                records = op.process_keyed_batch(records, keys)
            else:
                records = op.process_batch(records)
            keys = None
            if isinstance(op, SinkOperator):
                for written in op.take_writes():
                    self._emit(SinkWrite(sink=op.uid, records=written))
        if records and self.writer is not None:
            self.records_out += len(records)
            self.writer.emit(records)
            self._send()

    def _send(self) -> None:
        if self.writer is None:
            return
        for channel, item in self.writer.drain():
            self._emit(SendToOutput(channel=channel, item=item))

    def _end_input(self) -> None:
        """All input consumed: end the operators (they may emit their last records); then,
        with FLIP-147 final checkpoints, wait for one more checkpoint before ending the
        partitions and finishing, else do that at once."""
        self._end_of_input = True
        if not self._operators_ended:
            self._operators_ended = True
            for index, op in enumerate(self.operators):
                produced = op.end_input()
                if produced:
                    self._run_chain(produced, index + 1)
        if self.writer is not None:
            self.writer.flush()
            self._send()
        if self.spec.final_checkpoint and not self._finished_on_restore:
            self.status = "ENDED"
            self._final_after = self._last_checkpoint_id
            self._emit(
                Traced(
                    event="waiting_for_final_checkpoint",
                    fields={"after_checkpoint": self._final_after},
                )
            )
            return
        self._end_partitions()

    def _end_partitions(self) -> None:
        if self.writer is not None:
            self._emit(Traced(event="output_ended", fields={"emitted": self.writer.emitted()}))
            self.writer.broadcast_event(EndOfPartition())
            self._send()
        self.status = "FINISHING"
        self._maybe_finish()

    # --- checkpoints ----------------------------------------------------------------------------

    def _handler_effects(self, effects: list[Effect]) -> None:
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
                    pending = self._pending.get(cid)
                    if pending is not None and pending.alignment_ms is None:
                        pending.alignment_ms, pending.processed_bytes = ms, b
                        self._emit(
                            AlignmentCompleted(
                                checkpoint_id=cid, alignment_ms=ms, bytes_processed=b
                            )
                        )
                        self._write(pending)
                case AbortCheckpointOnBarrier(checkpoint_id=cid, reason=reason):
                    self._pending.pop(cid, None)
                    self.inputs.drop(cid)
                    self._decline(cid, reason, None)
                    if self.writer is not None:
                        self.writer.broadcast_event(CancelCheckpointMarker(cid))
                        self._send()
                case _:
                    self._emit(effect)

    def _on_trigger(self, checkpoint_id: int, timestamp: int, options: CheckpointOptions) -> None:
        if self.status not in ("RUNNING", "ENDED"):
            self._decline(
                checkpoint_id,
                CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_NOT_READY,
                f"task is {self.status}",
            )
            return
        barrier = CheckpointBarrier(
            checkpoint_id=checkpoint_id, timestamp=timestamp, options=options
        )
        if self.handler is not None and len(self.finished_inputs) < self.spec.num_inputs:
            # Triggered directly although it has inputs: every upstream task finished (FLIP-147).
            # As Flink's triggerUnfinishedChannelsCheckpoint: the barrier counts as received on
            # every input channel whose end of partition was not processed yet.
            for channel in range(self.spec.num_inputs):
                if channel not in self.finished_inputs:
                    self.inputs.barrier_arrives(channel, checkpoint_id, [])
                    self._trace_barrier(channel, barrier, priority=False, overtaken=0)
                    self._handler_effects(
                        self.handler.handle(
                            BarrierReceived(channel=channel, barrier=barrier), self._now
                        )
                    )
                    self.inputs.barrier_handled(channel)
            return
        self._perform_checkpoint(barrier, 0, 0, 0)

    def _perform_checkpoint(
        self,
        barrier: CheckpointBarrier,
        start_delay: int,
        alignment: int | None,
        processed: int | None,
    ) -> None:
        cid = barrier.checkpoint_id
        if cid <= self._last_checkpoint_id:
            return  # out of order
        self._last_checkpoint_id = cid
        if cid in self._aborted:
            if self.writer is not None:
                self.writer.broadcast_event(CancelCheckpointMarker(cid))
                self._send()
            return
        # 1. operators may emit records ahead of the barrier
        for index, op in enumerate(self.operators):
            produced = op.prepare_snapshot_pre_barrier(cid)
            if produced:
                self._run_chain(produced, index + 1)
        # 2. the barrier goes out (ahead of the unsent buffers when unaligned)
        output_state: dict[int, list[Buffer]] = {}
        emitted: dict[int, int] = {}
        if self.writer is not None:
            emitted = self.writer.emitted()
            output_state = self.writer.broadcast_event(barrier, priority=barrier.is_unaligned)
        # 3. synchronous snapshot
        states: dict[str, Any] = {}
        for op in self.operators:
            state = op.snapshot_state(cid)
            if state is not None:
                states[op.uid] = state
            if isinstance(op, SinkOperator):
                self._emit(SinkNotify(sink=op.uid, event="snapshot", checkpoint_id=cid))
        self._emit(
            CheckpointTakenOnTask(
                checkpoint_id=cid,
                unaligned=barrier.is_unaligned,
                start_delay_ms=start_delay,
                alignment_ms=alignment,
                emitted=emitted,
                consumed=dict(enumerate(self.consumed)),
                output_persisted=_record_counts(output_state),
            )
        )
        if alignment is not None and self.handler is not None:
            self._emit(
                AlignmentCompleted(
                    checkpoint_id=cid, alignment_ms=alignment, bytes_processed=processed or 0
                )
            )
        pending = _PendingSnapshot(
            cid, barrier.options, states, output_state, start_delay, alignment, processed
        )
        pending.ended_input = self._operators_ended
        self._pending[cid] = pending
        self._send()
        # 4. the asynchronous part, once the alignment is over
        if alignment is not None:
            self._write(pending)

    def _write(self, pending: _PendingSnapshot) -> None:
        snapshot = TaskSnapshot(
            checkpoint_id=pending.checkpoint_id,
            task=self.task,
            operator_states=pending.operator_states,
            input_channels=self.inputs.take(pending.checkpoint_id),
            output_channels=pending.output_channels,
            ended_input=pending.ended_input,
        )
        pending.persisted_bytes = snapshot.persisted_bytes
        self._emit(
            Traced(
                event="channel_state_captured",
                fields={
                    "checkpoint_id": pending.checkpoint_id,
                    "input": _record_counts(snapshot.input_channels),
                    "output": _record_counts(snapshot.output_channels),
                },
            )
        )
        self._emit(WriteSnapshot(snapshot=snapshot, location=pending.options.target_location))

    def _on_written(self, msg: SnapshotWritten) -> None:
        pending = self._pending.pop(msg.checkpoint_id, None)
        if pending is None:
            return  # aborted meanwhile
        metrics = CheckpointMetrics(
            bytes_processed_during_alignment=pending.processed_bytes or 0,
            bytes_persisted_during_alignment=pending.persisted_bytes,
            alignment_duration_ms=pending.alignment_ms or 0,
            sync_duration_ms=msg.sync_duration_ms,
            async_duration_ms=msg.async_duration_ms,
            checkpoint_start_delay_ms=pending.start_delay_ms,
            unaligned_checkpoint=pending.options.is_unaligned,
            total_bytes_persisted=msg.state.state_size,
        )
        self._emit(
            ReportToCoordinator(
                message=AcknowledgeCheckpoint(
                    task=self.task,
                    attempt=self.spec.attempt,
                    checkpoint_id=msg.checkpoint_id,
                    state=msg.state,
                    metrics=metrics,
                )
            )
        )
        self._maybe_finish()

    def _decline(
        self, checkpoint_id: int, reason: CheckpointFailureReason, message: str | None
    ) -> None:
        self._emit(
            ReportToCoordinator(
                message=DeclineCheckpoint(
                    task=self.task,
                    attempt=self.spec.attempt,
                    checkpoint_id=checkpoint_id,
                    reason=reason,
                    message=message,
                )
            )
        )

    def _on_complete(self, checkpoint_id: int) -> None:
        for op in self.operators:
            op.notify_checkpoint_complete(checkpoint_id)
            if isinstance(op, SinkOperator):
                self._emit(SinkNotify(sink=op.uid, event="complete", checkpoint_id=checkpoint_id))
        if self.status == "ENDED" and self._final_after < checkpoint_id <= self._last_checkpoint_id:
            self._end_partitions()  # the final checkpoint completed

    def _on_aborted(self, checkpoint_id: int) -> None:
        if checkpoint_id > self._last_checkpoint_id:
            self._aborted.append(checkpoint_id)
        if self._pending.pop(checkpoint_id, None) is not None:
            self.inputs.drop(checkpoint_id)
        for op in self.operators:
            op.notify_checkpoint_aborted(checkpoint_id)
            if isinstance(op, SinkOperator):
                self._emit(SinkNotify(sink=op.uid, event="aborted", checkpoint_id=checkpoint_id))
        self._maybe_finish()

    @property
    def pending_checkpoints(self) -> list[int]:
        return sorted(self._pending)

    @property
    def is_backpressured(self) -> bool:
        return self.writer is not None and not self.writer.is_available


def _record_counts(channels: dict[int, list[Buffer]]) -> dict[int, int]:
    return {c: sum(len(b.records) for b in buffers) for c, buffers in channels.items()}


def _own_copy(node: StreamNode) -> StreamNode:
    """Each subtask gets its own copy of a stateful user function object."""
    fn = node.spec.get("fn")
    if isinstance(fn, KeyedProcessFunction):
        return StreamNode(
            node.node_id,
            node.kind,
            node.name,
            node.uid,
            node.parallelism,
            {**node.spec, "fn": copy.deepcopy(fn)},
            node.chainable,
        )
    return node
