"""Job archives, as Flink's JobManager writes them: the REST bodies of a job that ended, in one
JSON document (``--stats FILE``) or in Flink 2.3's ``jobmanager.archive.fs.dir`` layout, which
Flink's HistoryServer and ``ckptsim serve`` read."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import platform
import sys
import threading
from pathlib import Path

from actors.logs import get_logger
from runtime import rest
from runtime.config import CheckpointConfig, Configuration
from runtime.graph import JobGraph
from runtime.job import JobResult

log = get_logger(__name__)


def describe_process() -> rest.ProcessView:
    """This process as Flink shows a JobManager's and TaskManager's JVM: the interpreter, its
    command line and module search path, the machine's processors and memory, the process's
    resident memory, threads and garbage collections."""
    page = _sysconf("SC_PAGE_SIZE")
    resident = 0
    with (
        contextlib.suppress(OSError, ValueError, IndexError),
        open("/proc/self/statm", encoding="ascii") as statm,
    ):
        resident = int(statm.read().split()[1]) * page
    peak = 0
    with contextlib.suppress(ImportError):  # not on Windows
        import resource  # noqa: PLC0415

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        peak *= 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB elsewhere
    return rest.ProcessView(
        version=f"{platform.python_implementation()} {platform.python_version()}",
        arch=platform.machine(),
        options=tuple(sys.orig_argv),
        classpath=tuple(p for p in sys.path if p),
        cpu_cores=os.cpu_count() or 1,
        physical_memory=_sysconf("SC_PHYS_PAGES") * page,
        free_memory=_sysconf("SC_AVPHYS_PAGES") * page,
        memory_used=resident or peak,
        memory_max=peak,
        threads=threading.active_count(),
        gc=tuple(
            (f"generation {n}", int(g.get("collections", 0)), int(g.get("collected", 0)))
            for n, g in enumerate(gc.get_stats())
        ),
    )


def _sysconf(name: str) -> int:
    try:
        return max(int(os.sysconf(name)), 0)
    except (AttributeError, OSError, ValueError):  # not on this platform
        return 0


def write_archive(view: rest.JobView, target: str | Path, *, application: bool = True) -> Path:
    """Write a job's archive to ``target`` (a file; ``-`` is standard output); with
    ``application`` it holds the paths of the job's application as well (a plain archive:
    Flink's HistoryServer and ``ckptsim serve`` show the job under its application)."""
    text = json.dumps(rest.archive_document(view, application=application), separators=(",", ":"))
    if str(target) == "-":
        if sys.stdout is not None:  # None: standard output closed (`>&-`), as print() skips
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
        return Path("-")
    path = Path(target)
    write_atomically(path, text)
    return path


def write_atomically(path: Path, text: str) -> None:
    """``path`` holds ``text`` whole, or is left as it was: the text goes to ``NAME.inprogress``
    beside it, which replaces ``path`` once written and synced, and is removed when writing
    fails (a full disk, an interrupt)."""
    tmp = path.with_name(path.name + ".inprogress")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_archive_dir(view: rest.JobView, directory: str | Path) -> Path:
    """What Flink 2.3's JobManager writes under ``jobmanager.archive.fs.dir``:
    ``<dir>/<cluster id>/applications/<application id>/jobs/<job id>``, beside the
    application's summary; its HistoryServer (and ``ckptsim serve DIR``) read it."""
    root = Path(str(directory).removeprefix("file://").removeprefix("file:"))
    app = root / CLUSTER_ID / "applications" / view.job_id
    (app / "jobs").mkdir(parents=True, exist_ok=True)
    path = write_archive(view, app / "jobs" / view.job_id, application=False)
    summary = rest.archive_file(rest.application_archive(view))
    write_atomically(app / "application-summary", json.dumps(summary, separators=(",", ":")))
    return path


#: the cluster directory Flink's MiniCluster archives under
CLUSTER_ID = "0" * 32


def archive_job(
    job: JobGraph, conf: Configuration, result: JobResult, *, restart_strategy: str = ""
) -> Path | None:
    """``jobmanager.archive.fs.dir``: archive a job that ended, as Flink's JobManager does
    (a failure to write is logged; the job's result stands)."""
    directory = conf["jobmanager.archive.fs.dir"]
    if not directory:
        return None
    view = rest.view_of_result(
        job,
        CheckpointConfig.from_configuration(conf),
        result,
        parallelism=int(conf["parallelism.default"]),
        restart_strategy=restart_strategy,
        configuration=rest.configuration_items(conf),
        process=describe_process(),
    )
    try:
        path = write_archive_dir(view, directory)
    except OSError as error:
        log.warning("job_archive_failed", directory=str(directory), error=str(error))
        return None
    log.info("job_archived", path=str(path))
    return path
