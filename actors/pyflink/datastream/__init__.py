"""``pyflink.datastream``: the environment, streams, functions, state, windows, checkpointing."""

from __future__ import annotations

from actors.pyflink._unsupported import missing
from actors.pyflink.datastream.checkpoint_config import CheckpointConfig
from actors.pyflink.datastream.checkpointing_mode import CheckpointingMode
from actors.pyflink.datastream.connected_streams import ConnectedStreams
from actors.pyflink.datastream.data_stream import DataStream, DataStreamSink, KeyedStream
from actors.pyflink.datastream.execution_mode import RuntimeExecutionMode
from actors.pyflink.datastream.externalized_checkpoint_retention import (
    ExternalizedCheckpointRetention,
)
from actors.pyflink.datastream.functions import (
    AggregateFunction,
    AllWindowFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    ProcessAllWindowFunction,
    ProcessFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    WindowFunction,
)
from actors.pyflink.datastream.stream_execution_environment import StreamExecutionEnvironment
from actors.pyflink.datastream.time_characteristic import TimeCharacteristic
from actors.pyflink.datastream.time_domain import TimeDomain
from actors.pyflink.datastream.timerservice import TimerService
from actors.pyflink.datastream.window import (
    CountWindow,
    GlobalWindow,
    MergingWindowAssigner,
    TimeWindow,
    Trigger,
    TriggerResult,
    Window,
    WindowAssigner,
    WindowedStream,
)

__getattr__ = missing("pyflink.datastream")

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "CheckpointConfig",
    "CheckpointingMode",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "ConnectedStreams",
    "CountWindow",
    "DataStream",
    "DataStreamSink",
    "ExternalizedCheckpointRetention",
    "FilterFunction",
    "FlatMapFunction",
    "GlobalWindow",
    "KeySelector",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "MapFunction",
    "MergingWindowAssigner",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "RuntimeExecutionMode",
    "StreamExecutionEnvironment",
    "TimeCharacteristic",
    "TimeDomain",
    "TimeWindow",
    "TimerService",
    "Trigger",
    "TriggerResult",
    "Window",
    "WindowAssigner",
    "WindowFunction",
    "WindowedStream",
]
