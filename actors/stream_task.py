"""``StreamTask``: one subtask, Flink's mailbox model on a Pykka inbox.

The inbox is the mailbox: deliveries from the input channels, credits, triggers,
notifications and timers arrive as mails; the default action (``RunDefaultAction``) processes
one buffer and puts itself back, so every control mail is handled between two buffers.
Decisions are the core's (``runtime.task.StreamTaskCore``); this shell delivers mails and
carries out the effects: it sends, runs timers, drives the sinks' connectors, runs the
asynchronous checkpoint part off the mailbox thread (on the runtime's pool, as Flink's
``AsyncCheckpointRunnable``) and reports back as a mail (``SnapshotWritten`` or
``SnapshotFailed``), and tells the JobMaster the task's state. It keeps no checkpoint or sink
state of its own.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections import deque
from collections.abc import Sequence
from functools import partial
from traceback import format_exception
from typing import Any, assert_never

import pykka

from actors.actor_runtime import ActorRuntime
from actors.connectors import Connector, StagedFiles, make_connector, writer_id
from actors.faults import CrashTask
from actors.logs import get_logger
from actors.protocol import (
    AllRecordsProcessed,
    CannotCross,
    Credit,
    Deliver,
    FailJob,
    SinkResults,
    SourceProgress,
    TaskStateUpdate,
    WireTask,
)
from actors.pykka_seam import ExpectedFailures, ThreadingFuture
from actors.trace import EventLog
from runtime.descriptors import SinkDescriptor
from runtime.effects import (
    AcknowledgeAllRecordsProcessed,
    AnnounceCredit,
    CancelTimer,
    CheckpointTakenOnTask,
    PrecommitCollected,
    PublishCollected,
    RequestDefaultAction,
    Role,
    ScheduleTimer,
    Send,
    SendToOutput,
    SinkClose,
    SinkCommit,
    SinkPreCommit,
    SinkRecover,
    SinkWrite,
    TaskCanceled,
    TaskEffect,
    TaskFailed,
    TaskFinished,
    TaskStopped,
    Traced,
    WriteSnapshot,
)
from runtime.failure import TaskFailure, describe_user_error
from runtime.messages import (
    InjectFailure,
    RunDefaultAction,
    SnapshotFailed,
    SnapshotWritten,
    StartTask,
    SyncPartMeasured,
    TaskMessage,
    UserCodeFailed,
)
from runtime.metrics import TaskIOMetrics
from runtime.network import (
    Buffer,
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfData,
    EndOfPartition,
)
from runtime.snapshot import TaskSnapshot
from runtime.status import ExecutionState
from runtime.storage import CheckpointDiscarded, CheckpointStorageError, FileSystemCheckpointStorage
from runtime.task import StreamTaskCore, TaskSpec

log = get_logger(__name__)
#: the default action's mail (it has no fields: one instance serves every task)
_RUN_DEFAULT_ACTION = RunDefaultAction()


class InjectedCrash(RuntimeError):
    """An injected ``CrashTask``: escapes the actor, which dies."""


class _ConnectorFailed(Exception):
    def __init__(self, failure: TaskFailure) -> None:
        super().__init__(failure.describe())
        self.failure = failure


class StreamTask(ExpectedFailures):
    #: an injected crash (``CrashTask``) is the run's, not an unhandled error: no traceback
    #: as is a record that cannot cross to another process (``CannotCross``), which the task
    #: reports in one line, and a peer found dead (``ActorDeadError``: a channel the JobMaster
    #: stopped as it fails the job over or cancels it), which ``on_failure`` reports as a task
    #: failure
    expected_failures = (InjectedCrash, CannotCross, pykka.ActorDeadError)
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
        self._task_name = str(spec.task)
        #: a source tells the JobMaster its record count every this many records (savepoints
        #: after a number of records); 0: never
        self.report_records_every = report_records_every
        self._reported = 0
        self.runtime = runtime
        self.storage = storage
        self.job_master = job_master
        self.coordinator: pykka.ActorRef[Any] | None = None
        self.outputs: list[pykka.ActorRef[Any]] = []
        self.inputs: list[pykka.ActorRef[Any]] = []
        self.connectors: dict[str, Connector] = {}
        for op in spec.operators:
            if isinstance(op.operator, SinkDescriptor):
                connector = make_connector(
                    op.operator,
                    spec.task,
                    spec.parallelism,
                    transactional=spec.checkpointing and op.operator.sink.transactional,
                    attempt=spec.attempt,
                    writer=writer_id(
                        storage.job_id,
                        spec.task,
                        spec.attempt,
                        op.uid,
                        deterministic=runtime.deterministic,
                    ),
                    uid=op.uid,
                )
                if connector is not None:
                    self.connectors[op.uid] = connector
        # a file sink's snapshots record its lineage by the ids its connector names files by
        writers = {
            uid: writer
            for uid, connector in self.connectors.items()
            if isinstance(writer := getattr(connector, "writer_id", None), str)
        }
        self.core = StreamTaskCore(spec, epoch_ms=runtime.epoch_ms, sink_writers=writers)
        self._default_requested = False
        #: mails for the core that carrying out its effects gave (``_apply``)
        self._answers: deque[TaskMessage] = deque()
        self._operator_names = {op.uid: op.name for op in spec.operators}
        #: Flink's per-subtask IO metrics (records, bytes, back-pressured/idle/busy time)
        chain = self.core.chain
        self.io = TaskIOMetrics(
            counters=chain.record_counts,
            live=self.core.live_counts,
            fired=chain.fired_timers,
            user_meters=chain.user_meters,
        )
        #: the IO metrics' samples are taken by the task's thread and by whoever reads its
        #: metrics (``read_progress``: the web server, the progress line, a TaskManager
        #: answering for its tasks), never through the mailbox
        self._io_lock = threading.Lock()
        #: the largest operator counts read so far (a racy read may lag one)
        self._seen: dict[str, int] = {}

    def on_start(self) -> None:
        self.log = EventLog(log, self.runtime.tracer, self.runtime.stamp).bind(
            task=str(self.spec.task), attempt=self.spec.attempt
        )
        _PUBLISHED[self.actor_urn] = self

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        """The actor itself crashed: its supervisor, the JobMaster, hears of it. An injected
        crash (``CrashTask``), or a peer found dead while the job is being torn down, is a task
        failure, which the job fails over from if it still runs. Anything else is a bug in
        ckptsim (user code's and connectors' errors are task failures before they get here):
        the job fails for good, as a restart would meet the bug again, and the traceback is
        logged at error level, so it reaches the terminal."""
        name = getattr(exception_type, "__name__", "error")
        for connector in self.connectors.values():
            with contextlib.suppress(Exception):
                connector.close(finished=False)
        self.connectors = {}
        if isinstance(exception_value, CannotCross):  # the user's records, not a bug
            text = exception_value.describe(str(self.spec.task))
            self.log.error("record_cannot_cross", error=text)
            self.job_master.tell(FailJob(cause=f"{text} (a restart would meet it again)"))
            self._report(ExecutionState.FAILED, text)
            return
        text = f"task actor crashed: {name}: {exception_value}"
        # a peer stopped under it (the job is being torn down) is no bug either
        if not isinstance(exception_value, InjectedCrash | pykka.ActorDeadError):
            self.log.error(
                "task_crashed",
                error=f"{name}: {exception_value}",
                traceback="".join(
                    format_exception(exception_type, exception_value, traceback)
                ).rstrip(),
            )
            text = f"a bug in ckptsim: task {self.spec.task} crashed: {name}: {exception_value}"
            self.job_master.tell(FailJob(cause=f"{text} (a restart would meet it again)"))
        self._report(ExecutionState.FAILED, text)

    def on_receive(self, message: Any) -> None:
        if isinstance(message, WireTask):
            self.coordinator, self.outputs, self.inputs = (
                message.coordinator,
                message.outputs,
                message.inputs,
            )
            return
        if isinstance(message, StartTask):
            self.io.start(self.runtime.clock.now())
        if not isinstance(message, RunDefaultAction):
            self.io.mail()  # Flink's mailboxMailsPerSecond counts mails, not the default action
        self._handle(message, self.runtime.clock.now())
        if self._default_requested:
            self._run_default_actions()

    def _handle(self, message: TaskMessage, now: int) -> None:
        self.io.busy_since = now
        core = self.core
        runtime = self.runtime
        before = core.records_in
        effects = core.handle(message, now)
        processed = core.records_in - before
        runtime.charge(processed, core.take_cost())
        faults = runtime.faults
        if processed > 0 and faults:
            fault = faults.task_failure(self._task_name, core.records_in)
            if isinstance(fault, CrashTask):
                self.log.info("fault_injected", fault=repr(fault))
                raise InjectedCrash(f"injected fault: {fault!r}")
            if fault is not None:
                self.log.info("fault_injected", fault=repr(fault))
                effects = core.handle(InjectFailure(message=f"injected fault: {fault!r}"), now)
        self._apply(effects, now)
        with self._io_lock:
            self.io.observe(
                now,
                runtime.clock.now(),
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
        if not self._default_requested:
            return
        runtime = self.runtime
        budget = runtime.default_action_budget
        while self._default_requested and budget > 0 and self.actor_inbox.empty():
            self._default_requested = False
            budget -= 1
            self._handle(_RUN_DEFAULT_ACTION, runtime.clock.now())
        if self._default_requested:
            self._default_requested = False
            self.actor_ref.tell(_RUN_DEFAULT_ACTION)

    # --- effects ----------------------------------------------------------------------------------

    def _apply(self, effects: list[TaskEffect], started: int) -> None:
        """Carry out the core's effects in order. Carrying one out may answer with a mail for
        the core (how long the synchronous part took, or that it or a sink's connector
        failed); the answers go to the core once the batch is done, or given up, never in the
        middle of it."""
        answers = self._answers
        while True:
            for effect in effects:
                try:
                    if not self._carry_out(effect, started):
                        break  # the task failed meanwhile: the rest is moot
                except _ConnectorFailed as failed:
                    self.log.warning(
                        "sink_failed",
                        operator=failed.failure.operator,
                        error=failed.failure.message,
                    )
                    answers.append(UserCodeFailed(failure=failed.failure))
                    break
            if not answers:
                return
            effects = self.core.handle(answers.popleft(), started)

    def _carry_out(self, effect: TaskEffect, started: int) -> bool:
        """One effect; False when the rest of the batch must not be carried out. A mail for
        the core goes to ``_answers``."""
        match effect:
            case SendToOutput(channel=channel, item=item):
                try:
                    self.outputs[channel].tell(Deliver(item))
                except CannotCross as error:  # runtime="processes": a record that won't pickle
                    error.operator = self._output_label()
                    raise
                if isinstance(item, Buffer):
                    self.io.wrote(item.size)
                else:
                    self._trace_sent(channel, item)
            case AnnounceCredit(channel=channel, credits=credits):
                self.inputs[channel].tell(Credit(credits))
            case AcknowledgeAllRecordsProcessed(channel=channel):
                self.inputs[channel].tell(AllRecordsProcessed())
            case RequestDefaultAction():
                self._default_requested = True
            case WriteSnapshot(snapshot=snapshot, location=location):
                self.runtime.run_async(partial(self._async_part, snapshot, location))
            case Send(to=Role.JOB_MASTER, message=report):
                self.job_master.tell(report)  # a watermark alignment report
            case Send(to=to, message=report):
                assert to is Role.COORDINATOR, (
                    f"a task tells only its JobMaster or coordinator: {effect}"
                )
                assert self.coordinator is not None
                self.coordinator.tell(report)
            case ScheduleTimer(key=key, due=due):
                self.runtime.schedule(self.actor_ref, key, due)
            case CancelTimer(key=key):
                self.runtime.cancel(self.actor_ref, key)
            case SinkWrite(sink=sink, records=records):
                self._connector_call(sink, lambda c: c.write(records))
            case SinkPreCommit(sink=sink, checkpoint_id=cid):
                self._connector_call(sink, lambda c: c.pre_commit(cid))
            case SinkCommit(sink=sink, checkpoint_ids=ids):
                self._connector_call(sink, lambda c: [c.commit(k) for k in ids])
            case SinkRecover(sink=sink, states=states, checkpoint_id=restored, output=output):
                events = self.log.bind(sink=sink)
                self._connector_call(
                    sink, lambda c: _restore(c, list(states), restored, output, events)
                )
            case SinkClose(sink=sink, finished=finished):
                connector = self.connectors.pop(sink, None)
                if connector is not None:
                    if finished:
                        self._connector_call(sink, lambda c: c.close(finished=True), connector)
                    else:  # cancelled or failed: close what can be closed
                        try:
                            connector.close(finished=False)
                        except Exception as error:
                            self.log.warning("sink_close_failed", sink=sink, error=repr(error))
            case PrecommitCollected(name=name, txn=txn, buffers=buffers):
                self._collected(name, txn, buffers, precommit=True)
            case PublishCollected(name=name, txn=txn, buffers=buffers, writer=writer):
                self._collected(name, txn, buffers, writer=writer)
            case CheckpointTakenOnTask(checkpoint_id=cid) as taken:
                fault = self.runtime.faults.fails_checkpoint(str(self.spec.task), cid)
                if fault is not None:  # the synchronous part fails: the task fails
                    self.log.info("fault_injected", fault=repr(fault))
                    message = f"injected fault: {fault!r} (synchronous part of checkpoint {cid})"
                    self._answers.append(InjectFailure(message=message))
                    return False
                self.log.info(
                    "checkpoint_taken",
                    checkpoint_id=cid,
                    unaligned=taken.unaligned,
                    start_delay_ms=taken.start_delay_ms,
                    alignment_ms=taken.alignment_ms,
                    emitted=taken.emitted,
                    consumed=taken.consumed,
                    output_persisted=taken.output_persisted,
                    timers=taken.timers,
                    state_entries=taken.state_entries,
                )
                elapsed = self.runtime.clock.now() - started
                self._answers.append(SyncPartMeasured(checkpoint_id=cid, duration_ms=elapsed))
            case Traced(event=event, fields=fields, level=level):
                getattr(self.log, level)(event, **fields)
            case TaskFinished(final_positions=positions):
                self._ended(ExecutionState.FINISHED, positions)
            case TaskCanceled():
                self._ended(ExecutionState.CANCELED)
            case TaskStopped():
                self._ended(ExecutionState.FINISHED)
            case TaskFailed(message=text, failure=failure):
                if failure is not None:
                    self.log.warning(
                        "task_failed",
                        message=text,
                        operator=failure.operator,
                        traceback=failure.traceback or None,
                    )
                else:
                    self.log.warning("task_failed", message=text)
                self._report(ExecutionState.FAILED, text, failure)
                return False
            case _:
                assert_never(effect)
        return True

    def _collected(
        self,
        name: str,
        txn: int | str | None,
        buffers: tuple[Sequence[Any], ...],
        *,
        precommit: bool = False,
        writer: str | None = None,
    ) -> None:
        """A collect sink's transaction (pre-committed or committed) to the JobMaster."""
        try:
            self._tell_results(name, txn, buffers, precommit=precommit, writer=writer)
        except CannotCross as error:  # runtime="processes": a record that won't pickle
            error.operator = f"collect sink {name!r}"
            raise

    def _output_label(self) -> str:
        """The operator whose records leave the task (the last of its chain but sinks)."""
        labels = [
            node.label
            for node in self.spec.operators
            if not isinstance(node.operator, SinkDescriptor)
        ]
        return labels[-1] if labels else f"task {self.spec.task}"

    def _tell_results(
        self,
        name: str,
        txn: int | str | None,
        buffers: tuple[Sequence[Any], ...],
        *,
        precommit: bool,
        writer: str | None,
    ) -> None:
        self.job_master.tell(
            SinkResults(
                sink=name,
                task=self.spec.task,
                records=[],
                attempt=self.spec.attempt,
                txn=txn,
                buffers=buffers,
                precommit=precommit,
                writer=writer,
            )
        )

    def _connector_call(self, sink: str, call: Any, connector: Connector | None = None) -> None:
        """User code (a sink's connector): an exception fails the task, naming the sink."""
        connector = connector if connector is not None else self.connectors.get(sink)
        if connector is None:
            return  # closed already
        try:
            call(connector)
        except Exception as error:
            raise _ConnectorFailed(
                describe_user_error(
                    error, operator=self.core.chain.sink_label(sink), task=str(self.spec.task)
                )
            ) from error

    def progress(self) -> dict[str, Any]:
        """The task's progress and metrics: asked through the mailbox (the simulation's
        progress line), or read on the reader's own thread (``read_progress``)."""
        records_in, records_out = self.core.live_counts()
        return {
            "records_in": records_in,
            "records_out": records_out,
            "backpressured": self.core.is_backpressured,
            "status": self.core.status.value,
            "io": self._metrics(self.runtime.clock.now()),
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
        elif isinstance(item, EndOfData):
            self.log.info("end_of_data_sent", channel=channel)
        elif isinstance(item, EndOfPartition):
            self.log.info("end_of_partition_sent", channel=channel)

    def _async_part(self, snapshot: TaskSnapshot, location: str | None) -> None:
        """On the asynchronous pool: write the snapshot, then tell the task how it went."""
        clock = self.runtime.clock
        started = clock.now()
        cid = snapshot.checkpoint_id
        report: SnapshotWritten | SnapshotFailed
        try:
            if self.runtime.faults.fails_snapshot(str(self.spec.task), cid):
                self.log.info("fault_injected", fault=f"FailSnapshot({cid})")
                raise CheckpointStorageError(f"injected fault: snapshot {cid} fails")
            state = self.storage.write_task_state(location, snapshot, self._operator_names)
        except Exception as error:  # the asynchronous part failed: decline, the task goes on
            text = str(error)
            if self.runtime.deterministic:  # a temporary directory's name differs between runs
                text = text.replace(str(self.storage.root), "<job dir>")
            # a checkpoint aborted (and deleted) meanwhile is no news
            (self.log.info if isinstance(error, CheckpointDiscarded) else self.log.warning)(
                "async_snapshot_failed", checkpoint_id=cid, error=text
            )
            report = SnapshotFailed(checkpoint_id=cid, message=text)
        else:
            report = SnapshotWritten(
                checkpoint_id=cid, state=state, async_duration_ms=clock.now() - started
            )
        with contextlib.suppress(pykka.ActorDeadError):  # the task was stopped meanwhile
            self.actor_ref.tell(report)

    def _ended(self, state: ExecutionState, final_positions: dict[str, Any] | None = None) -> None:
        self.log.info(
            "task_finished" if state is ExecutionState.FINISHED else "task_canceled",
            records_in=self.core.records_in,
            records_out=self.core.records_out,
        )
        self._report(state, final_positions=final_positions)

    def _report(
        self,
        state: ExecutionState,
        message: str | None = None,
        failure: TaskFailure | None = None,
        *,
        final_positions: dict[str, Any] | None = None,
    ) -> None:
        now = self.runtime.clock.now()
        if state.is_terminal:
            with self._io_lock:
                self.io.end(now)
        self.job_master.tell(
            TaskStateUpdate(
                task=self.spec.task,
                state=state,
                message=message,
                attempt=self.spec.attempt,
                failure=failure,
                metrics=self._metrics(now),
                final_positions=final_positions,
            )
        )

    def _metrics(self, now: int) -> dict[str, Any]:
        """The task's IO metrics and Flink's task and operator metrics (the user's too)."""
        size = getattr(self.actor_inbox, "qsize", None)
        with self._io_lock:
            # first: the views' samples due by now are taken here, the program's meters' too,
            # so that the rates read below are as of now (not one 5 s sample behind)
            io = self.io.snapshot(now)
        metrics = self.core.metrics()  # user gauges are called here, as Flink's reporters do
        with self._io_lock:
            seen = self._seen
            for uid, op in metrics["operators"].items():
                for name in ("numRecordsIn", "numRecordsOut"):
                    key = f"{uid}.{name}"
                    op[name] = seen[key] = max(op[name], seen.get(key, 0))
        rates = io.pop("counter_rates", {})
        for uid, op in metrics["operators"].items():
            for name in ("numRecordsIn", "numRecordsOut"):
                op[f"{name}PerSecond"] = rates.get(f"{uid}.{name}", 0.0)
        return {**io, **metrics, "mailboxQueueSize": size() if size is not None else 0}


#: the tasks of this process by actor urn, for ``read_progress`` (a task that is gone drops out)
_PUBLISHED: weakref.WeakValueDictionary[str, StreamTask] = weakref.WeakValueDictionary()


def read_progress(ref: Any) -> pykka.Future[Any]:
    """A task's progress and metrics (``StreamTask.progress``), read on the caller's thread
    from what the task's own thread keeps up to date, not through its mailbox: a task in a
    long buffer (a slow function) answers at once, with its counts as of now, as Flink's
    metrics are read from counters the task thread updates. A reference that is not a task
    of this process (a remote one, a stand-in) is asked through ``proxy().progress()``. A
    read that meets the task's objects mid-change (a racy read) is a ``pykka.Timeout``, as a
    task that did not answer in time."""
    task = _PUBLISHED.get(getattr(ref, "actor_urn", ""))
    if task is None:
        future: pykka.Future[Any] = ref.proxy().progress()
        return future
    answer: pykka.Future[Any] = ThreadingFuture()
    try:
        answer.set(task.progress())
    except Exception as error:
        timeout = pykka.Timeout(f"task {task.spec.task} could not be read: {error!r}")
        answer.set_exception((pykka.Timeout, timeout, None))
    return answer


def _restore(
    connector: Connector,
    states: list[Any],
    checkpoint_id: int,
    output: tuple[tuple[str, int], ...] | None,
    events: EventLog,
) -> None:
    """A sink connector restored from checkpoint ``checkpoint_id``: it commits the restored
    transactions; one that can (``retract_after``, the file sinks) also retracts what was
    committed that the checkpoint does not stand for (its lineage: ``StagedFiles``; ``output``:
    the lineage of every former subtask of the sink, ``SinkRecover.output``)."""
    if isinstance(connector, StagedFiles):
        connector.restore(states, None if output is None else list(output))
    else:
        connector.restore(states)
    retract = getattr(connector, "retract_after", None)
    if retract is not None:  # traced also when there was nothing to retract (the checker
        # asks each sink subtask that committed after the checkpoint for it)
        retracted = retract(checkpoint_id)
        events.info("sink_output_retracted", after_checkpoint=checkpoint_id, files=retracted)
