"""``pyflink.datastream``: the environment, streams, functions, state, windows, checkpointing,
side outputs and broadcast state."""

from __future__ import annotations

from ckptsim.pyflink._unsupported import missing
from ckptsim.pyflink.datastream.checkpoint_config import CheckpointConfig
from ckptsim.pyflink.datastream.checkpointing_mode import CheckpointingMode
from ckptsim.pyflink.datastream.data_stream import (
    BroadcastConnectedStream,
    BroadcastStream,
    ConnectedStreams,
    DataStream,
    DataStreamSink,
    KeyedStream,
    WindowedStream,
)
from ckptsim.pyflink.datastream.execution_mode import RuntimeExecutionMode
from ckptsim.pyflink.datastream.externalized_checkpoint_retention import (
    ExternalizedCheckpointRetention,
)
from ckptsim.pyflink.datastream.functions import (
    AggregateFunction,
    AllWindowFunction,
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    KeyedBroadcastProcessFunction,
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
from ckptsim.pyflink.datastream.output_tag import OutputTag
from ckptsim.pyflink.datastream.stream_execution_environment import StreamExecutionEnvironment
from ckptsim.pyflink.datastream.time_characteristic import TimeCharacteristic
from ckptsim.pyflink.datastream.time_domain import TimeDomain
from ckptsim.pyflink.datastream.timerservice import TimerService
from ckptsim.pyflink.datastream.window import (
    CountWindow,
    GlobalWindow,
    MergingWindowAssigner,
    TimeWindow,
    Trigger,
    TriggerResult,
    Window,
    WindowAssigner,
)

__getattr__ = missing("pyflink.datastream")

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "BroadcastConnectedStream",
    "BroadcastProcessFunction",
    "BroadcastStream",
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
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "MapFunction",
    "MergingWindowAssigner",
    "OutputTag",
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
