"""User functions, as Flink's DataStream API names them (PyFlink's spelling).

Every operator of the DataStream API takes either a plain callable or one of these function
objects. A function object is copied for each subtask (it may keep fields of its own), gets
``open(runtime_context)`` before its first record and ``close()`` at the end, as Flink's rich
functions do. Functions that emit several records (``flat_map``, ``process_element``,
``on_timer``, window functions) return or ``yield`` them; returning ``None`` emits nothing
where Flink's signature has a collector (process functions, ``on_timer``), and is an error for
``flat_map``.

The contexts handed to the functions (``RuntimeContext``, a process function's ``Context``, a
window's ``Context``) are implemented by the operators (``runtime.operators``); the classes
here say what they offer.

Side outputs are PyFlink's: a process function (of any kind, a window function too) emits a
record to the side output of an ``OutputTag`` by returning or yielding the pair ``(tag,
value)``; ``stream.get_side_output(tag)`` is the stream of those records. An operator whose
side outputs nobody reads emits such pairs as records, as PyFlink does.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from runtime.metrics import MetricGroup
    from runtime.state import (
        AggregatingState,
        AggregatingStateDescriptor,
        BroadcastState,
        ListState,
        ListStateDescriptor,
        MapState,
        MapStateDescriptor,
        ReadOnlyBroadcastState,
        ReducingState,
        ReducingStateDescriptor,
        StateDescriptor,
        ValueState,
        ValueStateDescriptor,
    )


IN = TypeVar("IN")
IN2 = TypeVar("IN2")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")
W = TypeVar("W")
W2 = TypeVar("W2")


class OutputTag:
    """A named side output (Flink's ``OutputTag``): ``yield tag, value`` in a process function
    emits ``value`` to it; ``get_side_output(tag)`` reads it. Tags are equal by name;
    ``type_info`` is the records' declared type (None: any Python object)."""

    __slots__ = ("tag_id", "type_info")

    def __init__(self, tag_id: str, type_info: Any = None) -> None:
        if not isinstance(tag_id, str) or not tag_id:
            raise ValueError("OutputTag tag_id cannot be None or empty string")
        self.tag_id = tag_id
        self.type_info = type_info

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputTag) and other.tag_id == self.tag_id

    def __hash__(self) -> int:
        return hash(("OutputTag", self.tag_id))

    def __repr__(self) -> str:
        return f"OutputTag({self.tag_id!r})"


class TimeDomain(enum.Enum):
    """Which clock fired a timer (Flink's ``TimeDomain``)."""

    EVENT_TIME = 0
    PROCESSING_TIME = 1


class TimerService:
    """Flink's ``TimerService``: the clocks, and timers of the current key (keyed operators
    only; a non-keyed operator's timer service refuses to register timers, as Flink's)."""

    def current_processing_time(self) -> int:
        raise NotImplementedError

    def current_watermark(self) -> int:
        raise NotImplementedError

    def register_processing_time_timer(self, timestamp: int) -> None:
        raise NotImplementedError

    def register_event_time_timer(self, timestamp: int) -> None:
        raise NotImplementedError

    def delete_processing_time_timer(self, timestamp: int) -> None:
        raise NotImplementedError

    def delete_event_time_timer(self, timestamp: int) -> None:
        raise NotImplementedError


class KeyedStateStore:
    """Where keyed state comes from: by descriptor, or (ckptsim's shorthand) by name."""

    def get_state(self, state_descriptor: ValueStateDescriptor | str) -> ValueState:
        raise NotImplementedError

    def get_list_state(self, state_descriptor: ListStateDescriptor | str) -> ListState:
        raise NotImplementedError

    def get_map_state(self, state_descriptor: MapStateDescriptor | str) -> MapState:
        raise NotImplementedError

    def get_reducing_state(self, state_descriptor: ReducingStateDescriptor) -> ReducingState:
        raise NotImplementedError

    def get_aggregating_state(
        self, state_descriptor: AggregatingStateDescriptor
    ) -> AggregatingState:
        raise NotImplementedError


class RuntimeContext(KeyedStateStore):
    """What ``open`` is given: where the function runs, and its keyed state (keyed operators).

    ckptsim's shorthand beside Flink's getters: ``subtask_index``, ``parallelism``, and
    ``get_current_key()`` on a keyed stream."""

    subtask_index: int
    parallelism: int

    def get_current_key(self) -> Any:
        raise NotImplementedError

    def get_task_name(self) -> str:
        raise NotImplementedError

    def get_number_of_parallel_subtasks(self) -> int:
        raise NotImplementedError

    def get_max_number_of_parallel_subtasks(self) -> int:
        raise NotImplementedError

    def get_index_of_this_subtask(self) -> int:
        raise NotImplementedError

    def get_attempt_number(self) -> int:
        raise NotImplementedError

    def get_task_name_with_subtasks(self) -> str:
        raise NotImplementedError

    def get_job_parameter(self, key: str, default_value: str) -> str:
        raise NotImplementedError

    def get_metrics_group(self) -> MetricGroup:
        """The operator's metric group (Flink's): counters, gauges, meters, distributions."""
        raise NotImplementedError


class Function:
    """Base of the function objects: ``open`` before the first record, ``close`` at the end."""

    def open(self, runtime_context: RuntimeContext) -> None:
        pass

    def close(self) -> None:
        pass


class MapFunction(Function):
    """Flink's ``MapFunction``: ``map(value)`` returns one record per record."""

    def map(self, value: Any) -> Any:
        raise NotImplementedError


class FlatMapFunction(Function):
    """Flink's ``FlatMapFunction``: ``flat_map(value)`` returns or yields any number of records
    (``None`` is an error: return an empty list to emit nothing)."""

    def flat_map(self, value: Any) -> Iterable[Any]:
        raise NotImplementedError


class FilterFunction(Function):
    """Flink's ``FilterFunction``: ``filter(value)`` keeps the records for which it is true."""

    def filter(self, value: Any) -> bool:
        raise NotImplementedError


class ReduceFunction(Function):
    """Flink's ``ReduceFunction``: ``reduce(value1, value2)`` combines two values into one
    (``KeyedStream.reduce``, reducing state, window reduce)."""

    def reduce(self, value1: Any, value2: Any) -> Any:
        raise NotImplementedError


class KeySelector(Function):
    """Flink's ``KeySelector``: ``get_key(value)`` is the record's key (``key_by``)."""

    def get_key(self, value: Any) -> Any:
        raise NotImplementedError


class AggregateFunction(Function):
    """Flink's ``AggregateFunction``: an accumulator per key (and window)."""

    def create_accumulator(self) -> Any:
        raise NotImplementedError

    def add(self, value: Any, accumulator: Any) -> Any:
        raise NotImplementedError

    def get_result(self, accumulator: Any) -> Any:
        raise NotImplementedError

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        raise NotImplementedError


class CoMapFunction(Function):
    """Flink's ``CoMapFunction`` over two connected streams: ``map1`` for the first input's
    records, ``map2`` for the second's."""

    def map1(self, value: Any) -> Any:
        raise NotImplementedError

    def map2(self, value: Any) -> Any:
        raise NotImplementedError


class CoFlatMapFunction(Function):
    """Flink's ``CoFlatMapFunction``: ``flat_map1`` / ``flat_map2`` return or yield any number
    of records per record of the first / second input."""

    def flat_map1(self, value: Any) -> Iterable[Any]:
        raise NotImplementedError

    def flat_map2(self, value: Any) -> Iterable[Any]:
        raise NotImplementedError


class ProcessFunction(Function):
    """A function over every record of a (non-keyed) stream."""

    class Context:
        def timer_service(self) -> TimerService:
            raise NotImplementedError

        def timestamp(self) -> int | None:
            """The record's timestamp, None when it has none."""
            raise NotImplementedError

    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Iterable[Any] | None:
        raise NotImplementedError


class KeyedProcessFunction(Function):
    """Flink's ``KeyedProcessFunction``: ``process_element`` per record with the record's key
    current, ``on_timer`` when a timer of the key fires.

    State comes from the runtime context given to ``open``:
    ``self.total = runtime_context.get_state(ValueStateDescriptor("total", ...))`` (or
    ckptsim's shorthand ``get_state("total")``), then ``self.total.value()`` /
    ``self.total.update(v)`` for the current key.
    """

    class Context(RuntimeContext):
        """The record's context; also the runtime context (state by name or descriptor)."""

        def timer_service(self) -> TimerService:
            raise NotImplementedError

        def timestamp(self) -> int | None:
            raise NotImplementedError

    class OnTimerContext(Context):
        def time_domain(self) -> TimeDomain:
            raise NotImplementedError

    def process_element(
        self, value: Any, ctx: KeyedProcessFunction.Context
    ) -> Iterable[Any] | None:
        raise NotImplementedError

    def on_timer(
        self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        """A timer of the current key fired (default: nothing)."""
        return None


class CoProcessFunction(Function):
    """Flink's ``CoProcessFunction`` over two connected (non-keyed) streams:
    ``process_element1`` / ``process_element2`` per record of each input; they return or yield
    what to emit."""

    class Context:
        def timer_service(self) -> TimerService:
            raise NotImplementedError

        def timestamp(self) -> int | None:
            raise NotImplementedError

    def process_element1(self, value: Any, ctx: CoProcessFunction.Context) -> Iterable[Any] | None:
        raise NotImplementedError

    def process_element2(self, value: Any, ctx: CoProcessFunction.Context) -> Iterable[Any] | None:
        raise NotImplementedError


class KeyedCoProcessFunction(Function):
    """Flink's ``KeyedCoProcessFunction`` over two connected keyed streams: as
    ``CoProcessFunction``, with the record's key current (keyed state from the runtime context
    given to ``open``, timers from ``ctx.timer_service()``) and ``on_timer`` when a timer of
    the key fires."""

    class Context:
        def get_current_key(self) -> Any:
            raise NotImplementedError

        def timer_service(self) -> TimerService:
            raise NotImplementedError

        def timestamp(self) -> int | None:
            raise NotImplementedError

    class OnTimerContext(Context):
        def time_domain(self) -> TimeDomain:
            raise NotImplementedError

    def process_element1(
        self, value: Any, ctx: KeyedCoProcessFunction.Context
    ) -> Iterable[Any] | None:
        raise NotImplementedError

    def process_element2(
        self, value: Any, ctx: KeyedCoProcessFunction.Context
    ) -> Iterable[Any] | None:
        raise NotImplementedError

    def on_timer(
        self, timestamp: int, ctx: KeyedCoProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        return None


class BaseBroadcastProcessFunction(Function):
    """What the broadcast process functions share: the contexts' clocks, and the broadcast
    state (``ctx.get_broadcast_state(MapStateDescriptor)``: read-only while processing an
    element of the other input, read-write while processing a broadcast element)."""

    class BaseContext:
        def timestamp(self) -> int | None:
            raise NotImplementedError

        def current_processing_time(self) -> int:
            raise NotImplementedError

        def current_watermark(self) -> int:
            raise NotImplementedError

    class Context(BaseContext):
        """The broadcast side's context: read-write broadcast state."""

        def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> BroadcastState:
            raise NotImplementedError

    class ReadOnlyContext(BaseContext):
        """The other input's context: read-only broadcast state."""

        def get_broadcast_state(
            self, state_descriptor: MapStateDescriptor
        ) -> ReadOnlyBroadcastState:
            raise NotImplementedError


class BroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[IN, IN2, OUT]):
    """``stream.connect(rules.broadcast(descriptor)).process(f)`` on a non-keyed stream:
    ``process_element`` for each record of the stream (read-only broadcast state),
    ``process_broadcast_element`` for each record of the broadcast stream (read-write), in
    every subtask."""

    class Context(BaseBroadcastProcessFunction.Context):
        pass

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext):
        pass

    def process_element(
        self, value: Any, ctx: BroadcastProcessFunction.ReadOnlyContext
    ) -> Iterable[Any] | None:
        raise NotImplementedError

    def process_broadcast_element(
        self, value: Any, ctx: BroadcastProcessFunction.Context
    ) -> Iterable[Any] | None:
        raise NotImplementedError


class KeyedBroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[KEY, IN, IN2, OUT]):
    """``keyed.connect(rules.broadcast(descriptor)).process(f)``: ``process_element`` with the
    record's key current (keyed state, timers, read-only broadcast state),
    ``process_broadcast_element`` with no key (read-write broadcast state; keyed state of every
    key through ``ctx.apply_to_keyed_state``, Java Flink's ``applyToKeyedState``, which PyFlink
    2.3 does not have), ``on_timer`` for the key's timers."""

    class Context(BaseBroadcastProcessFunction.Context):
        def apply_to_keyed_state(
            self, state_descriptor: StateDescriptor, function: Callable[[Any, Any], None]
        ) -> None:
            """``function(key, state)`` for every key with a value in the state
            ``state_descriptor`` names (on this subtask)."""
            raise NotImplementedError

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext):
        def timer_service(self) -> TimerService:
            raise NotImplementedError

        def get_current_key(self) -> Any:
            raise NotImplementedError

    class OnTimerContext(ReadOnlyContext):
        def time_domain(self) -> TimeDomain:
            raise NotImplementedError

    def process_element(
        self, value: Any, ctx: KeyedBroadcastProcessFunction.ReadOnlyContext
    ) -> Iterable[Any] | None:
        raise NotImplementedError

    def process_broadcast_element(
        self, value: Any, ctx: KeyedBroadcastProcessFunction.Context
    ) -> Iterable[Any] | None:
        raise NotImplementedError

    def on_timer(
        self, timestamp: int, ctx: KeyedBroadcastProcessFunction.OnTimerContext
    ) -> Iterable[Any] | None:
        """A timer of the current key fired (default: nothing)."""
        return None


class WindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """Called once per key and window that fires, with the window's records (or, after a
    ``reduce``/``aggregate``, its one aggregate)."""

    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any] | None:
        raise NotImplementedError


class AllWindowFunction(Function, Generic[IN, OUT, W]):
    """A window function over the whole stream (``window_all``): ``apply(window, inputs)`` per
    window that fires."""

    def apply(self, window: Any, inputs: Iterable[Any]) -> Iterable[Any] | None:
        raise NotImplementedError


class ProcessWindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """``ProcessWindowFunction[IN, OUT, KEY, W]`` as PyFlink spells it (the type arguments
    document, nothing checks them)."""

    class Context(Generic[W2]):
        def window(self) -> Any:
            raise NotImplementedError

        def current_processing_time(self) -> int:
            raise NotImplementedError

        def current_watermark(self) -> int:
            raise NotImplementedError

        def window_state(self) -> KeyedStateStore:
            raise NotImplementedError

        def global_state(self) -> KeyedStateStore:
            raise NotImplementedError

    def process(
        self, key: Any, context: ProcessWindowFunction.Context[Any], elements: Iterable[Any]
    ) -> Iterable[Any] | None:
        raise NotImplementedError

    def clear(self, context: ProcessWindowFunction.Context[Any]) -> None:
        """The window is purged (default: nothing)."""


class ProcessAllWindowFunction(Function, Generic[IN, OUT, W]):
    """A process window function over the whole stream (``window_all``):
    ``process(context, elements)`` per window that fires; ``context.window()`` is the window."""

    class Context(Generic[W2]):
        def window(self) -> Any:
            raise NotImplementedError

        def window_state(self) -> KeyedStateStore:
            raise NotImplementedError

        def global_state(self) -> KeyedStateStore:
            raise NotImplementedError

    def process(
        self, context: ProcessAllWindowFunction.Context[Any], elements: Iterable[Any]
    ) -> Iterable[Any] | None:
        raise NotImplementedError

    def clear(self, context: ProcessAllWindowFunction.Context[Any]) -> None:
        pass
