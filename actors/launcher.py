"""Runs a job graph on actors and waits for its result (the only place that blocks on actors)."""

from __future__ import annotations

import contextlib
import gc
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pykka
import structlog

from actors.execution import ActorRuntime, ThreadedRuntime
from actors.faults import Fault, FaultPlan
from actors.job_master import JobMaster
from actors.protocol import CancelJob, Deploy, QueryProgress
from actors.simulation import SimulationRuntime
from runtime.config import Configuration
from runtime.graph import JobGraph
from runtime.job import ExecutionPlan, JobResult, plan_execution
from runtime.storage import FileSystemCheckpointStorage, make_temp_dir

log = structlog.get_logger(__name__)

Progress = Callable[[dict[str, Any]], None]


RUNTIMES = ("threaded", "simulation")


def make_runtime(
    name: str, conf: Configuration, *, seed: int = 0, schedule: Sequence[int] = ()
) -> ActorRuntime:
    """``threaded`` (Pykka threads, wall clock) or ``simulation`` (one thread, seeded
    scheduler, virtual clock)."""
    if name == "threaded":
        return ThreadedRuntime(channel_threads=conf["ckptsim.channel.threads"])
    if name == "simulation":
        return SimulationRuntime(
            seed=seed,
            schedule=schedule,
            message_cost_us=conf["ckptsim.simulation.message-cost-us"],
            record_cost_us=conf["ckptsim.simulation.record-cost-us"],
        )
    raise ValueError(f"unknown runtime {name!r}: use one of {', '.join(RUNTIMES)}")


def execute(
    job: JobGraph,
    conf: Configuration,
    *,
    runtime: ActorRuntime | str | None = None,
    seed: int | None = None,
    schedule: Sequence[int] = (),
    faults: Sequence[Fault] = (),
    timeout: float | None = None,
    progress: Progress | None = None,
    progress_interval: float = 0.5,
) -> JobResult:
    """Deploy ``job`` on actors, wait for it to end, stop every actor, return the result.

    ``runtime``: ``"threaded"`` (default) or ``"simulation"`` (or a runtime object);
    ``seed`` (default ``ckptsim.seed``) seeds every random choice, and in the simulation the
    schedule, whose first choices ``schedule`` may fix; ``faults`` (``actors.faults``) are
    injected; ``timeout`` in seconds (virtual
    seconds in the simulation) cancels the job.
    """
    plan = plan_execution(job, conf)
    if seed is None:
        seed = conf["ckptsim.seed"]
    elif isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")
    rt: ActorRuntime = (
        make_runtime(runtime or "threaded", conf, seed=seed, schedule=schedule)
        if runtime is None or isinstance(runtime, str)
        else runtime
    )
    rt.faults = FaultPlan(faults)
    scope = rt.activated() if isinstance(rt, SimulationRuntime) else contextlib.nullcontext()
    with scope:
        return _run(job, conf, plan, rt, seed, timeout, progress, progress_interval)


def _run(
    job: JobGraph,
    conf: Configuration,
    plan: ExecutionPlan,
    rt: ActorRuntime,
    seed: int,
    timeout: float | None,
    progress: Progress | None,
    progress_interval: float,
) -> JobResult:
    job_id = uuid.UUID(int=seed * 2**64 + 1).hex if rt.deterministic else uuid.uuid4().hex
    base_dir = plan.checkpoint.checkpoint_dir
    temporary = base_dir is None
    directory = base_dir if base_dir is not None else make_temp_dir()
    storage = FileSystemCheckpointStorage(
        directory,
        job_id,
        job_name=job.name,
        savepoint_dir=plan.checkpoint.savepoint_dir,
        create_subdir=conf["execution.checkpointing.create-subdir"],
    )
    for key, why in conf.inert_settings():
        log.warning("setting_has_no_effect", key=key, reason=why)
    future: pykka.Future[JobResult] = rt.future()
    gc_settings = gc.get_threshold()
    young: int = conf["ckptsim.gc.young-threshold"]
    if young:
        gc.set_threshold(young, *gc_settings[1:])
    master = rt.spawn(
        JobMaster, plan=plan, runtime=rt, storage=storage, job_id=job_id, result=future, seed=seed
    )
    log.info(
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
        checkpoint_dir="(temporary)" if temporary and rt.deterministic else str(storage.root),
    )
    master.tell(Deploy())
    reporter = (
        _ProgressReporter(master, progress, progress_interval)
        if progress and rt.name == "threaded"
        else None
    )
    result_holder: list[JobResult] = []
    try:
        try:
            result: JobResult = rt.wait(future, timeout)
        except (KeyboardInterrupt, pykka.Timeout):
            log.warning("job_cancel_requested", job=job_id)
            master.tell(CancelJob())
            result = rt.wait(future, 30)
        result_holder.append(result)
    finally:
        if reporter is not None:
            reporter.stop()
        gc.set_threshold(*gc_settings)
        master.stop(block=False)
        _stop_everything(rt)
        rt.shutdown()
        if result_holder:
            storage.remove_unretained(result_holder[0].retained_checkpoints)
        if temporary:
            _remove_empty(storage.root)
            _remove_empty(Path(directory))
    return result


def _stop_everything(rt: ActorRuntime) -> None:
    if rt.name != "threaded":
        return
    for ref in pykka.ActorRegistry.get_all():
        # Skip actors already gone: stopping a dead actor leaves Pykka a failed future whose
        # traceback holds this call stack (and the job's result) in a cycle until a full GC.
        if not ref.is_alive():
            continue
        with contextlib.suppress(pykka.ActorDeadError, pykka.Timeout):
            ref.stop(block=True, timeout=10)


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
        wait = self.interval
        info: dict[str, Any] | None = self.master.ask(QueryProgress(), block=True, timeout=wait)
        if not info:
            return None
        futures = {task: ref.proxy().progress() for task, ref in info["tasks"].items()}
        tasks = {task: future.get(timeout=wait) for task, future in futures.items()}
        stats = info["coordinator"].proxy().summary().get(timeout=wait)["stats"]
        return {
            "status": info["status"],
            "records": sum(t["records_in"] for task, t in tasks.items() if task in info["sources"]),
            "backpressured": sorted(str(task) for task, t in tasks.items() if t["backpressured"]),
            "counts": stats["counts"],
        }

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
