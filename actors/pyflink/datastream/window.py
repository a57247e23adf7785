"""``pyflink.datastream.window``: window assigners, windows and triggers (the job model's own,
``runtime.windows``), and ``WindowedStream`` / ``AllWindowedStream``: windowed operations on
the job model's windowed streams, with PyFlink's output types.

Until the job model has windows (``runtime.windows``), naming them stops the program with
one line (exit 2)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn

from actors.pyflink._unsupported import missing, unsupported
from actors.pyflink.common.typeinfo import TypeInformation

if TYPE_CHECKING:
    from actors.pyflink.datastream.data_stream import DataStream, KeyedStream

_PENDING = "this ckptsim version's runtime has no windows yet"


def _runtime_windows() -> ModuleType | None:
    try:
        return importlib.import_module("runtime.windows")
    except ModuleNotFoundError:
        return None


_missing = missing("pyflink.datastream.window", {})


def __getattr__(name: str) -> Any:
    windows = _runtime_windows()
    if windows is not None and not name.startswith("_") and hasattr(windows, name):
        return getattr(windows, name)
    if windows is None and not name.startswith("_"):
        unsupported(f"pyflink.datastream.window.{name}", _PENDING)
    return _missing(name)


def _pending(what: str) -> NoReturn:
    unsupported(what, _PENDING)


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
    window = getattr(stream._keyed, "window", None)
    if window is None:
        _pending("KeyedStream.window()")
    return WindowedStream(stream, window(assigner))


def count_windowed(stream: KeyedStream, size: int, slide: int) -> WindowedStream:
    count_window = getattr(stream._keyed, "count_window", None)
    if count_window is None:
        _pending("KeyedStream.count_window()")
    return WindowedStream(stream, count_window(size, slide) if slide else count_window(size))


def all_windowed(stream: DataStream, assigner: Any) -> AllWindowedStream:
    window_all = getattr(stream._stream, "window_all", None)
    if window_all is None:
        _pending("DataStream.window_all()")
    return AllWindowedStream(stream, window_all(assigner))  # type: ignore[arg-type]
