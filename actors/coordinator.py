"""``CheckpointCoordinator`` actor: the JobManager's checkpointing, around the pure core.

It delivers acknowledgements, declines, job status changes (the ``CheckpointCoordinatorDeActivator``
behaviour), task state changes and timers to the core, and carries out its effects: triggers and
notifications to task actors, timers, storage work, failing the job, the outcome of the requests
the JobMaster made.

Storage work runs off the actor's thread (``runtime.run_async``: Flink's I/O executor): making a
checkpoint's location and writing its metadata answer with a completion message through the
actor's own mailbox (``runtime.storage.carry_out``), so the core hears of it as of anything else
and a simulated run replays by its seed; deleting state and locations answers nothing.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, assert_never

import pykka

from actors.actor_runtime import ActorRuntime
from actors.faults import DelayAcknowledgement
from actors.logs import get_logger
from actors.protocol import WireCoordinator
from actors.trace import EventLog
from runtime.checkpoint import TaskId
from runtime.coordinator import CheckpointCoordinator
from runtime.effects import (
    CancelTimer,
    CheckpointAborted,
    CheckpointCompleted,
    CheckpointTriggered,
    CoordinatorEffect,
    DiscardLocation,
    DiscardState,
    FailJob,
    FinalizeCheckpoint,
    InitializeLocation,
    RequestCompleted,
    RequestDeclined,
    RequestFailed,
    Role,
    ScheduleTimer,
    Send,
    StorageEffect,
)
from runtime.messages import (
    AcknowledgeCheckpoint,
    CheckpointFailure,
    CheckpointRequestId,
    CoordinatorCrashed,
    RequestOutcome,
    SavepointRequestId,
    TimerFired,
)
from runtime.storage import FileSystemCheckpointStorage, carry_out

log = get_logger(__name__)


@dataclass(frozen=True)
class _Redeliver:
    """Timer key: a delayed message is due."""

    token: int


@dataclass(frozen=True)
class _Late:
    """A message delivered late by a fault (not delayed twice)."""

    message: AcknowledgeCheckpoint


@dataclass(frozen=True)
class _StorageCrashed:
    """Storage work raised something other than an ``OSError``: a bug, which crashes this
    actor (and so fails the job, naming it) instead of vanishing on a pool thread."""

    error: BaseException


class CoordinatorActor(pykka.ThreadingActor):
    def __init__(
        self,
        *,
        core: CheckpointCoordinator,
        runtime: ActorRuntime,
        storage: FileSystemCheckpointStorage,
        job_master: pykka.ActorRef[Any],
        job_id: str,
    ) -> None:
        super().__init__()
        self.core = core
        self.runtime = runtime
        self.storage = storage
        self.job_master = job_master
        self.job_id = job_id
        self.tasks: dict[TaskId, pykka.ActorRef[Any]] = {}
        self._delayed: dict[int, _Late] = {}
        self._tokens = itertools.count()

    def on_start(self) -> None:
        self.log = EventLog(log, self.runtime.tracer, self.runtime.stamp).bind(
            role="checkpoint_coordinator", job=self.job_id
        )

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        """Crashed: the JobMaster fails the job with the cause (it would otherwise wait for
        this actor's checkpoints and final statistics forever)."""
        name = getattr(exception_type, "__name__", "error")
        self.job_master.tell(
            CoordinatorCrashed(cause=f"checkpoint coordinator crashed: {name}: {exception_value}")
        )

    def on_receive(self, message: Any) -> None:
        if isinstance(message, WireCoordinator):
            self.tasks = dict(message.tasks)
            return
        if isinstance(message, _StorageCrashed):
            raise message.error
        if isinstance(message, TimerFired) and isinstance(message.key, _Redeliver):
            message = self._delayed.pop(message.key.token)
        elif isinstance(message, AcknowledgeCheckpoint) and self.runtime.faults:
            fault = self.runtime.faults.acknowledgement(str(message.task), message.checkpoint_id)
            if fault is not None:  # a redelivered acknowledgement arrives as _Late, above
                self.log.info("fault_injected", fault=repr(fault))
                if isinstance(fault, DelayAcknowledgement):
                    token = next(self._tokens)
                    self._delayed[token] = _Late(message)
                    now = self.runtime.clock.now()
                    self.runtime.schedule(self.actor_ref, _Redeliver(token), now + fault.delay_ms)
                return
        if isinstance(message, _Late):
            message = message.message
        self._apply(self.core.handle(message, self.runtime.clock.now()))

    def summary(self) -> dict[str, Any]:
        """Asked from outside the actor system (the progress line, the REST API)."""
        return self.core.summary(self.runtime.clock.now())

    def details(self) -> dict[int, dict[str, Any]]:
        """Asked from outside the actor system (the REST API)."""
        return self.core.details()

    def _send(self, task: TaskId, message: Any) -> None:
        ref = self.tasks.get(task)
        if ref is None:
            return
        try:
            ref.tell(message)
        except pykka.ActorDeadError:
            self.log.debug("task_gone", task=str(task))

    def _path(self, path: str | None) -> str | None:
        """Where a checkpoint went; relative to the job's directory in a simulation, so that
        two runs of one seed write identical traces."""
        if path is None or not self.runtime.deterministic:
            return path
        return os.path.relpath(path, self.storage.root)

    def _in_background(self, work: Callable[..., None], *args: Any) -> None:
        """Deleting files is the coordinator's I/O pool's work in Flink, not its main thread's."""

        def run() -> None:
            try:
                work(*args)
            except OSError as error:
                self.log.warning("discard_failed", error=str(error))

        self.runtime.run_async(run)

    def _storage_work(self, effect: StorageEffect) -> None:
        """Make a location or write the metadata off this thread; the answer comes back as a
        message in this actor's mailbox."""
        me = self.actor_ref

        def run() -> None:
            try:
                answer: Any = carry_out(self.storage, effect)
            except Exception as error:  # a bug: crash the actor with it, in its own thread
                answer = _StorageCrashed(error)
            # the job may have ended meanwhile: what was made goes with its directories
            with contextlib.suppress(pykka.ActorDeadError):
                me.tell(answer)

        self.runtime.run_async(run)

    def _apply(self, effects: list[CoordinatorEffect]) -> None:
        for effect in effects:
            match effect:
                case Send(to=TaskId() as task, message=message):
                    self._send(task, message)
                case Send(to=to, message=message):
                    assert to is Role.JOB_MASTER, f"the coordinator sends itself nothing: {effect}"
                    self.job_master.tell(message)
                case ScheduleTimer(key=key, due=due):
                    self.runtime.schedule(self.actor_ref, key, due)
                case CancelTimer(key=key):
                    self.runtime.cancel(self.actor_ref, key)
                case InitializeLocation() | FinalizeCheckpoint():
                    self._storage_work(effect)
                case DiscardLocation(checkpoint_id=cid):
                    self._in_background(self.storage.discard_location, cid)
                case DiscardState(checkpoint_id=cid, handles=handles):
                    self._in_background(self.storage.discard, cid, handles)
                case CheckpointTriggered(checkpoint_id=cid, options=options):
                    self.log.info(
                        "checkpoint_triggered",
                        checkpoint_id=cid,
                        type=options.snapshot_type.value,
                        alignment=options.alignment.value,
                    )
                case CheckpointCompleted(checkpoint=checkpoint, subsumed=subsumed):
                    self.log.info(
                        "checkpoint_completed",
                        checkpoint_id=checkpoint.checkpoint_id,
                        duration_ms=checkpoint.completion_timestamp - checkpoint.timestamp,
                        state_size=checkpoint.state_size,
                        path=self._path(checkpoint.external_path),
                        subsumed=list(subsumed),
                    )
                case CheckpointAborted(checkpoint_id=cid, reason=reason, cause=cause):
                    if cause is None:
                        self.log.info("checkpoint_aborted", checkpoint_id=cid, reason=reason.name)
                    else:
                        self.log.warning(
                            "checkpoint_aborted", checkpoint_id=cid, reason=reason.name, cause=cause
                        )
                case FailJob(message=text, reason=reason, cause=cause):
                    self.log.warning(
                        "checkpoint_failure_fails_job", reason=reason.name, message=text
                    )
                    self.job_master.tell(
                        CheckpointFailure(message=text, reason=reason, cause=cause)
                    )
                case RequestCompleted(
                    request_id=SavepointRequestId() | CheckpointRequestId() as rid,
                    checkpoint=checkpoint,
                ):
                    self.job_master.tell(
                        RequestOutcome(
                            request_id=rid,
                            path=checkpoint.external_path,
                            checkpoint_id=checkpoint.checkpoint_id,
                        )
                    )
                case (
                    RequestFailed(
                        request_id=SavepointRequestId() | CheckpointRequestId() as rid,
                        reason=reason,
                        cause=cause,
                    )
                    | RequestDeclined(
                        request_id=SavepointRequestId() | CheckpointRequestId() as rid,
                        reason=reason,
                        cause=cause,
                    )
                ):
                    failure = reason.name if cause is None else f"{reason.name}: {cause}"
                    self.job_master.tell(RequestOutcome(request_id=rid, failure=failure))
                case RequestCompleted() | RequestFailed() | RequestDeclined():
                    pass  # the coordinator's own (periodic) requests: nobody waits for them
                case _ as unreachable:
                    assert_never(unreachable)
