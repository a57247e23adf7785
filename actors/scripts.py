"""Topology scripts: how ``ckptsim run SCRIPT`` finds and runs the job in a Python file.

A script either defines ``build(env)`` (``ckptsim`` makes the environment, calls it, and
executes the job), or makes its own ``StreamExecutionEnvironment`` and calls ``execute``.
Either way the command line's settings apply. Problems in the script itself (a syntax error,
no job, a cycle, a bad parallelism or config key) are ``ScriptError``s with a message that
says what to fix.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from actors import StreamExecutionEnvironment
from actors.launcher import JobCancellationTimeout
from actors.session import Session, active
from actors.simulation import SimulationStalled
from runtime.config import ConfigError
from runtime.graph import GraphError
from runtime.job import JobResult, RestoreError
from runtime.storage import CheckpointStorageError, CorruptCheckpointError


class ScriptError(Exception):
    """The script cannot be run as a job (exit status 2)."""


class ScriptTimeout(BaseException):
    """The script's own code (outside any job) ran longer than its time limit.

    A ``BaseException``, so that a script's ``except Exception`` cannot swallow it."""


class _ScriptTimer:
    """``seconds`` of the script's own time, on the main thread's real-time interval timer
    (SIGALRM); paused while a job runs (a job has its own timeout)."""

    def __init__(self, seconds: float) -> None:
        self.remaining = seconds
        self.previous: Any = None

    def __enter__(self) -> _ScriptTimer:
        self.previous = signal.signal(signal.SIGALRM, self._expired)
        self._arm()
        return self

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)

    def _arm(self) -> None:
        if self.remaining <= 0:
            raise ScriptTimeout
        signal.setitimer(signal.ITIMER_REAL, self.remaining)

    @staticmethod
    def _expired(signum: int, frame: object) -> None:
        raise ScriptTimeout

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        self.remaining = signal.setitimer(signal.ITIMER_REAL, 0)[0] or 1e-6
        try:
            yield
        finally:
            self._arm()


def _timer(seconds: float | None) -> _ScriptTimer | None:
    """A script timer where one can run: on the main thread of a POSIX process."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    return _ScriptTimer(seconds) if seconds is not None and usable else None


def run_script(path: str, session: Session, *, timeout: float | None = None) -> JobResult:
    """Run the script and the job it builds; ``timeout`` (seconds) bounds the script's own code
    outside its jobs (a job's timeout is ``session.options["timeout"]``), raising
    ``ScriptTimeout``."""
    script = Path(path)
    try:
        source = script.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScriptError(f"no such script: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ScriptError(f"cannot read {path}: {error}") from None
    try:
        code = compile(source, str(script), "exec")
    except SyntaxError as error:
        where = f"{path}:{error.lineno}" if error.lineno else path
        raise ScriptError(f"{where}: syntax error: {error.msg}") from None
    namespace: dict[str, Any] = {"__name__": "__ckptsim__", "__file__": str(script)}
    timer = _timer(timeout)
    if timer is not None:
        session.pause_script_timer = timer.paused
    with active(session), timer or contextlib.nullcontext():
        try:
            exec(code, namespace)
            if not session.results:
                build = namespace.get("build")
                if not callable(build):
                    raise ScriptError(
                        f"{path} built no job: define build(env), or create a "
                        "StreamExecutionEnvironment and call env.execute()"
                    )
                env = StreamExecutionEnvironment()
                build(env)
                if not session.results:  # build(env) may have executed the job itself
                    env.execute(namespace.get("JOB_NAME", script.stem))
        except ScriptTimeout as stop:
            raise ScriptTimeout(f"{_where(path, script, stop)}") from None
        except (ScriptError, SimulationStalled, JobCancellationTimeout):
            raise
        except (GraphError, ConfigError) as error:
            raise ScriptError(f"{path}: {error}") from None
        except (RestoreError, CorruptCheckpointError) as error:
            raise ScriptError(f"cannot start {path} from the given state: {error}") from None
        except CheckpointStorageError as error:  # the storage's fault, not the script's
            raise ScriptError(f"cannot run {path}: {error}") from None
        except Exception as error:
            where = _where(path, script, error)
            raise ScriptError(f"{where}: {type(error).__name__}: {error}") from None
    return session.results[-1]


def _where(path: str, script: Path, error: BaseException) -> str:
    """``path:line`` of the script's innermost frame in the traceback (``path`` if none)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == str(script)]
    return f"{path}:{frames[-1].lineno}" if frames else path
