"""``pyflink.datastream.window``: window assigners, windows and triggers (the job model's own,
``runtime.windows``), and ``WindowedStream`` / ``AllWindowedStream``: windowed operations on
the job model's windowed streams, with PyFlink's output types. The names PyFlink's module
imported from elsewhere (``Time``, ``Types``, state descriptors, ...) resolve here too
(``_unsupported.missing``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from actors.pyflink._unsupported import missing, unsupported
from actors.pyflink.common.typeinfo import TypeInformation
from runtime.windows import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountSlidingWindowAssigner,
    CountTrigger,
    CountTumblingWindowAssigner,
    CountWindow,
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindow,
    GlobalWindows,
    MergingWindowAssigner,
    NeverTrigger,
    ProcessingTimeSessionWindows,
    ProcessingTimeTrigger,
    PurgingTrigger,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TimeWindow,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    Window,
    WindowAssigner,
)

if TYPE_CHECKING:
    from actors.pyflink.datastream.data_stream import DataStream, KeyedStream

__getattr__ = missing("pyflink.datastream.window")


class WindowedStream:
    """A keyed stream cut into windows: ``reduce``, ``aggregate``, ``apply``, ``process``."""

    def __init__(self, keyed: KeyedStream, windowed: Any) -> None:
        self._keyed_stream = keyed
        self._windowed = windowed

    def get_execution_environment(self) -> Any:
        return self._keyed_stream.get_execution_environment()

    def get_input_type(self) -> TypeInformation:
        return self._keyed_stream.get_type()

    def trigger(self, trigger: Any) -> WindowedStream:
        self._windowed = self._windowed.trigger(trigger)
        return self

    def allowed_lateness(self, time_ms: int) -> WindowedStream:
        self._windowed = self._windowed.allowed_lateness(time_ms)
        return self

    def side_output_late_data(self, output_tag: Any) -> WindowedStream:
        unsupported("side_output_late_data() (side outputs)", "allow lateness, or filter late data")

    def _result(self, stream: Any, output_type: TypeInformation | None) -> DataStream:
        return self._keyed_stream._derive(stream, output_type, python=False)

    def reduce(
        self,
        reduce_function: Any,
        window_function: Any = None,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        if window_function is None:
            output_type = output_type or self._keyed_stream._type
            return self._result(self._windowed.reduce(reduce_function), output_type)
        stream = self._windowed.reduce(reduce_function, window_function=window_function)
        return self._result(stream, output_type)

    def aggregate(
        self,
        aggregate_function: Any,
        window_function: Any = None,
        accumulator_type: TypeInformation | None = None,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        if window_function is None:
            stream = self._windowed.aggregate(aggregate_function)
        else:
            stream = self._windowed.aggregate(aggregate_function, window_function=window_function)
        return self._result(stream, output_type)

    def apply(self, window_function: Any, output_type: TypeInformation | None = None) -> DataStream:
        return self._result(self._windowed.apply(window_function), output_type)

    def process(
        self, process_window_function: Any, output_type: TypeInformation | None = None
    ) -> DataStream:
        return self._result(self._windowed.process(process_window_function), output_type)


class AllWindowedStream(WindowedStream):
    """A whole stream cut into windows (``window_all``)."""


def windowed(stream: KeyedStream, assigner: Any) -> WindowedStream:
    return WindowedStream(stream, stream._keyed.window(assigner))


def count_windowed(stream: KeyedStream, size: int, slide: int) -> WindowedStream:
    keyed = stream._keyed
    return WindowedStream(
        stream, keyed.count_window(size, slide) if slide else keyed.count_window(size)
    )


def all_windowed(stream: DataStream, assigner: Any) -> AllWindowedStream:
    return AllWindowedStream(stream, stream._stream.window_all(assigner))  # type: ignore[arg-type]


__all__ = [
    "AllWindowedStream",
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountSlidingWindowAssigner",
    "CountTrigger",
    "CountTumblingWindowAssigner",
    "CountWindow",
    "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "EventTimeSessionWindows",
    "EventTimeTrigger",
    "GlobalWindow",
    "GlobalWindows",
    "MergingWindowAssigner",
    "NeverTrigger",
    "ProcessingTimeSessionWindows",
    "ProcessingTimeTrigger",
    "PurgingTrigger",
    "SessionWindowTimeGapExtractor",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "TimeWindow",
    "Trigger",
    "TriggerResult",
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "Window",
    "WindowAssigner",
    "WindowedStream",
]
