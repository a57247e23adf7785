"""TaskManagers as processes (``runtime="processes"``, ``-D ckptsim.runtime=processes``).

The JobManager (the ``JobMaster`` and the ``CheckpointCoordinator`` actors, their timers)
stays in the launching process; every deployment's subtasks run in TaskManager processes,
``taskmanager.numberOfTaskSlots`` subtasks of each vertex to one process (Flink's slot sharing:
slot ``i`` holds subtask ``i`` of every vertex, so TaskManager ``k`` runs subtasks
``k*slots .. k*slots+slots-1``). The actors are the threaded runtime's own: a TaskManager is a
``ThreadedRuntime`` running the same ``StreamTask`` and ``InlineInputChannel`` actors with the
same cores and effects. Only what an actor holds a reference to changes: a ``RemoteRef`` stands
for an actor in another process, and its ``tell`` writes the message to a socket.

- **Where channels live.** A channel between two subtasks of one TaskManager is the threaded
  runtime's call-through channel. A channel between two TaskManagers lives in the consumer's
  process (Flink's ``RemoteInputChannel``): the producer's output is a ``RemoteRef`` to it, so
  buffers, barriers, cancel markers and end-of-partition events cross the socket in the order
  the producer emitted them, and credits and ``AllDataProcessed`` cross back to the producer
  (credit-based flow control as in one process: a producer sends a buffer only against a
  credit).
- **Wire format.** Pickle (protocol 5), one length-prefixed ``(address, message)`` pair per
  message, pickled on the sender's thread (so a record that cannot cross fails its task,
  naming it): records are arbitrary Python values (tuples stay tuples, rows keep their
  fields), which msgpack would not round-trip. The sending thread writes its frame to the
  socket itself (non-blocking) while no frame waits for the link's writer thread; what the
  socket does not take at once goes to the writer thread, and every later frame queues behind
  it, so frames stay whole and in order and ``tell`` never blocks on a full socket (the
  credits bound what is in flight). Handing every frame to the writer thread cost a thread
  switch per message: about a third of a p=2 job's context switches and a fifth to a quarter
  of its TaskManagers' CPU time. A reader thread per link hands what arrives to the local
  actors.
- **User functions** reach the TaskManagers by ``fork``: a TaskManager is forked from the
  launching process when its deployment starts, so lambdas, closures and a script's functions
  run there as they are, with nothing pickled (only messages are). This needs the ``fork``
  start method (Linux, macOS); elsewhere the runtime refuses with a clear error.
- **CPUs.** When a deployment's TaskManagers fill the CPUs the launching process may use
  evenly, each is bound to one of them before its threads start (``ckptsim.processes.pin-cpus``,
  default true): TaskManager k on the k-th CPU the launching process may use, round robin, so
  that its threads and the records they hand each other stay in one core's caches and two busy
  TaskManagers do not trade cores. A lone one is not bound (concurrent jobs' TaskManagers
  would all be bound to the first CPU).
- **Failures.** A TaskManager process that dies (``kill -9``, a crash in native code) closes
  its socket: each of its subtasks not yet in a final state is reported ``FAILED`` to the
  JobMaster ("TaskManager ... lost"), a task failure from which the job fails over as its
  restart strategy allows, exactly as when a task's user code raises. A deployment that is
  stopped (failover, the job's end) shuts its TaskManagers down; the next attempt forks new
  ones (a resource manager replacing lost TaskManagers).
- **What crosses back.** Task states, sink results and source progress go to the JobMaster,
  acknowledgements and declines to the coordinator, trace events to the run's trace and each
  injected fault that strikes to the launching process's fault plan (so a restarted job does
  not meet it again); checkpoint state is written to the checkpoint storage's files by the
  TaskManager, as Flink's file-system checkpoint storage does.
"""

from __future__ import annotations

import contextlib
import functools
import io
import itertools
import multiprocessing
import os
import pickle
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from queue import Empty, SimpleQueue
from typing import Any

import pykka

from actors.execution import ThreadedRuntime
from actors.faults import Fault, FaultPlan
from actors.input_channel import InlineInputChannel
from actors.logs import get_logger
from actors.protocol import CannotCross, FailJob, WireChannel, WireTask
from actors.pykka_seam import ThreadingFuture, reset_registry_after_fork
from actors.stream_task import StreamTask, read_progress
from actors.trace import Event
from runtime.checkpoint import TaskId
from runtime.job import ExecutionPlan
from runtime.messages import TaskStateUpdate
from runtime.status import ExecutionState
from runtime.storage import FileSystemCheckpointStorage

log = get_logger(__name__)

#: how long a TaskManager may take from its fork to having deployed its tasks
DEPLOY_TIMEOUT_S = 60.0
#: how long a stopped TaskManager may take to end before it is killed
SHUTDOWN_GRACE_S = 5.0
#: a TaskManager's GIL switch interval (Python's default: 5 ms): a message that arrives while
#: a task computes waits for its reader thread to get the GIL, and credits make round trips,
#: so a shorter interval keeps producers fed (measured: p=2 about 1.5x faster with it)
SWITCH_INTERVAL_S = 0.0005
#: most messages written at once
_BATCH = 256
_HEADER = struct.Struct("!Q")
_NO_LENGTH = bytes(_HEADER.size)

# addresses in the launching process
_JOB_MASTER = "jm"
_COORDINATOR = "coordinator"
_TRACE = "trace"
_FAULT = "fault"
_REPLY = "reply"
_READY = "ready"
# addresses in a TaskManager
_SHUTDOWN = "shutdown"
_ASK = "ask"


def _task_address(task: TaskId) -> str:
    return f"task:{task}"


def _channel_address(channel_id: int) -> str:
    return f"channel:{channel_id}"


@dataclass(frozen=True, slots=True)
class _StopActor:
    """Stop the actor at this address (``RemoteRef.stop``)."""


@dataclass(frozen=True, slots=True)
class _Ask:
    """Call ``method`` of the actor at ``address`` (outside the actor system: the progress
    line, the REST API) and answer ``request``."""

    request: int
    address: str
    method: str


@dataclass(frozen=True, slots=True)
class _Deployed:
    """A TaskManager's first frame: its tasks are deployed, or why they are not."""

    error: BaseException | None = None


_STOP = object()


def _frame(address: str, message: Any) -> bytes:
    """``(address, message)`` pickled (protocol 5) behind its length: a message that cannot
    be pickled raises ``CannotCross``, naming the type of the record to blame.

    The pickler runs in fast mode (no memo): a memo entry per record made a buffer's records
    cost 3-6x more to pickle once a message held many of them (a collect sink's transaction:
    every record it staged since the last checkpoint), and records cross independently of
    each other anyway, as Flink's serializers write them (two references to one object arrive
    as two equal objects). A message that fast mode refuses (a cycle) is pickled again with
    the memo."""
    out = io.BytesIO()
    out.write(_NO_LENGTH)
    pickler = pickle.Pickler(out, protocol=5)
    pickler.fast = True  # the C pickler's memo switch
    try:
        pickler.dump((address, message))
    except Exception:
        out = io.BytesIO()
        out.write(_NO_LENGTH)
        try:
            pickle.Pickler(out, protocol=5).dump((address, message))
        except Exception as error:
            raise CannotCross(
                address, _culprit_type(message), f"{type(error).__name__}: {error}"
            ) from error
    view = out.getbuffer()
    _HEADER.pack_into(view, 0, len(view) - _HEADER.size)
    del view
    return out.getvalue()


def _culprit_type(message: Any) -> str:
    """The type of the first record of ``message`` (a buffer, a sink's results) that does not
    pickle; the message's own type when no record is to blame."""
    item = getattr(message, "item", message)
    groups: list[Any] = []
    records = getattr(item, "records", None)
    if records is not None:
        groups.append(records)
    groups.extend(getattr(item, "buffers", ()) or ())
    for group in groups:
        for record in group:
            try:
                pickle.dumps(record, protocol=5)
            except Exception:
                kind = type(record)
                module = "" if kind.__module__ == "builtins" else f"{kind.__module__}."
                return f"{module}{kind.__qualname__}"
    return type(message).__qualname__


class Link:
    """One end of a socket between two processes: ``send(address, message)`` from any
    thread (pickled and, while nothing waits for the writer, written there), a writer thread
    that writes what the socket did not take at once, a reader thread that hands each message
    that arrives to ``dispatch(address, message)`` and calls ``on_lost()`` when the other end
    is gone."""

    def __init__(
        self,
        sock: socket.socket,
        name: str,
        dispatch: Callable[[str, Any], None],
        on_lost: Callable[[], None] = lambda: None,
    ) -> None:
        self.sock = sock
        self.name = name
        self.dispatch = dispatch
        self.on_lost = on_lost
        self.closed = False
        self._queue: SimpleQueue[Any] = SimpleQueue()
        #: frames queued for the writer thread or being written by it (under ``_lock``)
        self._queued = 0
        self._lock = threading.Lock()
        self._writer = threading.Thread(target=self._write, name=f"{name}-out", daemon=True)
        self._reader = threading.Thread(target=self._read, name=f"{name}-in", daemon=True)
        self._file = sock.makefile("rb", buffering=1 << 16)

    def start(self, *, reading: bool = True) -> None:
        self._writer.start()
        if reading:
            self._reader.start()

    def start_reading(self) -> None:
        self._reader.start()

    def send(self, address: str, message: Any) -> None:
        """Pickle ``(address, message)`` here, on the sender's thread (a message that cannot
        cross raises ``TypeError`` to the sender, naming it), and write it to the socket here
        when no frame waits for the writer thread and the socket takes it at once; else (the
        rest of it) queue it for the writer, behind the frames waiting there. Never blocks."""
        if self.closed:
            return
        frame = _frame(address, message)
        with self._lock:
            if not self._queued and self.sock.gettimeout() is None:
                # nothing waits to be written: write it here, without waking the writer,
                # as far as the socket takes it at once (the rest goes to the writer)
                try:
                    sent = self.sock.send(frame, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    sent = 0
                except OSError:  # the other end is gone: what it was sent is moot
                    self.closed = True
                    return
                if sent == len(frame):
                    return
                frame = frame[sent:]
            self._queued += 1
            self._queue.put(frame)

    def receive_one(self) -> list[tuple[str, Any]]:
        """Read one message on the caller's thread (before the reader thread starts)."""
        frame = self._read_frame()
        if frame is None:
            raise EOFError(f"{self.name}: the other end closed")
        return frame

    def _read_frame(self) -> list[tuple[str, Any]] | None:
        header = self._file.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack(header)
        data = self._file.read(size)
        if len(data) < size:
            return None
        message: tuple[str, Any] = pickle.loads(data)
        return [message]

    def _write(self) -> None:
        queue, sock = self._queue, self.sock
        while True:
            item = queue.get()
            batch = [item]
            with contextlib.suppress(Empty):
                while len(batch) < _BATCH:
                    batch.append(queue.get_nowait())
            stop = any(entry is _STOP for entry in batch)
            batch = [entry for entry in batch if entry is not _STOP]
            if batch:
                try:
                    sock.sendall(b"".join(batch))
                except OSError:  # the other end is gone: what it was sent is moot
                    self.closed = True
                    return
                with self._lock:
                    self._queued -= len(batch)
            if stop:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_WR)
                return

    def _read(self) -> None:
        dispatch = self.dispatch
        try:
            while True:
                try:
                    batch = self._read_frame()
                except (OSError, ValueError):
                    batch = None
                if batch is None:
                    break
                for address, message in batch:
                    dispatch(address, message)
        finally:
            self.closed = True
            self.on_lost()

    def join(self, timeout: float) -> None:
        """Wait for the link's threads to end (after ``close``, or the other end's)."""
        for thread in (self._writer, self._reader):
            if thread.is_alive():
                thread.join(timeout)

    def close(self, *, flush: bool = True, timeout: float = 2.0) -> None:
        """Stop writing (after what was sent, if ``flush``), then stop reading."""
        if self._writer.is_alive():
            self._queue.put(_STOP)
            if flush:
                self._writer.join(timeout)
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()


class RemoteRef:
    """An actor in another process, as the actors here use a reference: ``tell`` sends the
    message over the link to it; ``stop`` stops it. ``proxy().progress()`` asks a remote
    task for its progress (the progress line, the REST API)."""

    __slots__ = ("_asks", "_stopped", "address", "link", "on_stop")

    def __init__(
        self,
        link: Link,
        address: str,
        *,
        asks: _Asks | None = None,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        self.link = link
        self.address = address
        self.on_stop = on_stop
        self._asks = asks
        self._stopped = False

    def tell(self, message: Any) -> None:
        if self._stopped:
            raise pykka.ActorDeadError(f"{self.address} was stopped")
        self.link.send(self.address, message)

    def stop(self, block: bool = True, timeout: float | None = None) -> None:
        if self._stopped:
            return
        self._stopped = True
        self.link.send(self.address, _StopActor())
        if self.on_stop is not None:
            self.on_stop()

    def is_alive(self) -> bool:
        return not self._stopped and not self.link.closed

    def proxy(self) -> _RemoteProxy:
        if self._asks is None or not self.is_alive():
            raise pykka.ActorDeadError(f"{self.address} cannot be asked")
        return _RemoteProxy(self, self._asks)

    def __repr__(self) -> str:
        return f"<RemoteRef {self.address} over {self.link.name}>"


class _Asks:
    """Questions to TaskManagers waiting for their answer, by request number."""

    def __init__(self) -> None:
        self._numbers = itertools.count(1)
        self._waiting: dict[int, pykka.Future[Any]] = {}
        self._lock = threading.Lock()

    def ask(self, ref: RemoteRef, method: str) -> pykka.Future[Any]:
        future: pykka.Future[Any] = ThreadingFuture()
        with self._lock:
            number = next(self._numbers)
            self._waiting[number] = future
        ref.link.send(_ASK, _Ask(number, ref.address, method))
        return future

    def answer(self, request: int, value: Any, error: str | None) -> None:
        with self._lock:
            future = self._waiting.pop(request, None)
        if future is None:
            return
        if error is None:
            future.set(value)
        else:
            failure = pykka.ActorDeadError(error)
            future.set_exception((type(failure), failure, None))


class _RemoteProxy:
    def __init__(self, ref: RemoteRef, asks: _Asks) -> None:
        self._ref = ref
        self._asks = asks

    def progress(self) -> pykka.Future[Any]:
        return self._asks.ask(self._ref, "progress")


class _ForwardedTrace:
    """A TaskManager's trace: its events go to the launching process's trace."""

    def __init__(self, level: int, link: Link) -> None:
        self.level = level
        self._link = link

    def record(self, event: Event) -> None:
        try:
            self._link.send(_TRACE, dict(event))
        except TypeError:  # a field that cannot be pickled: as the trace file writes it
            self._link.send(_TRACE, {key: str(value) for key, value in event.items()})


class _TaskManagerFaults(FaultPlan):
    """The run's fault plan inside a TaskManager: a fault that strikes here is reported to the
    launching process, whose plan (and so every TaskManager forked after it) marks it spent."""

    def __init__(self, plan: FaultPlan, link: Link) -> None:
        super().__init__(plan.faults)
        self._fired.update(plan.spent())
        self._link = link

    def _strike(self, match: Callable[[Fault], bool]) -> Fault | None:
        fault = super()._strike(match)
        if fault is not None:
            self._report(fault)
        return fault

    def stall_began(self, fault: Any) -> None:
        super().stall_began(fault)
        self._report(fault)

    def _report(self, fault: Fault) -> None:
        self._link.send(_FAULT, [i for i, f in enumerate(self.faults) if f is fault])


def placement(plan: ExecutionPlan, slots: int) -> dict[TaskId, int]:
    """Which TaskManager runs each subtask: slot sharing puts subtask ``i`` of every vertex
    into slot ``i``, and a TaskManager has ``slots`` slots."""
    return {task: task.subtask // slots for task in plan.tasks}


class _TaskManager:
    """The launching process's side of one TaskManager process."""

    def __init__(
        self,
        index: int,
        attempt: int,
        process: multiprocessing.process.BaseProcess,
        link: Link,
        tasks: list[TaskId],
    ) -> None:
        self.index = index
        self.attempt = attempt
        self.process = process
        self.link = link
        self.tasks = tasks
        self.name = f"taskmanager-{attempt}-{index}"
        #: tasks of this TaskManager that reached a final state, or were stopped
        self.ended: set[TaskId] = set()
        self.released: set[TaskId] = set()
        self.stopping = False
        self._reaper: threading.Thread | None = None
        self._lock = threading.Lock()

    def release(self, task: TaskId) -> None:
        """The JobMaster stopped ``task``: once it stopped them all, the TaskManager ends."""
        with self._lock:
            self.released.add(task)
            done = self.released.issuperset(self.tasks)
        if done:
            self.shutdown()

    def shutdown(self) -> None:
        """End the process: its actors stop, it exits; killed if it takes too long."""
        with self._lock:
            if self.stopping:
                return
            self.stopping = True
        self.link.send(_SHUTDOWN, None)
        self.link.close(flush=True)
        self._reaper = threading.Thread(target=self._reap, name=f"{self.name}-reaper", daemon=True)
        self._reaper.start()

    def _reap(self) -> None:
        self.process.join(SHUTDOWN_GRACE_S)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join(SHUTDOWN_GRACE_S)

    def wait(self, timeout: float) -> None:
        """Wait for the process and this side's threads to end (killing it if it must)."""
        self.process.join(timeout)
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join(timeout)
        self.link.join(timeout)
        if self._reaper is not None:
            self._reaper.join(timeout)


class ProcessRuntime(ThreadedRuntime):
    """The threaded runtime for the JobManager's actors, whose deployments run in forked
    TaskManager processes of ``slots`` slots each (``deploy_tasks``)."""

    name = "processes"

    def __init__(self, *, slots: int = 1, async_threads: int = 2, pin_cpus: bool = True) -> None:
        if "fork" not in multiprocessing.get_all_start_methods():
            raise RuntimeError(
                'runtime="processes" forks its TaskManagers, and this platform cannot fork: '
                'use runtime="threaded"'
            )
        if slots < 1:
            raise ValueError(f"taskmanager.numberOfTaskSlots must be >= 1, got {slots}")
        super().__init__(async_threads=async_threads)
        self.slots = slots
        #: ``ckptsim.processes.pin-cpus``: bind TaskManagers that fill the CPUs evenly
        self.pin_cpus = pin_cpus
        self.task_managers: list[_TaskManager] = []
        self._asks = _Asks()
        self._lock = threading.Lock()

    # --- deployment (called by the JobMaster, on its thread) ------------------------------------

    def deploy_tasks(
        self,
        *,
        attempt: int,
        plan: ExecutionPlan,
        report_records_every: int,
        storage: FileSystemCheckpointStorage,
        job_master: pykka.ActorRef[Any],
        coordinator: pykka.ActorRef[Any],
    ) -> dict[TaskId, Any]:
        """Fork the TaskManagers of deployment ``attempt``, each deploying and wiring its
        subtasks and their input channels; the subtasks as ``RemoteRef``s, once every
        TaskManager has deployed (or the first error that stopped one)."""
        where = placement(plan, self.slots)
        count = max(where.values(), default=-1) + 1
        to_main = [socket.socketpair() for _ in range(count)]
        mesh = {(i, j): socket.socketpair() for i in range(count) for j in range(i + 1, count)}
        own: list[dict[str, Any]] = []
        for k in range(count):
            peers = {
                j: mesh[(min(k, j), max(k, j))][0 if k < j else 1] for j in range(count) if j != k
            }
            own.append({"main": to_main[k][1], "peers": peers})
        every = [s for pair in to_main for s in pair] + [s for pair in mesh.values() for s in pair]
        sources = set(plan.job.source_tasks())
        context = multiprocessing.get_context("fork")
        # buffered output would be written again by each child
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        managers: list[_TaskManager] = []
        try:
            for k in range(count):
                mine = {own[k]["main"], *own[k]["peers"].values()}
                process = context.Process(
                    target=_task_manager_main,
                    name=f"ckptsim-taskmanager-{attempt}-{k}",
                    kwargs={
                        "index": k,
                        "parent": os.getpid(),
                        "runtime": self,
                        "plan": plan,
                        "where": where,
                        "sources": sources,
                        "report_records_every": report_records_every,
                        "storage": storage,
                        "main": own[k]["main"],
                        "peers": own[k]["peers"],
                        "close": [s for s in every if s not in mine] + self._open_sockets(),
                    },
                    daemon=True,
                )
                process.start()
                tasks = [t for t, i in where.items() if i == k]
                link = Link(to_main[k][0], f"ckptsim-tm-{attempt}-{k}", lambda a, m: None)
                managers.append(_TaskManager(k, attempt, process, link, tasks))
        finally:
            for k in range(count):
                to_main[k][1].close()
            for pair in mesh.values():
                for s in pair:
                    s.close()
        with self._lock:
            self.task_managers.extend(managers)
        for manager in managers:
            manager.link.dispatch = self._dispatcher(manager, job_master, coordinator)
            manager.link.on_lost = functools.partial(self._lost, manager, job_master)
            manager.link.start(reading=False)
        errors: list[BaseException] = []
        for manager in managers:
            ready = False
            manager.link.sock.settimeout(DEPLOY_TIMEOUT_S)
            while not ready:
                try:
                    frame = manager.link.receive_one()
                except (EOFError, OSError) as error:
                    errors.append(RuntimeError(f"{manager.name} ended while deploying: {error}"))
                    break
                for address, message in frame:
                    if address != _READY:
                        manager.link.dispatch(address, message)
                        continue
                    ready = True
                    if isinstance(message, _Deployed) and message.error is not None:
                        errors.append(message.error)
            manager.link.sock.settimeout(None)
        if errors:
            for manager in managers:
                manager.shutdown()
            raise errors[0]  # as the threaded runtime raises it (the others are alike)
        refs: dict[TaskId, Any] = {}
        for manager in managers:
            for task in manager.tasks:
                refs[task] = RemoteRef(
                    manager.link,
                    _task_address(task),
                    asks=self._asks,
                    on_stop=functools.partial(manager.release, task),
                )
            manager.link.start_reading()
        log.debug(
            "task_managers_started",
            attempt=attempt,
            task_managers=[m.process.pid for m in managers],
        )
        return {task: refs[task] for task in plan.tasks}

    def _open_sockets(self) -> list[socket.socket]:
        with self._lock:
            return [m.link.sock for m in self.task_managers if not m.link.closed]

    def _dispatcher(
        self,
        manager: _TaskManager,
        job_master: pykka.ActorRef[Any],
        coordinator: pykka.ActorRef[Any],
    ) -> Callable[[str, Any], None]:
        faults = self.faults
        tracer = self.tracer

        def dispatch(address: str, message: Any) -> None:
            try:
                if address == _JOB_MASTER:
                    if isinstance(message, TaskStateUpdate) and message.state.is_terminal:
                        manager.ended.add(message.task)
                    job_master.tell(message)
                elif address == _COORDINATOR:
                    coordinator.tell(message)
                elif address == _TRACE:
                    if tracer is not None:
                        tracer.record(message)
                elif address == _FAULT:
                    faults.mark_spent(message)
                elif address == _REPLY:
                    self._asks.answer(*message)
            except pykka.ActorDeadError:
                pass  # the job is ending

        return dispatch

    def _lost(self, manager: _TaskManager, job_master: pykka.ActorRef[Any]) -> None:
        """The TaskManager's socket closed: unless it was being stopped, the process died and
        its subtasks not yet in a final state failed."""
        if manager.stopping:
            return
        manager.process.join(1.0)
        code = manager.process.exitcode
        if code is None:
            how = "its connection closed"
        elif code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        cause = (
            f"TaskManager {manager.name} (pid {manager.process.pid}) lost: {how}; its tasks failed"
        )
        log.warning(
            "task_manager_lost", task_manager=manager.name, pid=manager.process.pid, how=how
        )
        for task in manager.tasks:
            if task in manager.ended or task in manager.released:
                continue
            with contextlib.suppress(pykka.ActorDeadError):
                job_master.tell(
                    TaskStateUpdate(
                        task=task,
                        state=ExecutionState.FAILED,
                        message=cause,
                        attempt=manager.attempt,
                    )
                )

    def pids(self) -> list[int]:
        """The live TaskManager processes' ids (for tests and tools that kill one)."""
        with self._lock:
            return [
                m.process.pid
                for m in self.task_managers
                if m.process.pid is not None and m.process.exitcode is None and not m.stopping
            ]

    def shutdown(self) -> None:
        with self._lock:
            managers, self.task_managers = self.task_managers, []
        for manager in managers:
            manager.shutdown()
        deadline = time.monotonic() + SHUTDOWN_GRACE_S
        for manager in managers:
            manager.wait(max(0.1, deadline - time.monotonic()))
        super().shutdown()


# --- inside a TaskManager process ------------------------------------------------------------------


def _task_manager_main(
    *,
    index: int,
    parent: int,
    runtime: ProcessRuntime,
    plan: ExecutionPlan,
    where: dict[TaskId, int],
    sources: set[TaskId],
    report_records_every: int,
    storage: FileSystemCheckpointStorage,
    main: socket.socket,
    peers: dict[int, socket.socket],
    close: Iterable[socket.socket],
) -> None:
    """A TaskManager: deploy its subtasks and their input channels, wire them, serve until
    told to shut down (or the launching process is gone), then stop its actors and exit."""
    for sock in close:
        with contextlib.suppress(OSError):
            sock.close()
    if runtime.pin_cpus:  # before any thread starts: they inherit it
        _pin(index, max(where.values(), default=0) + 1)
    reset_registry_after_fork()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    shutdown = threading.Event()
    targets: dict[str, Any] = {}
    rt = ThreadedRuntime()
    rt.name = "processes"
    rt.clock = runtime.clock  # the launching process's origin: one time line for the job
    rt.epoch_ms = runtime.epoch_ms

    def dispatch(address: str, message: Any) -> None:
        if address == _SHUTDOWN:
            shutdown.set()
            return
        if address == _ASK:
            _answer(message)
            return
        target = targets.get(address)
        if target is None:
            return
        try:
            if isinstance(message, _StopActor):
                target.stop(block=False)
            else:
                target.tell(message)
        except pykka.ActorDeadError:
            pass  # a failed task: the JobMaster hears of it from the task itself

    to_main = Link(main, f"tm-{index}-main", dispatch, on_lost=shutdown.set)
    links = {j: Link(sock, f"tm-{index}-peer-{j}", dispatch) for j, sock in peers.items()}

    def _answer(ask: _Ask) -> None:
        target = targets.get(ask.address)

        def reply() -> None:
            try:
                # read off the task's own counters, not through its mailbox: a task in a
                # long buffer answers too
                value = read_progress(target).get(timeout=5) if target else None
                if target is None:
                    raise pykka.ActorDeadError(ask.address)
                to_main.send(_REPLY, (ask.request, value, None))
            except Exception as error:
                to_main.send(_REPLY, (ask.request, None, f"{type(error).__name__}: {error}"))

        threading.Thread(target=reply, daemon=True).start()

    rt.faults = _TaskManagerFaults(runtime.faults, to_main)
    parent_tracer = runtime.tracer
    rt.tracer = None if parent_tracer is None else _ForwardedTrace(parent_tracer.level, to_main)
    rt.on_fatal(lambda cause: to_main.send(_JOB_MASTER, FailJob(cause=cause)))
    to_main.start(reading=False)
    for link in links.values():
        link.start(reading=False)
    try:
        _deploy(
            index, rt, plan, where, sources, report_records_every, storage, to_main, links, targets
        )
    except Exception as error:
        try:
            pickle.dumps(error)
        except Exception:
            error = RuntimeError(f"{type(error).__name__}: {error}")
        to_main.send(_READY, _Deployed(error=error))
        to_main.close()
        os._exit(1)
    to_main.send(_READY, _Deployed())
    to_main.start_reading()
    for link in links.values():
        link.start_reading()
    while not shutdown.wait(1.0):
        if os.getppid() != parent:  # the launching process is gone
            break
    for ref in targets.values():
        with contextlib.suppress(pykka.ActorDeadError):
            ref.stop(block=False)
    for ref in targets.values():
        with contextlib.suppress(Exception):
            ref.actor_stopped.wait(2.0)
    rt.shutdown()
    for link in links.values():
        link.close(flush=False)
    to_main.close(flush=True)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _pin(index: int, count: int) -> None:
    """Bind this process (its current thread, and the threads it starts later) to one CPU of
    those it may use, TaskManager ``index`` of ``count`` to the ``index``-th, round robin,
    when the ``count`` TaskManagers fill those CPUs evenly (nothing where the
    platform cannot, or only one CPU is allowed)."""
    if not hasattr(os, "sched_setaffinity"):
        return
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > 1 and count % len(cpus) == 0:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {cpus[index % len(cpus)]})


def _deploy(
    index: int,
    rt: ThreadedRuntime,
    plan: ExecutionPlan,
    where: dict[TaskId, int],
    sources: set[TaskId],
    report_records_every: int,
    storage: FileSystemCheckpointStorage,
    to_main: Link,
    links: dict[int, Link],
    targets: dict[str, Any],
) -> None:
    """What ``JobMaster._deploy_tasks`` does in one process, for this TaskManager's share."""
    job_master = RemoteRef(to_main, _JOB_MASTER)
    coordinator = RemoteRef(to_main, _COORDINATOR)
    mine = [task for task in plan.tasks if where[task] == index]
    for task in mine:
        targets[_task_address(task)] = StreamTask.start(
            spec=plan.tasks[task],
            runtime=rt,
            storage=storage,
            job_master=job_master,
            report_records_every=report_records_every if task in sources else 0,
        )
    outputs: dict[TaskId, dict[int, Any]] = {t: {} for t in mine}
    inputs: dict[TaskId, dict[int, Any]] = {t: {} for t in mine}
    for link in plan.channels:
        up, down = where[link.upstream], where[link.downstream]
        if down == index:
            producer = (
                targets[_task_address(link.upstream)]
                if up == index
                else RemoteRef(links[up], _task_address(link.upstream))
            )
            channel = InlineInputChannel.start(
                channel_id=link.channel_id,
                input_index=link.input_index,
                output_index=link.output_index,
                consumer=targets[_task_address(link.downstream)],
                producer_name=str(link.upstream),
                consumer_name=str(link.downstream),
                runtime=rt,
            )
            channel.tell(WireChannel(producer))
            targets[_channel_address(link.channel_id)] = channel
            inputs[link.downstream][link.input_index] = channel
            if up == index:
                outputs[link.upstream][link.output_index] = channel
        elif up == index:
            outputs[link.upstream][link.output_index] = RemoteRef(
                links[down], _channel_address(link.channel_id)
            )
    for task in mine:
        targets[_task_address(task)].tell(
            WireTask(
                coordinator,
                [outputs[task][i] for i in range(len(outputs[task]))],
                [inputs[task][i] for i in range(len(inputs[task]))],
            )
        )


__all__ = ["Link", "ProcessRuntime", "RemoteRef", "placement"]
