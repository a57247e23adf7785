"""ckptsim: Apache Flink's checkpointing protocol, executable in Python.

Everything a job needs is imported from here::

    from ckptsim import StreamExecutionEnvironment, KeyedProcessFunction, ValueStateDescriptor

    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing("100 ms")
    env.from_collection(range(1000)).map(lambda n: (n % 10, n)).key_by(lambda r: r[0]) \\
       .sum(1).collect("sums")
    result = env.execute("sums")              # on Pykka actors; runtime="simulation" replays
    result.output["sums"]

Property tests of your own topologies use ``ckptsim.testing``; PyFlink programs run unchanged
under ``ckptsim run`` (``ckptsim.pyflink``). The layers below this package (``spark_bridge``,
``actors``, ``runtime``) are the implementation, not the API.
"""

from __future__ import annotations

from actors.faults import (
    CrashTask,
    DelayAcknowledgement,
    DropAcknowledgement,
    FailSnapshot,
    FailTask,
    Fault,
    StallChannel,
    parse_faults,
)
from actors.trace import TraceCollector, TraceWriter
from ckptsim._environment import StreamExecutionEnvironment
from ckptsim._logging import configure_logging
from ckptsim._report import summary_table
from runtime.config import CheckpointConfig, CheckpointingMode, ConfigError, Configuration
from runtime.datastream import (
    AllWindowedStream,
    BroadcastConnectedStream,
    BroadcastStream,
    ConnectedStreams,
    DataStream,
    DataStreamSink,
    KeyedStream,
    WindowedStream,
)
from runtime.failure import TaskFailure
from runtime.functions import (
    AggregateFunction,
    AllWindowFunction,
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
    KeySelector,
    MapFunction,
    OutputTag,
    ProcessAllWindowFunction,
    ProcessFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    TimeDomain,
    TimerService,
    WindowFunction,
)
from runtime.graph import GraphError
from runtime.job import JobResult
from runtime.operators import OperatorContext, SourceReader
from runtime.row import Row, RowKind
from runtime.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    BroadcastState,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReadOnlyBroadcastState,
    ReducingState,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueState,
    ValueStateDescriptor,
)
from runtime.status import ExecutionState, JobStatus
from runtime.tracecheck import TraceReport, check_trace, parse_trace
from runtime.watermarks import (
    BoundedOutOfOrdernessGenerator,
    TimestampAssigner,
    WatermarkGenerator,
    WatermarkStrategy,
)
from runtime.windows import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    CountWindow,
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindow,
    GlobalWindows,
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
    WindowAssigner,
)
from spark_bridge import (
    ParquetSink,
    SchemaMismatch,
    SparkBridgeError,
    SparkConnectNotSupported,
    TopologyFailed,
    TopologyRun,
    describe_tasks,
    from_spark,
    local_spark,
    run_topology,
    run_topology_job,
)

__version__ = "0.1.0"

__all__ = [
    "AggregateFunction",
    "AggregatingState",
    "AggregatingStateDescriptor",
    "AllWindowFunction",
    "AllWindowedStream",
    "BoundedOutOfOrdernessGenerator",
    "BroadcastConnectedStream",
    "BroadcastProcessFunction",
    "BroadcastState",
    "BroadcastStream",
    "CheckpointConfig",
    "CheckpointingMode",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "ConfigError",
    "Configuration",
    "ConnectedStreams",
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountTrigger",
    "CountWindow",
    "CrashTask",
    "DataStream",
    "DataStreamSink",
    "DelayAcknowledgement",
    "DropAcknowledgement",
    "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "EventTimeSessionWindows",
    "EventTimeTrigger",
    "ExecutionState",
    "FailSnapshot",
    "FailTask",
    "Fault",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "GlobalWindow",
    "GlobalWindows",
    "GraphError",
    "JobResult",
    "JobStatus",
    "KeySelector",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "ListState",
    "ListStateDescriptor",
    "MapFunction",
    "MapState",
    "MapStateDescriptor",
    "OperatorContext",
    "OutputTag",
    "ParquetSink",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ProcessingTimeSessionWindows",
    "ProcessingTimeTrigger",
    "PurgingTrigger",
    "ReadOnlyBroadcastState",
    "ReduceFunction",
    "ReducingState",
    "ReducingStateDescriptor",
    "Row",
    "RowKind",
    "RuntimeContext",
    "SchemaMismatch",
    "SessionWindowTimeGapExtractor",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "SourceReader",
    "SparkBridgeError",
    "SparkConnectNotSupported",
    "StallChannel",
    "StateTtlConfig",
    "StreamExecutionEnvironment",
    "TaskFailure",
    "TimeDomain",
    "TimeWindow",
    "TimerService",
    "TimestampAssigner",
    "TopologyFailed",
    "TopologyRun",
    "TraceCollector",
    "TraceReport",
    "TraceWriter",
    "Trigger",
    "TriggerResult",
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "ValueState",
    "ValueStateDescriptor",
    "WatermarkGenerator",
    "WatermarkStrategy",
    "WindowAssigner",
    "WindowFunction",
    "WindowedStream",
    "check_trace",
    "configure_logging",
    "describe_tasks",
    "from_spark",
    "local_spark",
    "parse_faults",
    "parse_trace",
    "run_topology",
    "run_topology_job",
    "summary_table",
]
