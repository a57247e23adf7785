"""``pyflink.datastream.functions``: the user function classes (the job model's own,
``runtime.functions``: one implementation for PyFlink's spelling and ckptsim's)."""

from __future__ import annotations

from typing import Any, TypeVar

from actors.pyflink._unsupported import CONNECTORS, missing
from runtime import functions as _runtime
from runtime.functions import (
    AggregateFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeyedStateStore,
    KeySelector,
    MapFunction,
    ProcessFunction,
    ReduceFunction,
    RuntimeContext,
)

_F = TypeVar("_F", bound=type)


def _generic(cls: _F) -> _F:
    """PyFlink's window function classes are generic: programs write
    ``ProcessWindowFunction[tuple, tuple, str, TimeWindow]``. The job model's class as it is
    when it takes type arguments; else a subclass that takes (and ignores) them, nothing
    more."""
    if hasattr(cls, "__class_getitem__"):
        return cls

    def __class_getitem__(c: Any, item: Any) -> Any:
        return c

    attributes = {"__class_getitem__": classmethod(__class_getitem__), "__doc__": cls.__doc__}
    generic: _F = type(cls.__name__, (cls,), attributes)  # type: ignore[assignment]
    generic.__module__ = __name__
    return generic


WindowFunction = _generic(_runtime.WindowFunction)
AllWindowFunction = _generic(_runtime.AllWindowFunction)
ProcessWindowFunction = _generic(_runtime.ProcessWindowFunction)
ProcessAllWindowFunction = _generic(_runtime.ProcessAllWindowFunction)

_BROADCAST = "use connect() with a CoProcessFunction, or broadcast() of a plain stream"

__getattr__ = missing(
    "pyflink.datastream.functions",
    {
        "SourceFunction": ("SourceFunction (a Java source)", CONNECTORS),
        "SinkFunction": ("SinkFunction (a Java sink)", CONNECTORS),
        "Partitioner": (
            "partition_custom() and Partitioner",
            "use key_by(), rebalance() or shuffle()",
        ),
        "BroadcastProcessFunction": ("BroadcastProcessFunction (broadcast state)", _BROADCAST),
        "KeyedBroadcastProcessFunction": (
            "KeyedBroadcastProcessFunction (broadcast state)",
            _BROADCAST,
        ),
        "AsyncFunction": ("AsyncFunction", "call the service in a map"),
    },
)

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "KeySelector",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStateStore",
    "MapFunction",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "WindowFunction",
]
