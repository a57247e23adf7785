"""Runs a job graph on actors and waits for its result (the only place that blocks on actors)."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import gc
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import pykka

from actors import session
from actors.actor_runtime import ActorRuntime
from actors.archive import archive_job
from actors.connectors import missing_pending_file
from actors.execution import ThreadedRuntime
from actors.faults import Fault, FaultPlan, parse_faults
from actors.job_master import JobMaster
from actors.logs import get_logger
from actors.processes import ProcessRuntime
from actors.protocol import CancelJob, Deploy, FailJob, QueryProgress
from actors.simulation import SimulationRuntime
from actors.stream_task import read_progress
from actors.trace import EventLog, Tracer
from runtime.checkpoint import SavepointRequest
from runtime.config import Configuration
from runtime.datastream import StreamEnvironment
from runtime.descriptors import SinkDescriptor, SinkKind
from runtime.graph import JobGraph
from runtime.job import (
    ExecutionPlan,
    JobResult,
    RestoreError,
    adopt_restored_max_parallelism,
    plan_execution,
    restore_plan,
)
from runtime.messages import RestoredFromCheckpoint
from runtime.restart import RestartStrategy, bound_restarts_by_default, restart_strategy
from runtime.snapshot import LoadedCheckpoint
from runtime.storage import (
    CheckpointStorageError,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
    load_checkpoint,
    make_temp_dir,
)

log = get_logger(__name__)

Progress = Callable[[dict[str, Any]], None]


RUNTIMES = ("threaded", "processes", "simulation")


def make_runtime(
    name: str, conf: Configuration, *, seed: int = 0, schedule: Sequence[int] = ()
) -> ActorRuntime:
    """``threaded`` (Pykka threads, wall clock), ``processes`` (the JobManager's actors on
    threads, subtasks in TaskManager processes: ``actors.processes``) or ``simulation`` (one
    thread, seeded scheduler, virtual clock)."""
    if name == "threaded":
        return ThreadedRuntime(channel_threads=conf["ckptsim.channel.threads"])
    if name == "processes":
        return ProcessRuntime(
            slots=conf["taskmanager.numberOfTaskSlots"],
            pin_cpus=conf["ckptsim.processes.pin-cpus"],
        )
    if name == "simulation":
        return SimulationRuntime(
            seed=seed,
            schedule=schedule,
            message_cost_us=conf["ckptsim.simulation.message-cost-us"],
            record_cost_us=conf["ckptsim.simulation.record-cost-us"],
            async_cost_us=conf["ckptsim.simulation.async-cost-us"],
        )
    raise ValueError(f"unknown runtime {name!r}: use one of {', '.join(RUNTIMES)}")


def runtime_name(runtime: str | None, conf: Configuration) -> str:
    """The runtime a job runs on: the one ``execute`` was given, else ``ckptsim.runtime``."""
    return runtime or str(conf["ckptsim.runtime"]).lower()


def execute_environment(env: StreamEnvironment, name: str, /, **options: Any) -> JobResult:
    """Run a DataStream environment's job on actors (``runtime.datastream.Executor``).

    Under ``ckptsim run`` (an active ``actors.session``) the command line's ``-D`` settings
    and options apply on top of what the script configured (unless the environment started
    from them: ``command_line_on_top``), and the result is kept for the command line's
    summary."""
    active = session.current()
    if active is None:
        job, run = env.job_to_execute(name, options)
        return execute(job, env.configuration, **run)
    if env.command_line_on_top:
        env.configuration.override(active.settings)
    if active.bounded_restarts and bound_restarts_by_default(env.configuration):
        active.bounded.append(name)
    merged = {**active.options, **options}
    mine, theirs = options.get("observer"), active.options.get("observer")
    if mine is not None and theirs is not None and mine is not theirs:
        # the job's own observer (run_topology's, execute_and_collect's) and the command
        # line's (its announcements, --web): both hear the job, the job's first
        merged["observer"] = Observers((mine, theirs))
    with active.pause_script_timer():
        job, run = env.job_to_execute(name, merged)
        result = execute(job, env.configuration, **run)
    active.results.append(result)
    return result


def execute(
    job: JobGraph,
    conf: Configuration,
    *,
    runtime: ActorRuntime | str | None = None,
    seed: int | None = None,
    schedule: Sequence[int] = (),
    faults: Sequence[Fault] = (),
    savepoints: Sequence[SavepointRequest] = (),
    timeout: float | None = None,
    progress: Progress | None = None,
    progress_interval: float = 0.5,
    observer: JobObserver | None = None,
    trace: Tracer | None = None,
) -> JobResult:
    """Deploy ``job`` on actors, wait for it to end, stop every actor, return the result.

    ``runtime``: ``"threaded"`` (default: ``ckptsim.runtime``), ``"processes"``
    (TaskManager processes, ``actors.processes``) or ``"simulation"`` (or a runtime object);
    ``seed`` (default ``ckptsim.seed``) seeds every random choice, and in the simulation the
    schedule, whose first choices ``schedule`` may fix; ``faults`` (``actors.faults``) are
    injected; ``timeout`` in seconds (virtual
    seconds in the simulation) cancels the job; ``observer`` hears the job start and end
    (the REST API, ``ckptsim._web.JobRegistry``); ``trace`` (``actors.trace.TraceWriter``)
    gets the run's protocol events, however logging is configured.
    """
    if timeout is not None and not 0 < timeout <= threading.TIMEOUT_MAX:  # nan fails too
        raise ValueError(
            f"timeout must be a number of seconds > 0 and at most {threading.TIMEOUT_MAX:.0f}, "
            f"got {timeout!r}"
        )
    plan = plan_execution(job, conf)
    _check_output_folders(job, fresh=conf["execution.state-recovery.path"] is None)
    unwritten = job.unwritten_streams()
    if unwritten:  # Flink runs such a job too, and says nothing; its output is lost
        log.warning(
            "stream_without_sink",
            job=job.name,
            operators=unwritten,
            hint="their records go nowhere: add a sink (collect(), print(), sink_to_file(...))",
        )
    if seed is None:
        seed = conf["ckptsim.seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise ValueError(f"seed must be a whole number from 0 to 2**63 - 1, got {seed!r}")
    fault_plan = FaultPlan([*faults, *parse_faults(conf["ckptsim.faults"] or "")])
    fault_plan.check_targets(
        (str(task) for task in plan.tasks),
        ((str(c.upstream), str(c.downstream)) for c in plan.channels),
    )
    restored_from = None
    path: str | None = conf["execution.state-recovery.path"]
    if path is not None:  # --from-savepoint / --from-checkpoint
        loaded = load_checkpoint(path)
        if adopt_restored_max_parallelism(job, loaded):
            plan = plan_execution(job, conf)
        restores = restore_plan(
            plan, loaded, ignore_unclaimed=conf["execution.state-recovery.ignore-unclaimed-state"]
        )
        plan = plan_execution(job, conf, restore=restores)
        _check_staged_output(plan, loaded)
        restored_from = RestoredFromCheckpoint(
            checkpoint_id=loaded.checkpoint_id,
            external_path=loaded.path,
            is_savepoint=loaded.is_savepoint,
            final_positions=loaded.final_positions,
        )
    setup = _Setup(
        restart=restart_strategy(
            conf, checkpointing=plan.checkpoint.is_checkpointing_enabled, seed=seed
        ),
        restored_from=restored_from,
        savepoints=list(savepoints),
        ignore_unclaimed=conf["execution.state-recovery.ignore-unclaimed-state"],
    )
    rt: ActorRuntime = (
        make_runtime(runtime_name(runtime, conf), conf, seed=seed, schedule=schedule)
        if runtime is None or isinstance(runtime, str)
        else runtime
    )
    rt.faults = fault_plan
    rt.tracer = trace
    events = EventLog(log, trace, rt.stamp)
    if restored_from is not None:
        events.info(
            "job_restoring",
            path=restored_from.external_path,
            checkpoint_id=restored_from.checkpoint_id,
        )
    scope = rt.activated() if isinstance(rt, SimulationRuntime) else contextlib.nullcontext()
    with scope:
        result = _run(
            job, conf, plan, rt, events, seed, setup, timeout, progress, progress_interval, observer
        )
    archive_job(job, conf, result, restart_strategy=setup.restart.describe())
    return result


def _job_id(seed: int, restored_from: RestoredFromCheckpoint | None) -> str:
    """A deterministic run's job id: from its seed, and from the checkpoint it resumes, if
    any (its id and the last two parts of its path: where it was copied does not matter).
    Two runs of one seed that start from different places are different jobs, whose part
    files in one folder are not taken for an earlier attempt's of one another (a branch of
    the same seed kept the other run's files aside rather than deleting them)."""
    low = 1
    if restored_from is not None:
        where = Path(restored_from.external_path or "")
        key = f"{restored_from.checkpoint_id}/{where.parent.name}/{where.name}"
        low = uuid.uuid5(uuid.NAMESPACE_URL, f"ckptsim-resume:{key}").int & (2**64 - 1) | 1
    return uuid.UUID(int=seed * 2**64 + low).hex


def _check_output_folders(job: JobGraph, *, fresh: bool) -> None:
    """Before a job runs, each sink's output folder (a file sink's; a custom sink's that names
    one as ``output_folder``, as ``ParquetSink``) exists as a folder this process may write
    in, or can be created: else the job would fail at deployment. A job that starts afresh
    (``fresh``) writes its file sinks into new or empty folders: the files in a folder are one
    job's output (a second run's would mix with the first's). A job resumed from a
    checkpoint or savepoint continues the output already there."""
    for vertex in job.vertices:
        for node in vertex.operators:
            sink = node.operator
            if not isinstance(sink, SinkDescriptor):
                continue
            if sink.sink is SinkKind.CUSTOM:
                folder = getattr(sink.factory, "output_folder", None)
                if isinstance(folder, Path):
                    _check_creatable(node.name, folder, "the sink")
                continue
            if sink.sink is not SinkKind.FILE:
                continue
            assert sink.path is not None
            if not str(sink.path).strip():  # Path("") is the current directory
                raise ValueError(f"sink {node.name!r}: its folder is empty: give sink_to_file one")
            path = Path(sink.path)
            if path.exists() and not path.is_dir():
                raise FileExistsError(
                    f"sink {node.name!r}: {path} is a file, not a folder: give sink_to_file a "
                    "new or empty folder"
                )
            if fresh and path.exists() and any(path.iterdir()):
                raise FileExistsError(
                    f"sink {node.name!r}: {path} exists and is not an empty folder; its files "
                    "are an earlier run's output. Give sink_to_file a new or empty folder, or "
                    "resume that run with --from-checkpoint / --from-savepoint to continue it"
                )
            _check_creatable(node.name, path, "sink_to_file")


def _check_creatable(name: str, path: Path, who: str) -> None:
    """``path`` is a folder this process may write in, or its nearest existing parent is
    one (so it can be created): else ``NotADirectoryError`` (a parent is a file) or
    ``PermissionError``, one line naming the folder and why."""
    probe = path
    while not os.path.exists(probe) and probe.parent != probe:
        probe = probe.parent
    cannot = f"sink {name!r}: its folder {path} cannot be created"
    if not probe.is_dir():
        raise NotADirectoryError(
            f"{cannot}: {probe} is a file, not a folder; give {who} another folder"
        )
    if not os.access(probe, os.W_OK | os.X_OK):
        if probe == path:
            raise PermissionError(
                f"sink {name!r}: no permission to write in its folder {path}; give {who} a "
                "folder you may write in"
            )
        raise PermissionError(
            f"{cannot}: no permission to write in {probe}; give {who} a folder you may write in"
        )


def storage_error(directory: str, error: OSError) -> CheckpointStorageError:
    """An OS error while setting up the checkpoint storage as one line naming the storage,
    the errno and the file (``[Errno 28] No space left on device`` reads as the storage's, not
    the script's): ``checkpoint storage DIR: creating the job's checkpoint directory failed:
    No space left on device (errno 28, ENOSPC): PATH``."""
    if error.errno is None:
        why = str(error) or type(error).__name__
    else:
        code = errno.errorcode.get(error.errno)
        why = f"{error.strerror or os.strerror(error.errno)} (errno {error.errno}"
        why += f", {code})" if code else ")"
        if error.filename is not None:
            why += f": {os.fsdecode(error.filename)}"
    return CheckpointStorageError(
        f"checkpoint storage {directory}: creating the job's checkpoint directory failed: {why}"
    )


class JobObserver(Protocol):
    """Hears a job start (with its JobMaster) and end; called from the launcher's thread."""

    def job_started(
        self,
        *,
        job: JobGraph,
        conf: Configuration,
        job_id: str,
        master: pykka.ActorRef[Any],
        runtime: ActorRuntime,
        restart_strategy: str,
    ) -> None: ...

    def job_ended(self, job_id: str, result: JobResult) -> None: ...


class Observers:
    """Several job observers as one: each hears the job start and end, in order."""

    def __init__(self, observers: Sequence[JobObserver]) -> None:
        self.observers = tuple(observers)

    def job_started(self, **started: Any) -> None:
        for observer in self.observers:
            observer.job_started(**started)

    def job_ended(self, job_id: str, result: JobResult) -> None:
        for observer in self.observers:
            observer.job_ended(job_id, result)


def _check_staged_output(plan: ExecutionPlan, loaded: LoadedCheckpoint) -> None:
    """Before a job restores ``loaded``: each file sink finds the part file of every pending
    transaction it restores, staged or committed, written by the writer its lineage names. A
    checkpoint whose sink state names files its folder does not hold (a crafted lineage, or
    the folder of another sink) is refused now, naming the field, rather than failing every
    restart of the job."""
    for task, spec in sorted(plan.tasks.items(), key=lambda kv: (kv[0].vertex, kv[0].subtask)):
        if not spec.checkpointing or spec.restore is None:
            continue
        for op in spec.operators:
            sink = op.operator
            states = spec.restore.operator_states.get(op.uid)
            if not isinstance(sink, SinkDescriptor) or not sink.sink.transactional or not states:
                continue
            missing = missing_pending_file(sink, task, list(states), op.uid, spec.parallelism)
            if missing is None:
                continue
            txn, folder = missing
            held = loaded.tasks.get(task)
            where = held.files[0] if held is not None and held.files else loaded.path
            lineage = any(isinstance(s, dict) and "lineage" in s for s in states)
            field = f"operator_states[{op.uid!r}].{'lineage' if lineage else 'pending'}"
            by = "by the last writer the lineage names" if lineage else "by any writer"
            raise RestoreError(
                f"{where}: field '{field}' leaves pending transaction {txn} of sink "
                f"{op.name!r} ({task}) to commit, but {folder} holds no part file of it, "
                f"staged or committed, {by}: give the checkpoint together with the folder "
                "its sink wrote"
            )


@dataclasses.dataclass(frozen=True)
class _Setup:
    restart: RestartStrategy
    restored_from: RestoredFromCheckpoint | None
    savepoints: list[SavepointRequest]
    ignore_unclaimed: bool


def _run(
    job: JobGraph,
    conf: Configuration,
    plan: ExecutionPlan,
    rt: ActorRuntime,
    events: EventLog,
    seed: int,
    setup: _Setup,
    timeout: float | None,
    progress: Progress | None,
    progress_interval: float,
    observer: JobObserver | None = None,
) -> JobResult:
    job_id = _job_id(seed, setup.restored_from) if rt.deterministic else uuid.uuid4().hex
    base_dir = plan.checkpoint.checkpoint_dir
    in_memory = conf["execution.checkpointing.storage"] == "JOBMANAGER"
    temporary = base_dir is None and not in_memory
    try:
        storage: FileSystemCheckpointStorage
        if in_memory:  # Flink's JobManagerCheckpointStorage: no checkpoint directory
            directory = ""
            storage = JobManagerCheckpointStorage(
                job_id, job_name=job.name, savepoint_dir=plan.checkpoint.savepoint_dir
            )
        else:
            directory = base_dir if base_dir is not None else make_temp_dir()
            storage = FileSystemCheckpointStorage(
                directory,
                job_id,
                job_name=job.name,
                savepoint_dir=plan.checkpoint.savepoint_dir,
                create_subdir=conf["execution.checkpointing.create-subdir"],
            )
    except OSError as error:
        rt.shutdown()  # nothing ran yet: let its timer thread and pool go
        if isinstance(error, CheckpointStorageError):
            raise
        raise storage_error(base_dir or "(a temporary directory)", error) from error
    except BaseException:
        rt.shutdown()
        raise
    for key, why in conf.inert_settings():
        events.warning("setting_has_no_effect", key=key, reason=why)
    future: pykka.Future[JobResult] = rt.future()
    result_holder: list[JobResult] = []
    master: pykka.ActorRef[Any] | None = None
    reporter: _ProgressReporter | None = None
    given_up = False
    interrupted: KeyboardInterrupt | None = None
    timed_out = False
    with _gc_tuned(conf["ckptsim.gc.young-threshold"]):
        try:
            master = rt.spawn(
                JobMaster,
                plan=plan,
                runtime=rt,
                storage=storage,
                job_id=job_id,
                result=future,
                seed=seed,
                restart=setup.restart,
                restored_from=setup.restored_from,
                savepoint_requests=setup.savepoints,
                ignore_unclaimed_state=setup.ignore_unclaimed,
            )
            events.info(
                "job_submitted",
                job=job_id,
                name=job.name,
                runtime=rt.name,
                seed=seed,
                checkpointing={
                    "interval": plan.checkpoint.interval,
                    "mode": plan.checkpoint.mode.value,
                    "unaligned": plan.checkpoint.unaligned,
                    "aligned_checkpoint_timeout": plan.checkpoint.aligned_checkpoint_timeout,
                    "max_concurrent": plan.checkpoint.max_concurrent,
                    "timeout": plan.checkpoint.timeout,
                    "checkpoints_after_tasks_finish": plan.checkpoint.checkpoints_after_tasks_finish,
                },
                # a temporary directory's name differs between runs: keep simulated traces identical
                checkpoint_dir="(temporary)"
                if temporary and rt.deterministic
                else str(storage.root),
            )
            if observer is not None:
                observer.job_started(
                    job=job,
                    conf=conf,
                    job_id=job_id,
                    master=master,
                    runtime=rt,
                    restart_strategy=setup.restart.describe(),
                )
            master.tell(Deploy())
            if isinstance(rt, ThreadedRuntime):
                rt.on_fatal(partial(_fail_job, master))
            if progress and isinstance(rt, SimulationRuntime):
                rt.progress_interval = progress_interval
                rt.on_progress = _simulated_progress(rt, master, progress)
            elif progress and rt.name in ("threaded", "processes"):
                reporter = _ProgressReporter(master, progress, progress_interval)
            try:
                result: JobResult = rt.wait(future, timeout)
            except (KeyboardInterrupt, pykka.Timeout) as stop:
                if isinstance(stop, KeyboardInterrupt):
                    interrupted = stop
                else:
                    timed_out = True
                events.info("job_cancel_requested", job=job_id, cause=type(stop).__name__)
                with contextlib.suppress(pykka.ActorDeadError):
                    master.tell(CancelJob())
                try:
                    result = rt.wait(future, CANCEL_GRACE_S)
                except pykka.Timeout:
                    given_up = True
                    raise JobCancellationTimeout(
                        f"job {job.name!r} did not stop within {CANCEL_GRACE_S:.0f} s of being "
                        "cancelled: a user function is probably blocked (its threads are left "
                        "behind, as daemons)"
                    ) from None
            if timed_out and result.failure is None:
                # say why it was cancelled (a cancel from outside leaves no such text)
                result.failure = f"cancelled when the timeout of {timeout:g} s passed"
            result_holder.append(result)
            if observer is not None:
                observer.job_ended(job_id, result)
        finally:
            if reporter is not None:
                reporter.stop()
            if master is not None:
                with contextlib.suppress(pykka.ActorDeadError):
                    master.stop(block=False)
            _stop_everything(rt, wait=0.0 if given_up else STOP_GRACE_S)
            rt.shutdown()
            if result_holder:
                storage.remove_unretained(result_holder[0].retained_checkpoints)
            elif temporary:  # interrupted again while cancelling: nobody learns of its files
                storage.remove_unretained([])
            if temporary:
                _remove_empty(storage.root)
                _remove_empty(Path(directory))
    if interrupted is not None:
        raise JobInterrupted(result, interrupted)
    return result


class JobInterrupted(KeyboardInterrupt):
    """Ctrl-C (or, under ``ckptsim run``, SIGTERM) while the job ran: the job was cancelled, its
    actors stopped and its temporary files removed before this was raised. ``result`` is the
    cancelled job's; ``cause`` the interrupt that stopped it."""

    def __init__(self, result: JobResult, cause: KeyboardInterrupt) -> None:
        super().__init__(f"job {result.name!r} interrupted and cancelled")
        self.result = result
        self.cause = cause


#: after cancelling, how long to wait for the job to stop (Flink: task.cancellation.timeout)
CANCEL_GRACE_S = 30.0


class JobCancellationTimeout(RuntimeError):
    """A cancelled job did not stop in time (a user function does not return)."""


_gc_lock = threading.Lock()
_gc_jobs = 0
_gc_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def _gc_tuned(young: int) -> Iterator[None]:
    """Raise the generation-0 threshold while jobs run; the last job to end restores it."""
    global _gc_jobs, _gc_saved  # noqa: PLW0603 - the process's GC is one shared setting
    if not young:
        yield
        return
    with _gc_lock:
        if _gc_jobs == 0:
            _gc_saved = gc.get_threshold()
            gc.set_threshold(young, *_gc_saved[1:])
        _gc_jobs += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_jobs -= 1
            if _gc_jobs == 0 and _gc_saved is not None:
                gc.set_threshold(*_gc_saved)


#: how long to wait at the end for the job's actors to stop
STOP_GRACE_S = 10.0


def _stop_everything(rt: ActorRuntime, *, wait: float) -> None:
    """Stop the actors this job's runtime spawned (not another job's), without waiting long
    for a task stuck in user code."""
    spawned: list[pykka.ActorRef[Any]] = getattr(rt, "spawned", [])
    # Skip actors already gone: stopping a dead actor leaves Pykka a failed future whose
    # traceback holds this call stack (and the job's result) in a cycle until a full GC.
    alive = [ref for ref in spawned if ref.is_alive()]
    for ref in alive:
        with contextlib.suppress(pykka.ActorDeadError):
            ref.stop(block=False)
    deadline = time.monotonic() + wait
    for ref in alive:
        ref.actor_stopped.wait(max(0.0, deadline - time.monotonic()))


def _fail_job(master: pykka.ActorRef[Any], cause: str) -> None:
    with contextlib.suppress(pykka.ActorDeadError):
        master.tell(FailJob(cause=cause))


def _remove_empty(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.rmdir()


class _ProgressReporter:
    """Polls the running job (from outside the actor system) for a progress line."""

    def __init__(self, master: pykka.ActorRef[Any], callback: Progress, interval: float) -> None:
        self.master = master
        self.callback = callback
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ckptsim-progress", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                snapshot = self._snapshot()
            except (pykka.ActorDeadError, pykka.Timeout):
                continue
            if snapshot:
                self.callback(snapshot)

    def _snapshot(self) -> dict[str, Any] | None:
        # a busy machine may take longer than the interval to answer: wait for the answer
        # (at least a second) rather than skip the report
        wait = max(self.interval, 1.0)
        info: dict[str, Any] | None = self.master.ask(QueryProgress(), block=True, timeout=wait)
        if not info:
            return None
        futures = {task: read_progress(ref) for task, ref in info["tasks"].items()}
        tasks = {task: future.get(timeout=wait) for task, future in futures.items()}
        summary = info["coordinator"].proxy().summary().get(timeout=wait)
        return _snapshot_of(info, tasks, summary)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)


def _simulated_progress(
    rt: SimulationRuntime, master: pykka.ActorRef[Any], callback: Progress
) -> Callable[[], None]:
    """The progress line of a simulated job: its actors read between two steps (no
    messages: the schedule stays the seed's), with the virtual time."""

    def report() -> None:
        info = rt.inspect(master, lambda actor: actor.on_receive(QueryProgress()))
        if not info:
            return
        tasks = {
            t: rt.inspect(ref, lambda actor: actor.progress()) for t, ref in info["tasks"].items()
        }
        summary = rt.inspect(info["coordinator"], lambda actor: actor.summary())
        callback({**_snapshot_of(info, tasks, summary), "virtual_ms": rt.now_us // 1000})

    return report


def _snapshot_of(
    info: dict[str, Any], tasks: dict[Any, dict[str, Any]], summary: dict[str, Any]
) -> dict[str, Any]:
    return {
        "status": info["status"],
        "records": sum(t["records_in"] for task, t in tasks.items() if task in info["sources"]),
        "backpressured": sorted({str(task) for task, t in tasks.items() if t["backpressured"]}),
        "counts": summary["stats"]["counts"],
        # FLIP-147: tasks whose data ended, waiting for a checkpoint to complete
        "waiting_for_final_checkpoint": sum(
            1 for t in tasks.values() if t["status"] == "DATA_ENDED"
        ),
        "tasks": len(tasks),
        "next_trigger_in_ms": summary["next_trigger_in_ms"],
    }
