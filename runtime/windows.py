"""Windows: Flink's window assigners, triggers and ``WindowOperator`` (PyFlink's spelling).

A keyed stream is cut into windows by a ``WindowAssigner`` (tumbling, sliding and session
windows in event or processing time, global windows, count windows); a ``Trigger`` says when a
window's contents go to the window function. The ``WindowOperator`` keeps the contents of each
(key, window) in *namespaced* keyed state (the namespace is the window): a list of the records
(``apply``/``process``), or one reduced value or accumulator (``reduce``/``aggregate``). Triggers
register keyed timers with the window as namespace; the operator registers a cleanup timer at
``window.max_timestamp() + allowed_lateness`` (event time) or ``window.max_timestamp()``
(processing time), which clears the window. Session windows merge as in Flink's
``MergingWindowSet``: each in-flight window maps to the window its state is kept under, so a
merge moves no state but that of the windows merged away. Records a window emits carry the
timestamp ``window.max_timestamp()``. A record whose every window is late (its end plus the
allowed lateness passed by the watermark) is dropped, or, with ``side_output_late_data(tag)``,
goes to that side output with its own timestamp.

Window contents, trigger state, the merging-window sets and the timers are keyed state: they
are in every checkpoint and restored by key group. In state and timers a window is data
(``TimeWindow`` as ``(start, end)``, ``CountWindow`` as ``(id,)``, ``GlobalWindow`` as ``()``).

Count windows are PyFlink's: ``count_window(size)`` numbers each key's records and puts record
``n`` into ``CountWindow(n // size)``, which fires when it holds ``size`` records;
``count_window(size, slide)`` puts record ``n`` into every window ``i`` (starting at record
``i * slide``) whose ``size`` records include it. (Java Flink's sliding count window is a
global window with an evictor and fires every ``slide`` records from the first.)
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from runtime.functions import (
    AllWindowFunction,
    Function,
    KeyedStateStore,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    RuntimeContext,
    WindowFunction,
)
from runtime.operators import (
    KeyedOperator,
    OperatorContext,
    UserFn,
    _RuntimeContext,
    split_side_outputs,
)
from runtime.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
    State,
    StateDescriptor,
    ValueState,
    ValueStateDescriptor,
)
from runtime.timers import Timer
from runtime.watermarks import MAX_WATERMARK, MIN_WATERMARK

#: the state of a window's contents, and of the merging windows of a key (Flink's names)
WINDOW_STATE_NAME = "window-contents"
MERGING_SET_STATE_NAME = "merging-window-set"

Namespace = tuple[int, ...]


def _ms(value: Any, what: str, *, signed: bool = False) -> int:
    """Milliseconds from an int or a time object with ``to_milliseconds()`` (PyFlink's ``Time``
    and ``Duration``)."""
    to_ms = getattr(value, "to_milliseconds", None)
    ms = to_ms() if callable(to_ms) else value
    if isinstance(ms, bool) or not isinstance(ms, int) or (ms < 0 and not signed):
        kind = "a duration" if signed else "a duration >= 0"
        raise ValueError(f"{what} must be {kind} (ms, Time or Duration), got {value!r}")
    return ms


# --- windows --------------------------------------------------------------------------------------


class Window:
    """A bucket of records; all of them have arrived once time passes ``max_timestamp()``."""

    __slots__ = ()

    def max_timestamp(self) -> int:
        raise NotImplementedError

    def namespace(self) -> Namespace:
        """The window as state and timers keep it (JSON data)."""
        raise NotImplementedError


def _mod_inverse(x: int) -> int:
    # the multiplicative inverse PyFlink's TimeWindow hashes with (Newton's iteration)
    inverse = x * x * x
    for _ in range(3):
        inverse *= 2 - x * inverse
    return inverse


class TimeWindow(Window):
    """The interval ``[start, end)`` of time (ms). Equal when start and end are."""

    __slots__ = ("_hash", "_namespace", "end", "start")

    def __init__(self, start: int, end: int) -> None:
        self.start = start
        self.end = end
        self._hash: int | None = None
        self._namespace = (start, end)

    def max_timestamp(self) -> int:
        return self.end - 1

    def namespace(self) -> Namespace:
        return self._namespace

    def intersects(self, other: TimeWindow) -> bool:
        """True when the windows overlap or touch."""
        return self.start <= other.end and self.end >= other.start

    def cover(self, other: TimeWindow) -> TimeWindow:
        """The smallest window covering both."""
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """The start of the window of ``window_size`` (shifted by ``offset``) holding
        ``timestamp`` (Flink's ``TimeWindow.getWindowStartWithOffset``)."""
        return timestamp - (timestamp - offset) % window_size

    @staticmethod
    def merge_windows(
        windows: Iterable[TimeWindow], callback: MergingWindowAssigner.MergeCallback
    ) -> None:
        """Merges overlapping (or touching) windows: ``callback.merge(merged, result)`` for
        every group of more than one."""
        groups: list[tuple[TimeWindow, set[TimeWindow]]] = []
        for candidate in sorted(windows):
            if groups and groups[-1][0].intersects(candidate):
                cover, members = groups[-1]
                members.add(candidate)
                groups[-1] = (cover.cover(candidate), members)
            else:
                groups.append((candidate, {candidate}))
        for result, members in groups:
            if len(members) > 1:
                callback.merge(members, result)

    def __eq__(self, other: object) -> bool:
        return type(other) is TimeWindow and self.start == other.start and self.end == other.end

    def __hash__(self) -> int:
        # PyFlink's hash: sets of windows iterate in the order PyFlink's do
        if self._hash is None:
            self._hash = hash(self.start + _mod_inverse((self.end << 1) + 1))
        return self._hash

    def __lt__(self, other: TimeWindow) -> bool:
        return (self.start, self.end) < (other.start, other.end)

    def __le__(self, other: TimeWindow) -> bool:
        return (self.start, self.end) <= (other.start, other.end)

    def __repr__(self) -> str:
        return f"TimeWindow(start={self.start}, end={self.end})"


class CountWindow(Window):
    """The ``id``-th count window of a key."""

    __slots__ = ("id",)

    def __init__(self, id: int) -> None:
        self.id = id

    def max_timestamp(self) -> int:
        return MAX_WATERMARK

    def namespace(self) -> Namespace:
        return (self.id,)

    def __eq__(self, other: object) -> bool:
        return type(other) is CountWindow and self.id == other.id

    def __hash__(self) -> int:
        return hash(("count", self.id))

    def __repr__(self) -> str:
        return f"CountWindow(id={self.id})"


class GlobalWindow(Window):
    """The one window of ``GlobalWindows``: it never ends."""

    __slots__ = ()

    @staticmethod
    def get() -> GlobalWindow:
        return _GLOBAL

    def max_timestamp(self) -> int:
        return MAX_WATERMARK

    def namespace(self) -> Namespace:
        return ()

    def __eq__(self, other: object) -> bool:
        return type(other) is GlobalWindow

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "GlobalWindow"


_GLOBAL = GlobalWindow()


def window_of(namespace: Sequence[int]) -> Window:
    """The window a namespace of state or timers stands for."""
    if len(namespace) == 2:
        return TimeWindow(int(namespace[0]), int(namespace[1]))
    if len(namespace) == 1:
        return CountWindow(int(namespace[0]))
    if len(namespace) == 0:
        return _GLOBAL
    raise ValueError(f"not a window namespace: {namespace!r}")


def namespace_of(window: Any) -> Namespace:
    if not isinstance(window, Window):
        raise TypeError(
            f"a window assigner returned a {type(window).__name__}; windows are TimeWindow, "
            "CountWindow or GlobalWindow"
        )
    return window.namespace()


# --- triggers -------------------------------------------------------------------------------------


class TriggerResult(enum.Enum):
    """What a trigger decides for a window: (fire, purge)."""

    CONTINUE = (False, False)
    FIRE_AND_PURGE = (True, True)
    FIRE = (True, False)
    PURGE = (False, True)

    def is_fire(self) -> bool:
        return self is TriggerResult.FIRE or self is TriggerResult.FIRE_AND_PURGE

    def is_purge(self) -> bool:
        return self is TriggerResult.PURGE or self is TriggerResult.FIRE_AND_PURGE


class Trigger:
    """Decides when a window fires (Flink's ``Trigger``): on each element, on the window's
    timers, on a merge. A trigger keeps its state in ``ctx.get_partitioned_state(...)`` (per
    key and window), never in its own fields."""

    class TriggerContext:
        def get_current_processing_time(self) -> int:
            raise NotImplementedError

        def get_current_watermark(self) -> int:
            raise NotImplementedError

        def register_processing_time_timer(self, time: int) -> None:
            raise NotImplementedError

        def register_event_time_timer(self, time: int) -> None:
            raise NotImplementedError

        def delete_processing_time_timer(self, time: int) -> None:
            raise NotImplementedError

        def delete_event_time_timer(self, time: int) -> None:
            raise NotImplementedError

        def get_partitioned_state(self, state_descriptor: StateDescriptor) -> State:
            raise NotImplementedError

    class OnMergeContext(TriggerContext):
        def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
            raise NotImplementedError

    def on_element(
        self, element: Any, timestamp: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        raise NotImplementedError

    def on_processing_time(
        self, time: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        raise NotImplementedError

    def on_event_time(self, time: int, window: Any, ctx: Trigger.TriggerContext) -> TriggerResult:
        raise NotImplementedError

    def can_merge(self) -> bool:
        return False

    def on_merge(self, window: Any, ctx: Trigger.OnMergeContext) -> None:
        raise RuntimeError(f"{type(self).__name__} does not support merging windows")

    def clear(self, window: Any, ctx: Trigger.TriggerContext) -> None:
        """The window is gone: delete its timers and state."""


class EventTimeTrigger(Trigger):
    """Fires when the watermark passes the window's end (at once for a late element of a window
    still kept for its allowed lateness)."""

    def on_element(
        self, element: Any, timestamp: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Trigger.TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Trigger.OnMergeContext) -> None:
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Any, ctx: Trigger.TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())

    @staticmethod
    def create() -> EventTimeTrigger:
        return EventTimeTrigger()

    def __repr__(self) -> str:
        return "EventTimeTrigger()"


class ProcessingTimeTrigger(Trigger):
    """Fires when processing time passes the window's end."""

    def on_element(
        self, element: Any, timestamp: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.FIRE

    def on_event_time(self, time: int, window: Any, ctx: Trigger.TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Trigger.OnMergeContext) -> None:
        if window.max_timestamp() > ctx.get_current_processing_time():
            ctx.register_processing_time_timer(window.max_timestamp())

    def clear(self, window: Any, ctx: Trigger.TriggerContext) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp())

    @staticmethod
    def create() -> ProcessingTimeTrigger:
        return ProcessingTimeTrigger()

    def __repr__(self) -> str:
        return "ProcessingTimeTrigger()"


def _add(a: int, b: int) -> int:
    return a + b


class CountTrigger(Trigger):
    """Fires when the window holds ``window_size`` elements (counted in trigger state)."""

    def __init__(self, window_size: int) -> None:
        if isinstance(window_size, bool) or not isinstance(window_size, int) or window_size < 1:
            raise ValueError(f"CountTrigger needs a count >= 1, got {window_size!r}")
        self.window_size = window_size
        self.count = ReducingStateDescriptor("count", _add)

    @staticmethod
    def of(window_size: int) -> CountTrigger:
        return CountTrigger(window_size)

    def on_element(
        self, element: Any, timestamp: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        count = ctx.get_partitioned_state(self.count)
        assert isinstance(count, ReducingState)
        count.add(1)
        if count.get() >= self.window_size:
            count.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Trigger.TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Trigger.OnMergeContext) -> None:
        ctx.merge_partitioned_state(self.count)

    def clear(self, window: Any, ctx: Trigger.TriggerContext) -> None:
        ctx.get_partitioned_state(self.count).clear()

    def __repr__(self) -> str:
        return f"CountTrigger({self.window_size})"


class PurgingTrigger(Trigger):
    """Another trigger whose every FIRE purges the window too."""

    def __init__(self, nested_trigger: Trigger) -> None:
        self.nested_trigger = nested_trigger

    @staticmethod
    def of(nested_trigger: Trigger) -> PurgingTrigger:
        return PurgingTrigger(nested_trigger)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire() else result

    def on_element(
        self, element: Any, timestamp: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return self._purging(self.nested_trigger.on_element(element, timestamp, window, ctx))

    def on_processing_time(
        self, time: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return self._purging(self.nested_trigger.on_processing_time(time, window, ctx))

    def on_event_time(self, time: int, window: Any, ctx: Trigger.TriggerContext) -> TriggerResult:
        return self._purging(self.nested_trigger.on_event_time(time, window, ctx))

    def can_merge(self) -> bool:
        return self.nested_trigger.can_merge()

    def on_merge(self, window: Any, ctx: Trigger.OnMergeContext) -> None:
        self.nested_trigger.on_merge(window, ctx)

    def clear(self, window: Any, ctx: Trigger.TriggerContext) -> None:
        self.nested_trigger.clear(window, ctx)

    def __repr__(self) -> str:
        return f"PurgingTrigger({self.nested_trigger!r})"


class NeverTrigger(Trigger):
    """Never fires (the default of ``GlobalWindows``: give it a trigger of your own)."""

    def on_element(
        self, element: Any, timestamp: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Trigger.TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Trigger.OnMergeContext) -> None:
        pass

    def __repr__(self) -> str:
        return "NeverTrigger()"


class _ContinuousTrigger(Trigger):
    """Fires every ``interval`` within a window (and at its end: event time), the next firing
    time kept in trigger state."""

    event_time = True

    def __init__(self, interval: Any) -> None:
        self.interval = _ms(interval, f"the interval of {type(self).__name__}")
        if self.interval <= 0:
            raise ValueError(f"{type(self).__name__} needs an interval > 0")
        self.fire_time = ReducingStateDescriptor("fire-time", min)

    def _state(self, ctx: Trigger.TriggerContext) -> ReducingState:
        state = ctx.get_partitioned_state(self.fire_time)
        assert isinstance(state, ReducingState)
        return state

    def _register(self, ctx: Trigger.TriggerContext, time: int) -> None:
        if self.event_time:
            ctx.register_event_time_timer(time)
        else:
            ctx.register_processing_time_timer(time)

    def _next(self, time: int, window: Any, ctx: Trigger.TriggerContext) -> None:
        due = min(time + self.interval, window.max_timestamp())
        self._state(ctx).add(due)
        self._register(ctx, due)

    def _fired(self, time: int, window: Any, ctx: Trigger.TriggerContext) -> TriggerResult:
        state = self._state(ctx)
        if state.get() == time:
            state.clear()
            self._next(time, window, ctx)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Any, ctx: Trigger.OnMergeContext) -> None:
        ctx.merge_partitioned_state(self.fire_time)
        due = self._state(ctx).get()
        if due is not None:
            self._register(ctx, due)

    def clear(self, window: Any, ctx: Trigger.TriggerContext) -> None:
        state = self._state(ctx)
        due = state.get()
        if due is not None:
            if self.event_time:
                ctx.delete_event_time_timer(due)
            else:
                ctx.delete_processing_time_timer(due)
            state.clear()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.interval})"


class ContinuousEventTimeTrigger(_ContinuousTrigger):
    """Fires every ``interval`` of event time within a window, and at its end."""

    @staticmethod
    def of(interval: Any) -> ContinuousEventTimeTrigger:
        return ContinuousEventTimeTrigger(interval)

    def on_element(
        self, element: Any, timestamp: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        if self._state(ctx).get() is None:
            self._next(timestamp - timestamp % self.interval, window, ctx)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Trigger.TriggerContext) -> TriggerResult:
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        return self._fired(time, window, ctx)

    def on_processing_time(
        self, time: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE


class ContinuousProcessingTimeTrigger(_ContinuousTrigger):
    """Fires every ``interval`` of processing time within a window."""

    event_time = False

    @staticmethod
    def of(interval: Any) -> ContinuousProcessingTimeTrigger:
        return ContinuousProcessingTimeTrigger(interval)

    def on_element(
        self, element: Any, timestamp: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        if self._state(ctx).get() is None:
            now = ctx.get_current_processing_time()
            self._next(now - now % self.interval, window, ctx)
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: Any, ctx: Trigger.TriggerContext
    ) -> TriggerResult:
        return self._fired(time, window, ctx)

    def on_event_time(self, time: int, window: Any, ctx: Trigger.TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE


# --- assigners ------------------------------------------------------------------------------------


class WindowAssigner:
    """Puts each element into zero or more windows (Flink's ``WindowAssigner``)."""

    class WindowAssignerContext:
        def get_current_processing_time(self) -> int:
            raise NotImplementedError

        def get_runtime_context(self) -> RuntimeContext:
            raise NotImplementedError

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[Any]:
        raise NotImplementedError

    def get_default_trigger(self, env: Any = None) -> Trigger:
        raise NotImplementedError

    def is_event_time(self) -> bool:
        raise NotImplementedError


class MergingWindowAssigner(WindowAssigner):
    """An assigner whose windows merge (sessions)."""

    class MergeCallback:
        def merge(self, to_be_merged: Collection[Any], merge_result: Any) -> None:
            raise NotImplementedError

    def merge_windows(
        self, windows: Iterable[Any], callback: MergingWindowAssigner.MergeCallback
    ) -> None:
        raise NotImplementedError


def _no_timestamp(assigner: WindowAssigner) -> RuntimeError:
    return RuntimeError(
        f"{assigner!r} got a record without a timestamp (Flink: Long.MIN_VALUE, no timestamp "
        "marker): an event-time window needs records with timestamps. Did you forget to call "
        "'assign_timestamps_and_watermarks(...)'?"
    )


class _Tumbling(WindowAssigner):
    def __init__(self, size: int, offset: int) -> None:
        if size <= 0 or abs(offset) >= size:
            raise ValueError(
                f"{type(self).__name__} parameters must satisfy abs(offset) < size and "
                f"size > 0, got size {size}, offset {offset}"
            )
        self.size = size
        self.offset = offset

    def _window(self, time: int) -> list[Window]:
        start = TimeWindow.get_window_start_with_offset(time, self.offset, self.size)
        return [TimeWindow(start, start + self.size)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.size}, {self.offset})"


class TumblingEventTimeWindows(_Tumbling):
    """Windows of ``size`` by the records' timestamps, aligned to the epoch (plus ``offset``)."""

    @staticmethod
    def of(size: Any, offset: Any = 0) -> TumblingEventTimeWindows:
        return TumblingEventTimeWindows(
            _ms(size, "the window size"), _ms(offset, "the window offset", signed=True)
        )

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[Any]:
        if timestamp <= MIN_WATERMARK:
            raise _no_timestamp(self)
        return self._window(timestamp)

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


class TumblingProcessingTimeWindows(_Tumbling):
    """Windows of ``size`` by the processing time at which records arrive."""

    @staticmethod
    def of(size: Any, offset: Any = 0) -> TumblingProcessingTimeWindows:
        return TumblingProcessingTimeWindows(
            _ms(size, "the window size"), _ms(offset, "the window offset", signed=True)
        )

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[Any]:
        return self._window(context.get_current_processing_time())

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


class _Sliding(WindowAssigner):
    def __init__(self, size: int, slide: int, offset: int) -> None:
        if size <= 0 or slide <= 0 or abs(offset) >= slide:
            raise ValueError(
                f"{type(self).__name__} parameters must satisfy abs(offset) < slide and "
                f"size > 0, got size {size}, slide {slide}, offset {offset}"
            )
        self.size = size
        self.slide = slide
        self.offset = offset

    def _windows(self, time: int) -> list[Window]:
        last = TimeWindow.get_window_start_with_offset(time, self.offset, self.slide)
        return [
            TimeWindow(start, start + self.size)
            for start in range(last, time - self.size, -self.slide)
        ]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.size}, {self.slide}, {self.offset})"


class SlidingEventTimeWindows(_Sliding):
    """Windows of ``size`` every ``slide`` by the records' timestamps (a record is in
    ``size / slide`` of them)."""

    @staticmethod
    def of(size: Any, slide: Any, offset: Any = 0) -> SlidingEventTimeWindows:
        return SlidingEventTimeWindows(
            _ms(size, "the window size"),
            _ms(slide, "the window slide"),
            _ms(offset, "the window offset", signed=True),
        )

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[Any]:
        if timestamp <= MIN_WATERMARK:
            raise _no_timestamp(self)
        return self._windows(timestamp)

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


class SlidingProcessingTimeWindows(_Sliding):
    """Windows of ``size`` every ``slide`` by processing time."""

    @staticmethod
    def of(size: Any, slide: Any, offset: Any = 0) -> SlidingProcessingTimeWindows:
        return SlidingProcessingTimeWindows(
            _ms(size, "the window size"),
            _ms(slide, "the window slide"),
            _ms(offset, "the window offset", signed=True),
        )

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[Any]:
        return self._windows(context.get_current_processing_time())

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


class SessionWindowTimeGapExtractor:
    """The gap (ms) of the session an element starts (dynamic-gap sessions)."""

    def extract(self, element: Any) -> int:
        raise NotImplementedError


class _Sessions(MergingWindowAssigner):
    """Sessions: a window ``[t, t + gap)`` per element, merged with every window it overlaps
    or touches."""

    def __init__(self, session_gap: int | None = None, extractor: Any = None) -> None:
        gap = session_gap
        if extractor is None and (gap is None or gap <= 0):
            raise ValueError(f"{type(self).__name__} parameters must satisfy 0 < gap, got {gap}")
        self.gap = gap
        self.extractor = extractor
        if extractor is not None:
            extract = getattr(extractor, "extract", extractor)
            if not callable(extract):
                raise TypeError(
                    "with_dynamic_gap() needs a SessionWindowTimeGapExtractor or a function, got "
                    f"{type(extractor).__name__}"
                )
            self._extract: Callable[[Any], Any] = extract

    def _window(self, element: Any, time: int) -> list[Window]:
        gap = self.gap
        if self.extractor is not None:
            gap = _ms(self._extract(element), "a session gap")
            if gap <= 0:
                raise ValueError(f"Dynamic session time gap must satisfy 0 < gap, got {gap}")
        assert gap is not None
        return [TimeWindow(time, time + gap)]

    def merge_windows(
        self, windows: Iterable[Any], callback: MergingWindowAssigner.MergeCallback
    ) -> None:
        TimeWindow.merge_windows(windows, callback)

    def __repr__(self) -> str:
        gap = "dynamic" if self.extractor is not None else self.gap
        return f"{type(self).__name__}({gap})"


class EventTimeSessionWindows(_Sessions):
    """Sessions by the records' timestamps: a session ends after ``gap`` without records."""

    @staticmethod
    def with_gap(size: Any) -> EventTimeSessionWindows:
        return EventTimeSessionWindows(_ms(size, "the session gap"))

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> DynamicEventTimeSessionWindows:
        """``extractor``: a ``SessionWindowTimeGapExtractor`` or a function element -> gap."""
        return DynamicEventTimeSessionWindows(extractor)

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[Any]:
        if timestamp <= MIN_WATERMARK:
            raise _no_timestamp(self)
        return self._window(element, timestamp)

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


class DynamicEventTimeSessionWindows(EventTimeSessionWindows):
    """Event-time sessions whose gap each element gives."""

    def __init__(self, session_window_time_gap_extractor: Any) -> None:
        super().__init__(None, session_window_time_gap_extractor)

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> DynamicEventTimeSessionWindows:
        return DynamicEventTimeSessionWindows(extractor)


class ProcessingTimeSessionWindows(_Sessions):
    """Sessions by processing time: a session ends after ``gap`` without records."""

    @staticmethod
    def with_gap(size: Any) -> ProcessingTimeSessionWindows:
        return ProcessingTimeSessionWindows(_ms(size, "the session gap"))

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> DynamicProcessingTimeSessionWindows:
        return DynamicProcessingTimeSessionWindows(extractor)

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[Any]:
        return self._window(element, context.get_current_processing_time())

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False


class DynamicProcessingTimeSessionWindows(ProcessingTimeSessionWindows):
    """Processing-time sessions whose gap each element gives."""

    def __init__(self, session_window_time_gap_extractor: Any) -> None:
        super().__init__(None, session_window_time_gap_extractor)

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> DynamicProcessingTimeSessionWindows:
        return DynamicProcessingTimeSessionWindows(extractor)


class GlobalWindows(WindowAssigner):
    """Every element into the one ``GlobalWindow`` (fires only with a trigger of your own)."""

    @staticmethod
    def create() -> GlobalWindows:
        return GlobalWindows()

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[Any]:
        return [_GLOBAL]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return NeverTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "GlobalWindows()"


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be a whole number >= 1, got {value!r}")
    return value


class CountTumblingWindowAssigner(WindowAssigner):
    """PyFlink's tumbling count windows: a key's ``n``-th record (from 0) goes into
    ``CountWindow(n // window_size)``. The default trigger fires and purges a window when it
    holds ``window_size`` records."""

    def __init__(self, window_size: int) -> None:
        self.window_size = _count(window_size, "the count window size")
        self.counter = ValueStateDescriptor("tumble-count-assigner")

    @staticmethod
    def of(window_size: int) -> CountTumblingWindowAssigner:
        return CountTumblingWindowAssigner(window_size)

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[Any]:
        counter = context.get_runtime_context().get_state(self.counter)
        seen = counter.value() or 0
        counter.update(seen + 1)
        return [CountWindow(seen // self.window_size)]

    def get_default_trigger(self, env: Any = None) -> Trigger:
        # PyFlink's CountTrigger leaves a fired window's records in state for ever; purging
        # them changes no output (the window gets no more records)
        return PurgingTrigger(CountTrigger(self.window_size))

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountTumblingWindowAssigner({self.window_size})"


class CountSlidingWindowAssigner(WindowAssigner):
    """PyFlink's sliding count windows: window ``i`` holds a key's records ``i * slide`` to
    ``i * slide + size - 1`` and fires (and is purged) when it has them all."""

    def __init__(self, window_size: int, window_slide: int) -> None:
        self.window_size = _count(window_size, "the count window size")
        self.window_slide = _count(window_slide, "the count window slide")
        self.counter = ValueStateDescriptor("slide-count-assigner")

    @staticmethod
    def of(window_size: int, window_slide: int) -> CountSlidingWindowAssigner:
        return CountSlidingWindowAssigner(window_size, window_slide)

    def assign_windows(
        self, element: Any, timestamp: int, context: WindowAssigner.WindowAssignerContext
    ) -> Collection[Any]:
        counter = context.get_runtime_context().get_state(self.counter)
        seen = counter.value() or 0
        counter.update(seen + 1)
        windows: list[Window] = []
        index = seen // self.window_slide
        while index >= 0 and index * self.window_slide + self.window_size > seen:
            windows.append(CountWindow(index))
            index -= 1
        return windows

    def get_default_trigger(self, env: Any = None) -> Trigger:
        return PurgingTrigger(CountTrigger(self.window_size))

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountSlidingWindowAssigner({self.window_size}, {self.window_slide})"


# --- the merging windows of a key -----------------------------------------------------------------

MergeFunction = Callable[[Window, Collection[Window], Window, list[Window]], None]


class _Collect(MergingWindowAssigner.MergeCallback):
    def __init__(self) -> None:
        self.results: dict[Any, Any] = {}

    def merge(self, to_be_merged: Collection[Any], merge_result: Any) -> None:
        self.results[merge_result] = to_be_merged


class MergingWindowSet:
    """The in-flight windows of one key of a merging assigner, each mapped to the window its
    state is kept under (Flink's ``MergingWindowSet``): when windows merge, the result keeps
    the state window of one of them and the others' state is merged into it.

    Read from the key's state when made; ``persist`` writes it back if it changed. ``cache``
    (per key: the stored value and the windows read from it) spares reading the windows again
    while the key's state still holds the very value they were read from."""

    def __init__(
        self,
        assigner: MergingWindowAssigner,
        state: ValueState,
        cache: dict[Any, tuple[Any, dict[Window, Window]]] | None = None,
        key: Any = None,
    ) -> None:
        self.assigner = assigner
        self.state = state
        self._cache = cache
        self._key = key
        stored = state.value()
        known = cache.get(key) if cache is not None and stored is not None else None
        if known is not None and known[0] is stored:
            self.mapping: dict[Window, Window] = dict(known[1])
        else:
            self.mapping = {window_of(w): window_of(s) for w, s in stored or ()}
            if cache is not None and stored is not None:
                cache[key] = (stored, dict(self.mapping))
        self._initial = dict(self.mapping)

    def persist(self) -> None:
        if self.mapping != self._initial:
            pairs = [(w.namespace(), s.namespace()) for w, s in self.mapping.items()] or None
            self.state.update(pairs)
            self._initial = dict(self.mapping)
            if self._cache is not None:
                if pairs is None:
                    self._cache.pop(self._key, None)
                else:
                    self._cache[self._key] = (pairs, dict(self.mapping))

    def get_state_window(self, window: Window) -> Window | None:
        return self.mapping.get(window)

    def retire_window(self, window: Window) -> None:
        if self.mapping.pop(window, None) is None:
            raise RuntimeError(f"window {window!r} is not in the in-flight window set")

    def add_window(self, new_window: Window, merge: MergeFunction) -> Window:
        """Adds ``new_window``, merging it (eagerly) with the windows it overlaps: calls
        ``merge(result, merged windows, state window of the result, state windows merged
        away)`` and returns the window ``new_window`` ended up in."""
        collect = _Collect()
        self.assigner.merge_windows([*self.mapping, new_window], collect)
        result_window = new_window
        merged_new_window = False
        for merge_result, merged in collect.results.items():
            if new_window in merged:
                merged_new_window = True
                merged.remove(new_window)
                result_window = merge_result
            kept = self.mapping[next(iter(merged))]
            merged_state_windows = [
                self.mapping.pop(window) for window in merged if window in self.mapping
            ]
            self.mapping[merge_result] = kept
            merged_state_windows.remove(kept)
            if merge_result not in merged or len(merged) != 1:
                merge(merge_result, merged, kept, merged_state_windows)
        if not collect.results or (result_window == new_window and not merged_new_window):
            self.mapping[result_window] = result_window
        return result_window

    def __repr__(self) -> str:
        return f"MergingWindowSet({self.mapping!r})"


# --- the operator -----------------------------------------------------------------------------------


class _TriggerContext(Trigger.OnMergeContext):
    """What a trigger sees: the clocks, timers and state of the current key and ``window``."""

    def __init__(self, operator: WindowOperator) -> None:
        self.operator = operator
        self.window: Window = _GLOBAL
        self.merged_windows: Collection[Window] = ()
        #: the last timer registered while processing the current element or timer (none is
        #: polled meanwhile): registering it again is a no-op, skipped (event time?, key,
        #: namespace, timestamp)
        self.last_registered: tuple[bool, Any, Namespace, int] | None = None

    def set_namespace(self) -> Namespace:
        ns = self.window.namespace()
        self.operator.backend.current_namespace = ns
        return ns

    def get_current_processing_time(self) -> int:
        return self.operator.processing_time()

    def get_current_watermark(self) -> int:
        return self.operator.current_watermark

    def register_processing_time_timer(self, time: int) -> None:
        self._register(False, time)

    def register_event_time_timer(self, time: int) -> None:
        self._register(True, time)

    def _register(self, event_time: bool, time: int) -> None:
        op = self.operator
        if op.quiesced:  # BATCH: no new timers while a key's timers fire at its end
            return
        timer = (event_time, op.backend.current_key, self.window.namespace(), time)
        if timer == self.last_registered:
            return  # registered just now (a trigger's timer, then the same cleanup timer)
        timers = op.timers()
        (timers.event_time if event_time else timers.processing_time).add(*timer[1:])
        self.last_registered = timer

    def delete_processing_time_timer(self, time: int) -> None:
        op = self.operator
        self.last_registered = None
        op.timers().processing_time.delete(op.backend.current_key, self.window.namespace(), time)

    def delete_event_time_timer(self, time: int) -> None:
        op = self.operator
        self.last_registered = None
        op.timers().event_time.delete(op.backend.current_key, self.window.namespace(), time)

    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> State:
        self.set_namespace()
        return self.operator.backend.state(state_descriptor, namespaced=True)

    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
        if self.merged_windows:
            self.operator.merge_namespaces(
                state_descriptor,
                self.window.namespace(),
                [w.namespace() for w in self.merged_windows],
            )


class _PerWindowState(KeyedStateStore):
    """``context.window_state()``: keyed state of the current key and window."""

    def __init__(self, operator: WindowOperator, merging: bool) -> None:
        self.operator = operator
        self.merging = merging
        self.window: Window = _GLOBAL

    def _state(self, descriptor: Any) -> Any:
        if self.merging:
            raise RuntimeError("Per-window state is not allowed when using merging windows.")
        if isinstance(descriptor, str):
            descriptor = ValueStateDescriptor(descriptor)
        backend = self.operator.backend
        backend.current_namespace = self.window.namespace()
        return backend.state(descriptor, namespaced=True)

    def get_state(self, state_descriptor: Any) -> Any:
        return self._state(state_descriptor)

    def get_list_state(self, state_descriptor: Any) -> Any:
        if isinstance(state_descriptor, str):
            state_descriptor = ListStateDescriptor(state_descriptor)
        return self._state(state_descriptor)

    def get_map_state(self, state_descriptor: Any) -> Any:
        return self._state(state_descriptor)

    def get_reducing_state(self, state_descriptor: Any) -> Any:
        return self._state(state_descriptor)

    def get_aggregating_state(self, state_descriptor: Any) -> Any:
        return self._state(state_descriptor)


class _WindowContext(ProcessWindowFunction.Context[Any]):
    """What a ``ProcessWindowFunction`` sees: its window, the clocks, per-window and global
    state."""

    def __init__(self, operator: WindowOperator, global_state: KeyedStateStore) -> None:
        self.operator = operator
        self.current_window: Window = _GLOBAL
        self._window_state = _PerWindowState(
            operator, isinstance(operator.assigner, MergingWindowAssigner)
        )
        self._global_state = global_state

    def window(self) -> Any:
        return self.current_window

    def current_processing_time(self) -> int:
        return self.operator.processing_time()

    def current_watermark(self) -> int:
        return self.operator.current_watermark

    def window_state(self) -> KeyedStateStore:
        self._window_state.window = self.current_window
        return self._window_state

    def global_state(self) -> KeyedStateStore:
        return self._global_state


class _AssignerContext(WindowAssigner.WindowAssignerContext):
    def __init__(self, operator: WindowOperator, runtime_context: RuntimeContext) -> None:
        self.operator = operator
        self.runtime_context = runtime_context

    def get_current_processing_time(self) -> int:
        return self.operator.processing_time()

    def get_runtime_context(self) -> RuntimeContext:
        return self.runtime_context


def _is_function_object(function: Any) -> bool:
    """A user function object (``ReduceFunction``, ``WindowFunction``...), not a plain
    callable."""
    return isinstance(function, Function) or (function is not None and not callable(function))


def _open(function: Any, runtime_context: RuntimeContext) -> Any:
    """A function object copied for this subtask and opened; a plain callable as it is."""
    if not _is_function_object(function):
        return function
    mine = copy.deepcopy(function)
    opener = getattr(mine, "open", None)
    if callable(opener):
        opener(runtime_context)
    return mine


class AllWindows(WindowFunction[Any, Any, Any, Any]):
    """An ``AllWindowFunction`` (``apply(window, inputs)``, or such a function) as the window
    function of a stream keyed by one key (``window_all``)."""

    def __init__(self, function: Any) -> None:
        self.function = function

    def open(self, runtime_context: RuntimeContext) -> None:
        if _is_function_object(self.function) and callable(getattr(self.function, "open", None)):
            self.function.open(runtime_context)

    def close(self) -> None:
        if _is_function_object(self.function) and callable(getattr(self.function, "close", None)):
            self.function.close()

    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any] | None:
        if _is_function_object(self.function):
            produced: Iterable[Any] | None = self.function.apply(window, inputs)
        else:
            produced = self.function(window, inputs)
        return produced


class ProcessAllWindows(ProcessWindowFunction[Any, Any, Any, Any]):
    """A ``ProcessAllWindowFunction`` (``process(context, elements)``, or such a function) as
    the process window function of a stream keyed by one key (``window_all``)."""

    def __init__(self, function: Any) -> None:
        self.function = function

    def open(self, runtime_context: RuntimeContext) -> None:
        if _is_function_object(self.function) and callable(getattr(self.function, "open", None)):
            self.function.open(runtime_context)

    def close(self) -> None:
        if _is_function_object(self.function) and callable(getattr(self.function, "close", None)):
            self.function.close()

    def process(
        self, key: Any, context: ProcessWindowFunction.Context[Any], elements: Iterable[Any]
    ) -> Iterable[Any] | None:
        if _is_function_object(self.function):
            produced: Iterable[Any] | None = self.function.process(context, elements)
        else:
            produced = self.function(context, elements)
        return produced

    def clear(self, context: ProcessWindowFunction.Context[Any]) -> None:
        clear = getattr(self.function, "clear", None)
        if _is_function_object(self.function) and callable(clear):
            clear(context)


def all_window_function(function: Any, default: str) -> Any:
    """The window function of ``window_all``: an ``AllWindowFunction`` or a
    ``ProcessAllWindowFunction`` (or a plain function, applied or processed as ``default``
    says) adapted to one key."""
    if function is None or isinstance(function, AllWindows | ProcessAllWindows):
        return function
    if isinstance(function, ProcessAllWindowFunction):
        return ProcessAllWindows(function)
    if isinstance(function, AllWindowFunction):
        return AllWindows(function)
    if callable(function):
        return ProcessAllWindows(function) if default == "process" else AllWindows(function)
    if callable(getattr(function, "process", None)):
        return ProcessAllWindows(function)
    if callable(getattr(function, "apply", None)):
        return AllWindows(function)
    raise TypeError(
        "a window function of window_all() must be an AllWindowFunction, a "
        f"ProcessAllWindowFunction or a function, got {type(function).__name__}"
    )


class WindowOperator(KeyedOperator):
    """Flink's ``WindowOperator`` over a keyed stream.

    ``contents`` is how a window keeps its records: ``"list"`` (all of them, for ``apply`` and
    ``process``), ``"reduce"`` (one value, ``incremental`` the reduce function) or
    ``"aggregate"`` (an accumulator of the ``AggregateFunction`` ``incremental``).
    ``function_kind`` is how ``function`` is called when a window fires: ``"apply"``
    (``apply(key, window, contents)`` or a plain ``fn(key, window, contents)``), ``"process"``
    (``process(key, context, contents)``), or None: the reduced or aggregated value is the
    output.
    """

    assigns_timestamps = True  # its output has the windows' timestamps

    def __init__(
        self,
        uid: str,
        name: str,
        key_selector: UserFn,
        *,
        assigner: WindowAssigner,
        trigger: Trigger,
        allowed_lateness: int = 0,
        contents: str = "list",
        incremental: Any = None,
        function: Any = None,
        function_kind: str | None = None,
        late_data_tag: str | None = None,
    ) -> None:
        super().__init__(uid, name, key_selector)
        if contents not in ("list", "reduce", "aggregate"):
            raise ValueError(f"window contents must be list, reduce or aggregate, not {contents}")
        if function_kind not in (None, "apply", "process"):
            raise ValueError(f"a window function is applied or processed, not {function_kind}")
        if contents == "list" and function_kind is None:
            raise ValueError("a window that keeps its records needs a window function")
        self.declared_assigner = assigner
        self.declared_trigger = trigger
        self.assigner = assigner
        self.trigger = trigger
        self.allowed_lateness = allowed_lateness
        self.contents = contents
        self.declared_incremental = incremental
        self.declared_function = function
        self.function_kind = function_kind
        self.merging = isinstance(assigner, MergingWindowAssigner)
        self.event_time = assigner.is_event_time()
        #: records dropped because every window of theirs was late (Flink's metric); with a
        #: ``late_data_tag`` (``side_output_late_data``) they go to that side output instead
        self.num_late_records_dropped = 0
        self.late_data_tag = late_data_tag
        self.function: Any = None
        self.incremental: Any = None

    # --- lifecycle ---------------------------------------------------------------------------

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        runtime_context = _RuntimeContext(ctx, self.backend)
        # each subtask its own copies (an assigner or trigger may keep fields of its own)
        self.assigner = copy.deepcopy(self.declared_assigner)
        self.trigger = copy.deepcopy(self.declared_trigger)
        self.incremental = _open(self.declared_incremental, runtime_context)
        self.function = _open(self.declared_function, runtime_context)
        descriptor: StateDescriptor
        if self.contents == "reduce":
            descriptor = ReducingStateDescriptor(WINDOW_STATE_NAME, self.incremental)
        elif self.contents == "aggregate":
            descriptor = AggregatingStateDescriptor(WINDOW_STATE_NAME, self.incremental)
        else:
            descriptor = ListStateDescriptor(WINDOW_STATE_NAME)
        self.contents_descriptor = descriptor
        self.window_state: Any = self.backend.state(descriptor, namespaced=True)
        self._merging_cache: dict[Any, tuple[Any, dict[Window, Window]]] = {}
        self.merging_state: ValueState | None = (
            self.backend.state(ValueStateDescriptor(MERGING_SET_STATE_NAME))
            if self.merging
            else None
        )
        self.trigger_context = _TriggerContext(self)
        self.process_context = _WindowContext(self, runtime_context)
        self.assigner_context = _AssignerContext(self, runtime_context)
        self.timers()

    def close_function(self) -> None:
        for function in (self.incremental, self.function):
            closer = getattr(function, "close", None)
            if _is_function_object(function) and callable(closer):
                closer()

    def processing_time(self) -> int:
        ctx = self.ctx
        return ctx.time.processing if ctx is not None else 0

    # --- records -----------------------------------------------------------------------------

    def process_keyed_batch(self, records: Sequence[Any], keys: Sequence[Any]) -> Sequence[Any]:
        out, _ = self.process_keyed_timestamped(records, keys, [None] * len(records))
        return out

    def process_keyed_timestamped(
        self, records: Sequence[Any], keys: Sequence[Any], timestamps: Sequence[int | None]
    ) -> tuple[Sequence[Any], Sequence[int | None]]:
        backend = self.backend
        backend.now = self.processing_time()
        out: list[Any] = []
        out_ts: list[int | None] = []
        for key, record, ts in zip(keys, records, timestamps, strict=True):
            backend.current_key = key
            self._process_element(record, MIN_WATERMARK if ts is None else ts, out, out_ts)
        return out, out_ts

    def _process_element(
        self, value: Any, timestamp: int, out: list[Any], out_ts: list[int | None]
    ) -> None:
        windows = self.assigner.assign_windows(value, timestamp, self.assigner_context)
        self.trigger_context.last_registered = None
        skipped = True
        if self.merging:
            windows_of_key = self._merging_window_set()
            for window in windows:
                actual = windows_of_key.add_window(window, self._merge)
                if self._is_window_late(actual):
                    windows_of_key.retire_window(actual)
                    continue
                skipped = False
                state_window = windows_of_key.get_state_window(actual)
                if state_window is None:
                    raise RuntimeError(f"window {actual!r} is not in the in-flight window set")
                self._add(state_window, value)
                result = self._on_element(value, timestamp, actual)
                if result.is_fire():
                    contents = self._get(state_window)
                    if contents is None:
                        continue
                    self._emit(actual, contents, out, out_ts)
                if result.is_purge():
                    self._clear_contents(state_window)
                self._register_cleanup_timer(actual)
            windows_of_key.persist()
        else:
            for window in windows:
                namespace_of(window)  # a window ckptsim can keep state and timers for
                if self._is_window_late(window):
                    continue
                skipped = False
                self._add(window, value)
                result = self._on_element(value, timestamp, window)
                if result.is_fire():
                    contents = self._get(window)
                    if contents is None:
                        continue
                    self._emit(window, contents, out, out_ts)
                if result.is_purge():
                    self._clear_contents(window)
                self._register_cleanup_timer(window)
        if skipped and self._is_element_late(timestamp):
            side, tag = self.side, self.late_data_tag
            if side is not None and tag is not None and tag in side.tags:
                side.add(tag, value, timestamp)
            else:
                self.num_late_records_dropped += 1

    # --- timers ------------------------------------------------------------------------------

    def on_event_time(self, timer: Timer, out: list[Any], out_ts: list[int | None]) -> None:
        self._on_timer(timer, out, out_ts, event_time=True)

    def on_processing_timer(self, timer: Timer, out: list[Any], out_ts: list[int | None]) -> None:
        self._on_timer(timer, out, out_ts, event_time=False)

    def _on_timer(
        self, timer: Timer, out: list[Any], out_ts: list[int | None], *, event_time: bool
    ) -> None:
        window = window_of(timer.namespace)
        self.trigger_context.last_registered = None  # timers were polled: none is known
        windows_of_key: MergingWindowSet | None = None
        state_window: Window | None = window
        if self.merging:
            windows_of_key = self._merging_window_set()
            state_window = windows_of_key.get_state_window(window)
            if state_window is None:
                return  # the window is gone (merged or cleared): nothing to do
        assert state_window is not None
        ctx = self.trigger_context
        ctx.window = window
        ctx.set_namespace()
        if event_time:
            result = self.trigger.on_event_time(timer.timestamp, window, ctx)
        else:
            result = self.trigger.on_processing_time(timer.timestamp, window, ctx)
        if result.is_fire():
            contents = self._get(state_window)
            if contents is not None:
                self._emit(window, contents, out, out_ts)
        if result.is_purge():
            self._clear_contents(state_window)
        if event_time == self.event_time and self._cleanup_time(window) == timer.timestamp:
            self._clear_all_state(window, state_window, windows_of_key)
        if windows_of_key is not None:
            windows_of_key.persist()

    # --- checkpoints ---------------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int) -> Any:
        """Keyed state and timers; a reduced value or accumulator is copied (an
        ``AggregateFunction.add`` may change its accumulator in place and return it, as PyFlink
        allows: its state is serialized at once; ckptsim's snapshot is written later)."""
        snapshot = super().snapshot_state(checkpoint_id)
        if self.contents != "list":
            contents = snapshot["states"].get(WINDOW_STATE_NAME)
            for columns in (contents or {}).get("key_groups", {}).values():
                columns["values"] = copy.deepcopy(columns["values"])
        return snapshot

    # --- window state --------------------------------------------------------------------------

    def _merging_window_set(self) -> MergingWindowSet:
        assert self.merging_state is not None and isinstance(self.assigner, MergingWindowAssigner)
        return MergingWindowSet(
            self.assigner, self.merging_state, self._merging_cache, self.backend.current_key
        )

    def _add(self, window: Window, value: Any) -> None:
        self.backend.current_namespace = window.namespace()
        self.window_state.add(value)

    def _get(self, window: Window) -> Any:
        self.backend.current_namespace = window.namespace()
        contents = self.window_state.get()
        if self.contents == "list" and not contents:
            return None
        return contents

    def _clear_contents(self, window: Window) -> None:
        self.backend.current_namespace = window.namespace()
        self.window_state.clear()

    def _clear_all_state(
        self, window: Window, state_window: Window, windows_of_key: MergingWindowSet | None
    ) -> None:
        self._clear_contents(state_window)
        ctx = self.trigger_context
        ctx.window = window
        ctx.set_namespace()
        self.trigger.clear(window, ctx)
        if self.function_kind == "process":
            clear = getattr(self.function, "clear", None)
            if callable(clear):
                self.process_context.current_window = window
                self.backend.current_namespace = window.namespace()
                clear(self.process_context)
        if windows_of_key is not None:
            windows_of_key.retire_window(window)
            windows_of_key.persist()

    def merge_namespaces(
        self, descriptor: StateDescriptor, target: Namespace, sources: Iterable[Namespace]
    ) -> None:
        """Merges the state ``descriptor`` names of the current key from the ``sources``
        namespaces into ``target`` (Flink's ``mergeNamespaces``: the target's value first)."""
        combine: Callable[[Any, Any], Any]
        if descriptor.ttl_config is not None:
            raise ValueError(f"state {descriptor.name!r} has a time-to-live: it cannot merge")
        if isinstance(descriptor, ListStateDescriptor):
            combine = _concat
        elif isinstance(descriptor, ReducingStateDescriptor):
            combine = descriptor.reduce
        elif isinstance(descriptor, AggregatingStateDescriptor):
            combine = descriptor.agg_function.merge
        else:
            raise ValueError(
                f"state {descriptor.name!r} is a {descriptor.kind} state: only list, reducing "
                "and aggregating states merge"
            )
        self.backend.state(descriptor, namespaced=True)  # declared namespaced
        table = self.backend.table(descriptor.name, descriptor.kind)
        key = self.backend.current_key
        merged: Any = _NOTHING
        for source in sources:
            value = table.pop((key, source), _NOTHING)
            if value is not _NOTHING:
                merged = value if merged is _NOTHING else combine(merged, value)
        if merged is not _NOTHING:
            current = table.get((key, target), _NOTHING)
            table[(key, target)] = merged if current is _NOTHING else combine(current, merged)

    def _merge(
        self,
        merge_result: Window,
        merged_windows: Collection[Window],
        state_window_result: Window,
        merged_state_windows: list[Window],
    ) -> None:
        """Windows merged into ``merge_result``: the trigger merges, the merged windows' trigger
        state and cleanup timers go, their contents move into the kept state window."""
        if self.event_time:
            if merge_result.max_timestamp() + self.allowed_lateness <= self.current_watermark:
                raise RuntimeError(
                    "The end timestamp of an event-time window cannot become earlier than the "
                    f"current watermark by merging. Current watermark: {self.current_watermark} "
                    f"window: {merge_result!r}"
                )
        elif merge_result.max_timestamp() <= self.processing_time():
            raise RuntimeError(
                "The end timestamp of a processing-time window cannot become earlier than the "
                f"current processing time by merging. Current processing time: "
                f"{self.processing_time()} window: {merge_result!r}"
            )
        ctx = self.trigger_context
        ctx.window = merge_result
        ctx.merged_windows = merged_windows
        ctx.set_namespace()
        try:
            self.trigger.on_merge(merge_result, ctx)
        finally:
            ctx.merged_windows = ()
        for window in merged_windows:
            ctx.window = window
            ctx.set_namespace()
            self.trigger.clear(window, ctx)
            self._delete_cleanup_timer(window)
        self.merge_namespaces(
            self.contents_descriptor,
            state_window_result.namespace(),
            [w.namespace() for w in merged_state_windows],
        )

    # --- triggers, cleanup, lateness -------------------------------------------------------------

    def _on_element(self, value: Any, timestamp: int, window: Window) -> TriggerResult:
        ctx = self.trigger_context
        ctx.window = window
        ctx.set_namespace()
        return self.trigger.on_element(value, timestamp, window, ctx)

    def _cleanup_time(self, window: Window) -> int:
        if not self.event_time:
            return window.max_timestamp()
        return min(window.max_timestamp() + self.allowed_lateness, MAX_WATERMARK)

    def _register_cleanup_timer(self, window: Window) -> None:
        time = self._cleanup_time(window)
        if time == MAX_WATERMARK:
            return
        ctx = self.trigger_context
        ctx.window = window
        if self.event_time:
            ctx.register_event_time_timer(time)
        else:
            ctx.register_processing_time_timer(time)

    def _delete_cleanup_timer(self, window: Window) -> None:
        time = self._cleanup_time(window)
        if time == MAX_WATERMARK:
            return
        ctx = self.trigger_context
        ctx.window = window
        if self.event_time:
            ctx.delete_event_time_timer(time)
        else:
            ctx.delete_processing_time_timer(time)

    def _is_window_late(self, window: Window) -> bool:
        return self.event_time and self._cleanup_time(window) <= self.current_watermark

    def _is_element_late(self, timestamp: int) -> bool:
        return self.event_time and timestamp + self.allowed_lateness <= self.current_watermark

    # --- output ----------------------------------------------------------------------------------

    def _emit(
        self, window: Window, contents: Any, out: list[Any], out_ts: list[int | None]
    ) -> None:
        """The window function over a firing window's contents; what it returns goes out with
        the timestamp ``window.max_timestamp()``."""
        key = self.backend.current_key
        kind = self.function_kind
        if kind is None:
            produced: Iterable[Any] | None = (contents,)
        else:
            elements = contents if self.contents == "list" else [contents]
            self.backend.current_namespace = window.namespace()
            if kind == "process":
                self.process_context.current_window = window
                produced = self.function.process(key, self.process_context, elements)
            elif _is_function_object(self.function):
                produced = self.function.apply(key, window, elements)
            else:
                produced = self.function(key, window, elements)
        if produced is not None:
            side = self.side
            if side is None:
                before = len(out)
                out.extend(produced)
                out_ts.extend([window.max_timestamp()] * (len(out) - before))
            else:
                split_side_outputs(produced, window.max_timestamp(), out, out_ts, side)


_NOTHING = object()


def _concat(a: list[Any], b: list[Any]) -> list[Any]:
    return [*a, *b]
