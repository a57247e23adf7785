"""What ckptsim's PyFlink API does not run, and what it accepts but ignores.

Anything PyFlink has that ckptsim cannot run (a connector or format that needs Flink's JVM,
the Table API and SQL, ...) raises ``UnsupportedFeature`` where the program first names it,
with one line naming it and what to use instead; ``ckptsim run`` stops the program there
(exit status 2), before its job starts. Calls that only tune Flink's JVM or its Python
workers (``add_jars``, ``set_python_executable``, ...) are accepted with one warning each.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, NoReturn

from actors.logs import get_logger
from actors.scripts import UnsupportedFeature

log = get_logger(__name__)

CONNECTORS = (
    "ckptsim runs no JVM connectors: read with env.from_collection(...), "
    "NumberSequenceSource or FileSource, write with print() or FileSink"
)
FORMATS = (
    "read text lines with FileSource.for_record_stream_format(StreamFormat.text_line_format(), "
    "path) and parse them in a map"
)
JVM = "ckptsim runs no JVM: keep the job's code in Python"
API = (
    "ckptsim's PyFlink API is pyflink.common and pyflink.datastream (the README's 'Running "
    "PyFlink programs' lists what it has)"
)

#: modules ckptsim does not have: (what it is, what to use instead)
MODULES: dict[str, tuple[str, str]] = {
    "pyflink.table": (
        "the Table API and SQL (pyflink.table)",
        "write the job with the DataStream API (pyflink.datastream)",
    ),
    "pyflink.java_gateway": ("Flink's JVM gateway (pyflink.java_gateway)", JVM),
    "pyflink.datastream.formats": ("Flink's Java formats (pyflink.datastream.formats)", FORMATS),
    "pyflink.datastream.async_data_stream": (
        "AsyncDataStream",
        "call the service in a map (declare its cost with processing_cost)",
    ),
    "pyflink.metrics": ("Flink's metric groups (pyflink.metrics)", "ckptsim has no user metrics"),
    "pyflink.fn_execution": ("PyFlink's Python worker internals (pyflink.fn_execution)", JVM),
}
for _connector in (
    "kafka",
    "dynamic_kafka",
    "pulsar",
    "kinesis",
    "elasticsearch",
    "jdbc",
    "rabbitmq",
    "cassandra",
    "hybrid_source",
    "aws",
):
    MODULES[f"pyflink.datastream.connectors.{_connector}"] = (
        f"the {_connector} connector (pyflink.datastream.connectors.{_connector})",
        CONNECTORS,
    )


def unsupported(what: str, instead: str) -> NoReturn:
    """Stop the program: ``what`` cannot run on ckptsim; ``instead`` says what to use."""
    raise UnsupportedFeature(f"{what} cannot run on ckptsim: {instead}")


def unsupported_module(fullname: str) -> NoReturn:
    for name in sorted(MODULES, key=len, reverse=True):
        if fullname == name or fullname.startswith(name + "."):
            unsupported(*MODULES[name])
    unsupported(f"module {fullname}", API)


def missing(module: str, known: dict[str, tuple[str, str]]) -> Callable[[str], Any]:
    """A module's ``__getattr__``: a public name PyFlink has there but ckptsim does not
    stops the program (``known`` says what to use instead for some)."""

    def __getattr__(name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        what, instead = known.get(name, (f"{module}.{name}", API))
        unsupported(what, instead)

    return __getattr__


_warned: set[str] = set()
_warned_lock = threading.Lock()


def ignored(call: str, reason: str) -> None:
    """Accept a call that has no effect on ckptsim; the first time (per run), say so."""
    with _warned_lock:
        if call in _warned:
            return
        _warned.add(call)
    log.warning("pyflink_call_ignored", call=call, reason=reason)


def reset_warnings() -> None:
    """Each run warns afresh (``ckptsim run`` calls this as a script starts)."""
    with _warned_lock:
        _warned.clear()
