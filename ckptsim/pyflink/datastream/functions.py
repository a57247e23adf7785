"""``pyflink.datastream.functions``: the user function classes (the job model's own,
``runtime.functions``: one implementation for PyFlink's spelling and ckptsim's), PyFlink's
``Partitioner`` (``partition_custom``) and ``SinkFunction`` (``add_sink``: Flink's own print and
discarding sink functions, named by their Java class). The state and time names PyFlink's
module imported (``ValueStateDescriptor``, ``TimeDomain``, ...) resolve here too
(``_unsupported.missing``)."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from ckptsim.pyflink._unsupported import CONNECTORS, missing, unsupported
from runtime.functions import (
    AggregateFunction,
    AllWindowFunction,
    BaseBroadcastProcessFunction,
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
    KeyedBroadcastProcessFunction,
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


class Partitioner(Function):
    """Assigns a key to one of ``num_partitions`` partitions (``DataStream.partition_custom``)."""

    @abstractmethod
    def partition(self, key: Any, num_partitions: int) -> int:
        """The partition of ``key``: a whole number from 0 to ``num_partitions - 1``."""


#: the Java sink functions of Flink 2.3 an ``add_sink`` of ckptsim runs: class -> what it does
SINK_FUNCTIONS = {
    "org.apache.flink.streaming.api.functions.sink.legacy.PrintSinkFunction": "print",
    "org.apache.flink.streaming.api.functions.sink.legacy.DiscardingSink": "discard",
}


class SinkFunction:
    """A Java ``SinkFunction`` named by its class (PyFlink creates it with its no-argument
    constructor): Flink's ``PrintSinkFunction`` and ``DiscardingSink`` run on ckptsim; any
    other stops the program."""

    def __init__(self, sink_func: Any) -> None:
        if not isinstance(sink_func, str):
            unsupported(f"SinkFunction({type(sink_func).__name__}) (a Java object)", CONNECTORS)
        if sink_func not in SINK_FUNCTIONS:
            known = " or ".join(name.rsplit(".", 1)[1] for name in SINK_FUNCTIONS)
            unsupported(
                f"SinkFunction('{sink_func}') (a Java sink function)",
                f"{CONNECTORS}; of Flink's sink functions, {known} run here",
            )
        self._j_function = sink_func
        self.kind = SINK_FUNCTIONS[sink_func]

    def get_java_function(self) -> Any:
        return self._j_function


__getattr__ = missing("pyflink.datastream.functions")

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "BaseBroadcastProcessFunction",
    "BroadcastProcessFunction",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "KeySelector",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStateStore",
    "MapFunction",
    "Partitioner",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "SinkFunction",
    "TimerService",
    "WindowFunction",
]
