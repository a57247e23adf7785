"""Configuration with Flink's keys, defaults and value syntax, validated with clear errors.

``Configuration`` holds raw settings (``{"execution.checkpointing.interval": "10 s"}``) checked
against the registry of known options: an unknown key, a deprecated key used together with its
replacement, or a value of the wrong type is a ``ConfigError`` naming the key, the value and
what is allowed. ``CheckpointConfig`` is the typed view the runtime uses.

Durations are written as Flink writes them: ``100 ms``, ``10 s``, ``10 min``, ``1 h``, ``2 d``
(a bare number is milliseconds); memory sizes as ``20 kb``, ``64 mb`` (a bare number is bytes).
"""

from __future__ import annotations

import contextlib
import datetime
import difflib
import enum
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from runtime.barrier.mode import GateMode
from runtime.checkpoint import ExternalizedCheckpointRetention


class ConfigError(ValueError):
    """A configuration key or value is wrong; the message says which and what is allowed."""


class CheckpointingMode(enum.Enum):
    """Flink's ``CheckpointingMode``: ``EXACTLY_ONCE`` aligns barriers (or, unaligned, persists
    the data in flight); ``AT_LEAST_ONCE`` tracks barriers without aligning them, so a record may
    be counted twice after a restore."""

    EXACTLY_ONCE = "EXACTLY_ONCE"
    AT_LEAST_ONCE = "AT_LEAST_ONCE"


_DURATION_UNITS: dict[str, float] = {}
for _factor, _labels in (
    (1e-6, ("ns", "nano", "nanos", "nanosecond", "nanoseconds")),
    (1e-3, ("us", "µs", "micro", "micros", "microsecond", "microseconds")),
    (1, ("ms", "milli", "millis", "millisecond", "milliseconds")),
    (1000, ("s", "sec", "secs", "second", "seconds")),
    (60_000, ("m", "min", "mins", "minute", "minutes")),
    (3_600_000, ("h", "hour", "hours")),
    (86_400_000, ("d", "day", "days")),
):
    for _label in _labels:
        _DURATION_UNITS[_label] = _factor

_MEMORY_UNITS: dict[str, int] = {}
for _mfactor, _mlabels in (
    (1, ("b", "bytes")),
    (1 << 10, ("k", "kb", "kibibytes")),
    (1 << 20, ("m", "mb", "mebibytes")),
    (1 << 30, ("g", "gb", "gibibytes")),
    (1 << 40, ("t", "tb", "tebibytes")),
):
    for _mlabel in _mlabels:
        _MEMORY_UNITS[_mlabel] = _mfactor

_NUMBER_UNIT = re.compile(r"^\s*(\d+)\s*([a-zµ]*)\s*$")
_ISO_DURATION = re.compile(
    r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$", re.IGNORECASE
)


#: the longest duration: Flink's durations are 64-bit nanoseconds (about 292 years), and a
#: timer thread can wait at most ``threading.TIMEOUT_MAX`` seconds (2**63 - 1 ns, rounded down to
#: whole seconds on Linux); a longer timeout or interval would kill the timer thread
MAX_DURATION_MS = 9_223_372_036_000
MAX_DURATION_TEXT = "106751 d 23 h 47 min 16 s"


def parse_duration(value: object) -> int:
    """A duration in milliseconds from Flink's syntax, an int (ms) or a ``timedelta``; at most
    ``MAX_DURATION_MS``."""
    millis = _duration_ms(value)
    if millis > MAX_DURATION_MS:
        raise ValueError(
            f"a duration can be at most {MAX_DURATION_TEXT} ({MAX_DURATION_MS} ms; Flink's "
            "durations are 64-bit nanoseconds)"
        )
    return millis


_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1_000), ("ms", 1))


def format_duration(millis: int) -> str:
    """As Flink writes a duration (``TimeUtils.formatWithHighestUnit``): in the largest unit
    that divides it, ``600000`` -> ``10 min``, ``1500`` -> ``1500 ms``, ``0`` -> ``0 ms``."""
    for unit, size in _UNITS:
        if millis and millis % size == 0:
            return f"{millis // size} {unit}"
    return f"{millis} ms"


def _duration_ms(value: object) -> int:
    if isinstance(value, bool):
        raise ValueError("expected a duration, not a boolean")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return value
    if isinstance(value, datetime.timedelta):
        if value < datetime.timedelta(0):
            raise ValueError("a duration cannot be negative")
        return value // datetime.timedelta(milliseconds=1)
    if not isinstance(value, str):
        raise ValueError(f"expected a duration, not {type(value).__name__}")
    text = value.strip().lower()
    iso = _ISO_DURATION.match(text.upper())
    if iso and text.startswith("p") and any(iso.groups()):
        days, hours, minutes, seconds = iso.groups()
        total = (
            int(days or 0) * 86_400_000
            + int(hours or 0) * 3_600_000
            + int(minutes or 0) * 60_000
            + Decimal(seconds or 0) * 1000
        )
        return int(total)
    match = _NUMBER_UNIT.match(text)
    if not match and _NUMBER_UNIT.match(text.removeprefix("-").lstrip()):
        raise ValueError("a duration cannot be negative")
    if not match:
        raise ValueError(
            "expected a duration: a number and a unit, e.g. '100 ms', '10 s', '10 min'"
        )
    number, unit = int(match.group(1)), match.group(2) or "ms"
    if unit not in _DURATION_UNITS:
        raise ValueError(f"unknown time unit {unit!r} (use ms, s, min, h or d)")
    return int(number * Decimal(repr(_DURATION_UNITS[unit])))


def format_memory(size: int) -> str:
    """As Flink writes a memory size (``MemorySize.toString``): in the largest unit that
    divides it, ``32768`` -> ``32 kb``, ``100`` -> ``100 bytes``."""
    for unit, factor in (("tb", 1 << 40), ("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10)):
        if size > 0 and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} bytes"


def parse_memory(value: object) -> int:
    """A size in bytes from Flink's ``MemorySize`` syntax (``20 kb``) or an int."""
    if isinstance(value, bool):
        raise ValueError("expected a size, not a boolean")
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected a size, not {type(value).__name__}")
    text = value.strip().lower()
    if text == "-1":
        return -1
    match = _NUMBER_UNIT.match(text)
    if not match:
        raise ValueError("expected a size: a number and a unit, e.g. '20 kb', '64 mb'")
    unit = match.group(2) or "b"
    if unit not in _MEMORY_UNITS:
        raise ValueError(f"unknown size unit {unit!r} (use b, kb, mb or gb)")
    return int(match.group(1)) * _MEMORY_UNITS[unit]


def parse_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError("expected true or false")


def parse_int(value: object) -> int:
    if isinstance(value, bool):
        raise ValueError("expected an integer, not a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ValueError("expected an integer")


def parse_float(value: object) -> float:
    if isinstance(value, bool):
        raise ValueError("expected a number, not a boolean")
    number: float | None = None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = float(value.strip())
    if number is None:
        raise ValueError("expected a number")
    if not math.isfinite(number):  # Java's Double parses neither 'nan' nor 'inf'
        raise ValueError("expected a finite number")
    return number


_RESTART_TYPES = {
    "disable": "disable",
    "none": "disable",
    "off": "disable",
    "fixed-delay": "fixed-delay",
    "fixeddelay": "fixed-delay",
    "failure-rate": "failure-rate",
    "failurerate": "failure-rate",
    "exponential-delay": "exponential-delay",
    "exponentialdelay": "exponential-delay",
}


def parse_restart_type(value: object) -> str:
    """Flink's ``restart-strategy.type`` values and their aliases, to the main value."""
    if isinstance(value, str) and value.strip().lower() in _RESTART_TYPES:
        return _RESTART_TYPES[value.strip().lower()]
    raise ValueError(
        "expected one of disable (none, off), fixed-delay, failure-rate, exponential-delay"
    )


def parse_map(value: object) -> dict[str, str]:
    """Flink's map syntax (``k1:v1,k2:v2``) or a mapping: string keys and values."""
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, str):
        out: dict[str, str] = {}
        for item in filter(None, (part.strip() for part in value.split(","))):
            key, sep, val = item.partition(":")
            if not sep or not key.strip():
                raise ValueError(f"expected key:value pairs separated by commas, got {item!r}")
            out[key.strip()] = val.strip()
        return out
    raise ValueError("expected key:value pairs separated by commas (k1:v1,k2:v2) or a mapping")


def parse_list(value: object) -> tuple[str, ...]:
    """Flink's list syntax (``a;b;c``) or a list of strings: the non-empty items."""
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(";") if item.strip())
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return tuple(item.strip() for item in value if item.strip())
    raise ValueError("expected items separated by semicolons (a;b;c) or a list of strings")


def parse_string(value: object) -> str:
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise ValueError("expected a non-empty string")


def local_path(path: str) -> str:
    """A path as Flink writes it (``file:///tmp/ck``, ``file:/tmp/ck``) or a plain one, as a
    local path; ``ValueError`` for another file system's URI (ckptsim reads and writes local
    files only)."""
    text = path.strip()
    if text[:5].lower() == "file:":  # a URI's scheme is case-insensitive (RFC 3986)
        text = "file:" + text[5:]
    if text.startswith("file://"):
        rest = text[len("file://") :]
        if rest and not rest.startswith("/"):  # file://host/path: only this machine's
            host, _, tail = rest.partition("/")
            if host not in ("localhost", "127.0.0.1"):
                raise ValueError(f"{path!r}: a file: URI of another host ({host})")
            rest = "/" + tail
        return rest or "/"
    if text.startswith("file:"):
        return text[len("file:") :]
    scheme = text.split(":", 1)[0]
    if ":" in text and "/" not in scheme and len(scheme) > 1 and scheme.isidentifier():
        raise ValueError(
            f"{path!r}: ckptsim reads and writes local files only: give a path or a file: URI"
        )
    return text


def parse_path(value: object) -> str:
    """A directory or file: a non-empty local path, or a ``file:`` URI of one."""
    fspath = getattr(value, "__fspath__", None)  # a pathlib.Path
    if callable(fspath):
        value = fspath()
    return local_path(parse_string(value))


def _enum_parser(choices: tuple[str, ...]) -> Callable[[object], str]:
    """An enum option's value: a member's name in any case (``EXACTLY_ONCE``,
    ``exactly_once``), as Flink converts a string to an enum; another spelling
    (``exactly-once``) is refused, as Flink refuses it ("Could not parse value")."""

    def parse(value: object) -> str:
        if isinstance(value, enum.Enum):
            value = value.value
        if isinstance(value, str):
            normalized = value.strip().upper()
            if normalized in choices:
                return normalized
        raise ValueError(
            "expected one of "
            + ", ".join(choices)
            + " (a name as written here, in upper or lower case, as Flink takes it)"
        )

    return parse


@dataclass(frozen=True, slots=True)
class ConfigOption:
    key: str
    kind: str
    default: Any
    parse: Callable[[object], Any]
    description: str
    deprecated_keys: tuple[str, ...] = ()
    minimum: int | None = None
    allow: tuple[Any, ...] = ()  # values allowed besides the minimum rule (e.g. -1 = off)
    #: why the option is accepted (Flink has it) but changes nothing in ckptsim; "" if it does
    inert: str = ""
    #: what a wrong value's message adds: how to get what the user probably meant
    hint: str = ""

    def validate(self, key: str, raw: object) -> Any:
        try:
            value = self.parse(raw)
        except ValueError as error:
            hint = f" {self.hint}" if self.hint else ""
            raise ConfigError(
                f"Invalid value {raw!r} for configuration key '{key}': {error}.{hint}"
            ) from None
        if self.minimum is not None and value not in self.allow and value < self.minimum:
            allowed = f"at least {_render(self.kind, self.minimum)}"
            if self.allow:
                allowed += " (or " + ", ".join(str(a) for a in self.allow) + ")"
            raise ConfigError(
                f"Invalid value {raw!r} for configuration key '{key}': must be {allowed}."
            )
        return value


def _render(kind: str, value: int) -> str:
    return f"{value} ms" if kind == "duration" else str(value)


def _opt(
    key: str,
    kind: str,
    default: Any,
    description: str,
    *,
    deprecated: tuple[str, ...] = (),
    minimum: int | None = None,
    allow: tuple[Any, ...] = (),
    choices: tuple[str, ...] = (),
    inert: str = "",
    hint: str = "",
) -> ConfigOption:
    parsers: dict[str, Callable[[object], Any]] = {
        "duration": parse_duration,
        "int": parse_int,
        "bool": parse_bool,
        "memory": parse_memory,
        "string": parse_string,
        "path": parse_path,
        "map": parse_map,
        "list": parse_list,
        "float": parse_float,
        "restart": parse_restart_type,
    }
    parse = _enum_parser(choices) if kind == "enum" else parsers[kind]
    return ConfigOption(
        key, kind, default, parse, description, deprecated, minimum, allow, inert, hint
    )


_CP = "execution.checkpointing."
_ROCKSDB = "state.backend.rocksdb."
_STATE_BACKEND = "ckptsim keeps keyed state in its own heap backend and snapshots it in full"

OPTIONS: tuple[ConfigOption, ...] = (
    _opt(
        _CP + "interval",
        "duration",
        None,
        "Base interval of periodic checkpoints (none: disabled).",
        minimum=10,
    ),
    _opt(
        _CP + "mode",
        "enum",
        "EXACTLY_ONCE",
        "Checkpointing mode.",
        choices=("EXACTLY_ONCE", "AT_LEAST_ONCE"),
    ),
    _opt(
        _CP + "timeout",
        "duration",
        600_000,
        "A checkpoint not completed in this time expires.",
        minimum=10,
    ),
    _opt(
        _CP + "min-pause",
        "duration",
        0,
        "Minimal pause between a completion and the next periodic trigger.",
        minimum=0,
    ),
    _opt(
        _CP + "max-concurrent-checkpoints",
        "int",
        1,
        "Checkpoints that may be pending at once.",
        minimum=1,
    ),
    _opt(
        _CP + "tolerable-failed-checkpoints",
        "int",
        0,
        "Consecutive counted failures tolerated before failing the job.",
        minimum=0,
    ),
    _opt(
        _CP + "num-retained",
        "int",
        1,
        "Completed checkpoints kept.",
        deprecated=("state.checkpoints.num-retained",),
        minimum=1,
    ),
    _opt(
        _CP + "unaligned.enabled",
        "bool",
        False,
        "Unaligned checkpoints.",
        deprecated=(_CP + "unaligned",),
    ),
    _opt(
        _CP + "unaligned.forced",
        "bool",
        False,
        "Force unaligned checkpoints on every edge.",
        inert="every edge already takes unaligned barriers",
    ),
    _opt(
        _CP + "aligned-checkpoint-timeout",
        "duration",
        0,
        "With unaligned checkpoints: start aligned, switch to unaligned after this time (0: always unaligned).",
        deprecated=(_CP + "alignment-timeout",),
        minimum=0,
    ),
    _opt(
        _CP + "externalized-checkpoint-retention",
        "enum",
        "NO_EXTERNALIZED_CHECKPOINTS",
        "Keep checkpoints when the job ends.",
        choices=tuple(r.value for r in ExternalizedCheckpointRetention),
    ),
    _opt(
        _CP + "checkpoints-after-tasks-finish",
        "bool",
        True,
        "Checkpoints continue after some tasks finished (FLIP-147); an end of partition counts as aligned.",
        deprecated=(_CP + "checkpoints-after-tasks-finish.enabled",),
    ),
    _opt(
        _CP + "dir",
        "path",
        None,
        "Checkpoint directory (default: a temporary directory).",
        deprecated=("state.checkpoints.dir",),
    ),
    _opt(
        _CP + "savepoint-dir",
        "path",
        None,
        "Default savepoint directory.",
        deprecated=("state.savepoints.dir",),
    ),
    _opt(
        _CP + "storage",
        "enum",
        "FILESYSTEM",
        "Checkpoint storage: FILESYSTEM (files under execution.checkpointing.dir) or "
        "JOBMANAGER (in the JobManager's memory, gone with the job; savepoints still go to files).",
        deprecated=("state.checkpoint-storage",),
        choices=("JOBMANAGER", "FILESYSTEM"),
    ),
    _opt(
        _CP + "create-subdir",
        "bool",
        True,
        "Per-job sub-directory under the checkpoint directory.",
        deprecated=("state.checkpoints.create-subdir",),
    ),
    _opt(
        _CP + "incremental",
        "bool",
        False,
        "Incremental snapshots.",
        deprecated=("state.backend.incremental",),
        inert="snapshots are always full",
    ),
    _opt(
        _CP + "data-inline-threshold",
        "memory",
        20 * 1024,
        "State smaller than this is inlined in the metadata.",
        deprecated=("state.storage.fs.memory-threshold",),
        minimum=0,
        inert="state is always written to files",
    ),
    _opt(
        _CP + "interval-during-backlog",
        "duration",
        None,
        "Interval while sources report a backlog.",
        minimum=0,
        inert="sources never report a backlog",
    ),
    _opt(
        "task.checkpoint.alignment.max-size",
        "memory",
        -1,
        "Flink 1.10 buffered alignment: abort past this many buffered bytes (-1: unlimited).",
        minimum=1,
        allow=(-1,),
    ),
    _opt(
        "execution.state-recovery.without-channel-state.checkpoint-id",
        "int",
        -1,
        "Drop the in-flight data of this checkpoint on restore.",
        deprecated=(_CP + "recover-without-channel-state.checkpoint-id",),
        minimum=-1,
    ),
    _opt(
        "web.checkpoints.history",
        "int",
        10,
        "Checkpoints kept in the statistics history.",
        deprecated=("jobmanager.web.checkpoints.history",),
        minimum=0,
    ),
    _opt(
        "rest.address",
        "string",
        "localhost",
        "Address of the REST API and web page (ckptsim run --web) that clients connect to.",
    ),
    _opt(
        "rest.bind-address",
        "string",
        None,
        "Address the REST server binds to (default: rest.address; 0.0.0.0 for every interface).",
        deprecated=("web.address", "jobmanager.web.address"),
    ),
    _opt(
        "rest.port",
        "int",
        8081,
        "Port of the REST API and web page (ckptsim run --web); 0 picks a free port.",
        deprecated=("web.port",),
        minimum=0,
    ),
    _opt(
        "metrics.reporter.prom.factory.class",
        "string",
        None,
        "org.apache.flink.metrics.prometheus.PrometheusReporterFactory: serve the jobs' metrics "
        "in Prometheus' text format (Flink's PrometheusReporter) on metrics.reporter.prom.port.",
    ),
    _opt(
        "metrics.reporter.prom.port",
        "string",
        "9249",
        "Port (or range of ports, 9250-9260: the first free one) of the Prometheus reporter; "
        "0 picks a free port.",
    ),
    _opt(
        "metrics.reporter.prom.host",
        "string",
        None,
        "Address the Prometheus reporter binds (default: every address, as Flink's).",
    ),
    _opt(
        "metrics.reporter.prom.filterLabelValueCharacters",
        "bool",
        True,
        "Whether the Prometheus reporter turns each character of a label value not in "
        "[a-zA-Z0-9:_] into _ (as Flink's reporter; false sends the values as they are).",
    ),
    _opt(
        "web.access-control-allow-origin",
        "string",
        "*",
        "Access-Control-Allow-Origin header for all responses from the web-frontend. "
        "ckptsim sends no CORS headers unless this is set, and then only this origin (* for "
        "any) may call the REST API from another web page (docs/rest-security.md).",
        deprecated=("jobmanager.web.access-control-allow-origin",),
    ),
    _opt(
        "jobmanager.archive.fs.dir",
        "path",
        None,
        "Directory a job's archive is written to when it ends (Flink's layout; ckptsim serve "
        "and Flink's HistoryServer read it).",
    ),
    _opt(
        "taskmanager.network.memory.buffers-per-channel",
        "int",
        2,
        "Exclusive credits per input channel.",
        minimum=1,
    ),
    _opt(
        "taskmanager.network.memory.floating-buffers-per-gate",
        "int",
        8,
        "Floating buffers of an input gate (a share of them adds to each channel's credits); "
        "a result partition's pool is subpartitions * buffers-per-channel + this.",
        minimum=0,
    ),
    _opt(
        "taskmanager.network.memory.max-buffers-per-channel",
        "int",
        10,
        "Buffers one subpartition may hold before its result partition counts as back-pressured.",
        minimum=1,
    ),
    _opt(
        "taskmanager.memory.segment-size",
        "memory",
        32 * 1024,
        "Size of a network buffer: output buffers are cut at this many bytes (by the records' "
        "estimated size).",
        minimum=1,
    ),
    _opt(
        "taskmanager.network.memory.max-overdraft-buffers-per-gate",
        "int",
        5,
        "Overdraft buffers under back-pressure.",
        minimum=0,
        inert="a task writes the output of one input buffer as a whole; it may overdraw its "
        "pool by that much, unbounded",
    ),
    _opt(
        "taskmanager.network.memory.buffer-debloat.enabled",
        "bool",
        False,
        "Adaptive buffer sizing.",
        inert="buffers are cut at the segment size (and ckptsim.buffer.records)",
    ),
    _opt(
        "taskmanager.network.memory.buffer-debloat.target",
        "duration",
        1000,
        "Target time to consume in-flight data.",
        minimum=0,
        inert="buffers are cut at the segment size (and ckptsim.buffer.records)",
    ),
    _opt("parallelism.default", "int", 1, "Default parallelism of operators.", minimum=1),
    _opt(
        "pipeline.max-parallelism",
        "int",
        -1,
        "The number of key groups keyed state is split into: the most subtasks a keyed "
        "operator can have, and the unit keyed state is redistributed in on restore. -1: 128 "
        "(Flink derives it from the parallelism: 128 up to parallelism 85).",
        minimum=1,
        allow=(-1,),
    ),
    _opt(
        "execution.program-config.enabled",
        "bool",
        True,
        "A PyFlink program under ckptsim run may change the settings it starts from (-D, "
        "-p, config.yaml); false: a change fails its execute(), naming each one.",
        deprecated=("execution.allow-client-job-configurations",),
    ),
    _opt(
        "execution.program-config.wildcards",
        "list",
        (),
        "Keys a PyFlink program may change although execution.program-config.enabled is "
        "false, each with the keys below it: key1;key2.",
    ),
    _opt(
        "pipeline.global-job-parameters",
        "map",
        None,
        "Parameters every function can read (RuntimeContext.get_job_parameter): k1:v1,k2:v2.",
    ),
    _opt(
        "pipeline.auto-watermark-interval",
        "duration",
        200,
        "How often watermark generators are asked for a watermark (0: never; the end of a "
        "bounded input still sends the final watermark).",
    ),
    _opt(
        "pipeline.watermark-alignment.buffer-size",
        "int",
        3,
        "Watermark alignment (with_watermark_alignment): a source pauses when the watermark it "
        "had this many update intervals ago is above its group's minimum plus the allowed "
        "drift, which smooths out the round trip of the announcements (0: its latest "
        "watermark, as before Flink 2.3).",
        minimum=0,
    ),
    _opt(
        "pipeline.watermark-alignment.allow-unaligned-source-splits",
        "bool",
        False,
        "Watermark alignment of the splits within a source subtask, for split readers that "
        "cannot pause.",
        inert="a source subtask reads its splits as one reader, aligned as a whole",
    ),
    _opt(
        "execution.buffer-timeout.enabled",
        "bool",
        True,
        "Flush partly filled output buffers every execution.buffer-timeout.interval; if "
        "false, a buffer leaves its task only when it is full (or before an event).",
    ),
    _opt(
        "execution.buffer-timeout.interval",
        "duration",
        100,
        "How often a task flushes its partly filled output buffers (0: after every write).",
        deprecated=("execution.buffer-timeout",),
        hint="Use 0 to flush after every record, or execution.buffer-timeout.enabled: false "
        "to send only full buffers.",
    ),
    _opt(
        "execution.runtime-mode",
        "enum",
        "STREAMING",
        "STREAMING, or BATCH (bounded inputs: keyed operators see their input sorted by key "
        "and a reduce emits only its final value per key).",
        choices=("STREAMING", "BATCH", "AUTOMATIC"),
    ),
    # failure and recovery
    _opt(
        "restart-strategy.type",
        "restart",
        None,
        "How a failed job restarts: disable, fixed-delay, failure-rate, exponential-delay "
        "(none: exponential-delay when checkpointing is enabled, else disable).",
        deprecated=("restart-strategy",),
    ),
    _opt(
        "restart-strategy.fixed-delay.attempts",
        "int",
        1,
        "fixed-delay: restarts before the job fails.",
        minimum=0,
    ),
    _opt(
        "restart-strategy.fixed-delay.delay",
        "duration",
        1_000,
        "fixed-delay: delay before each restart.",
        minimum=0,
    ),
    _opt(
        "restart-strategy.failure-rate.max-failures-per-interval",
        "int",
        1,
        "failure-rate: restarts allowed within the interval.",
        minimum=1,
    ),
    _opt(
        "restart-strategy.failure-rate.failure-rate-interval",
        "duration",
        60_000,
        "failure-rate: the interval the failures are counted in.",
        minimum=1,
    ),
    _opt(
        "restart-strategy.failure-rate.delay",
        "duration",
        1_000,
        "failure-rate: delay before each restart.",
        minimum=0,
    ),
    _opt(
        "restart-strategy.exponential-delay.initial-backoff",
        "duration",
        1_000,
        "exponential-delay: the first delay.",
        minimum=0,
    ),
    _opt(
        "restart-strategy.exponential-delay.max-backoff",
        "duration",
        60_000,
        "exponential-delay: the longest delay.",
        minimum=0,
    ),
    _opt(
        "restart-strategy.exponential-delay.backoff-multiplier",
        "float",
        1.5,
        "exponential-delay: the delay grows by this factor per failure.",
        minimum=1,
    ),
    _opt(
        "restart-strategy.exponential-delay.reset-backoff-threshold",
        "duration",
        3_600_000,
        "exponential-delay: running this long without failure resets the delay.",
        minimum=1,
    ),
    _opt(
        "restart-strategy.exponential-delay.jitter-factor",
        "float",
        0.1,
        "exponential-delay: a random share of the delay added or taken off (seeded).",
        minimum=0,
    ),
    _opt(
        "restart-strategy.exponential-delay.attempts-before-reset-backoff",
        "int",
        2**31 - 1,
        "exponential-delay: restarts before the job fails (reset with the delay).",
        minimum=0,
    ),
    _opt(
        "execution.state-recovery.path",
        "path",
        None,
        "Start the job from this checkpoint or savepoint (`ckptsim run --from-savepoint`).",
        deprecated=("execution.savepoint.path",),
    ),
    _opt(
        "execution.state-recovery.ignore-unclaimed-state",
        "bool",
        False,
        "Start from a checkpoint even if it holds state of operators the job no longer has.",
        deprecated=("execution.savepoint.ignore-unclaimed-state",),
    ),
    # state backends: Flink's keys and defaults, accepted; ckptsim keeps its own keyed state
    # backend (the heap, snapshots as files), so none of them changes what a job does
    _opt(
        "state.backend.type",
        "enum",
        "HASHMAP",
        "State backend: hashmap, rocksdb or forst.",
        deprecated=("state.backend",),
        choices=("HASHMAP", "ROCKSDB", "FORST"),
        inert=_STATE_BACKEND,
    ),
    _opt(
        "execution.checkpointing.local-backup.enabled",
        "bool",
        False,
        "Keep a local copy of each snapshot for local recovery.",
        deprecated=("state.backend.local-recovery",),
        inert=_STATE_BACKEND,
    ),
    _opt(
        "execution.checkpointing.write-buffer-size",
        "int",
        4096,
        "Write buffer of checkpoint streams, in bytes.",
        deprecated=("state.storage.fs.write-buffer-size",),
        minimum=0,
        inert="state is written to files by ckptsim's own storage",
    ),
    _opt(
        "state.changelog.enabled",
        "bool",
        False,
        "Changelog state backend.",
        deprecated=("state.backend.changelog.enabled",),
        inert="snapshots are always full",
    ),
    _opt(
        _ROCKSDB + "memory.managed",
        "bool",
        True,
        "RocksDB: use the task's managed memory.",
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "memory.fixed-per-slot",
        "memory",
        None,
        "RocksDB: fixed memory per slot.",
        minimum=0,
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "memory.fixed-per-tm",
        "memory",
        None,
        "RocksDB: fixed memory per TaskManager.",
        minimum=0,
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "memory.write-buffer-ratio",
        "float",
        0.5,
        "RocksDB: share of its memory for write buffers.",
        minimum=0,
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "memory.high-prio-pool-ratio",
        "float",
        0.1,
        "RocksDB: share of its block cache for index and filter blocks.",
        minimum=0,
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "predefined-options",
        "enum",
        "DEFAULT",
        "RocksDB: predefined options profile.",
        choices=(
            "DEFAULT",
            "SPINNING_DISK_OPTIMIZED",
            "SPINNING_DISK_OPTIMIZED_HIGH_MEM",
            "FLASH_SSD_OPTIMIZED",
        ),
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "options-factory",
        "string",
        None,
        "RocksDB: options factory class.",
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "localdir",
        "string",
        None,
        "RocksDB: local directories of its files.",
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "timer-service.factory",
        "enum",
        "ROCKSDB",
        "RocksDB: where timers are kept (ROCKSDB or HEAP).",
        choices=("ROCKSDB", "HEAP"),
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "checkpoint.transfer.thread.num",
        "int",
        4,
        "RocksDB: threads transferring files while snapshotting and restoring.",
        minimum=1,
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "thread.num",
        "int",
        2,
        "RocksDB: background flush and compaction threads.",
        minimum=1,
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "writebuffer.size",
        "memory",
        64 << 20,
        "RocksDB: size of a write buffer (memtable).",
        minimum=1,
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "writebuffer.count",
        "int",
        2,
        "RocksDB: write buffers per column family.",
        minimum=1,
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "block.cache-size",
        "memory",
        8 << 20,
        "RocksDB: block cache size.",
        minimum=1,
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "block.blocksize",
        "memory",
        4 << 10,
        "RocksDB: data block size.",
        minimum=1,
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "compaction.style",
        "enum",
        "LEVEL",
        "RocksDB: compaction style.",
        choices=("LEVEL", "UNIVERSAL", "FIFO", "NONE"),
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "use-bloom-filter",
        "bool",
        False,
        "RocksDB: bloom filters on data blocks.",
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "bloom-filter.bits-per-key",
        "float",
        10.0,
        "RocksDB: bits per key of the bloom filter.",
        minimum=0,
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "files.open",
        "int",
        -1,
        "RocksDB: open files (-1: unlimited).",
        minimum=1,
        allow=(-1,),
        inert=_STATE_BACKEND,
    ),
    _opt(
        _ROCKSDB + "log.level",
        "enum",
        "INFO_LEVEL",
        "RocksDB: log level.",
        choices=(
            "DEBUG_LEVEL",
            "INFO_LEVEL",
            "WARN_LEVEL",
            "ERROR_LEVEL",
            "FATAL_LEVEL",
            "HEADER_LEVEL",
            "NUM_INFO_LOG_LEVELS",
        ),
        inert=_STATE_BACKEND,
    ),
    # ckptsim's own settings
    _opt(
        "ckptsim.buffer.records",
        "int",
        4096,
        "At most this many records per network buffer, and per batch a source reads; "
        "buffers are cut by size (taskmanager.memory.segment-size) before this cap.",
        minimum=1,
    ),
    _opt(
        "ckptsim.checkpointing.trigger-semantics",
        "enum",
        "CURRENT",
        "CURRENT (Flink 1.11+ request queue) or FLINK_1_7 (immediate decline).",
        choices=("CURRENT", "FLINK_1_7"),
    ),
    _opt(
        "ckptsim.checkpointing.alignment",
        "enum",
        "CURRENT",
        "CURRENT (network blocks channels, Flink 1.11+) or LEGACY_BUFFERED (Flink 1.10 consumer-side buffering).",
        choices=("CURRENT", "LEGACY_BUFFERED"),
    ),
    _opt(
        "ckptsim.seed",
        "int",
        0,
        "Seed of every random choice (initial checkpoint delay, simulation).",
        minimum=0,
    ),
    _opt(
        "ckptsim.runtime",
        "enum",
        "THREADED",
        "Where a job's actors run when execute() is given no runtime: threaded (a thread per "
        "task), processes (the JobManager here, subtasks in TaskManager processes of "
        "taskmanager.numberOfTaskSlots slots each) or simulation (seeded, virtual time).",
        choices=("THREADED", "PROCESSES", "SIMULATION"),
    ),
    _opt(
        "taskmanager.numberOfTaskSlots",
        "int",
        1,
        "Slots per TaskManager process on the processes runtime: slot i holds subtask i of "
        "every vertex (slot sharing), so a job of parallelism p runs in ceil(p / slots) "
        "TaskManagers.",
        minimum=1,
    ),
    _opt(
        "ckptsim.processes.pin-cpus",
        "bool",
        True,
        "On the processes runtime, bind each TaskManager to one CPU when a deployment's "
        "TaskManagers fill the CPUs evenly (a lone one is never bound); false leaves them to "
        "the operating system's scheduler.",
    ),
    _opt(
        "ckptsim.channel.threads",
        "bool",
        False,
        "Give every input channel actor its own thread (default: channels are call-through "
        "actors that run on the threads of the two tasks they connect).",
    ),
    _opt(
        "ckptsim.faults",
        "string",
        None,
        "Faults to inject, e.g. 'fail-task:task=map-2#0,at-record=500; "
        "drop-ack:task=reduce-3#1,checkpoint=2' (see actors/faults.py).",
    ),
    _opt(
        "ckptsim.simulation.message-cost-us",
        "int",
        10,
        "Simulation: virtual microseconds an actor is busy per message it handles.",
        minimum=0,
    ),
    _opt(
        "ckptsim.simulation.async-cost-us",
        "int",
        200,
        "Simulation: virtual microseconds a piece of asynchronous work takes (a snapshot's "
        "asynchronous part, the coordinator's storage work, loading a checkpoint).",
        minimum=0,
    ),
    _opt(
        "ckptsim.simulation.record-cost-us",
        "int",
        1,
        "Simulation: virtual microseconds a task is busy per record it reads or processes.",
        minimum=0,
    ),
    _opt(
        "ckptsim.gc.young-threshold",
        "int",
        200_000,
        "Python's generation-0 GC threshold while a job runs (records are many objects, and "
        "those in flight in buffer pools outlive a small young generation; 0 leaves Python's "
        "setting alone).",
        minimum=0,
    ),
)

_BY_KEY: dict[str, ConfigOption] = {o.key: o for o in OPTIONS}
_DEPRECATED: dict[str, ConfigOption] = {k: o for o in OPTIONS for k in o.deprecated_keys}


def parse_config_yaml(text: str, source: str = "config.yaml") -> dict[str, str]:
    """Flink 2.x's configuration file (``$FLINK_CONF_DIR/config.yaml``) as flat settings:
    ``key: value`` lines and nested maps (``metrics: {reporter: ...}`` by indentation), whose
    keys join with ``.``, as Flink flattens them; ``#`` comments, quoted values and flow lists
    (``[a, b]``, joined with ``;`` as Flink's list options take them). Other YAML (block
    lists, anchors, multi-line values) is refused with the line it is on."""
    settings: dict[str, str] = {}
    lines: dict[str, int] = {}  # the line each key was set on
    #: (indentation, key prefix) of the maps open at the current line
    stack: list[tuple[int, str]] = [(-1, "")]
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw).rstrip()
        if not line.strip() or line.strip() == "---":
            continue
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if "\t" in line[: len(line) - len(line.lstrip(" \t"))]:
            raise ConfigError(
                f"{source}, line {number}: {raw.strip()!r} is indented with a tab: YAML "
                "indents with spaces only (Flink refuses the file too); replace the tab by spaces"
            )
        if body.startswith(("- ", "&", "*", "|", ">")) or body == "-":
            raise ConfigError(
                f"{source}, line {number}: {raw.strip()!r}: ckptsim reads key: value lines "
                "and nested maps of Flink's config.yaml only"
            )
        key, sep, value = body.partition(":")
        if not sep or not key.strip():
            raise ConfigError(f"{source}, line {number}: {raw.strip()!r} is not key: value")
        while indent <= stack[-1][0]:
            stack.pop()
        value = value.strip()
        for part in (key.strip(), value):
            if part[:1] in ("'", '"') and (len(part) < 2 or part[-1] != part[0]):
                raise ConfigError(
                    f"{source}, line {number}: {raw.strip()!r}: the quote {part[0]} is not "
                    "closed on its line (Flink refuses the file too); close it"
                )
        full = f"{stack[-1][1]}{_unquote(key.strip())}"
        if not value:
            stack.append((indent, full + "."))  # a nested map follows
            continue
        if full in lines:  # YAML forbids a key twice in a map; either way one is a mistake
            raise ConfigError(
                f"{source}, line {number}: {full} is set again (first on line {lines[full]}); "
                "keep one"
            )
        if value.startswith("[") != value.endswith("]"):
            raise ConfigError(
                f"{source}, line {number}: {raw.strip()!r}: a list is written on one line as [a, b]"
            )
        lines[full] = number
        settings[full] = _yaml_scalar(value)
    return settings


def _strip_comment(line: str) -> str:
    quote: str | None = None
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index]
    return line


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _yaml_scalar(value: str) -> str:
    if value.startswith("[") and value.endswith("]"):
        items = [_unquote(item.strip()) for item in value[1:-1].split(",") if item.strip()]
        return ";".join(items)
    return _unquote(value)


def option(key: str) -> ConfigOption:
    return _BY_KEY[key]


def canonical_key(key: str) -> str:
    """The current name of a key (a deprecated spelling's), or the key itself if unknown."""
    opt = _BY_KEY.get(key) or _DEPRECATED.get(key)
    return key if opt is None else opt.key


def setting_text(key: str, value: Any) -> str:
    """A setting's value in Flink's syntax, as ``/jobmanager/config`` lists it: a duration as
    ``200 ms``, a size as ``32 kb``, ``true``, a map as ``k1:v1,k2:v2``, a list as ``a;b``."""
    opt = _BY_KEY.get(key) or _DEPRECATED.get(key)
    kind = None if opt is None else opt.kind
    if kind == "duration" and isinstance(value, int):
        return format_duration(value)
    if kind == "memory" and isinstance(value, int) and value >= 0:
        return format_memory(value)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, Mapping):
        return ",".join(f"{k}:{v}" for k, v in value.items())
    if isinstance(value, tuple):
        return ";".join(str(item) for item in value)
    return str(value)


def flink_string(key: str, value: Any) -> str:
    """A setting's value as Flink writes it in messages: as ``setting_text``, but a map as
    Java prints one (``{k: v}``)."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    return setting_text(key, value)


def is_known(key: str) -> bool:
    """A key ckptsim takes (its own name or a deprecated one)."""
    return key in _BY_KEY or key in _DEPRECATED


def key_meant(key: str, *, cutoff: float = 0.6) -> str | None:
    """The known key an unknown ``key`` most likely meant (another case, a typo), or None."""
    known = [*_BY_KEY, *_DEPRECATED]
    by_case = {k.lower(): k for k in known}  # keys are case-sensitive, as Flink's
    if key.strip().lower() in by_case:
        return by_case[key.strip().lower()]
    close = difflib.get_close_matches(key, known, n=1, cutoff=cutoff)
    return close[0] if close else None


class Configuration(Mapping[str, Any]):
    """Validated settings by current key (deprecated keys are accepted and mapped)."""

    def __init__(self, settings: Mapping[str, object] | None = None) -> None:
        self._values: dict[str, Any] = {}
        self._given: dict[str, str] = {}
        if settings:
            self.update(settings)

    def update(self, settings: Mapping[str, object]) -> None:
        """Set these; a key and its deprecated spelling given together are an error (which
        one meant what?), while a later call replaces what an earlier one set, under either
        spelling (as a later setter replaces an earlier one in Flink)."""
        given: dict[str, str] = {}
        for key in settings:
            opt = (_BY_KEY.get(key) or _DEPRECATED.get(key)) if isinstance(key, str) else None
            if opt is None:
                continue  # ``set`` says what is wrong with it
            earlier = given.setdefault(opt.key, key)
            if earlier != key:
                raise ConfigError(
                    f"Configuration keys '{earlier}' and '{key}' set the same option "
                    f"('{opt.key}'); keep one."
                )
        for key, raw in settings.items():
            self.set(key, raw)

    def set(self, key: str, raw: object) -> None:
        """Set one key (or its deprecated spelling), replacing what either spelling set."""
        if not isinstance(key, str):
            raise ConfigError(f"Configuration keys are strings, got {key!r}.")
        opt = _BY_KEY.get(key) or _DEPRECATED.get(key)
        if opt is None:
            meant = key_meant(key)
            hint = f" Did you mean '{meant}'?" if meant else ""
            raise ConfigError(
                f"Unknown configuration key '{key}'.{hint} "
                "Run 'ckptsim config' to list the supported keys."
            )
        self._values[opt.key] = opt.validate(key, raw)
        self._given[opt.key] = key

    def override(self, settings: Mapping[str, object]) -> None:
        """Set these on top of what is set, whatever spelling (current or deprecated key) the
        earlier value used (command-line ``-D`` over a script's own settings): ``update``."""
        self.update(settings)

    def __getitem__(self, key: str) -> Any:
        opt = _BY_KEY.get(key) or _DEPRECATED.get(key)
        if opt is None:
            raise KeyError(key)
        return self._values.get(opt.key, opt.default)

    def __iter__(self) -> Iterator[str]:
        return iter(_BY_KEY)

    def __len__(self) -> int:
        return len(_BY_KEY)

    def is_set(self, key: str) -> bool:
        opt = _BY_KEY.get(key) or _DEPRECATED.get(key)
        return opt is not None and opt.key in self._values

    def explicit(self) -> dict[str, Any]:
        return dict(self._values)

    def inert_settings(self) -> list[tuple[str, str]]:
        """The settings given that Flink has but ckptsim ignores: (key as given, why)."""
        return [
            (self._given[key], _BY_KEY[key].inert) for key in self._values if _BY_KEY[key].inert
        ]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointConfig:
    """The checkpointing settings of one job (Flink's ``CheckpointConfig``), durations in ms."""

    interval: int | None = None
    mode: CheckpointingMode = CheckpointingMode.EXACTLY_ONCE
    timeout: int = 600_000
    min_pause: int = 0
    max_concurrent: int = 1
    tolerable_failures: int = 0
    num_retained: int = 1
    unaligned: bool = False
    aligned_checkpoint_timeout: int = 0
    externalized_retention: ExternalizedCheckpointRetention = (
        ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
    )
    checkpoints_after_tasks_finish: bool = True
    checkpoint_dir: str | None = None
    savepoint_dir: str | None = None
    alignment_max_size: int = -1
    history_size: int = 10
    trigger_semantics: str = "current"
    legacy_alignment: bool = False
    #: execution.state-recovery.without-channel-state.checkpoint-id (-1: none)
    recover_without_channel_state: int = -1

    @property
    def is_checkpointing_enabled(self) -> bool:
        return self.interval is not None

    @property
    def exactly_once(self) -> bool:
        return self.mode is CheckpointingMode.EXACTLY_ONCE

    @classmethod
    def from_configuration(cls, conf: Configuration) -> CheckpointConfig:
        batch = conf["execution.runtime-mode"] == "BATCH"
        config = cls(
            # a BATCH job takes no checkpoints (Flink: checkpointing applies to STREAMING)
            interval=None if batch else conf[_CP + "interval"],
            mode=CheckpointingMode(conf[_CP + "mode"]),
            timeout=conf[_CP + "timeout"],
            min_pause=conf[_CP + "min-pause"],
            max_concurrent=conf[_CP + "max-concurrent-checkpoints"],
            tolerable_failures=conf[_CP + "tolerable-failed-checkpoints"],
            num_retained=conf[_CP + "num-retained"],
            unaligned=conf[_CP + "unaligned.enabled"],
            aligned_checkpoint_timeout=conf[_CP + "aligned-checkpoint-timeout"],
            externalized_retention=ExternalizedCheckpointRetention(
                conf[_CP + "externalized-checkpoint-retention"]
            ),
            checkpoints_after_tasks_finish=conf[_CP + "checkpoints-after-tasks-finish"],
            checkpoint_dir=conf[_CP + "dir"],
            savepoint_dir=conf[_CP + "savepoint-dir"],
            alignment_max_size=conf["task.checkpoint.alignment.max-size"],
            history_size=conf["web.checkpoints.history"],
            trigger_semantics="flink-1.7"
            if conf["ckptsim.checkpointing.trigger-semantics"] == "FLINK_1_7"
            else "current",
            legacy_alignment=conf["ckptsim.checkpointing.alignment"] == "LEGACY_BUFFERED",
            recover_without_channel_state=conf[
                "execution.state-recovery.without-channel-state.checkpoint-id"
            ],
        )
        config.check()
        return config

    @classmethod
    def from_dict(cls, settings: Mapping[str, object]) -> CheckpointConfig:
        return cls.from_configuration(Configuration(settings))

    def check(self) -> None:
        """Constraints between options (Flink rejects the same combinations)."""
        if self.unaligned and not self.exactly_once:
            raise ConfigError(
                "'execution.checkpointing.unaligned.enabled' = true requires "
                "'execution.checkpointing.mode' = EXACTLY_ONCE (unaligned checkpoints are "
                "exactly-once only); got AT_LEAST_ONCE."
            )
        if self.unaligned and self.max_concurrent > 1:
            raise ConfigError(
                "'execution.checkpointing.unaligned.enabled' = true requires "
                f"'execution.checkpointing.max-concurrent-checkpoints' = 1; got {self.max_concurrent}."
            )
        if self.unaligned and self.legacy_alignment:
            raise ConfigError(
                "'ckptsim.checkpointing.alignment' = LEGACY_BUFFERED (Flink 1.10) cannot be "
                "combined with unaligned checkpoints (Flink 1.11+)."
            )

    @property
    def gate_mode(self) -> GateMode:
        """How the tasks' input gates handle barriers (the conformance scenarios' ``@mode``)."""
        if not self.exactly_once:
            return GateMode.AT_LEAST_ONCE
        if self.legacy_alignment:
            return GateMode.LEGACY_BUFFERED
        return GateMode.ALIGNED_WITH_TIMEOUT if self.unaligned else GateMode.ALIGNED
