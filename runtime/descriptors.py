"""Operators as the user declared them: one frozen dataclass per kind of operator.

The DataStream API records a descriptor in each node of the stream graph; a task builds its
operator chain from the descriptors of its job vertex (``runtime.task.chain``), the JobMaster
finds its collect sinks by them, a restore finds the keyed operators by them. ``kind`` names
the operator in uids and messages (``map-2``); what an operator does is its type.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from runtime.functions import KeyedProcessFunction, ProcessFunction
from runtime.operators import OperatorContext, SourceReader
from runtime.state import MapStateDescriptor
from runtime.watermarks import WatermarkStrategy

UserFn = Callable[..., Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceDescriptor:
    kind: ClassVar[str] = "source"
    #: makes the reader of one subtask (its share of the source)
    reader: Callable[[OperatorContext], SourceReader]
    #: checks a restored position of subtask ``s`` of ``p`` against what the source can
    #: produce, raising ``ValueError`` naming the field (None: no more than generic checks)
    check_position: Callable[[Any, int, int], None] | None = None
    #: checks the final position of a subtask that finished (it had read all of its share),
    #: raising ``ValueError`` naming the field (None: only ``check_position``)
    check_final: Callable[[Any, int, int], None] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MapDescriptor:
    kind: ClassVar[str] = "map"
    fn: UserFn


@dataclass(frozen=True, slots=True, kw_only=True)
class MapBatchDescriptor:
    kind: ClassVar[str] = "map_batch"
    fn: UserFn


@dataclass(frozen=True, slots=True, kw_only=True)
class FilterDescriptor:
    kind: ClassVar[str] = "filter"
    fn: UserFn


@dataclass(frozen=True, slots=True, kw_only=True)
class FlatMapDescriptor:
    kind: ClassVar[str] = "flat_map"
    fn: UserFn


@dataclass(frozen=True, slots=True, kw_only=True)
class ReduceDescriptor:
    kind: ClassVar[str] = "reduce"
    key_selector: UserFn
    fn: UserFn


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessDescriptor:
    kind: ClassVar[str] = "process"
    key_selector: UserFn
    #: copied for each subtask (a function object may hold state of its own)
    function: KeyedProcessFunction | UserFn


@dataclass(frozen=True, slots=True, kw_only=True)
class NonKeyedProcessDescriptor:
    kind: ClassVar[str] = "process"
    function: ProcessFunction | UserFn


@dataclass(frozen=True, slots=True, kw_only=True)
class TimestampsDescriptor:
    """``assign_timestamps_and_watermarks``: event timestamps and watermarks from here on."""

    kind: ClassVar[str] = "timestamps"
    strategy: WatermarkStrategy


@dataclass(frozen=True, slots=True, kw_only=True)
class CoProcessDescriptor:
    """``connect``: a two-input operator (co-map, co-flat-map, co-process); keyed when both
    inputs are (``key_selectors``: one per input)."""

    kind: ClassVar[str] = "co-process"
    function: Any
    key_selectors: tuple[UserFn, UserFn] | None = None

    @property
    def key_selector(self) -> UserFn | None:
        return None if self.key_selectors is None else self.key_selectors[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class BroadcastProcessDescriptor:
    """``connect`` of a stream (input 0; keyed when ``key_selector`` is given) with a broadcast
    stream (input 1) that has broadcast state (``state_descriptors``, one map each): a
    ``BroadcastProcessFunction`` or ``KeyedBroadcastProcessFunction``."""

    kind: ClassVar[str] = "broadcast-process"
    function: Any
    state_descriptors: tuple[MapStateDescriptor, ...]
    key_selector: UserFn | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowDescriptor:
    """``window(...)``/``count_window(...)`` then ``reduce``/``aggregate``/``apply``/``process``:
    Flink's ``WindowOperator`` (``runtime.windows``)."""

    kind: ClassVar[str] = "window"
    key_selector: UserFn
    #: a ``runtime.windows.WindowAssigner`` and ``Trigger`` (copied for each subtask)
    assigner: Any
    trigger: Any
    allowed_lateness: int = 0
    #: how a window keeps its records: "list", "reduce" or "aggregate"
    contents: str = "list"
    #: the reduce function or ``AggregateFunction`` of "reduce"/"aggregate"
    incremental: Any = None
    #: the window function, and how it is called: "apply", "process" (None: the reduced or
    #: aggregated value is the output)
    function: Any = None
    function_kind: str | None = None
    #: ``side_output_late_data``: the side output late records go to (an ``OutputTag``'s name)
    late_data_tag: str | None = None


class SinkKind(enum.Enum):
    COLLECT = "collect"  # JobResult.output[name]
    PRINT = "print"
    FILE = "file"  # text or JSON lines, one part file per subtask (and checkpoint)
    CUSTOM = "custom"  # DataStream.sink_to(factory)

    @property
    def transactional(self) -> bool:
        """Takes part in checkpoints with two-phase commit when checkpointing is enabled
        (Flink's print sink does not)."""
        return self is not SinkKind.PRINT


@dataclass(frozen=True, slots=True, kw_only=True)
class SinkDescriptor:
    kind: ClassVar[str] = "sink"
    sink: SinkKind
    #: FILE: the directory and format ("text" or "json"), and the part files' name prefix and
    #: extension (None: the format's, ``txt`` or ``jsonl``)
    path: str | None = None
    format: str = "text"
    part_prefix: str = "part"
    part_suffix: str | None = None
    #: CUSTOM: ``factory(task=..., parallelism=..., transactional=..., attempt=...)``
    factory: UserFn | None = None
    #: PRINT: the sink identifier printed before each record (Flink's ``print(identifier)``)
    identifier: str | None = None
    #: PRINT: how a record is written (default ``str``; the PyFlink layer gives Java's
    #: ``toString`` of the record's declared type)
    formatter: UserFn | None = None


OperatorDescriptor = (
    SourceDescriptor
    | MapDescriptor
    | MapBatchDescriptor
    | FilterDescriptor
    | FlatMapDescriptor
    | ReduceDescriptor
    | ProcessDescriptor
    | NonKeyedProcessDescriptor
    | TimestampsDescriptor
    | CoProcessDescriptor
    | BroadcastProcessDescriptor
    | WindowDescriptor
    | SinkDescriptor
)

#: operators whose state is split by key group, so it can move between subtasks
KEYED = (ReduceDescriptor, ProcessDescriptor, WindowDescriptor)
