"""``pyflink.datastream.functions``: the user function classes (the job model's own,
``runtime.functions``: one implementation for PyFlink's spelling and ckptsim's). The state
and time names PyFlink's module imported (``ValueStateDescriptor``, ``TimeDomain``, ...)
resolve here too (``_unsupported.missing``)."""

from __future__ import annotations

from ckptsim.pyflink._unsupported import missing
from runtime.functions import (
    AggregateFunction,
    AllWindowFunction,
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
    ProcessAllWindowFunction,
    ProcessFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    TimerService,
    WindowFunction,
)

__getattr__ = missing("pyflink.datastream.functions")

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
    "TimerService",
    "WindowFunction",
]
