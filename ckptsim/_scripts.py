"""Topology scripts: how ``ckptsim run SCRIPT`` finds and runs the job in a Python file.

A script either defines ``build(env)`` (``ckptsim`` makes the environment, calls it, and
executes the job), or makes its own ``StreamExecutionEnvironment`` and calls ``execute``.
Either way the command line's settings apply. Problems in the script itself (a syntax error,
no job, a cycle, a bad parallelism or config key, something ckptsim cannot run) are
``ScriptError``s with a message that says what to fix.

While a script runs, ``import pyflink...`` resolves to ckptsim's PyFlink API
(``ckptsim.pyflink``). A script that imports ``pyflink`` is a PyFlink program: it runs as
``python`` would run it (``__name__ == "__main__"``, its folder on ``sys.path``, ``sys.argv``
its own arguments).
"""

from __future__ import annotations

import ast
import contextlib
import signal
import sys
import threading
import tokenize
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from actors.launcher import JobCancellationTimeout
from actors.session import Session, active
from actors.simulation import SimulationStalled
from ckptsim._environment import StreamExecutionEnvironment
from ckptsim._errors import JobFailed, ScriptError, UnsupportedFeature
from runtime.config import ConfigError
from runtime.graph import GraphError
from runtime.job import JobResult, RestoreError
from runtime.storage import CheckpointStorageError, CorruptCheckpointError


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


def is_pyflink_program(path: str) -> bool:
    """Whether the script imports ``pyflink`` (at any depth of its code); False when it cannot
    be read or parsed (``run_script`` reports that)."""
    try:
        tree = ast.parse(_source(Path(path)))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            a.name == "pyflink" or a.name.startswith("pyflink.") for a in node.names
        ):
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module is not None
            and (node.module == "pyflink" or node.module.startswith("pyflink."))
        ):
            return True
    return False


@contextlib.contextmanager
def _as_main(script: Path, argv: Sequence[str]) -> Iterator[None]:
    """``sys.argv`` and ``sys.path[0]`` as ``python SCRIPT ARGS...`` has them, for the run."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *argv]
    sys.path.insert(0, str(script.resolve().parent))
    try:
        yield
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path


def run_script(
    path: str, session: Session, *, timeout: float | None = None, argv: Sequence[str] = ()
) -> JobResult:
    """Run the script and the job it builds; ``timeout`` (seconds) bounds the script's own code
    outside its jobs (a job's timeout is ``session.options["timeout"]``), raising
    ``ScriptTimeout``. ``argv``: a PyFlink program's own arguments."""
    from ckptsim.pyflink._imports import pyflink_imports  # noqa: PLC0415

    script = Path(path)
    try:
        source = _source(script)
    except FileNotFoundError:
        raise ScriptError(f"no such script: {path}") from None
    except IsADirectoryError:
        raise ScriptError(f"{path} is a directory: give the job's Python file") from None
    except UnicodeDecodeError as error:
        byte = error.object[error.start : error.start + 1].hex()
        line = error.object[: error.start].count(b"\n") + 1
        raise ScriptError(
            f"{path}:{line}: byte 0x{byte} is not {error.encoding}: save the script as UTF-8, "
            "or declare its encoding on its first or second line, e.g. "
            "'# -*- coding: latin-1 -*-' (PEP 263)"
        ) from None
    except SyntaxError as error:  # an encoding declaration Python does not know
        raise ScriptError(f"{path}: {error.msg}") from None
    except OSError as error:
        raise ScriptError(f"cannot read {path}: {error}") from None
    try:
        code = compile(source, str(script), "exec")
    except SyntaxError as error:
        where = f"{path}:{error.lineno}" if error.lineno else path
        raise ScriptError(f"{where}: syntax error: {error.msg}") from None
    pyflink = is_pyflink_program(path)
    name = "__main__" if pyflink else "__ckptsim__"
    namespace: dict[str, Any] = {"__name__": name, "__file__": str(script)}
    timer = _timer(timeout)
    if timer is not None:
        session.pause_script_timer = timer.paused
    as_main = _as_main(script, argv) if pyflink or argv else contextlib.nullcontext()
    with active(session), timer or contextlib.nullcontext(), pyflink_imports(), as_main:
        try:
            _exec(code, namespace, path, script)
            if not session.results:
                build = namespace.get("build")
                if not callable(build):
                    guard = _main_guard_line(_code_tree(source))
                    raise ScriptError(
                        f"{path} built no job: define build(env), or create a "
                        "StreamExecutionEnvironment and call env.execute()"
                        + (
                            f' (its `if __name__ == "__main__":` block, line {guard}, does not '
                            'run under ckptsim run, where a script\'s __name__ is "__ckptsim__")'
                            if guard and not pyflink
                            else ""
                        )
                    )
                env = StreamExecutionEnvironment()
                build(env)
                if not session.results:  # build(env) may have executed the job itself
                    env.execute(namespace.get("JOB_NAME", script.stem))
        except ScriptTimeout as stop:
            raise ScriptTimeout(f"{_where(path, script, stop)}") from None
        except (ScriptError, SimulationStalled, JobCancellationTimeout):
            raise
        except JobFailed:  # the failed job is the run's result
            pass
        except UnsupportedFeature as error:
            raise ScriptError(f"{_where(path, script, error)}: {error}") from None
        except (GraphError, ConfigError) as error:
            raise ScriptError(f"{path}: {error}") from None
        except (RestoreError, CorruptCheckpointError) as error:
            raise ScriptError(f"cannot start {path} from the given state: {error}") from None
        except CheckpointStorageError as error:  # the storage's, not the script's (it names it)
            hint = (  # unless the error says already what to give
                ""
                if "give the job another directory" in str(error)
                else "; give execution.checkpointing.dir a directory that can be created and "
                "written"
            )
            raise ScriptError(f"{error}{hint}") from None
        except BrokenPipeError:  # the script's own print() met a closed stdout: the reader left
            raise
        except ImportError as error:  # a pyflink module or name ckptsim (and PyFlink) lacks
            from ckptsim.pyflink._unsupported import not_in_api  # noqa: PLC0415

            where = _where(path, script, error)
            refusal = not_in_api(error)
            if refusal is None:
                raise ScriptError(f"{where}: {type(error).__name__}: {error}") from None
            raise ScriptError(f"{where}: {refusal}") from None
        except Exception as error:
            where = _where(path, script, error)
            raise ScriptError(f"{where}: {type(error).__name__}: {error}") from None
    return session.results[-1]


def _code_tree(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _main_guard_line(tree: ast.Module | None) -> int | None:
    """The line of the script's top-level ``if __name__ == "__main__":``, if it has one."""
    for node in tree.body if tree is not None else ():
        test = node.test if isinstance(node, ast.If) else None
        if (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
        ):
            return node.lineno
    return None


def _source(script: Path) -> str:
    """The script's text, decoded as Python decodes a source file: UTF-8, or the encoding its
    first two lines declare (PEP 263), without a UTF-8 byte order mark."""
    data = script.read_bytes()
    try:
        encoding, _ = tokenize.detect_encoding(iter(data.splitlines(keepends=True)).__next__)
    except SyntaxError as error:
        if not str(error.msg).startswith("invalid or missing encoding declaration"):
            raise  # an encoding Python does not know
        encoding = "utf-8"  # a line before any declaration is not UTF-8: say which byte
    return data.decode(encoding)


def _exec(code: Any, namespace: dict[str, Any], path: str, script: Path) -> None:
    """Run the script's code; ``sys.exit()`` ends the script (0 or None: as if it ended;
    another status: the script cannot run, as its own argument parser says)."""
    try:
        exec(code, namespace)
    except SystemExit as stop:
        if stop.code not in (0, None):
            how = (  # sys.exit("message"): Python prints the message, status 1
                f"with status {stop.code}"
                if isinstance(stop.code, int)
                else f"with the message: {stop.code}"
            )
            raise ScriptError(f"{_where(path, script, stop)}: the script exited {how}") from None


def _where(path: str, script: Path, error: BaseException) -> str:
    """``path:line`` of the script's innermost frame in the traceback (``path`` if none)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == str(script)]
    return f"{path}:{frames[-1].lineno}" if frames else path
