"""``pyflink.datastream``: the environment, streams, functions, state, windows, checkpointing."""

from __future__ import annotations

from actors.pyflink._unsupported import CONNECTORS, missing
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

_STATE_BACKEND = "ckptsim keeps keyed state on the heap and checkpoints it as JSON files"
_STORAGE = "set execution.checkpointing.dir (a Configuration, or -D) for where checkpoints go"
_BROADCAST = "use connect() with a CoProcessFunction, or broadcast() of a plain stream"

__getattr__ = missing(
    "pyflink.datastream",
    {
        "AsyncDataStream": ("AsyncDataStream", "call the service in a map"),
        "AsyncFunction": ("AsyncFunction", "call the service in a map"),
        "BroadcastStream": ("BroadcastStream (broadcast state)", _BROADCAST),
        "BroadcastConnectedStream": ("BroadcastConnectedStream (broadcast state)", _BROADCAST),
        "BroadcastProcessFunction": ("BroadcastProcessFunction (broadcast state)", _BROADCAST),
        "KeyedBroadcastProcessFunction": (
            "KeyedBroadcastProcessFunction (broadcast state)",
            _BROADCAST,
        ),
        "SourceFunction": ("SourceFunction (a Java source)", CONNECTORS),
        "SinkFunction": ("SinkFunction (a Java sink)", CONNECTORS),
        "Partitioner": ("Partitioner (partition_custom)", "use key_by(), rebalance() or shuffle()"),
        "OutputTag": ("side outputs (OutputTag)", "emit tagged records and filter them"),
        "StateBackend": ("StateBackend", _STATE_BACKEND),
        "HashMapStateBackend": ("HashMapStateBackend", _STATE_BACKEND),
        "EmbeddedRocksDBStateBackend": ("EmbeddedRocksDBStateBackend", _STATE_BACKEND),
        "CustomStateBackend": ("CustomStateBackend", _STATE_BACKEND),
        "PredefinedOptions": ("PredefinedOptions (RocksDB)", _STATE_BACKEND),
        "CheckpointStorage": ("CheckpointStorage", _STORAGE),
        "JobManagerCheckpointStorage": ("JobManagerCheckpointStorage", _STORAGE),
        "FileSystemCheckpointStorage": ("FileSystemCheckpointStorage", _STORAGE),
        "CustomCheckpointStorage": ("CustomCheckpointStorage", _STORAGE),
        "SlotSharingGroup": ("SlotSharingGroup", "ckptsim runs every task on its own actor"),
        "MemorySize": ("MemorySize", "ckptsim sizes buffers with taskmanager.memory.segment-size"),
    },
)

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "CheckpointConfig",
    "CheckpointingMode",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "ConnectedStreams",
    "DataStream",
    "DataStreamSink",
    "ExternalizedCheckpointRetention",
    "FilterFunction",
    "FlatMapFunction",
    "KeySelector",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "MapFunction",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "RuntimeExecutionMode",
    "StreamExecutionEnvironment",
    "TimeCharacteristic",
    "TimeDomain",
    "TimerService",
    "WindowFunction",
]
