"""Topology scripts: how ``ckptsim run SCRIPT`` finds and runs the job in a Python file.

A script either defines ``build(env)`` (``ckptsim`` makes the environment, calls it, and
executes the job), or makes its own ``StreamExecutionEnvironment`` and calls ``execute``.
Either way the command line's settings apply. Problems in the script itself (a syntax error,
no job, a cycle, a bad parallelism or config key) are ``ScriptError``s with a message that
says what to fix.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

from actors import StreamExecutionEnvironment
from actors.launcher import JobCancellationTimeout
from actors.session import Session, active
from actors.simulation import SimulationStalled
from runtime.config import ConfigError
from runtime.graph import GraphError
from runtime.job import JobResult, RestoreError
from runtime.storage import CorruptCheckpointError


class ScriptError(Exception):
    """The script cannot be run as a job (exit status 2)."""


def run_script(path: str, session: Session) -> JobResult:
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
    with active(session):
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
        except (ScriptError, SimulationStalled, JobCancellationTimeout):
            raise
        except (GraphError, ConfigError) as error:
            raise ScriptError(f"{path}: {error}") from None
        except (RestoreError, CorruptCheckpointError) as error:
            raise ScriptError(f"cannot start {path} from the given state: {error}") from None
        except Exception as error:
            frames = [
                f for f in traceback.extract_tb(error.__traceback__) if f.filename == str(script)
            ]
            where = f"{path}:{frames[-1].lineno}" if frames else path
            raise ScriptError(f"{where}: {type(error).__name__}: {error}") from None
    return session.results[-1]
