"""What ckptsim's PyFlink API does not run, and what it accepts but ignores.

Anything PyFlink has that ckptsim cannot run (a connector or format that needs Flink's JVM,
the Table API and SQL, ...) raises ``UnsupportedFeature`` where the program first names it,
with one line naming it and what to use instead; ``ckptsim run`` stops the program there
(exit status 2), before its job starts. A module or name PyFlink 2.3 has that ckptsim does not
implement (``_pyflink_names``: PyFlink's own list) is refused the same way, saying ckptsim does
not support it (yet); a name PyFlink does not have either is Python's own ``AttributeError`` /
``ModuleNotFoundError``, as under PyFlink. Calls that only tune Flink's JVM or its Python
workers (``add_jars``, ``set_python_executable``, ...) are accepted with one warning each.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from actors.logs import get_logger
from ckptsim._errors import UnsupportedFeature
from ckptsim.pyflink._pyflink_names import MODULES as PYFLINK_MODULES
from ckptsim.pyflink._pyflink_names import NAMES as PYFLINK_NAMES
from ckptsim.pyflink._pyflink_names import VERSION as PYFLINK_VERSION

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
API = "docs/pyflink.md ('What ckptsim implements') lists what ckptsim's PyFlink API has"
ASYNC = "call the service in a map (declare its cost with processing_cost)"
STATE_BACKEND = (
    "ckptsim keeps keyed state in its own heap backend and snapshots it in full: use "
    "HashMapStateBackend, EmbeddedRocksDBStateBackend or state.backend.type"
)
STORAGE = (
    "use FileSystemCheckpointStorage, or set execution.checkpointing.dir (a Configuration, or "
    "-D) for where checkpoints go"
)
RESTART = (
    "configure restart-strategy.* keys instead (a Configuration given to "
    "get_execution_environment, or `ckptsim run -D restart-strategy.type=fixed-delay ...`)"
)
SLOTS = "ckptsim runs every task on its own actor"
CONFIG_OPTIONS = "set a key by its name: Configuration().set_string('pipeline.name', 'job')"

#: modules ckptsim does not have: (what it is, what to use instead)
MODULES: dict[str, tuple[str, str]] = {
    "pyflink.table": (
        "the Table API and SQL (pyflink.table)",
        "write the job with the DataStream API (pyflink.datastream)",
    ),
    "pyflink.java_gateway": ("Flink's JVM gateway (pyflink.java_gateway)", JVM),
    "pyflink.datastream.formats": ("Flink's Java formats (pyflink.datastream.formats)", FORMATS),
    "pyflink.datastream.async_data_stream": (
        "AsyncDataStream (pyflink.datastream.async_data_stream)",
        ASYNC,
    ),
    "pyflink.datastream.async_retry_strategies": (
        "AsyncDataStream's retries (pyflink.datastream.async_retry_strategies)",
        ASYNC,
    ),
    "pyflink.datastream.async_retry_predicates": (
        "AsyncDataStream's retries (pyflink.datastream.async_retry_predicates)",
        ASYNC,
    ),
    "pyflink.datastream.slot_sharing_group": (
        "slot sharing groups (pyflink.datastream.slot_sharing_group)",
        SLOTS,
    ),
    "pyflink.common.restart_strategy": (
        "RestartStrategies (pyflink.common.restart_strategy)",
        RESTART,
    ),
    "pyflink.common.io": ("Java input formats (pyflink.common.io)", CONNECTORS),
    "pyflink.common.config_options": (
        "typed config options (pyflink.common.config_options)",
        CONFIG_OPTIONS,
    ),
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

#: names ckptsim does not have, in whichever module PyFlink has them: (what it is, instead)
NAMES: dict[str, tuple[str, str]] = {
    **{
        name: ("async I/O", ASYNC)
        for name in (
            "AsyncDataStream",
            "AsyncFunction",
            "AsyncFunctionDescriptor",
            "AsyncRetryPredicate",
            "AsyncRetryStrategy",
        )
    },
    "CustomStateBackend": ("a Java state backend", STATE_BACKEND),
    "CustomCheckpointStorage": ("a Java checkpoint storage", STORAGE),
    **{
        name: ("Flink's Java formats", FORMATS)
        for name in (
            "JsonRowDeserializationSchema",
            "JsonRowSerializationSchema",
            "CsvRowDeserializationSchema",
            "CsvRowSerializationSchema",
            "AvroRowDeserializationSchema",
            "AvroRowSerializationSchema",
            "BulkFormat",
            "BulkWriterFactory",
            "RowDataBulkWriterFactory",
        )
    },
    "SourceFunction": ("a Java source", CONNECTORS),
    "InputFormat": ("a Java input format", CONNECTORS),
    "StreamingFileSink": ("a Java SinkFunction", "use FileSink"),
    "SlotSharingGroup": ("slot sharing groups", SLOTS),
    "MemorySize": ("memory sizes", "ckptsim sizes buffers with taskmanager.memory.segment-size"),
    "RestartStrategies": ("restart strategies", RESTART),
    "RestartStrategyConfiguration": ("restart strategies", RESTART),
    "get_gateway": ("Flink's JVM gateway", JVM),
    "ConfigOption": ("typed config options", CONFIG_OPTIONS),
    "ConfigOptions": ("typed config options", CONFIG_OPTIONS),
}


def unsupported(what: str, instead: str) -> NoReturn:
    """Stop the program: ``what`` cannot run on ckptsim; ``instead`` says what to use."""
    raise UnsupportedFeature(f"{what} cannot run on ckptsim: {instead}")


def not_supported(what: str) -> NoReturn:
    """Stop the program: PyFlink has ``what``, ckptsim does not implement it (yet)."""
    raise UnsupportedFeature(f"{what} is not supported by ckptsim (yet): {API}")


def _pyflinks(fullname: str) -> bool:
    """Whether PyFlink 2.3 has the module (below the modules listed one by one: a module of a
    tree ckptsim does not mirror, as ``pyflink.util.java_utils``)."""
    if fullname in PYFLINK_MODULES:
        return True
    parts = fullname.split(".")
    return (
        len(parts) > 2
        and ".".join(parts[:2]) in PYFLINK_MODULES
        and parts[1]
        not in (
            "common",
            "datastream",
        )
    )


def unsupported_module(fullname: str) -> NoReturn:
    """Stop the program at an import of a module ckptsim does not have; a module PyFlink does
    not have either is Python's ``ModuleNotFoundError``."""
    for name in sorted(MODULES, key=len, reverse=True):
        if fullname == name or fullname.startswith(name + "."):
            unsupported(*MODULES[name])
    if _pyflinks(fullname):
        not_supported(f"module {fullname}")
    raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)


def not_in_api(error: ImportError) -> str | None:
    """The one line for a failed import of a ``pyflink`` module or name that neither ckptsim
    nor PyFlink has (Python's ``ImportError``, as under PyFlink, so a program's ``except
    ImportError`` still works): what it imported, that ckptsim's PyFlink API does not have
    it, and what it has. None for an import of something else."""
    module = (error.name or "").removeprefix("ckptsim.")  # (a name of a module ckptsim has)
    if not (module == "pyflink" or module.startswith("pyflink.")):
        return None
    has = (
        "it has pyflink.common, pyflink.datastream (with the connectors file_system and "
        f"number_seq) and pyflink.metrics; {API}"
    )
    if isinstance(error, ModuleNotFoundError):
        return (
            f"{module} is not a module of ckptsim's PyFlink API (nor of PyFlink "
            f"{PYFLINK_VERSION}): {has}"
        )
    found = re.match(r"cannot import name '([^']+)'", error.msg or "")
    name = f"{module}.{found.group(1)}" if found else module
    return (
        f"{name} is not a name of ckptsim's PyFlink API (nor of PyFlink {PYFLINK_VERSION}): {has}"
    )


_NOTHING = object()


def _defined_at(origin: str, here: str) -> Any:
    """ckptsim's object of what PyFlink defines at ``origin`` (``pyflink.common.time.Time``,
    ``module:pyflink.common.typeinfo``), or ``_NOTHING`` when ckptsim does not have it or
    PyFlink defines it in the module ``here`` itself."""
    if origin.startswith("module:"):
        module, attribute = origin.removeprefix("module:"), None
    else:
        module = max(
            (m for m in PYFLINK_MODULES if origin.startswith(m + ".")), key=len, default=""
        )
        attribute = origin[len(module) + 1 :].split(".", maxsplit=1)[0]
    if module == here:
        return _NOTHING
    try:
        found = importlib.import_module(f"ckptsim.{module}")
        return found if attribute is None else getattr(found, attribute)
    except (ImportError, AttributeError, UnsupportedFeature):
        return _NOTHING


def missing(
    module: str, known: Mapping[str, tuple[str, str]] | None = None
) -> Callable[[str], Any]:
    """A module's ``__getattr__`` for the names it does not define itself:

    - a submodule is imported (``pyflink.datastream.window``);
    - a name PyFlink's module imported from elsewhere is ckptsim's object there, when ckptsim
      has it (``Time`` in ``pyflink.datastream.window`` is ``pyflink.common.time.Time``), so
      every name ckptsim implements resolves in every module where PyFlink has it;
    - another name PyFlink has there stops the program (``known``, then ``NAMES``, say what
      to use instead for some; else it says ckptsim does not support it yet);
    - any other name is Python's ``AttributeError``, as in PyFlink.
    """
    package = f"ckptsim.{module}"
    known = known or {}
    pyflinks = PYFLINK_NAMES.get(module, {})

    def __getattr__(name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        submodule = f"{module}.{name}"
        try:
            ours = importlib.util.find_spec(f"{package}.{name}") is not None
        except ModuleNotFoundError:
            ours = False
        if ours:
            return importlib.import_module(f"{package}.{name}")
        if submodule in PYFLINK_MODULES:
            unsupported_module(submodule)
        if name in known:
            unsupported(*known[name])
        if name not in pyflinks:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        found = _defined_at(pyflinks[name], module)
        if found is not _NOTHING:
            return found
        if name in NAMES:
            what, instead = NAMES[name]
            unsupported(f"{submodule} ({what})", instead)
        not_supported(submodule)

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
