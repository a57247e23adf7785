"""ckptsim's loggers: quiet as a library, the application's when it configures logging.

Every module of ckptsim takes its module-level logger from ``get_logger(__name__)``. Until the
application configures logging, structlog's defaults would print every protocol event to
stdout; ckptsim's loggers instead go through the standard library's logger of the module's
name (``actors.coordinator``, ...), so that as a library ckptsim says nothing below WARNING,
and that only on stderr (Python's last-resort handler), until the application configures
logging:

- with structlog (``structlog.configure``, as ``ckptsim``'s own command line does): ckptsim
  logs through that configuration, exactly as the application's own loggers;
- with the standard library (``logging.basicConfig(level=logging.INFO)``, handlers on the
  ``actors`` logger, ...): the events arrive as records of those loggers, rendered as
  ``event=... key=value``, at the levels those loggers let through.

Nothing here configures structlog, so importing ckptsim changes no application's logging. The
choice is made when a logger is used: an actor binds its logger once when it starts, so what
is configured when a job starts applies to that job. Events below a stdlib logger's level cost
one no-op call (a filtering bound logger).
"""

from __future__ import annotations

import logging
from typing import Any

import structlog

_RENDER: list[structlog.types.Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.processors.format_exc_info,
    structlog.processors.LogfmtRenderer(key_order=["event"], bool_as_flag=False),
]


def get_logger(name: str) -> Any:
    """The logger a ckptsim module logs through (see the module's documentation)."""
    return _LibraryLogger(name)


def _resolve(name: str) -> Any:
    if structlog.is_configured():
        return structlog.get_logger(name)
    stdlib = logging.getLogger(name)
    return structlog.wrap_logger(
        stdlib,
        processors=_RENDER,
        wrapper_class=structlog.make_filtering_bound_logger(stdlib.getEffectiveLevel()),
        context_class=dict,
    )


class _LibraryLogger:
    """Resolved on use: ``bind`` returns a concrete bound logger for what is configured now;
    a method called on the module-level logger resolves for that call."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def bind(self, **values: Any) -> Any:
        return _resolve(self.name).bind(**values)

    def __getattr__(self, method: str) -> Any:
        return getattr(_resolve(self.name), method)
