"""A run's trace: its protocol events as data, written by a trace writer the run is handed.

A job traced with ``env.execute(trace=...)`` (``ckptsim run --trace FILE``) writes every
protocol event of its actors (a checkpoint triggered, a barrier prioritized, a task
restored, ...) to its trace, whether and however logging is configured. ``ckptsim check``
re-validates such a trace offline (``runtime.tracecheck``).

- ``TraceWriter``: JSON lines, one event per line, numbered by ``seq``, keys sorted: the
  format ``ckptsim check`` reads. Several jobs may write to one writer (the jobs of one
  script): their events are numbered on.
- ``TraceCollector``: the events in a list, for tests.

An actor reports its events through an ``EventLog``: each event goes to the actor's logger
(shown as logging is configured) and, when the run is traced, to the trace, stamped with the
run's time (virtual milliseconds, ``time_ms``, on the simulation, so that one seed writes one
trace byte for byte; the wall clock's UTC time, ``timestamp``, on threads).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Protocol

Event = MutableMapping[str, Any]

#: the levels of Python's logging, by name (``debug`` ... ``error``)
LEVELS = logging.getLevelNamesMapping()


class Tracer(Protocol):
    """Where a run's events go: ``record(event)`` for every event at ``level`` or above."""

    level: int

    def record(self, event: Event) -> None: ...


def _level(level: str | int) -> int:
    if isinstance(level, int):
        return level
    try:
        return LEVELS[level.upper()]
    except KeyError:
        raise ValueError(
            f"unknown trace level {level!r}: use debug, info, warning or error"
        ) from None


class TraceWriter:
    """Writes a trace as JSON lines to ``target`` (a path, opened for writing, or an open text
    file, left open), events of ``level`` and above (``info``: every protocol event;
    ``debug``: also the per-buffer ones). Thread-safe. A path that is (or will be) a regular
    file is written under a temporary name beside it (``<name>.inprogress<suffix>``) and
    renamed at ``close``, so a reader never takes half a trace for a whole one. If writing
    fails (a full disk), the trace stops with one line on standard error, nothing partial is
    left, ``failed`` says why, and the run goes on."""

    def __init__(self, target: str | os.PathLike[str] | IO[str], *, level: str | int = "info"):
        self.level = _level(level)
        self._owned = isinstance(target, str | os.PathLike)
        self._path: Path | None = None
        self._tmp: Path | None = None
        if isinstance(target, str | os.PathLike):
            self._path = Path(target)
            special = self._path.exists() and not self._path.is_file()  # /dev/stdout, a FIFO
            if not special:
                self._tmp = self._path.with_name(f"{self._path.stem}.inprogress{self._path.suffix}")
            self._file: IO[str] | None = open(  # noqa: SIM115 - closed by close()
                self._tmp or self._path, "w", encoding="utf-8"
            )
        else:
            self._file = target
        self._lock = threading.Lock()
        self.seq = 0
        #: why the trace could not be written (None: it was, or is being, written)
        self.failed: str | None = None

    def record(self, event: Event) -> None:
        with self._lock:
            if self._file is None or self._file.closed:
                return
            self.seq += 1
            line = json.dumps({"seq": self.seq, **event}, default=str, sort_keys=True)
            try:
                self._file.write(line + "\n")
            except OSError as error:  # e.g. the disk is full: stop tracing, keep running
                self._fail(error)

    def _fail(self, error: OSError) -> None:
        """Stop writing: one line, and nothing partial left of a file of our own."""
        self.failed = str(error)
        print(f"ckptsim: trace file no longer written: {error}", file=sys.stderr)
        if self._owned and self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
        self._file = None
        if self._tmp is not None:
            with contextlib.suppress(OSError):
                self._tmp.unlink()

    def close(self) -> None:
        with self._lock:
            if self._file is not None and self._owned:
                try:
                    self._file.close()  # flushes: a full disk may show only now
                    if self._tmp is not None and self._path is not None:
                        os.replace(self._tmp, self._path)
                except OSError as error:
                    self._fail(error)
            self._file = None

    def discard(self) -> None:
        """Close without writing the file: what was there before stays as it was (a run
        refused before it began leaves an earlier trace in place, as it leaves other files)."""
        with self._lock:
            if self._file is not None and self._owned:
                with contextlib.suppress(OSError):
                    self._file.close()
                if self._tmp is not None:
                    with contextlib.suppress(OSError):
                        self._tmp.unlink()
            self._file = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TraceCollector:
    """Keeps a trace's events in ``events`` (numbered by ``seq`` as a ``TraceWriter`` numbers
    them), for a test to check (``ckptsim.check_trace(collector.events)``)."""

    def __init__(self, *, level: str | int = "info") -> None:
        self.level = _level(level)
        self.events: list[Event] = []
        self._lock = threading.Lock()

    def record(self, event: Event) -> None:
        with self._lock:
            self.events.append({"seq": len(self.events) + 1, **event})


Stamp = Callable[[], tuple[str, Any]]


def wall_stamp() -> tuple[str, Any]:
    """The wall clock's UTC time, as structlog's ISO time stamper writes it."""
    return "timestamp", datetime.now(UTC).isoformat().replace("+00:00", "Z")


class EventLog:
    """An actor's (or the launcher's) events: to its logger and, when the run is traced, to
    the run's trace with the bound context (``bind``), the level and the run's time."""

    __slots__ = ("_context", "_logger", "_stamp", "_tracer")

    def __init__(
        self,
        logger: Any,
        tracer: Tracer | None,
        stamp: Stamp = wall_stamp,
        context: dict[str, Any] | None = None,
    ) -> None:
        self._logger = logger
        self._tracer = tracer
        self._stamp = stamp
        self._context = context or {}

    def bind(self, **values: Any) -> EventLog:
        return EventLog(
            self._logger.bind(**values), self._tracer, self._stamp, {**self._context, **values}
        )

    def _emit(self, method: str, level: int, event: str, fields: dict[str, Any]) -> None:
        getattr(self._logger, method)(event, **fields)
        tracer = self._tracer
        if tracer is not None and level >= tracer.level:
            key, when = self._stamp()
            name = "error" if method == "exception" else method
            tracer.record({**self._context, **fields, "event": event, "level": name, key: when})

    def debug(self, event: str, **fields: Any) -> None:
        self._emit("debug", logging.DEBUG, event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._emit("info", logging.INFO, event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._emit("warning", logging.WARNING, event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._emit("error", logging.ERROR, event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        self._emit("exception", logging.ERROR, event, fields)


__all__ = ["EventLog", "TraceCollector", "TraceWriter", "Tracer", "wall_stamp"]
