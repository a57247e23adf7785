"""The DataStream API: what a topology script calls to build a job.

    env = StreamExecutionEnvironment(parallelism=2)      # ckptsim's: a StreamEnvironment
    env.enable_checkpointing(100)                      # ms, or "100 ms"
    counts = (env.from_collection(lines)
              .flat_map(str.split)
              .map(lambda w: (w, 1))
              .key_by(lambda kv: kv[0])
              .reduce(lambda a, b: (a[0], a[1] + b[1])))
    counts.collect("counts")
    result = env.execute("word count")               # runs on actors

A process function emits to a side output with ``yield tag, value`` (``OutputTag``), read with
``stream.get_side_output(tag)``; ``stream.broadcast(MapStateDescriptor(...))`` is a stream
with broadcast state, to ``connect`` a (keyed) stream to and ``process`` with a
``BroadcastProcessFunction`` or ``KeyedBroadcastProcessFunction``.

The environment builds a ``StreamGraph``; ``execute`` hands the environment to its executor,
which builds the chained ``JobGraph`` (``job_to_execute``) and runs it. This module imports no
runtime of its own: ``actors.execute_environment`` runs an environment on Pykka actors, and
``ckptsim.StreamExecutionEnvironment`` is the environment that uses it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, overload

from runtime.checkpoint import SavepointRequest
from runtime.config import CheckpointConfig, CheckpointingMode, Configuration
from runtime.descriptors import (
    BroadcastProcessDescriptor,
    CoProcessDescriptor,
    FilterDescriptor,
    FlatMapDescriptor,
    MapBatchDescriptor,
    MapDescriptor,
    NonKeyedProcessDescriptor,
    OperatorDescriptor,
    ProcessDescriptor,
    ReduceDescriptor,
    SinkDescriptor,
    SinkKind,
    SourceDescriptor,
    TimestampsDescriptor,
    WindowDescriptor,
)
from runtime.functions import (
    BroadcastProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    ProcessWindowFunction,
    WindowFunction,
)
from runtime.graph import (
    GraphError,
    JobGraph,
    StreamGraph,
    StreamNode,
    build_job_graph,
    derived_max_parallelism,
)
from runtime.operators import (
    CollectionReader,
    GeneratorReader,
    OperatorContext,
    SourceReader,
)
from runtime.partition import (
    CustomPartitioning,
    HashingKeySelector,
    KeyHash,
    KeySelector,
    Partitioner,
)
from runtime.state import (
    UPPER_BOUND_MAX_PARALLELISM,
    MapStateDescriptor,
    hash_code,
)
from runtime.watermarks import WatermarkStrategy, millis
from runtime.windows import (
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
    MergingWindowAssigner,
    Trigger,
    WindowAssigner,
    all_window_function,
)

if TYPE_CHECKING:
    from runtime.job import JobResult


class Executor(Protocol):
    """Runs an environment's job: ``executor(env, name, **options)`` (``actors``' runs it on
    Pykka actors)."""

    def __call__(self, env: StreamEnvironment, name: str, /, **options: Any) -> JobResult: ...


class StreamEnvironment:
    """The DataStream API's environment: settings, sources, the stream graph; ``execute``
    hands it to its executor (given to the constructor, or the class's ``executor``)."""

    executor: Executor | None = None
    #: under ``ckptsim run``, the command line's ``-D`` settings apply on top of what the
    #: program configured (ckptsim's own API); False: they are where the program's settings
    #: start from, and the program's own win (Flink's precedence, the PyFlink facade)
    command_line_on_top: bool = True

    def __init__(
        self,
        parallelism: int | None = None,
        *,
        config: Mapping[str, object] | None = None,
        executor: Executor | None = None,
    ) -> None:
        if executor is not None:
            self.executor = executor
        self.configuration = Configuration(config)
        if parallelism is not None:
            self.set_parallelism(parallelism)
        self.graph = StreamGraph()
        self.chaining = True
        self.sinks: dict[str, StreamNode] = {}
        #: the declared type of each side output read, by (operator node id, tag name)
        self.side_output_types: dict[tuple[int, str], Any] = {}
        #: savepoints the job takes on its own, and faults to inject (actors.faults)
        self.savepoint_requests: list[SavepointRequest] = []
        self.faults: list[Any] = []

    # --- settings -----------------------------------------------------------------------------

    @property
    def parallelism(self) -> int:
        value: int = self.configuration["parallelism.default"]
        return value

    def set_parallelism(self, parallelism: int) -> StreamEnvironment:
        """The default parallelism of the job's operators (``parallelism.default``; an operator's
        own ``set_parallelism`` wins)."""
        if not isinstance(parallelism, int) or isinstance(parallelism, bool) or parallelism < 1:
            raise GraphError(
                f"parallelism must be a whole number of at least 1, got {parallelism!r}"
            )
        self.configuration.set("parallelism.default", parallelism)
        return self

    def set_runtime_mode(self, mode: Any) -> StreamEnvironment:
        """``STREAMING`` (default) or ``BATCH`` (``execution.runtime-mode``): in BATCH, keyed
        operators see their whole input sorted by key, a reduce emits only its final value per
        key, timers fire at the end of each key, and checkpoints are not taken (as in Flink)."""
        name = getattr(mode, "name", mode)
        self.configuration.set("execution.runtime-mode", str(name))
        return self

    @property
    def max_parallelism(self) -> int:
        """The job's number of key groups: ``pipeline.max-parallelism``, or, when that is -1
        (not set), Flink's default for the largest parallelism the job has so far (128 up to
        parallelism 85, then the power of two at or above 1.5 x it)."""
        value = self.configured_max_parallelism
        return value if value != -1 else derived_max_parallelism(self.graph, self.parallelism)

    @property
    def configured_max_parallelism(self) -> int:
        """``pipeline.max-parallelism`` as set (-1: not set, derived from the parallelism)."""
        value: int = self.configuration["pipeline.max-parallelism"]
        if value > UPPER_BOUND_MAX_PARALLELISM:
            raise GraphError(_out_of_bounds(value))
        return value

    def set_max_parallelism(self, max_parallelism: int) -> StreamEnvironment:
        """The number of key groups keyed state is split into (default 128): the most subtasks a
        keyed operator can have, and the unit keyed state is redistributed in on restore
        (``pipeline.max-parallelism``)."""
        if max_parallelism < 1 or max_parallelism > UPPER_BOUND_MAX_PARALLELISM:
            raise GraphError(_out_of_bounds(max_parallelism))
        self.configuration.set("pipeline.max-parallelism", max_parallelism)
        return self

    def enable_checkpointing(
        self, interval: int | str, mode: CheckpointingMode | str = CheckpointingMode.EXACTLY_ONCE
    ) -> StreamEnvironment:
        """Periodic checkpoints every ``interval`` (ms, or Flink's duration syntax)."""
        self.configuration.set("execution.checkpointing.interval", interval)
        self.configuration.set("execution.checkpointing.mode", mode)
        return self

    def configure(self, settings: Mapping[str, object]) -> StreamEnvironment:
        """Set Flink configuration keys (``execution.checkpointing.*`` and the others)."""
        self.configuration.update(settings)
        return self

    def get_checkpoint_config(self) -> CheckpointConfig:
        """The checkpointing settings as configured so far (validated)."""
        return CheckpointConfig.from_configuration(self.configuration)

    def disable_operator_chaining(self) -> StreamEnvironment:
        """Run every operator in a task of its own (by default, operators connected forward with
        the same parallelism share one task)."""
        self.chaining = False
        return self

    def unique_sink_name(self, base: str) -> str:
        """The first of ``base``, ``base (2)``, ``base (3)``, ... no sink of this environment
        has (sink names key ``JobResult.output`` and the sinks' uids)."""
        name, n = base, 1
        while name in self.sinks:
            n += 1
            name = f"{base} ({n})"
        return name

    # --- sources ------------------------------------------------------------------------------

    def from_collection(
        self,
        items: Iterable[Any],
        *,
        name: str = "Collection Source",
        parallelism: int | None = None,
    ) -> DataStream:
        """A bounded source of ``items``: subtask ``i`` of ``p`` reads ``items[i::p]``. Its position
        is checkpointed, so a restore reads on after the last record it had emitted."""
        data = items if isinstance(items, Sequence) else list(items)

        def reader(ctx: OperatorContext) -> SourceReader:
            return CollectionReader(data, ctx.subtask, ctx.parallelism)

        return self.from_source(
            reader,
            name=name,
            parallelism=parallelism,
            check_position=functools.partial(CollectionReader.check_position, data),
            check_final=functools.partial(CollectionReader.check_final, data),
        )

    def from_generator(
        self,
        fn: Callable[[int], Any],
        count: int,
        *,
        rate: float | None = None,
        name: str = "Generator Source",
        parallelism: int | None = None,
    ) -> DataStream:
        """Records ``fn(0) .. fn(count - 1)``, at most ``rate`` per second if given (a number
        above 0; ``math.inf`` or None: no limit, as Flink's ``RateLimiterStrategy.perSecond``
        refuses a rate that is not positive)."""
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise GraphError(
                f"from_generator needs a count that is an int >= 0, got {count!r} "
                f"({type(count).__name__})"
            )
        if rate is not None:
            if (
                not isinstance(rate, (int, float))
                or isinstance(rate, bool)
                or math.isnan(rate)
                or rate <= 0
            ):
                raise GraphError(
                    f"from_generator needs a rate above 0 (records per second; None or "
                    f"math.inf for no limit), got {rate!r} ({type(rate).__name__})"
                )
            if math.isinf(rate):
                rate = None

        def reader(ctx: OperatorContext) -> SourceReader:
            return GeneratorReader(fn, count, ctx.subtask, ctx.parallelism, rate)

        return self.from_source(
            reader,
            name=name,
            parallelism=parallelism,
            check_position=functools.partial(GeneratorReader.check_position, count),
            check_final=functools.partial(GeneratorReader.check_final, count),
        )

    def from_source(
        self,
        reader: Callable[[OperatorContext], SourceReader],
        *,
        name: str,
        parallelism: int | None = None,
        uid: str | None = None,
        check_position: Callable[[Any, int, int], None] | None = None,
        check_final: Callable[[Any, int, int], None] | None = None,
    ) -> DataStream:
        """A source of your own: ``reader(ctx)`` makes subtask ``ctx.subtask``'s ``SourceReader``
        (a batch at a time, from a position that checkpoints and restores). ``uid`` names the source
        (its tasks are ``<uid>#<subtask>``). ``check_position(position, subtask, parallelism)``
        raises ``ValueError`` naming the field for a restored position the source cannot reach;
        ``check_final(position, subtask, parallelism)`` likewise for the final position of a
        subtask that finished (one that had read all of its share)."""
        _check_parallelism(name, parallelism)
        descriptor = SourceDescriptor(
            reader=reader, check_position=check_position, check_final=check_final
        )
        node = self.graph.add_node(descriptor, name, parallelism=parallelism, uid=uid)
        return DataStream(self, [node])

    # --- job -----------------------------------------------------------------------------------

    def build_job_graph(self, name: str = "ckptsim job") -> JobGraph:
        """The job graph of what was built so far: operators chained into vertices (a
        ``GraphError`` for a topology that cannot run)."""
        if not self.graph.nodes:
            raise GraphError("the script built no job: add a source, operators and a sink")
        return build_job_graph(
            self.graph,
            name=name,
            default_parallelism=self.parallelism,
            chaining=self.chaining,
            max_parallelism=self.configured_max_parallelism,
        )

    # --- savepoints and faults ----------------------------------------------------------------

    def trigger_savepoint(
        self,
        *,
        at_ms: int | None = None,
        after_records: int | None = None,
        directory: str | None = None,
    ) -> StreamEnvironment:
        """Take a savepoint ``at_ms`` after the job starts, or once its sources have read
        ``after_records`` records (into ``directory``, default
        ``execution.checkpointing.savepoint-dir`` or the checkpoint directory)."""
        self.savepoint_requests.append(_savepoint(at_ms, after_records, directory, stop=False))
        return self

    def stop_with_savepoint(
        self,
        *,
        at_ms: int | None = None,
        after_records: int | None = None,
        directory: str | None = None,
        drain: bool = False,
    ) -> StreamEnvironment:
        """Stop-with-savepoint: a synchronous savepoint, then the job finishes (resume it with
        ``ckptsim run --from-savepoint PATH``). With ``drain`` (``flink stop --drain``) the
        sources first emit ``MAX_WATERMARK``: every event-time timer fires and the windows
        flush before the savepoint."""
        self.savepoint_requests.append(
            _savepoint(at_ms, after_records, directory, stop=True, drain=drain)
        )
        return self

    def inject_faults(self, *faults: Any) -> StreamEnvironment:
        """Faults for the job's run (``FailTask``, ``CrashTask``, ...: each strikes once)."""
        self.faults.extend(faults)
        return self

    def execute(self, name: str = "ckptsim job", **options: Any) -> JobResult:
        if self.executor is None:
            raise RuntimeError(
                "this environment has no executor: use ckptsim.StreamExecutionEnvironment "
                "(or `ckptsim run script.py`)"
            )
        return self.executor(self, name, **options)

    def job_to_execute(
        self, name: str, options: Mapping[str, Any]
    ) -> tuple[JobGraph, dict[str, Any]]:
        """The job graph to run, and the run's options with the environment's own savepoint
        requests and faults added (the executor's first step)."""
        job = self.build_job_graph(name)
        CheckpointConfig.from_configuration(self.configuration)  # fail fast on bad settings
        run = dict(options)
        if self.savepoint_requests:
            run.setdefault("savepoints", list(self.savepoint_requests))
        if self.faults:
            run["faults"] = [*self.faults, *run.get("faults", ())]
        return job, run


def _out_of_bounds(max_parallelism: int) -> str:
    return (
        f"maxParallelism is out of bounds 0 < maxParallelism <= {UPPER_BOUND_MAX_PARALLELISM}. "
        f"Found: {max_parallelism}"
    )


def _savepoint(
    at_ms: int | None,
    after_records: int | None,
    directory: str | None,
    *,
    stop: bool,
    drain: bool = False,
) -> SavepointRequest:
    if (at_ms is None) == (after_records is None):
        raise GraphError("a savepoint needs at_ms or after_records (one of them)")
    for value, what in ((at_ms, "at_ms"), (after_records, "after_records")):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            raise GraphError(f"{what} must be a whole number >= 0, got {value!r}")
    return SavepointRequest(
        at_ms=at_ms, after_records=after_records, directory=directory, stop=stop, drain=drain
    )


class DataStream:
    """A stream of records out of one or more operators (more than one after ``union``): of
    each, its main output or (``side_outputs``, parallel to ``nodes``) the side output of a
    tag (``get_side_output``)."""

    def __init__(
        self,
        env: StreamEnvironment,
        nodes: list[StreamNode],
        partitioner: Partitioner = Partitioner.FORWARD,
        key_selector: KeySelector | None = None,
        explicit: bool = False,
        side_outputs: Sequence[str | None] | None = None,
    ) -> None:
        self.env = env
        self.nodes = nodes
        self._partitioner = partitioner
        self._key_selector = key_selector
        self._explicit = explicit
        self._side_outputs: list[str | None] = (
            list(side_outputs) if side_outputs is not None else [None] * len(nodes)
        )

    def _partitioned(
        self, partitioner: Partitioner, key_selector: KeySelector | None = None
    ) -> DataStream:
        return DataStream(self.env, self.nodes, partitioner, key_selector, True, self._side_outputs)

    # --- operators -----------------------------------------------------------------------------

    def _then(self, operator: OperatorDescriptor, name: str) -> DataStream:
        node = self.env.graph.add_node(operator, name, parallelism=None)
        for upstream, side_output in zip(self.nodes, self._side_outputs, strict=True):
            self.env.graph.add_edge(
                upstream.node_id,
                node.node_id,
                self._partitioner,
                self._key_selector,
                explicit=self._explicit,
                side_output=side_output,
            )
        return DataStream(self.env, [node])

    def get_side_output(self, output_tag: OutputTag) -> DataStream:
        """The records the operator emitted to the side output ``output_tag`` (``yield
        output_tag, value`` in its process function, or its late records after
        ``side_output_late_data``)."""
        if not isinstance(output_tag, OutputTag):
            raise GraphError(
                f"get_side_output() needs an OutputTag, got {type(output_tag).__name__}"
            )
        if len(self.nodes) != 1 or self._explicit or self._side_outputs != [None]:
            raise GraphError(
                "get_side_output() applies to the stream an operator emits (not a union, a "
                "repartitioned stream or a side output)"
            )
        node = self.nodes[0]
        declared = self.env.side_output_types.setdefault(
            (node.node_id, output_tag.tag_id), output_tag.type_info
        )
        if declared != output_tag.type_info:
            raise GraphError(
                f"a side output {output_tag.tag_id!r} of {node.label} was requested with "
                f"another type ({declared!r}, now {output_tag.type_info!r}); side output ids "
                "need to be unique"
            )
        return DataStream(self.env, [node], side_outputs=[output_tag.tag_id])

    def map(self, fn: Callable[[Any], Any], *, name: str = "Map") -> DataStream:
        """One record out per record in: ``fn(record)``, or a ``MapFunction``'s ``map``."""
        return self._then(MapDescriptor(fn=_function(fn, "map")), name)

    def map_batch(
        self, fn: Callable[[Sequence[Any]], Sequence[Any]], *, name: str = "MapBatch"
    ) -> DataStream:
        """``fn`` takes a whole buffer (a list, or an Arrow batch) and returns one."""
        return self._then(MapBatchDescriptor(fn=_function(fn, "map_batch")), name)

    def filter(self, fn: Callable[[Any], bool], *, name: str = "Filter") -> DataStream:
        """The records for which ``fn(record)`` (or a ``FilterFunction``'s ``filter``) is true."""
        return self._then(FilterDescriptor(fn=_function(fn, "filter")), name)

    def flat_map(self, fn: Callable[[Any], Iterable[Any]], *, name: str = "FlatMap") -> DataStream:
        """Any number of records per record: ``fn(record)`` (or a ``FlatMapFunction``'s
        ``flat_map``) returns or yields them (an empty list for none; ``None`` is an error)."""
        return self._then(FlatMapDescriptor(fn=_function(fn, "flat_map")), name)

    def process(
        self, function: ProcessFunction | Callable[..., Any], *, name: str = "Process"
    ) -> DataStream:
        """A ``ProcessFunction`` over every record: ``process_element(value, ctx)`` returns or
        yields what to emit; ``ctx.timestamp()`` is the record's event timestamp (timers need a
        keyed stream)."""
        if not isinstance(function, ProcessFunction):
            _callable(function, "process")
        return self._then(NonKeyedProcessDescriptor(function=function), name)

    def assign_timestamps_and_watermarks(
        self, watermark_strategy: WatermarkStrategy, *, name: str = "Timestamps/Watermarks"
    ) -> DataStream:
        """Event timestamps and watermarks from here on (``WatermarkStrategy``: monotonous,
        bounded out-of-orderness, none; with a timestamp assigner and idleness)."""
        if not isinstance(watermark_strategy, WatermarkStrategy):
            raise GraphError(
                "assign_timestamps_and_watermarks() needs a WatermarkStrategy, got "
                f"{type(watermark_strategy).__name__}"
            )
        return self._then(TimestampsDescriptor(strategy=watermark_strategy), name)

    def key_by(
        self,
        key_selector: KeySelector,
        *,
        key_hash: KeyHash | None = None,
        key_order: Callable[[Any], Any] | None = None,
    ) -> KeyedStream:
        """Partition by key. ``key_hash`` (key -> 32-bit int) replaces ckptsim's hash of a key
        (Java's ``hashCode`` for str and int) for routing and key groups alike; ``key_order``
        (key -> sort key) is the order keys are processed in BATCH mode (default: the keys'
        own order)."""
        if not callable(key_selector) and callable(getattr(key_selector, "get_key", None)):
            key_selector = key_selector.get_key  # a KeySelector object
        selector: KeySelector = _callable(key_selector, "key_by")
        if key_hash is not None or key_order is not None:
            selector = HashingKeySelector(
                selector,
                _callable(key_hash, "key_by key_hash") if key_hash is not None else hash_code,
                _callable(key_order, "key_by key_order") if key_order is not None else None,
            )
        return KeyedStream(
            self.env, self.nodes, Partitioner.HASH, selector, True, self._side_outputs
        )

    def rebalance(self) -> DataStream:
        """Send records round-robin to the downstream subtasks."""
        return self._partitioned(Partitioner.REBALANCE)

    def shuffle(self) -> DataStream:
        """Each record to a random downstream subtask (seeded per subtask: replayable)."""
        return self._partitioned(Partitioner.SHUFFLE)

    @overload
    def broadcast(self) -> DataStream: ...

    @overload
    def broadcast(
        self, state_descriptor: MapStateDescriptor, /, *more: MapStateDescriptor
    ) -> BroadcastStream: ...

    def broadcast(self, *state_descriptors: MapStateDescriptor) -> DataStream | BroadcastStream:
        """Every record to every subtask of the next operator; with ``MapStateDescriptor``s, a
        ``BroadcastStream`` to ``connect`` a stream with: its records reach a broadcast process
        function in every subtask, which keeps them in broadcast state (one map per
        descriptor)."""
        stream = self._partitioned(Partitioner.BROADCAST)
        if not state_descriptors:
            return stream
        for descriptor in state_descriptors:
            if not isinstance(descriptor, MapStateDescriptor):
                raise GraphError(
                    "broadcast() takes MapStateDescriptors (one per broadcast state), got "
                    f"{type(descriptor).__name__}"
                )
        names = [d.name for d in state_descriptors]
        if len(set(names)) != len(names):
            raise GraphError(f"broadcast states need names of their own, got {names}")
        return BroadcastStream(stream, tuple(state_descriptors))

    def rescale(self) -> DataStream:
        """Each upstream subtask deals its records round-robin to its own subset of the
        downstream subtasks (Flink's ``rescale()``: pointwise, as the parallelisms divide)."""
        return self._partitioned(Partitioner.RESCALE)

    def partition_custom(
        self, partitioner: Callable[[Any, int], int], key_selector: KeySelector
    ) -> DataStream:
        """Each record goes to the subtask ``partitioner(key_selector(record), n)`` of the next
        operator (of parallelism ``n``)."""
        custom = CustomPartitioning(
            _callable(partitioner, "partition_custom"), _callable(key_selector, "partition_custom")
        )
        return self._partitioned(Partitioner.CUSTOM, custom)

    def forward(self) -> DataStream:
        """Send records from subtask ``i`` to subtask ``i`` (the default between operators of the
        same parallelism; they may then be chained into one task)."""
        return self._partitioned(Partitioner.FORWARD)

    @overload
    def connect(self, other: DataStream) -> ConnectedStreams: ...

    @overload
    def connect(self, other: BroadcastStream) -> BroadcastConnectedStream: ...

    def connect(
        self, other: DataStream | BroadcastStream
    ) -> ConnectedStreams | BroadcastConnectedStream:
        """Two streams into one two-input operator (``map``/``flat_map`` with a co-function,
        ``process`` with a ``CoProcessFunction``; keyed when both streams are keyed, or after
        ``ConnectedStreams.key_by``); with a ``BroadcastStream`` (``broadcast(descriptor)``), a
        ``BroadcastConnectedStream`` (``process`` with a ``BroadcastProcessFunction``, or a
        ``KeyedBroadcastProcessFunction`` when this stream is keyed)."""
        if isinstance(other, BroadcastStream):
            if other.stream.env is not self.env:
                raise GraphError("connect() needs a stream of the same environment")
            return BroadcastConnectedStream(self, other)
        if not isinstance(other, DataStream) or other.env is not self.env:
            raise GraphError("connect() needs a stream of the same environment")
        return ConnectedStreams(self, other)

    def union(self, *others: DataStream) -> DataStream:
        """This stream and ``others`` (of the same environment) as one stream."""
        nodes = list(self.nodes)
        side_outputs = list(self._side_outputs)
        for other in others:
            if other.env is not self.env:
                raise GraphError("union() needs streams of the same environment")
            nodes.extend(other.nodes)
            side_outputs.extend(other._side_outputs)
        return DataStream(
            self.env,
            nodes,
            self._partitioner,
            self._key_selector,
            self._explicit,
            side_outputs,
        )

    # --- attributes of the last operator ---------------------------------------------------------

    def _single(self, what: str) -> StreamNode:
        if len(self.nodes) != 1:
            raise GraphError(f"{what}() applies to one operator; call it before union()")
        if self._side_outputs[0] is not None:
            raise GraphError(
                f"{what}() applies to an operator, not to a side output (get_side_output); "
                "call it on the operator's stream"
            )
        return self.nodes[0]

    def set_parallelism(self, parallelism: int) -> DataStream:
        """How many subtasks this operator runs in (default: the environment's parallelism)."""
        node = self._single("set_parallelism")
        _check_parallelism(node.name, parallelism)
        node.parallelism = parallelism
        return self

    def name(self, name: str) -> DataStream:
        """The operator's name, as summaries, the REST API and failures show it."""
        self._single("name").name = name
        return self

    def uid(self, uid: str) -> DataStream:
        """The operator's stable id. Its state is matched by it when a job restores a savepoint or
        checkpoint, and the task whose chain this operator begins is named by it
        (``<uid>#<subtask>``, as faults, traces and ``describe_tasks`` name tasks). Without one, an
        operator's uid is ``<kind>-<n>`` (``map-2``, ``reduce-3``: its kind and its place in the
        script), which stays the same while the topology does. Uids must be unique in a job."""
        self._single("uid").uid = uid
        return self

    def disable_chaining(self) -> DataStream:
        """Run this operator in a task of its own: not chained to its input or its output."""
        self._single("disable_chaining").chainable = False
        return self

    def start_new_chain(self) -> DataStream:
        """This operator begins a chain: not chained to its input (operators after it may
        chain to it)."""
        self._single("start_new_chain").chain_head = True
        return self

    def slot_sharing_group(self, name: Any) -> DataStream:
        """Accepted for PyFlink programs: ckptsim has no slots (every task runs)."""
        self._single("slot_sharing_group")
        return self

    def processing_cost(self, per_buffer_ms: float = 0.0, per_record_ms: float = 0.0) -> DataStream:
        """Declare how long this operator takes (a slow operator, e.g. an external call): the
        threaded runtime spends that time for real, the simulation in virtual time."""
        for value, what in ((per_buffer_ms, "per_buffer_ms"), (per_record_ms, "per_record_ms")):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise GraphError(f"processing_cost: {what} must be a number >= 0, got {value!r}")
        node = self._single("processing_cost")
        node.cost = (float(per_buffer_ms), float(per_record_ms))
        return self

    # --- sinks ----------------------------------------------------------------------------------

    def _sink(
        self, sink: SinkDescriptor, name: str | None, unnamed: str = "sink"
    ) -> DataStreamSink:
        """Add a sink named ``name``, which must be new; without one (``None``), the first
        free of ``unnamed``, ``unnamed (2)``, ``unnamed (3)``, ... (Flink allows many print
        sinks in one job)."""
        if name is None:
            name = self.env.unique_sink_name(unnamed)
        elif name in self.env.sinks:
            raise GraphError(f"a sink named {name!r} exists already; give each sink its own name")
        stream = self._then(sink, name)
        node = stream.nodes[0]
        node.uid = f"sink-{name}" if node.uid.startswith("sink-") else node.uid
        self.env.sinks[name] = node
        return DataStreamSink(stream)

    def collect(self, name: str = "collect") -> DataStreamSink:
        """Gather the records; ``JobResult.output[name]`` has them when the job is done."""
        return self._sink(SinkDescriptor(sink=SinkKind.COLLECT), name)

    def print(
        self,
        name: str | None = None,
        *,
        identifier: str | None = None,
        formatter: Callable[[Any], str] | None = None,
    ) -> DataStreamSink:
        """Each record's ``str`` on standard output, after ``N> `` (subtask N, parallelism
        above 1) or ``identifier:N> `` / ``identifier> `` (Flink's ``print(sink_identifier)``).
        Unnamed print sinks are named ``print``, ``print (2)``, ..."""
        return self._sink(
            SinkDescriptor(sink=SinkKind.PRINT, identifier=identifier, formatter=formatter),
            name,
            "print",
        )

    def sink_to_file(
        self,
        path: str,
        *,
        name: str | None = None,
        fmt: str = "text",
        part_prefix: str = "part",
        part_suffix: str | None = None,
    ) -> DataStreamSink:
        """Write one part file per subtask under ``path`` (``text``: one line per record;
        ``json``: one JSON document per line), named ``<part_prefix>-...<part_suffix>``
        (default extension ``.txt`` / ``.jsonl``). Unnamed file sinks are named ``file``,
        ``file (2)``, ..."""
        if fmt not in ("text", "json"):
            raise GraphError(f"sink_to_file format must be 'text' or 'json', got {fmt!r}")
        if not part_prefix or "/" in part_prefix or (part_suffix and "/" in part_suffix):
            raise GraphError(
                f"sink_to_file: a part prefix is a non-empty file name part, got {part_prefix!r}"
                f" (suffix {part_suffix!r})"
            )
        sink = SinkDescriptor(
            sink=SinkKind.FILE,
            path=path,
            format=fmt,
            part_prefix=part_prefix,
            part_suffix=part_suffix,
        )
        return self._sink(sink, name, "file")

    def sink_to(self, factory: Callable[..., Any], *, name: str) -> DataStreamSink:
        """A sink of your own: ``factory(task=..., parallelism=..., transactional=...,
        attempt=...)`` makes the connector of each subtask (an object with ``write``,
        ``pre_commit``, ``commit``, ``restore`` and ``close``); ``transactional`` is true when
        checkpointing is enabled (two-phase commit, as ``sink_to_file``), ``attempt`` counts
        restarts. ``ckptsim.ParquetSink`` is one."""
        return self._sink(
            SinkDescriptor(sink=SinkKind.CUSTOM, factory=_callable(factory, "sink_to")), name
        )

    def window_all(
        self, window_assigner: WindowAssigner, *, key_hash: KeyHash | None = None
    ) -> AllWindowedStream:
        """Windows over the whole stream, as PyFlink's: the stream keyed by one key (its
        ``key_hash`` may be given), so one subtask of the window operator gets every record;
        then ``reduce``/``aggregate``/``apply``/``process`` with ``AllWindowFunction`` /
        ``ProcessAllWindowFunction``."""
        if not isinstance(window_assigner, WindowAssigner):
            raise GraphError(
                f"window_all() needs a WindowAssigner, got {type(window_assigner).__name__}"
            )
        return AllWindowedStream(self.key_by(_one_key, key_hash=key_hash), window_assigner)


def _one_key(record: Any) -> int:
    """The key of every record of a ``window_all`` stream (PyFlink's ``NullByteKeySelector``)."""
    return 0


class KeyedStream(DataStream):
    """A stream partitioned by key (``DataStream.key_by``): each key's records go to one
    subtask, where keyed state and timers are those of the record's key."""

    def reduce(self, fn: Callable[[Any, Any], Any], *, name: str = "Reduce") -> DataStream:
        """A running reduce per key: each record is combined with the key's previous result,
        ``fn(previous, record)`` (or a ``ReduceFunction``'s ``reduce``), and the new result is
        emitted (in BATCH mode only the final one)."""
        assert self._key_selector is not None
        return self._then(
            ReduceDescriptor(key_selector=self._key_selector, fn=_function(fn, "reduce")), name
        )

    def process(
        self,
        function: KeyedProcessFunction | ProcessFunction | Callable[..., Any],
        *,
        name: str = "KeyedProcess",
    ) -> DataStream:
        """A ``KeyedProcessFunction`` (or a function ``fn(value, ctx)``) per record, with the
        record's key current: keyed state and timers."""
        if isinstance(function, ProcessFunction):
            raise GraphError(
                "process() on a keyed stream needs a KeyedProcessFunction, got a ProcessFunction"
            )
        if not isinstance(function, KeyedProcessFunction):
            _callable(function, "process")
        assert self._key_selector is not None
        return self._then(
            ProcessDescriptor(key_selector=self._key_selector, function=function), name
        )

    def sum(self, position: int, *, name: str = "Sum") -> DataStream:
        """Running sum of field ``position`` of tuple records, per key."""

        def add(a: Any, b: Any) -> Any:
            return (*a[:position], a[position] + b[position], *a[position + 1 :])

        return self.reduce(add, name=name)

    def window(self, window_assigner: WindowAssigner) -> WindowedStream:
        """Windows per key (tumbling, sliding, session and global windows in event or
        processing time: ``TumblingEventTimeWindows.of(5000)``, ...); then ``reduce``,
        ``aggregate``, ``apply`` or ``process``."""
        if not isinstance(window_assigner, WindowAssigner):
            raise GraphError(
                f"window() needs a WindowAssigner, got {type(window_assigner).__name__}"
            )
        return WindowedStream(self, window_assigner)

    def count_window(self, size: int, slide: int | None = None) -> WindowedStream:
        """Count windows per key, as PyFlink's: of ``size`` records, tumbling, or every
        ``slide`` records (0 or None: tumbling)."""
        try:
            assigner: WindowAssigner = (
                CountTumblingWindowAssigner(size)
                if not slide
                else CountSlidingWindowAssigner(size, slide)
            )
        except ValueError as error:
            raise GraphError(f"count_window(): {error}") from None
        return WindowedStream(self, assigner)


class WindowedStream:
    """A keyed stream cut into windows (Flink's ``WindowedStream``): set the ``trigger`` and
    ``allowed_lateness``, then ``reduce``/``aggregate`` (incremental: a window keeps one value)
    or ``apply``/``process`` (a window keeps its records)."""

    def __init__(self, keyed_stream: KeyedStream, window_assigner: WindowAssigner) -> None:
        self._keyed = keyed_stream
        self._assigner = window_assigner
        self._trigger: Trigger | None = None
        self._allowed_lateness = 0
        self._late_data_tag: str | None = None

    def get_execution_environment(self) -> StreamEnvironment:
        """The environment this stream belongs to."""
        return self._keyed.env

    def trigger(self, trigger: Trigger) -> WindowedStream:
        """When windows fire, instead of the assigner's default trigger."""
        if not isinstance(trigger, Trigger):
            raise GraphError(f"trigger() needs a Trigger, got {type(trigger).__name__}")
        self._trigger = trigger
        return self

    def allowed_lateness(self, time_ms: Any) -> WindowedStream:
        """How long (ms, or a ``Time``) an event-time window is kept after the watermark passed
        its end: late records still fire it. Records later than that are dropped."""
        try:
            self._allowed_lateness = millis(time_ms, "allowed_lateness")
        except ValueError as error:
            raise GraphError(str(error)) from None
        return self

    def side_output_late_data(self, output_tag: OutputTag) -> WindowedStream:
        """Records later than the allowed lateness (every window of theirs was cleaned up)
        go to the side output ``output_tag`` instead of being dropped: read them with
        ``get_side_output(output_tag)`` on the windowed result."""
        if not isinstance(output_tag, OutputTag):
            raise GraphError(
                f"side_output_late_data() needs an OutputTag, got {type(output_tag).__name__}"
            )
        self._late_data_tag = output_tag.tag_id
        return self

    def reduce(
        self,
        reduce_function: Any,
        window_function: Any = None,
        output_type: Any = None,
        *,
        name: str | None = None,
    ) -> DataStream:
        """Reduces each window's records incrementally (``reduce(a, b)``, a ``ReduceFunction``
        or a function); the result, or what ``window_function`` (a ``WindowFunction``, a
        ``ProcessWindowFunction`` or a function ``(key, window, [result])``) makes of it, is
        emitted."""
        _function(reduce_function, "reduce")
        return self._build("reduce", reduce_function, window_function, "apply", name)

    def aggregate(
        self,
        aggregate_function: Any,
        window_function: Any = None,
        accumulator_type: Any = None,
        output_type: Any = None,
        *,
        name: str | None = None,
    ) -> DataStream:
        """Aggregates each window's records incrementally with an ``AggregateFunction``
        (``create_accumulator``, ``add``, ``get_result``; ``merge`` for session windows); the
        result, or what ``window_function`` makes of it, is emitted."""
        for method in ("create_accumulator", "add", "get_result"):
            if not callable(getattr(aggregate_function, method, None)):
                raise GraphError(
                    f"aggregate() needs an AggregateFunction, got "
                    f"{type(aggregate_function).__name__} (no {method}())"
                )
        return self._build("aggregate", aggregate_function, window_function, "apply", name)

    def apply(
        self, window_function: Any, output_type: Any = None, *, name: str | None = None
    ) -> DataStream:
        """A ``WindowFunction`` (``apply(key, window, inputs)``, or such a function) over each
        window's records."""
        return self._build("list", None, window_function, "apply", name)

    def process(
        self, process_window_function: Any, output_type: Any = None, *, name: str | None = None
    ) -> DataStream:
        """A ``ProcessWindowFunction`` (``process(key, context, elements)``, or such a
        function) over each window's records; ``context.window()`` is the window."""
        return self._build("list", None, process_window_function, "process", name)

    def _build(
        self,
        contents: str,
        incremental: Any,
        function: Any,
        default_kind: str,
        name: str | None,
    ) -> DataStream:
        kind: str | None = None
        if function is not None:
            if isinstance(function, ProcessWindowFunction):
                kind = "process"
            elif isinstance(function, WindowFunction):
                kind = "apply"
            elif callable(function):
                kind = default_kind
            elif callable(getattr(function, "process", None)):
                kind = "process"
            elif callable(getattr(function, "apply", None)):
                kind = "apply"
            else:
                raise GraphError(
                    f"a window function must be a WindowFunction, a ProcessWindowFunction or "
                    f"a function, got {type(function).__name__}"
                )
        elif contents == "list":
            raise GraphError("apply() and process() need a window function")
        assigner = self._assigner
        keyed = self._keyed
        assert keyed._key_selector is not None
        trigger = self._trigger or assigner.get_default_trigger(keyed.env)
        if isinstance(assigner, MergingWindowAssigner) and not trigger.can_merge():
            raise GraphError(
                f"a session window (merging: {assigner!r}) needs a trigger that can merge; "
                f"{trigger!r} cannot"
            )
        descriptor = WindowDescriptor(
            key_selector=keyed._key_selector,
            assigner=assigner,
            trigger=trigger,
            allowed_lateness=self._allowed_lateness,
            contents=contents,
            incremental=incremental,
            function=function,
            function_kind=kind,
            late_data_tag=self._late_data_tag,
        )
        return keyed._then(descriptor, name or type(assigner).__name__)


class AllWindowedStream(WindowedStream):
    """The whole stream cut into windows (``window_all``): window functions are
    ``AllWindowFunction`` (``apply(window, inputs)``) or ``ProcessAllWindowFunction``
    (``process(context, elements)``), or such plain functions."""

    def _build(
        self,
        contents: str,
        incremental: Any,
        function: Any,
        default_kind: str,
        name: str | None,
    ) -> DataStream:
        try:
            adapted = all_window_function(function, default_kind)
        except TypeError as error:
            raise GraphError(str(error)) from None
        return super()._build(contents, incremental, adapted, default_kind, name)


class ConnectedStreams:
    """Two streams feeding one two-input operator (Flink's ``ConnectedStreams``)."""

    def __init__(self, first: DataStream, second: DataStream) -> None:
        self.first = first
        self.second = second

    @property
    def is_keyed(self) -> bool:
        """Both inputs are keyed streams."""
        return isinstance(self.first, KeyedStream) and isinstance(self.second, KeyedStream)

    def key_by(
        self,
        key_selector1: KeySelector,
        key_selector2: KeySelector,
        *,
        key_hash: KeyHash | None = None,
    ) -> ConnectedStreams:
        """Key both inputs (the two keys must be of one kind: they share keyed state)."""
        return ConnectedStreams(
            self.first.key_by(key_selector1, key_hash=key_hash),
            self.second.key_by(key_selector2, key_hash=key_hash),
        )

    def _then(self, function: Any, name: str) -> DataStream:
        env = self.first.env
        selectors: tuple[Any, Any] | None = None
        if self.is_keyed:
            selectors = (self.first._key_selector, self.second._key_selector)
        elif isinstance(self.first, KeyedStream) or isinstance(self.second, KeyedStream):
            raise GraphError(
                "connect() of a keyed and a non-keyed stream: key both (key_by on each, or "
                "ConnectedStreams.key_by) or neither"
            )
        node = env.graph.add_node(
            CoProcessDescriptor(function=function, key_selectors=selectors), name, parallelism=None
        )
        for index, stream in enumerate((self.first, self.second)):
            for upstream, side_output in zip(stream.nodes, stream._side_outputs, strict=True):
                env.graph.add_edge(
                    upstream.node_id,
                    node.node_id,
                    stream._partitioner,
                    stream._key_selector,
                    explicit=stream._explicit,
                    input_index=index,
                    side_output=side_output,
                )
        return DataStream(env, [node])

    def map(self, func: Any, *, name: str = "Co-Map") -> DataStream:
        """A ``CoMapFunction`` (``map1``/``map2``), or a pair of functions."""
        _co_function(func, ("map1", "map2"), "map")
        return self._then(func, name)

    def flat_map(self, func: Any, *, name: str = "Co-Flat Map") -> DataStream:
        """A ``CoFlatMapFunction`` (``flat_map1``/``flat_map2``)."""
        _co_function(func, ("flat_map1", "flat_map2"), "flat_map")
        return self._then(func, name)

    def process(self, func: Any, *, name: str = "Co-Process") -> DataStream:
        """A ``CoProcessFunction`` or (keyed) ``KeyedCoProcessFunction``."""
        _co_function(func, ("process_element1", "process_element2"), "process")
        if isinstance(func, KeyedCoProcessFunction) and not self.is_keyed:
            raise GraphError("a KeyedCoProcessFunction needs keyed inputs: key_by both streams")
        return self._then(func, name)


class BroadcastStream:
    """A stream broadcast with broadcast state (``DataStream.broadcast(descriptor, ...)``): it
    can only be connected to a stream (``stream.connect(broadcast_stream)``)."""

    def __init__(
        self, stream: DataStream, state_descriptors: tuple[MapStateDescriptor, ...]
    ) -> None:
        self.stream = stream
        self.state_descriptors = state_descriptors

    @property
    def broadcast_state_descriptors(self) -> list[MapStateDescriptor]:
        return list(self.state_descriptors)


class BroadcastConnectedStream:
    """A stream (keyed or not) connected with a ``BroadcastStream``: ``process`` with a
    broadcast process function (Flink's ``BroadcastConnectedStream``)."""

    def __init__(self, stream: DataStream, broadcast_stream: BroadcastStream) -> None:
        self.stream = stream
        self.broadcast_stream = broadcast_stream

    @property
    def is_keyed(self) -> bool:
        return isinstance(self.stream, KeyedStream)

    def process(self, function: Any, *, name: str | None = None) -> DataStream:
        """``process_element`` for each record of the stream (read-only broadcast state; its
        key current when keyed: keyed state and timers), ``process_broadcast_element`` for each
        broadcast record (read-write broadcast state), in every subtask."""
        keyed = self.is_keyed
        if keyed and isinstance(function, BroadcastProcessFunction):
            raise GraphError(
                "a BroadcastProcessFunction needs a non-keyed stream: on a keyed stream use a "
                "KeyedBroadcastProcessFunction"
            )
        if not keyed and isinstance(function, KeyedBroadcastProcessFunction):
            raise GraphError(
                "a KeyedBroadcastProcessFunction needs a keyed stream: key_by() the stream "
                "before connect(), or use a BroadcastProcessFunction"
            )
        methods = ("process_element", "process_broadcast_element")
        if not all(callable(getattr(function, m, None)) for m in methods):
            raise GraphError(
                "BroadcastConnectedStream.process() needs a (Keyed)BroadcastProcessFunction "
                f"(process_element() and process_broadcast_element()), got "
                f"{type(function).__name__}"
            )
        stream, broadcast = self.stream, self.broadcast_stream.stream
        env = stream.env
        default = "Keyed-Co-Process-Broadcast" if keyed else "Co-Process-Broadcast"
        node = env.graph.add_node(
            BroadcastProcessDescriptor(
                function=function,
                state_descriptors=self.broadcast_stream.state_descriptors,
                key_selector=stream._key_selector if keyed else None,
            ),
            name or default,
            parallelism=None,
        )
        for index, upstream_stream in enumerate((stream, broadcast)):
            for upstream, side_output in zip(
                upstream_stream.nodes, upstream_stream._side_outputs, strict=True
            ):
                env.graph.add_edge(
                    upstream.node_id,
                    node.node_id,
                    upstream_stream._partitioner,
                    upstream_stream._key_selector,
                    explicit=upstream_stream._explicit,
                    input_index=index,
                    side_output=side_output,
                )
        return DataStream(env, [node])


def _co_function(func: Any, methods: tuple[str, str], what: str) -> None:
    if isinstance(func, tuple) and what == "map" and len(func) == 2 and all(map(callable, func)):
        return
    if not all(callable(getattr(func, m, None)) for m in methods):
        raise GraphError(
            f"ConnectedStreams.{what}() needs a function object with {methods[0]}() and "
            f"{methods[1]}(), got {type(func).__name__}"
        )


class DataStreamSink:
    """A sink added to a stream (``collect``, ``print``, ``sink_to_file``, ``sink_to``): set its
    parallelism or its uid."""

    def __init__(self, stream: DataStream) -> None:
        self.stream = stream
        self.node = stream.nodes[0]

    @property
    def name(self) -> str:
        """The sink's name (``JobResult.output`` keys collect sinks by it)."""
        return self.node.name

    def set_parallelism(self, parallelism: int) -> DataStreamSink:
        """How many subtasks the sink runs in."""
        self.stream.set_parallelism(parallelism)
        return self

    def uid(self, uid: str) -> DataStreamSink:
        """The sink's stable id (``DataStream.uid``)."""
        self.stream.uid(uid)
        return self


def _function(fn: Any, method: str) -> Any:
    """A plain callable, or a function object with ``method`` (``MapFunction.map``, ...)."""
    if callable(fn) or callable(getattr(fn, method, None)):
        return fn
    raise GraphError(f"{method}() needs a function, got {type(fn).__name__}")


def _callable(fn: Any, what: str) -> Any:
    if not callable(fn):
        raise GraphError(f"{what}() needs a function, got {type(fn).__name__}")
    return fn


def _check_parallelism(name: str, parallelism: int | None) -> None:
    if parallelism is not None and (
        not isinstance(parallelism, int) or isinstance(parallelism, bool) or parallelism < 1
    ):
        raise GraphError(
            f"operator '{name}' has parallelism {parallelism!r}; it must be at least 1"
        )
