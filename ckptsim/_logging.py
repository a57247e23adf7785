"""Logging for the application: ``configure_logging`` (the ``ckptsim`` command line and a
script's ``main`` call it; nothing else configures structlog), and ``logging_restored``, which
puts the configuration back as it was."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator

import structlog

from actors.simulation import active_simulation

LEVELS = logging.getLevelNamesMapping()


class _CurrentStderr:
    """Whatever ``sys.stderr`` is when a line is written (tests swap it)."""

    def write(self, text: str) -> int:
        try:
            return sys.stderr.write(text)
        except OSError:  # a closed pipe (`... 2>&1 | head`): logging must not break the job
            return 0

    def flush(self) -> None:
        with contextlib.suppress(OSError):
            sys.stderr.flush()


_wall_time = structlog.processors.TimeStamper(fmt="iso", utc=True)


def _timestamp(
    logger: object, method: str, event: structlog.types.EventDict
) -> structlog.types.EventDict:
    """Wall-clock ISO time; inside a simulation its virtual time instead (``time_ms``), as the
    run's trace stamps its events."""
    simulation = active_simulation()
    if simulation is not None:
        event["time_ms"] = simulation.now_us / 1000
        return event
    return _wall_time(logger, method, event)


def configure_logging(fmt: str = "auto", level: str = "warning") -> None:
    """Configure structlog for an application: the console renderer on a TTY, JSON lines
    otherwise (or ``fmt``: ``console`` | ``json``), events of ``level`` and above on standard
    error. A run's trace does not depend on it (``execute(trace=...)``)."""
    if fmt == "auto":
        fmt = "console" if sys.stderr.isatty() else "json"
    renderer: structlog.types.Processor = (
        structlog.dev.ConsoleRenderer() if fmt == "console" else structlog.processors.JSONRenderer()
    )
    floor = LEVELS[level.upper()]
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            _timestamp,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(floor),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )


@contextlib.contextmanager
def logging_restored() -> Iterator[None]:
    """Put structlog's configuration back as it was, unconfigured included (so that ckptsim,
    used as a library, stays quiet: ``actors.logs``)."""
    configured = structlog.is_configured()
    previous = structlog.get_config()
    try:
        yield
    finally:
        if configured:
            structlog.configure(**previous)
        else:
            structlog.reset_defaults()
