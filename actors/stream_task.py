"""``StreamTask``: one subtask, Flink's mailbox model on a Pykka inbox.

The inbox is the mailbox: input items, credits, triggers, notifications and timers arrive as
mails; the default action (``RunDefaultAction``) processes one buffer and puts itself back, so
every control mail is handled between two buffers. The asynchronous checkpoint part (writing
the snapshot) runs off the mailbox thread, on the runtime's asynchronous pool as Flink's
``AsyncCheckpointRunnable`` does, and reports back as a mail (``SnapshotWritten`` or
``SnapshotFailed``), so records keep flowing until the acknowledgement. Decisions are the core's (``runtime.task.StreamTaskCore``); this shell routes.
"""

from __future__ import annotations

import contextlib
import dataclasses
from functools import partial
from typing import Any

import pykka

from actors.connectors import Connector, make_connector
from actors.execution import ActorRuntime
from actors.faults import CrashTask
from actors.logs import get_logger
from actors.protocol import (
    Consumed,
    Deliver,
    Prioritize,
    Resume,
    SinkResults,
    SourceProgress,
    TaskStateUpdate,
    WireTask,
)
from runtime.effects import (
    AckInput,
    AlignmentCompleted,
    CancelTimer,
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
    WriteSnapshot,
)
from runtime.messages import (
    AcknowledgeCheckpoint,
    RunDefaultAction,
    SnapshotFailed,
    SnapshotWritten,
    StartTask,
)
from runtime.metrics import TaskIOMetrics
from runtime.network import Buffer, CancelCheckpointMarker, CheckpointBarrier, EndOfPartition
from runtime.status import ExecutionState
from runtime.storage import CheckpointStorageError, FileSystemCheckpointStorage
from runtime.task import StreamTaskCore, TaskSpec

log = get_logger(__name__)


class InjectedCrash(RuntimeError):
    """An injected ``CrashTask``: escapes the actor, which dies."""


class StreamTask(pykka.ThreadingActor):
    #: user code runs here: a function that never returns must not keep the process alive
    #: after its job was given up (Flink's TaskManager kills such a task)
    use_daemon_thread = True

    def __init__(
        self,
        *,
        spec: TaskSpec,
        runtime: ActorRuntime,
        storage: FileSystemCheckpointStorage,
        job_master: pykka.ActorRef[Any],
        report_records_every: int = 0,
    ) -> None:
        super().__init__()
        self.spec = spec
        #: a source tells the JobMaster its record count every this many records (savepoints
        #: after a number of records); 0: never
        self.report_records_every = report_records_every
        self._reported = 0
        self.core = StreamTaskCore(spec)
        self.runtime = runtime
        self.storage = storage
        self.job_master = job_master
        self.coordinator: pykka.ActorRef[Any] | None = None
        self.outputs: list[pykka.ActorRef[Any]] = []
        self.inputs: list[pykka.ActorRef[Any]] = []
        self.sink_names = {op.uid: op.name for op in spec.operators if op.kind == "sink"}
        self.connectors: dict[str, Connector] = {
            op.uid: make_connector(
                op.spec["sink"],
                op.spec["options"],
                spec.task,
                spec.parallelism,
                transactional=spec.checkpointing,
                attempt=spec.attempt,
                publish=partial(self._publish, op.name),
            )
            for op in spec.operators
            if op.kind == "sink"
        }
        #: sink states of snapshots not yet written, by checkpoint id then sink uid
        self._sink_states: dict[int, dict[str, Any]] = {}
        self._sync_ms: dict[int, int] = {}
        self._default_requested = False
        #: Flink's per-subtask IO metrics (records, bytes, back-pressured/idle/busy time)
        self.io = TaskIOMetrics()

    def on_start(self) -> None:
        self.log = log.bind(task=str(self.spec.task), attempt=self.spec.attempt)

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        """The actor itself crashed: its supervisor, the JobMaster, hears of it."""
        text = f"task actor crashed: {exception_type.__name__ if exception_type else 'error'}: {exception_value}"
        with contextlib.suppress(Exception):
            self._close_connectors(finished=False)
        self._report(ExecutionState.FAILED, text)

    def on_receive(self, message: Any) -> None:
        clock = self.runtime.clock
        if isinstance(message, WireTask):
            self.coordinator, self.outputs, self.inputs = (
                message.coordinator,
                message.outputs,
                message.inputs,
            )
            return
        if isinstance(message, StartTask):
            self._restore_connectors()  # before any record reaches them
            self.io.start(clock.now())
        started = clock.now()
        self._handle(message, started)
        self._run_default_actions()

    def _handle(self, message: Any, now: int) -> None:
        core = self.core
        before = core.records_in
        effects = core.handle(message, now)
        self.runtime.charge(core.records_in - before, core.take_cost())
        faults = self.runtime.faults
        if faults and core.records_in > before:
            fault = faults.task_failure(str(self.spec.task), core.records_in)
            if isinstance(fault, CrashTask):
                self.log.info("fault_injected", fault=repr(fault))
                raise InjectedCrash(f"injected fault: {fault!r}")
            if fault is not None:
                self.log.info("fault_injected", fault=repr(fault))
                effects = core.fail(f"injected fault: {fault!r}")
        end = self.runtime.clock.now()
        self._apply(effects, end - now)
        self.io.observe(
            now,
            end,
            records_in=core.records_in,
            records_out=core.records_out,
            backpressured=core.is_backpressured,
        )
        step = self.report_records_every
        if step and core.records_in // step > self._reported:
            self._reported = core.records_in // step
            self.job_master.tell(SourceProgress(task=self.spec.task, records=core.records_in))

    def _run_default_actions(self) -> None:
        """Flink's mailbox loop: run the default action again while no mail is waiting (up
        to a budget, then yield through the mailbox), so a control mail still comes between
        two buffers."""
        budget = self.runtime.default_action_budget
        while self._default_requested and budget > 0 and self.actor_inbox.empty():
            self._default_requested = False
            budget -= 1
            self._handle(RunDefaultAction(), self.runtime.clock.now())
        if self._default_requested:
            self._default_requested = False
            self.actor_ref.tell(RunDefaultAction())

    # --- effects ----------------------------------------------------------------------------------

    def _apply(self, effects: list[Effect], elapsed: int) -> None:
        for effect in effects:
            match effect:
                case SendToOutput(channel=channel, item=item):
                    self.outputs[channel].tell(Deliver(item))
                    if isinstance(item, Buffer):
                        self.io.wrote(item.size)
                    else:
                        self._trace_sent(channel, item)
                case AckInput(channel=channel):
                    self.inputs[channel].tell(Consumed())
                case RequestDefaultAction():
                    self._default_requested = True
                case ResumeConsumption(channel=channel):
                    self.inputs[channel].tell(Resume())
                    self.log.debug("channel_resumed", channel=channel)
                case ConvertToPriorityEvent(channel=channel, sequence_number=seq):
                    self.inputs[channel].tell(Prioritize(seq))
                    self.log.info("barrier_prioritized", channel=channel, seq=seq)
                case WriteSnapshot(snapshot=snapshot, location=location):
                    sink_states = self._sink_states.pop(snapshot.checkpoint_id, None)
                    if sink_states:  # the sinks' pending transactions join the snapshot
                        snapshot = dataclasses.replace(
                            snapshot, operator_states={**snapshot.operator_states, **sink_states}
                        )
                    sync_ms = self._sync_ms.pop(snapshot.checkpoint_id, 0)
                    self.runtime.run_async(partial(self._async_part, snapshot, location, sync_ms))
                case ReportToCoordinator(message=report):
                    assert self.coordinator is not None
                    self.coordinator.tell(report)
                    if isinstance(report, AcknowledgeCheckpoint):
                        self.log.info("checkpoint_acknowledged", checkpoint_id=report.checkpoint_id)
                    else:
                        self.log.info(
                            "checkpoint_declined",
                            checkpoint_id=report.checkpoint_id,
                            reason=report.reason.name,
                        )
                case ScheduleTimer(key=key, due=due):
                    self.runtime.schedule(self.actor_ref, key, due)
                case CancelTimer(key=key):
                    self.runtime.cancel(self.actor_ref, key)
                case SinkWrite(sink=sink, records=records):
                    self.connectors[sink].write(records)
                case SinkNotify(sink=sink, event=event, checkpoint_id=cid):
                    connector = self.connectors.get(sink)
                    if connector is None:  # closed once the task finished
                        continue
                    if event == "snapshot":
                        state = connector.pre_commit(cid)
                        if state is not None:
                            self._sink_states.setdefault(cid, {})[sink] = state
                    elif event == "complete":
                        connector.commit(cid)
                    else:  # aborted: its transaction stays pending, committed with a later one
                        self._sink_states.pop(cid, None)
                case CheckpointTakenOnTask(checkpoint_id=cid) as taken:
                    fault = self.runtime.faults.fails_checkpoint(str(self.spec.task), cid)
                    if fault is not None:  # the synchronous part fails: the task fails
                        self.log.info("fault_injected", fault=repr(fault))
                        self._apply(
                            self.core.fail(
                                f"injected fault: {fault!r} (synchronous part of checkpoint {cid})"
                            ),
                            0,
                        )
                        return
                    self._sync_ms[cid] = elapsed
                    self.log.info(
                        "checkpoint_taken",
                        checkpoint_id=cid,
                        unaligned=taken.unaligned,
                        start_delay_ms=taken.start_delay_ms,
                        alignment_ms=taken.alignment_ms,
                        emitted=taken.emitted,
                        consumed=taken.consumed,
                        output_persisted=taken.output_persisted,
                    )
                case Traced(event=event, fields=fields):
                    self.log.info(event, **fields)
                case AlignmentCompleted(
                    checkpoint_id=cid, alignment_ms=ms, bytes_processed=processed
                ):
                    self.log.info(
                        "alignment_completed",
                        checkpoint_id=cid,
                        alignment_ms=ms,
                        bytes_processed=processed,
                    )
                case TaskFinished():
                    self._finish()
                case TaskCanceled():
                    self._finish(ExecutionState.CANCELED)
                case TaskStopped():
                    self._finish(ExecutionState.FINISHED, commit=False)
                case TaskFailed(message=text):
                    self.log.warning("task_failed", message=text)
                    self._close_connectors(finished=False)
                    self._report(ExecutionState.FAILED, text)
                case _:
                    self.log.debug("effect_ignored", effect=type(effect).__name__)

    def progress(self) -> dict[str, Any]:
        """Asked from outside the actor system (the progress line)."""
        return {
            "records_in": self.core.records_in,
            "records_out": self.core.records_out,
            "backpressured": self.core.is_backpressured,
            "status": self.core.status,
            "io": self.io.snapshot(self.runtime.clock.now()),
        }

    def _trace_sent(self, channel: int, item: object) -> None:
        if isinstance(item, CheckpointBarrier):
            self.log.info(
                "barrier_sent",
                checkpoint_id=item.checkpoint_id,
                channel=channel,
                unaligned=item.is_unaligned,
            )
        elif isinstance(item, CancelCheckpointMarker):
            self.log.info("cancel_marker_sent", checkpoint_id=item.checkpoint_id, channel=channel)
        elif isinstance(item, EndOfPartition):
            self.log.info("end_of_partition_sent", channel=channel)

    def _async_part(self, snapshot: TaskSnapshot, location: str | None, sync_ms: int) -> None:
        """On the asynchronous pool: write the snapshot, then tell the task how it went."""
        clock = self.runtime.clock
        started = clock.now()
        cid = snapshot.checkpoint_id
        report: SnapshotWritten | SnapshotFailed
        try:
            if self.runtime.faults.fails_snapshot(str(self.spec.task), cid):
                self.log.info("fault_injected", fault=f"FailSnapshot({cid})")
                raise CheckpointStorageError(f"injected fault: snapshot {cid} fails")
            state = self.storage.write_task_state(location, snapshot)
        except Exception as error:  # the asynchronous part failed: decline, the task goes on
            gone = isinstance(error, CheckpointStorageError) and "was discarded" in str(error)
            text = str(error)
            if self.runtime.deterministic:  # a temporary directory's name differs between runs
                text = text.replace(str(self.storage.root), "<job dir>")
            (self.log.info if gone else self.log.warning)(
                "async_snapshot_failed", checkpoint_id=cid, error=text
            )
            report = SnapshotFailed(checkpoint_id=cid, message=text)
        else:
            report = SnapshotWritten(
                checkpoint_id=cid,
                state=state,
                sync_duration_ms=sync_ms,
                async_duration_ms=clock.now() - started,
            )
        with contextlib.suppress(pykka.ActorDeadError):  # the task was stopped meanwhile
            self.actor_ref.tell(report)

    def _publish(self, sink: str, txn: int | str, records: list[Any]) -> None:
        """A collect sink committed a transaction: its records join the job's result."""
        self.job_master.tell(
            SinkResults(
                sink=sink,
                task=self.spec.task,
                records=records,
                attempt=self.spec.attempt,
                txn=txn,
            )
        )

    def _restore_connectors(self) -> None:
        restore = self.spec.restore
        if restore is None:
            return
        for uid, connector in self.connectors.items():
            connector.restore(restore.operator_states.get(uid, []))

    def _finish(
        self, state: ExecutionState = ExecutionState.FINISHED, *, commit: bool = True
    ) -> None:
        finished = state is ExecutionState.FINISHED
        for sink, records in self._close_connectors(finished=finished and commit).items():
            self.job_master.tell(
                SinkResults(
                    sink=sink, task=self.spec.task, records=records, attempt=self.spec.attempt
                )
            )
        self.log.info(
            "task_finished" if finished else "task_canceled",
            records_in=self.core.records_in,
            records_out=self.core.records_out,
        )
        self._report(state)

    def _report(self, state: ExecutionState, message: str | None = None) -> None:
        now = self.runtime.clock.now()
        if state.is_terminal:
            self.io.end(now)
        self.job_master.tell(
            TaskStateUpdate(
                task=self.spec.task,
                state=state,
                message=message,
                attempt=self.spec.attempt,
                metrics=self.io.snapshot(now),
            )
        )

    def _close_connectors(self, *, finished: bool) -> dict[str, list[Any]]:
        results: dict[str, list[Any]] = {}
        for sink, connector in self.connectors.items():
            records = connector.close(finished=finished)
            if records is not None:
                results[self.sink_names[sink]] = records
        self.connectors = {}
        return results
