"""A command-line run in progress: the options ``ckptsim run`` applies to every job a topology
script executes, and the results it collects."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from runtime.job import JobResult


@dataclass
class Session:
    settings: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    results: list[JobResult] = field(default_factory=list)
    #: a checkpointed job that configures no restart strategy restarts at most 3 times
    #: (``runtime.restart.BOUNDED_RESTARTS``) instead of Flink's unlimited default
    bounded_restarts: bool = False
    #: the names of the jobs that got that bounded default
    bounded: list[str] = field(default_factory=list)
    #: while a job runs, its own timeout applies and the script's (``--timeout``) is paused:
    #: a context manager that pauses it, set by ``run_script``
    pause_script_timer: Callable[[], contextlib.AbstractContextManager[None]] = field(
        default=contextlib.nullcontext
    )


_current: contextvars.ContextVar[Session | None] = contextvars.ContextVar(
    "ckptsim_session", default=None
)


def current() -> Session | None:
    return _current.get()


@contextmanager
def active(session: Session) -> Iterator[Session]:
    token = _current.set(session)
    try:
        yield session
    finally:
        _current.reset(token)
