"""``pyflink.datastream.functions``: the user function classes (the job model's own,
``runtime.functions``: one implementation for PyFlink's spelling and ckptsim's)."""

from __future__ import annotations

from actors.pyflink._unsupported import CONNECTORS, missing
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
    WindowFunction,
)

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
