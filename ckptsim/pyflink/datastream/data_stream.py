"""``pyflink.datastream.data_stream``: ``DataStream``, ``KeyedStream``, ``DataStreamSink``, ...

Each PyFlink stream wraps a stream of ckptsim's own DataStream API (``runtime.datastream``,
one implementation) and its type information. What the type changes is applied where
PyFlink applies it:

- an operator given an ``output_type`` is followed by a chained conversion to that type
  (``FLOAT`` rounds to 32 bits, ``ROW`` makes a ``Row``, ...), which is switched off at
  ``execute()`` when PyFlink would fuse the next Python operator into the same Python
  function (forward edge, same parallelism, chaining on): then no serializer runs between
  them and the value passes as it is;
- ``print()`` writes Python ``str`` of a stream without type, ``+I[...]`` of a row stream and
  Java's ``toString`` otherwise (``(hi,1)`` for a ``TUPLE``, ``1.0E10`` for a ``DOUBLE``);
- ``key_by`` routes and groups keys by Java's ``hashCode`` of the key as PyFlink hands it to
  Java: ``Row(pickled bytes)``, or ``Row(key as key_type)``.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ckptsim.pyflink._unsupported import CONNECTORS, ignored, missing, unsupported
from ckptsim.pyflink.common.typeinfo import (
    PickledBytesTypeInfo,
    RowTypeInfo,
    TypeInformation,
    collected,
    converter,
    key_hash,
    key_order,
    printed,
)
from ckptsim.pyflink.datastream.functions import (
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
    Partitioner,
    ReduceFunction,
    SinkFunction,
)
from ckptsim.pyflink.datastream.output_tag import OutputTag
from runtime import datastream as ck
from runtime.graph import StreamNode
from runtime.job import JobResult
from runtime.row import Row
from runtime.state import MapStateDescriptor
from runtime.status import JobStatus
from runtime.watermarks import WatermarkStrategy

if TYPE_CHECKING:
    from ckptsim.pyflink.common.execution_config import ExecutionConfig
    from ckptsim.pyflink.common.job_execution_result import JobExecutionResult


class _Environment(Protocol):
    """What a stream needs of its environment (``stream_execution_environment``'s class, which
    imports this module: a protocol here keeps the two modules out of an import circle)."""

    _python_nodes: set[int]
    _converters: dict[int, Converter]
    _partition_taggers: dict[int, PartitionTagger]
    _values_nodes: set[int]
    _timestamp_nodes: dict[int, bool]
    _timestamp_removers: set[int]
    _sink_lines: dict[int, StreamNode]
    _pinned: set[int]
    _key_by_ranks: dict[int, float]
    _forward_fed: list[ForwardFed]

    def _cache(self, node: StreamNode) -> None: ...

    def _runs_in_this_process(self) -> bool: ...

    def _invalidate(self, node: StreamNode) -> None: ...

    def _sink_name(self, base: str) -> str: ...

    def get_config(self) -> ExecutionConfig: ...

    def execute(self, job_name: str | None = None) -> JobExecutionResult: ...

    def _execute(
        self, job_name: str | None, only: int | None = None, **options: Any
    ) -> JobExecutionResult: ...


class Converter:
    """The chained operator that makes values what a type's serializer makes them (a
    ``map_batch`` function); ``active`` is decided at ``execute()``."""

    __slots__ = ("active", "fn")

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn
        self.active = True

    def __call__(self, batch: Sequence[Any]) -> Sequence[Any]:
        if not self.active:
            return batch
        fn = self.fn
        return [fn(v) for v in batch]


class ForwardFed:
    """A Python operator PyFlink puts after a ``union()`` (``key_by``'s and
    ``partition_custom``'s): it runs at the parallelism of the union's first input, and
    PyFlink's Java side connects every input to it by a FORWARD edge, so Flink refuses the job
    when an input runs at another parallelism. ckptsim has no such operator (each input
    routes its records itself); this remembers it for that check at ``execute()``: it is in
    the job when an edge carries ``selector`` (``key_by``) or the job has ``node_id``
    (``partition_custom``'s tagging operator)."""

    __slots__ = ("inputs", "name", "node_id", "selector")

    def __init__(
        self,
        name: str,
        inputs: list[StreamNode],
        *,
        selector: object | None = None,
        node_id: int | None = None,
    ) -> None:
        self.name = name
        self.inputs = [node.node_id for node in inputs]
        self.selector = selector
        self.node_id = node_id


class NullPointerException(Exception):
    """A None record of a typed stream reached Java's print sink: PyFlink hands it to Java as
    null, and the sink's ``record.toString()`` fails the job."""


def _non_null(formatter: Callable[[Any], str]) -> Callable[[Any], str]:
    """``formatter`` as Java's print sink applies ``toString``: a None record fails."""

    def formatted(record: Any) -> str:
        if record is None:
            raise NullPointerException(
                'Cannot invoke "Object.toString()" because "record" is null (a None record of '
                "a typed stream reached Java's print sink)"
            )
        return formatter(record)

    return formatted


class DataStream:
    """A stream: what its operators emit, with its type information (None: pickled)."""

    def __init__(
        self,
        env: _Environment,
        stream: ck.DataStream,
        type_info: TypeInformation | None = None,
        nodes: list[StreamNode] | None = None,
    ) -> None:
        self._env = env
        self._stream = stream
        self._type = type_info
        #: the operators the PyFlink call made (the user's first, then a conversion)
        self._nodes = nodes if nodes is not None else list(stream.nodes)

    # --- building blocks -----------------------------------------------------------------------

    def _derive(
        self,
        stream: ck.DataStream,
        output_type: TypeInformation | None,
        *,
        python: bool = True,
    ) -> DataStream:
        """The stream out of the operator just added to ``stream``: a Python operator (one
        PyFlink may fuse with its predecessor), converted to ``output_type``."""
        node = stream.nodes[0]
        if python:
            self._env._python_nodes.add(node.node_id)
        nodes = [node]
        fn = converter(output_type)
        if fn is not None:
            convert = Converter(fn)
            stream = stream.map_batch(convert, name=f"{node.name} (as {output_type!r})")
            self._env._converters[stream.nodes[0].node_id] = convert
            nodes.append(stream.nodes[0])
        return DataStream(self._env, stream, output_type, nodes)

    def _operator(self) -> StreamNode | None:
        """The operator this stream's attributes set; None for a stream out of a partitioning
        (``rebalance()``, ``union()``, ...), whose name, uid, parallelism and chaining PyFlink
        sets on a transformation that runs no code: here they change nothing."""
        return self._nodes[0] if self._nodes else None

    # --- attributes ----------------------------------------------------------------------------

    def get_name(self) -> str:
        node = self._operator()
        return node.name if node is not None else "Partition"

    def name(self, name: str) -> DataStream:
        node = self._operator()
        if node is not None:
            node.name = name
        return self

    def uid(self, uid: str) -> DataStream:
        node = self._operator()
        if node is not None:
            node.uid = uid
        return self

    def set_uid_hash(self, uid_hash: str) -> DataStream:
        ignored("DataStream.set_uid_hash()", "ckptsim matches state by uid (uid())")
        return self

    def set_parallelism(self, parallelism: int) -> DataStream:
        for node in self._nodes:
            ck._check_parallelism(node.name, parallelism)
            node.parallelism = parallelism
            self._env._pinned.add(node.node_id)
        return self

    def set_max_parallelism(self, max_parallelism: int) -> DataStream:
        ignored(
            "DataStream.set_max_parallelism()",
            "ckptsim has one max parallelism per job (env.set_max_parallelism)",
        )
        return self

    def get_type(self) -> TypeInformation:
        return self._type if self._type is not None else PickledBytesTypeInfo()

    def get_execution_environment(self) -> _Environment:
        return self._env

    def get_execution_config(self) -> ExecutionConfig:
        return self._env.get_config()

    def force_non_parallel(self) -> DataStream:
        self.set_parallelism(1)
        return self

    def set_buffer_timeout(self, timeout_millis: int) -> DataStream:
        ignored("DataStream.set_buffer_timeout()", _BUFFERS)
        return self

    def start_new_chain(self) -> DataStream:
        node = self._operator()
        if node is not None:
            ck.DataStream(self._stream.env, [node]).start_new_chain()
        return self

    def disable_chaining(self) -> DataStream:
        node = self._operator()
        if node is not None:
            node.chainable = False
        return self

    def slot_sharing_group(self, slot_sharing_group: Any) -> DataStream:
        ignored("slot_sharing_group()", "ckptsim runs every task on its own actor")
        return self

    def set_description(self, description: str) -> DataStream:
        return self

    # --- transformations -----------------------------------------------------------------------

    def map(
        self, func: Callable[[Any], Any] | MapFunction, output_type: TypeInformation | None = None
    ) -> DataStream:
        _check(func, MapFunction, "map")
        fn: Any = func
        return self._derive(self._stream.map(fn, name="Map"), output_type)

    def flat_map(
        self,
        func: Callable[[Any], Iterable[Any]] | FlatMapFunction,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        _check(func, FlatMapFunction, "flat_map")
        return self._derive(self._stream.flat_map(_iterable(func), name="FlatMap"), output_type)

    def filter(self, func: Callable[[Any], bool] | FilterFunction) -> DataStream:
        _check(func, FilterFunction, "filter")
        fn: Any = func
        return self._derive(self._stream.filter(fn, name="Filter"), self._type)

    def process(self, func: Any, output_type: TypeInformation | None = None) -> DataStream:
        """A ``ProcessFunction`` over every record."""
        return self._derive(self._stream.process(func, name="PROCESS"), output_type)

    def key_by(
        self, key_selector: Callable[[Any], Any] | Any, key_type: TypeInformation | None = None
    ) -> KeyedStream:
        if not callable(key_selector) and not callable(getattr(key_selector, "get_key", None)):
            raise TypeError(
                "Parameter key_selector should be type of KeySelector or a callable function."
            )
        get_key = key_selector if callable(key_selector) else key_selector.get_key
        convert = converter(key_type)
        selector = get_key if convert is None else _KeyAs(get_key, convert)
        keyed = self._stream.key_by(
            selector, key_hash=key_hash(key_type), key_order=key_order(key_type)
        )
        # PyFlink's key_by operator comes after every operator made so far
        self._env._key_by_ranks[id(keyed._key_selector)] = keyed.env.graph._next_id - 0.5
        if len(self._stream.nodes) > 1:
            self._env._forward_fed.append(
                ForwardFed(KEY_BY_MAP, list(self._stream.nodes), selector=keyed._key_selector)
            )
        return KeyedStream(self._env, keyed, self, key_type)

    def assign_timestamps_and_watermarks(self, watermark_strategy: WatermarkStrategy) -> DataStream:
        """Java's ``Timestamps/Watermarks`` operator. With a Python ``TimestampAssigner``,
        PyFlink makes three (``Extract-Timestamp``, ``Timestamps/Watermarks``,
        ``Remove-Timestamp``) and returns the last one's stream: its name, uid and parallelism
        are set here, while the first two run at the default parallelism. ckptsim runs the
        first two as one operator, and ``Remove-Timestamp`` as one of its own (it passes the
        records on as they are)."""
        unaligned(watermark_strategy)
        stream = self._stream.assign_timestamps_and_watermarks(
            watermark_strategy, name="Timestamps/Watermarks"
        )
        python_assigner = watermark_strategy.assigner is not None
        self._env._timestamp_nodes[stream.nodes[0].node_id] = python_assigner
        if python_assigner:
            stream = stream.map_batch(_same_batch, name="Remove-Timestamp")
            self._env._timestamp_removers.add(stream.nodes[0].node_id)
        return DataStream(self._env, stream, self._type)

    def union(self, *streams: DataStream) -> DataStream:
        return DataStream(
            self._env, self._stream.union(*(s._plain() for s in streams)), self._type, []
        )

    def shuffle(self) -> DataStream:
        return DataStream(self._env, self._stream.shuffle(), self._type, [])

    def rebalance(self) -> DataStream:
        return DataStream(self._env, self._stream.rebalance(), self._type, [])

    def forward(self) -> DataStream:
        return DataStream(self._env, self._stream.forward(), self._type, [])

    def broadcast(
        self,
        broadcast_state_descriptor: MapStateDescriptor | None = None,
        *other_broadcast_state_descriptors: MapStateDescriptor,
    ) -> Any:
        """Every record to every subtask of the next operator; with ``MapStateDescriptor``s, a
        ``BroadcastStream`` to connect a stream with (broadcast state, one map each)."""
        broadcast = DataStream(self._env, self._stream.broadcast(), self._type, [])
        if broadcast_state_descriptor is None:
            return broadcast
        descriptors = [broadcast_state_descriptor, *other_broadcast_state_descriptors]
        for descriptor in descriptors:
            if not isinstance(descriptor, MapStateDescriptor):
                raise TypeError("broadcast_state_descriptor must be MapStateDescriptor")
        return BroadcastStream(broadcast, descriptors)

    def rescale(self) -> DataStream:
        """Each subtask deals its records round-robin to its own subset of the next
        operator's subtasks (Flink's pointwise distribution of the two parallelisms)."""
        return DataStream(self._env, self._stream.rescale(), self._type, [])

    def partition_custom(
        self, partitioner: Partitioner | Callable[[Any, int], int], key_selector: Any
    ) -> DataStream:
        """As PyFlink's: a Python operator at this stream's parallelism tags each record with
        ``partitioner.partition(key, n)`` (``n``: the next operator's parallelism), the edge
        sends it to that subtask, and a Python operator there takes the record back out."""
        if not isinstance(partitioner, Partitioner) and not callable(partitioner):
            raise TypeError(
                "Parameter partitioner should be type of Partitioner or a callable function."
            )
        if not isinstance(key_selector, KeySelector) and not callable(key_selector):
            raise TypeError(
                "Parameter key_selector should be type of KeySelector or a callable function."
            )
        tagger = PartitionTagger(partitioner, key_selector)
        fn: Any = tagger
        tagged = self._plain().map(fn, name=PARTITION_CUSTOM_MAP)
        tagging = tagged.nodes[0]
        upstream = self._operator()
        tagging.parallelism = upstream.parallelism if upstream is not None else None
        if len(self._stream.nodes) > 1:
            self._env._forward_fed.append(
                ForwardFed(PARTITION_CUSTOM_MAP, list(self._stream.nodes), node_id=tagging.node_id)
            )
        self._env._python_nodes.add(tagging.node_id)
        self._env._partition_taggers[tagging.node_id] = tagger
        values = tagged.partition_custom(_id_partition, _partition_of).map(
            _value_of, name=VALUES_OPERATOR
        )
        self._env._python_nodes.add(values.nodes[0].node_id)
        self._env._values_nodes.add(values.nodes[0].node_id)
        return DataStream(self._env, values, self._type)

    def project(self, *field_indexes: int) -> DataStream:
        from ckptsim.pyflink.common.typeinfo import TupleTypeInfo  # noqa: PLC0415

        if not isinstance(self._type, TupleTypeInfo):
            raise Exception("project() only supports tuple type inputs")
        types = self._type.get_field_types()
        output = TupleTypeInfo([types[i] for i in field_indexes])
        return self.map(lambda v: tuple(v[i] for i in field_indexes), output_type=output)

    def connect(self, ds: DataStream | BroadcastStream) -> Any:
        """Two streams (``ConnectedStreams``), or this stream and a ``BroadcastStream``
        (``BroadcastConnectedStream``)."""
        if isinstance(ds, BroadcastStream):
            return BroadcastConnectedStream(self, ds, ds.broadcast_state_descriptors)
        return ConnectedStreams(self, ds)

    def window_all(self, window_assigner: Any) -> Any:
        return all_windowed(self, window_assigner)

    def _plain(self) -> ck.DataStream:
        """The ckptsim stream of this stream's records."""
        return self._stream

    # --- sinks ---------------------------------------------------------------------------------

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        """As Flink's print sink: ``N> `` prefixes above parallelism 1, ``id:N> `` / ``id> ``
        with a sink identifier; the records as PyFlink hands them to Java's print sink."""
        name = self._env._sink_name("Print to Std. Out")
        fn = printed(self._type)
        if self._type is None or isinstance(self._type, PickledBytesTypeInfo | RowTypeInfo):
            # PyFlink's _align_output_type: a pickled stream goes to Java as str, a row
            # stream as +I[...], both by a Python map before the sink
            out = self._aligned(fn)._plain().print(name, identifier=sink_identifier)
        else:  # Java's objects: the print sink writes their toString itself
            out = self._plain().print(name, identifier=sink_identifier, formatter=_non_null(fn))
        out.node.flink_name = "Sink: Print to Std. Out"  # Flink's name, also for the 2nd, 3rd...
        return DataStreamSink(out, self._env)

    def _aligned(self, fn: Any) -> DataStream:
        mapped = self._plain().map(fn, name="Map")
        self._env._python_nodes.add(mapped.nodes[0].node_id)
        return DataStream(self._env, mapped, None)

    def sink_to(self, sink: Any) -> DataStreamSink:
        from ckptsim.pyflink.datastream.connectors.file_system import FileSink  # noqa: PLC0415

        if not isinstance(sink, FileSink):
            unsupported(f"sink_to({type(sink).__name__})", CONNECTORS)
        return DataStreamSink(sink._attach(self), self._env)

    def add_sink(self, sink_func: SinkFunction) -> DataStreamSink:
        """Flink's ``PrintSinkFunction`` (each record's ``toString``, after ``N> `` above
        parallelism 1) or ``DiscardingSink``, as PyFlink's ``SinkFunction`` names them; the
        sink is named ``Unnamed`` (Flink's name for a sink function's sink)."""
        if not isinstance(sink_func, SinkFunction):
            unsupported(f"add_sink({type(sink_func).__name__}) (a Java SinkFunction)", CONNECTORS)
        name = self._env._sink_name("Unnamed")
        if sink_func.kind == "print":
            formatter = printed(self._type)
            if self._type is not None and not isinstance(self._type, PickledBytesTypeInfo):
                formatter = _non_null(formatter)
            out = self._plain().print(name, formatter=formatter)
        else:
            out = self._plain().sink_to(_Discarding, name=name)
        return DataStreamSink(out, self._env)

    def execute_and_collect(
        self, job_execution_name: str | None = None, limit: int | None = None
    ) -> Any:
        """Runs the job now and returns its records (the first ``limit`` in a list, as
        PyFlink, else an iterator over all), as PyFlink reads them back from Java (a ``FLOAT``
        as Java prints it: 0.1, not 0.10000000149011612). Flink's collect sink runs at
        parallelism 1: what a parallelism-1 operator emits comes back in its order."""
        if limit is not None and limit <= 0:  # Flink's check, before anything runs
            raise ValueError("Limit must be greater than 0")
        name = self._env._sink_name("collect")
        job_name = job_execution_name or "Flink Streaming Job"
        # Flink 2.3's job is the collected stream and what it reads from; the program's other
        # sinks built since the last execute() are dropped (checked on Flink)
        if limit is None or not self._env._runs_in_this_process():
            # (on TaskManager processes the job runs to its end, and the first ``limit`` of
            # its records are taken)
            sink = self._plain().collect(name).set_parallelism(1)
            result = self._env._execute(job_name, sink.node.node_id)
            records = list(result.job_result.output.get(name, []))[:limit]
        else:  # Flink's client cancels the job once it has its records
            taker = _Taker(limit)
            sink = self._plain().sink_to(taker, name=name).set_parallelism(1)
            self._env._execute(job_name, sink.node.node_id, observer=taker)
            records = taker.taken[:limit]
        as_collected = collected(self._type)
        if as_collected is not None:
            records = [as_collected(r) for r in records]
        return records if limit is not None else CloseableIterator(records)

    def get_side_output(self, output_tag: OutputTag) -> DataStream:
        """The records the operator emitted to the side output ``output_tag`` (``yield
        output_tag, value``; late records of a window after ``side_output_late_data``), as
        PyFlink reads them: through a map to the tag's type."""
        node = self._operator()
        if node is None:
            raise TypeError(
                "get_side_output() needs the stream an operator emits, not a union, a "
                "repartitioned or a keyed stream"
            )
        side = ck.DataStream(self._stream.env, [node]).get_side_output(output_tag)
        return DataStream(self._env, side, None, []).map(
            _identity, output_type=output_tag.type_info
        )

    def cache(self) -> CachedDataStream:
        """The stream's records are kept when a BATCH job first computes them; later jobs of
        this environment read them from there instead of computing them again."""
        if len(self._stream.nodes) != 1:
            unsupported(
                "cache() of a union or of a repartitioned stream",
                "cache the stream an operator produced (e.g. after a map)",
            )
        self._env._cache(self._stream.nodes[0])
        return CachedDataStream(self._env, self._stream, self._type, self._nodes)


class _Taker:
    """``execute_and_collect(limit=n)``'s sink (at parallelism 1) and the job's observer: the
    records it has, committed as the collect sink commits them (at a checkpoint's completion,
    or as they come without checkpointing; what a restore does not hold is dropped), and once
    it has ``limit`` of them it cancels the job, as Flink's client does: a job that would not
    end (an unbounded source) ends there."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.taken: list[Any] = []
        #: checkpoint id -> the records of its transaction (pre-committed, not yet committed)
        self.pending: dict[int, list[Any]] = {}
        self.cancelled = False
        self._master: Any = None
        self._lock = threading.Lock()

    def __call__(self, *, transactional: bool, attempt: int = 0, **_: Any) -> _TakerConnector:
        return _TakerConnector(self, transactional, restarted=attempt > 0)

    def publish(self, records: Sequence[Any]) -> None:
        with self._lock:
            self.taken.extend(records)
            cancel = len(self.taken) >= self.limit and not self.cancelled
            if cancel:
                self.cancelled = True
            master = self._master
        if cancel and master is not None:
            _cancel(master)

    def commit(self, up_to: int | None) -> None:
        for checkpoint_id in sorted(self.pending):
            if up_to is None or checkpoint_id <= up_to:
                self.publish(self.pending.pop(checkpoint_id))

    def job_started(self, *, master: Any, **_: Any) -> None:
        """As the job's observer (with the command line's, under ``ckptsim run``)."""
        with self._lock:
            self._master = master
            early = self.cancelled  # the limit was reached before the job was announced
        if early:
            _cancel(master)

    def job_ended(self, job_id: str, result: JobResult) -> None:
        if self.cancelled and result.status is JobStatus.CANCELED:
            result.cancelled_by_program = True
            result.failure = (
                f"cancelled by execute_and_collect(limit={self.limit}) once it had its "
                "records, as Flink's client cancels it"
            )


def _cancel(master: Any) -> None:
    """Cancel the job of JobMaster ``master``, as a client's cancel does."""
    from actors.protocol import CancelJob  # noqa: PLC0415

    master.tell(CancelJob())


class _TakerConnector:
    """One attempt of the ``_Taker``'s sink: without checkpointing each record counts as it
    comes; with it, a checkpoint's records count when it completes."""

    def __init__(self, taker: _Taker, transactional: bool, *, restarted: bool) -> None:
        self.taker = taker
        self.transactional = transactional
        self.staged: list[Any] = []
        #: a restarted attempt that no restore reached starts from scratch: what earlier
        #: attempts pre-committed is written again
        self._from_scratch = restarted

    def _start(self) -> None:
        if self._from_scratch:
            self._from_scratch = False
            self.taker.pending.clear()

    def write(self, records: Any) -> None:
        self._start()
        if self.transactional:
            self.staged.extend(records)
        else:
            self.taker.publish(list(records))

    def pre_commit(self, checkpoint_id: int) -> None:
        self._start()
        self.taker.pending[checkpoint_id] = self.staged
        self.staged = []

    def commit(self, checkpoint_id: int) -> None:
        self.taker.commit(checkpoint_id)

    def restore(self, states: list[Any]) -> None:
        self._from_scratch = False
        held = {int(i) for state in states for i in (state or {}).get("pending", [])}
        for checkpoint_id in [i for i in self.taker.pending if i not in held]:
            del self.taker.pending[checkpoint_id]  # the replay writes these again
        self.taker.commit(max(held, default=None))

    def close(self, *, finished: bool) -> None:
        if finished:  # what is left is committed
            self._start()
            self.taker.commit(None)
            self.taker.publish(self.staged)
        self.staged = []


class CloseableIterator(Iterator[Any]):
    """The records ``execute_and_collect`` gathered."""

    def __init__(self, records: Sequence[Any]) -> None:
        self._records = iter(records)

    def __next__(self) -> Any:
        return next(self._records)

    def next(self) -> Any:
        return next(self._records)

    def close(self) -> None:
        self._records = iter(())

    def __enter__(self) -> CloseableIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CachedDataStream(DataStream):
    """A stream whose records a BATCH job keeps for later jobs (``DataStream.cache()``)."""

    def invalidate(self) -> None:
        """Drop the kept records: a later job computes the stream again."""
        self._env._invalidate(self._stream.nodes[0])


class KeyedStream(DataStream):
    """A stream partitioned by key: reduce, keyed process functions, windows."""

    def __init__(
        self,
        env: _Environment,
        keyed: ck.KeyedStream,
        origin: DataStream,
        key_type: TypeInformation | None,
    ) -> None:
        super().__init__(env, keyed, origin._type, [])
        self._keyed = keyed
        self._origin = origin
        self._key_type = key_type

    def _plain(self) -> ck.DataStream:
        # the records, still hash-partitioned by key: PyFlink's keyed map out of the keyed
        # stream, at the parallelism of the operator it feeds
        plain = self._keyed.map(_identity, name=VALUES_OPERATOR)
        self._env._values_nodes.add(plain.nodes[0].node_id)
        return plain

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        """As PyFlink's ``KeyedStream.print``: the records out of the keyed stream, printed
        without the sink identifier (PyFlink does not pass it on)."""
        return self._values().print()

    def add_sink(self, sink_func: SinkFunction) -> DataStreamSink:
        return self._values().add_sink(sink_func)

    def rescale(self) -> DataStream:
        raise Exception("Cannot override partitioning for KeyedStream.")

    def partition_custom(self, partitioner: Any, key_selector: Any) -> DataStream:
        raise Exception("Cannot override partitioning for KeyedStream.")

    def cache(self) -> CachedDataStream:
        raise Exception("Cache for KeyedStream is not supported.")

    # keyed streams take no operator attributes (PyFlink raises the same)
    def set_parallelism(self, parallelism: int) -> DataStream:
        raise Exception("Set parallelism for KeyedStream is not supported.")

    def name(self, name: str) -> DataStream:
        raise Exception("Set name for KeyedStream is not supported.")

    def get_name(self) -> str:
        raise Exception("Get name of KeyedStream is not supported.")

    def uid(self, uid: str) -> DataStream:
        raise Exception("Set uid for KeyedStream is not supported.")

    def set_max_parallelism(self, max_parallelism: int) -> DataStream:
        raise Exception("Set max parallelism for KeyedStream is not supported.")

    def start_new_chain(self) -> DataStream:
        raise Exception("Start new chain for KeyedStream is not supported.")

    def disable_chaining(self) -> DataStream:
        raise Exception("Disable chaining for KeyedStream is not supported.")

    def force_non_parallel(self) -> DataStream:
        raise Exception("Set force non-parallel for KeyedStream is not supported.")

    # --- keyed transformations -----------------------------------------------------------------

    def _keyed_process(
        self, function: Any, output_type: TypeInformation | None, name: str
    ) -> DataStream:
        stream = self._keyed.process(function, name=name)
        return self._derive(stream, output_type, python=False)

    def map(
        self, func: Callable[[Any], Any] | MapFunction, output_type: TypeInformation | None = None
    ) -> DataStream:
        _check(func, MapFunction, "map")
        return self._keyed_process(_KeyedAdapter(func, "map"), output_type, "Map")

    def flat_map(
        self,
        func: Callable[[Any], Iterable[Any]] | FlatMapFunction,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        _check(func, FlatMapFunction, "flat_map")
        return self._keyed_process(_KeyedAdapter(func, "flat_map"), output_type, "FlatMap")

    def filter(self, func: Callable[[Any], bool] | FilterFunction) -> DataStream:
        _check(func, FilterFunction, "filter")
        return self._keyed_process(_KeyedAdapter(func, "filter"), self._type, "Filter")

    def process(self, func: Any, output_type: TypeInformation | None = None) -> DataStream:
        if not isinstance(func, KeyedProcessFunction):
            raise TypeError("KeyedProcessFunction is required for KeyedStream.")
        return self._keyed_process(func, output_type, "KEYED PROCESS")

    def reduce(self, func: Callable[[Any, Any], Any] | ReduceFunction) -> DataStream:
        """Reduce per key; the output has the input's type (as PyFlink)."""
        _check(func, ReduceFunction, "reduce")
        fn: Any = func
        stream = self._keyed.reduce(fn, name="Reduce")
        return self._derive(stream, self._type, python=False)

    def sum(self, position_to_sum: int | str = 0) -> DataStream:
        return self.reduce(_Accumulate(position_to_sum, "sum"))

    def min(self, position_to_min: int | str = 0) -> DataStream:
        return self.reduce(_Accumulate(position_to_min, "min"))

    def max(self, position_to_max: int | str = 0) -> DataStream:
        return self.reduce(_Accumulate(position_to_max, "max"))

    def min_by(self, position_to_min_by: int | str = 0) -> DataStream:
        return self.reduce(_Accumulate(position_to_min_by, "min_by"))

    def max_by(self, position_to_max_by: int | str = 0) -> DataStream:
        return self.reduce(_Accumulate(position_to_max_by, "max_by"))

    def window(self, window_assigner: Any) -> Any:
        return windowed(self, window_assigner)

    def count_window(self, size: int, slide: int = 0) -> Any:
        return count_windowed(self, size, slide)

    def key_by(self, key_selector: Any, key_type: TypeInformation | None = None) -> KeyedStream:
        return self._origin.key_by(key_selector, key_type)

    def union(self, *streams: DataStream) -> DataStream:
        return DataStream(self._env, self._plain(), self._type).union(*streams)

    def connect(self, ds: DataStream | BroadcastStream) -> Any:
        if isinstance(ds, BroadcastStream):
            return BroadcastConnectedStream(self, ds, ds.broadcast_state_descriptors)
        return ConnectedStreams(self, ds)

    def _values(self) -> DataStream:
        return DataStream(self._env, self._plain(), self._type)

    def shuffle(self) -> DataStream:
        return self._values().shuffle()

    def rebalance(self) -> DataStream:
        return self._values().rebalance()

    def forward(self) -> DataStream:
        return self._values().forward()

    def broadcast(
        self,
        broadcast_state_descriptor: MapStateDescriptor | None = None,
        *other_broadcast_state_descriptors: MapStateDescriptor,
    ) -> Any:
        return self._values().broadcast(
            broadcast_state_descriptor, *other_broadcast_state_descriptors
        )

    def project(self, *field_indexes: int) -> DataStream:
        return self._values().project(*field_indexes)


class DataStreamSink:
    """A sink: its name, uid and parallelism."""

    def __init__(self, sink: ck.DataStreamSink, env: _Environment) -> None:
        self._sink = sink
        self._env = env

    def name(self, name: str) -> DataStreamSink:
        self._sink.node.name = name
        return self

    def uid(self, uid: str) -> DataStreamSink:
        self._sink.uid(uid)
        return self

    def set_uid_hash(self, uid_hash: str) -> DataStreamSink:
        ignored("DataStreamSink.set_uid_hash()", "ckptsim matches state by uid (uid())")
        return self

    def set_parallelism(self, parallelism: int) -> DataStreamSink:
        self._sink.set_parallelism(parallelism)
        self._env._pinned.add(self._sink.node.node_id)
        lines = self._env._sink_lines.get(self._sink.node.node_id)
        if lines is not None:  # part of the sink in Flink (its writer's encoder)
            lines.parallelism = parallelism
        return self

    def set_description(self, description: str) -> DataStreamSink:
        return self

    def disable_chaining(self) -> DataStreamSink:
        self._sink.node.chainable = False
        return self

    def slot_sharing_group(self, slot_sharing_group: Any) -> DataStreamSink:
        ignored("slot_sharing_group()", "ckptsim runs every task on its own actor")
        return self


# --- helpers ---------------------------------------------------------------------------------

_BUFFERS = "every task flushes by the environment's execution.buffer-timeout.* settings"


class ConnectedStreams:
    """Two streams, each keeping its type: co-map, co-flat-map and co-process functions
    (keyed when both inputs are keyed)."""

    def __init__(self, stream1: DataStream, stream2: DataStream) -> None:
        self.stream1 = stream1
        self.stream2 = stream2

    def key_by(
        self, key_selector1: Any, key_selector2: Any, key_type: TypeInformation | None = None
    ) -> ConnectedStreams:
        first = self.stream1._origin if isinstance(self.stream1, KeyedStream) else self.stream1
        second = self.stream2._origin if isinstance(self.stream2, KeyedStream) else self.stream2
        return ConnectedStreams(
            first.key_by(key_selector1, key_type), second.key_by(key_selector2, key_type)
        )

    def _connected(self) -> ck.ConnectedStreams:
        return ck.ConnectedStreams(self.stream1._stream, self.stream2._stream)

    def _keyed(self) -> bool:
        return isinstance(self.stream1, KeyedStream) and isinstance(self.stream2, KeyedStream)

    def _derive(self, stream: ck.DataStream, output_type: TypeInformation | None) -> DataStream:
        return self.stream1._derive(stream, output_type, python=False)

    def map(self, func: CoMapFunction, output_type: TypeInformation | None = None) -> DataStream:
        if not isinstance(func, CoMapFunction):
            raise TypeError("The input function must be a CoMapFunction!")
        return self._derive(self._connected().map(func, name="Co-Map"), output_type)

    def flat_map(
        self, func: CoFlatMapFunction, output_type: TypeInformation | None = None
    ) -> DataStream:
        if not isinstance(func, CoFlatMapFunction):
            raise TypeError("The input must be a CoFlatMapFunction!")
        adapter = _CoFlatMapAdapter(func)
        return self._derive(self._connected().flat_map(adapter, name="Co-Flat Map"), output_type)

    def process(
        self,
        func: CoProcessFunction | KeyedCoProcessFunction,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        if not isinstance(func, CoProcessFunction | KeyedCoProcessFunction):
            raise TypeError("The input must be a CoProcessFunction or KeyedCoProcessFunction!")
        name = "Keyed Co-Process" if self._keyed() else "Co-Process"
        return self._derive(self._connected().process(func, name=name), output_type)


class BroadcastStream:
    """A stream broadcast with broadcast state (``DataStream.broadcast(MapStateDescriptor,
    ...)``): it can only be connected to a stream."""

    def __init__(
        self, input_stream: DataStream, broadcast_state_descriptors: list[MapStateDescriptor]
    ) -> None:
        self.input_stream = input_stream
        self.broadcast_state_descriptors = broadcast_state_descriptors


class BroadcastConnectedStream:
    """A keyed or non-keyed stream connected with a ``BroadcastStream``: ``process`` with a
    ``BroadcastProcessFunction`` or ``KeyedBroadcastProcessFunction``."""

    def __init__(
        self,
        non_broadcast_stream: DataStream,
        broadcast_stream: BroadcastStream,
        broadcast_state_descriptors: list[MapStateDescriptor],
    ) -> None:
        self.non_broadcast_stream = non_broadcast_stream
        self.broadcast_stream = broadcast_stream
        self.broadcast_state_descriptors = broadcast_state_descriptors

    def _is_keyed_stream(self) -> bool:
        return isinstance(self.non_broadcast_stream, KeyedStream)

    def process(
        self,
        func: BroadcastProcessFunction | KeyedBroadcastProcessFunction,
        output_type: TypeInformation | list[Any] | None = None,
    ) -> DataStream:
        keyed = self._is_keyed_stream()
        if isinstance(func, BroadcastProcessFunction) and keyed:
            raise TypeError("BroadcastProcessFunction should be applied to non-keyed DataStream")
        if isinstance(func, KeyedBroadcastProcessFunction) and not keyed:
            raise TypeError("KeyedBroadcastProcessFunction should be applied to keyed DataStream")
        if isinstance(output_type, list):
            output_type = RowTypeInfo(output_type)
        elif output_type is not None and not isinstance(output_type, TypeInformation):
            raise TypeError("output_type must be None, list or TypeInformation")
        broadcast = ck.BroadcastStream(
            self.broadcast_stream.input_stream._stream, tuple(self.broadcast_state_descriptors)
        )
        name = "Keyed-Co-Process-Broadcast" if keyed else "Co-Process-Broadcast"
        stream = ck.BroadcastConnectedStream(self.non_broadcast_stream._stream, broadcast).process(
            func, name=name
        )
        # PyFlink gives the operator the environment's parallelism of the moment: a parallelism
        # set by the program (BATCH mode's scheduler keeps it)
        node = stream.nodes[0]
        node.parallelism = stream.env.parallelism
        self.non_broadcast_stream._env._pinned.add(node.node_id)
        return self.non_broadcast_stream._derive(stream, output_type, python=False)


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

    def side_output_late_data(self, output_tag: OutputTag) -> WindowedStream:
        """Records later than the allowed lateness go to the side output ``output_tag`` (read
        it with ``get_side_output`` on the window's result) instead of being dropped."""
        self._windowed = self._windowed.side_output_late_data(output_tag)
        return self

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
    return WindowedStream(stream, stream._keyed.window(assigner))


def count_windowed(stream: KeyedStream, size: int, slide: int) -> WindowedStream:
    keyed = stream._keyed
    return WindowedStream(
        stream, keyed.count_window(size, slide) if slide else keyed.count_window(size)
    )


def all_windowed(stream: DataStream, assigner: Any) -> AllWindowedStream:
    """PyFlink keys the stream by ``NullByteKeySelector`` (the key ``0``, pickled, as no key
    type is given): the key group of that key decides the subtask that gets every record."""
    windowed = stream._stream.window_all(assigner, key_hash=key_hash(None))
    return AllWindowedStream(stream, windowed)  # type: ignore[arg-type]


def _check(func: Any, kind: type, method: str) -> None:
    if not isinstance(func, kind) and not callable(func):
        raise TypeError(f"The input must be a {kind.__name__} or a callable function")


def _identity(value: Any) -> Any:
    return value


def _same_batch(batch: Sequence[Any]) -> Sequence[Any]:
    """``Remove-Timestamp``: the records as they come (the timestamp they carry stays)."""
    return batch


def _iterable(func: Any) -> Any:
    """``flat_map``'s function: PyFlink takes a generator or any iterable; None emits nothing."""
    if isinstance(func, Function):
        return func
    return _FlatMapCallable(func)


class _FlatMapCallable:
    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[Any], Iterable[Any] | None]) -> None:
        self.fn = fn

    def __call__(self, value: Any) -> Iterable[Any]:
        produced = self.fn(value)
        return () if produced is None else produced


class _KeyAs:
    """A key selector whose keys become what ``key_type``'s serializer makes them."""

    __slots__ = ("convert", "fn")

    def __init__(self, fn: Callable[[Any], Any], convert: Callable[[Any], Any]) -> None:
        self.fn = fn
        self.convert = convert

    def __call__(self, value: Any) -> Any:
        return self.convert(self.fn(value))


class _KeyedAdapter(KeyedProcessFunction):
    """map / flat_map / filter on a keyed stream: a keyed process function (as PyFlink does),
    so that the function's ``open`` gets a runtime context with keyed state."""

    def __init__(self, func: Any, method: str) -> None:
        self.func = func
        self.method = method
        self.call: Callable[[Any], Any] = (
            getattr(func, method) if isinstance(func, Function) else func
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> _KeyedAdapter:
        return _KeyedAdapter(copy.deepcopy(self.func, memo), self.method)

    def open(self, runtime_context: Any) -> None:
        if isinstance(self.func, Function):
            self.func.open(runtime_context)

    def close(self) -> None:
        if isinstance(self.func, Function):
            self.func.close()

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        if self.method == "map":
            return (self.call(value),)
        if self.method == "filter":
            return (value,) if self.call(value) else ()
        produced = self.call(value)
        if produced is None:  # PyFlink's adapter does ``yield from`` it: a TypeError
            raise TypeError(
                f"flat_map returned None for the record {value!r}; return an iterable of the "
                "records to emit (an empty list emits none)"
            )
        return produced


class _CoFlatMapAdapter(CoFlatMapFunction):
    """``ConnectedStreams.flat_map`` as PyFlink runs it: a call's result is emitted only if
    it is truthy (``if result: yield from result``), so ``flat_map1``/``flat_map2`` may return
    None (or another empty value) for nothing."""

    def __init__(self, func: CoFlatMapFunction) -> None:
        self.func = func

    def __deepcopy__(self, memo: dict[int, Any]) -> _CoFlatMapAdapter:
        return _CoFlatMapAdapter(copy.deepcopy(self.func, memo))

    def open(self, runtime_context: Any) -> None:
        self.func.open(runtime_context)

    def close(self) -> None:
        self.func.close()

    def flat_map1(self, value: Any) -> Iterable[Any]:
        produced = self.func.flat_map1(value)
        return produced if produced else ()

    def flat_map2(self, value: Any) -> Iterable[Any]:
        produced = self.func.flat_map2(value)
        return produced if produced else ()


class _Accumulate(ReduceFunction):
    """``sum`` / ``min`` / ``max`` / ``min_by`` / ``max_by`` of a field (PyFlink's rules: a
    tuple gives a new tuple, a list or ``Row`` the updated value, a plain value the value)."""

    def __init__(self, position: int | str, kind: str) -> None:
        if not isinstance(position, int | str):
            raise TypeError(
                "The field position must be of int or str type to locate the value to "
                f"calculate for min, max, min_by, max_by and sum.The given type is: {type(position)}"
            )
        self.position = position
        self.kind = kind

    def reduce(self, value1: Any, value2: Any) -> Any:
        pos, kind = self.position, self.kind
        fielded = isinstance(value2, tuple | list | Row)
        if kind in ("min_by", "max_by"):
            a, b = (value1[pos], value2[pos]) if fielded else (value1, value2)
            better = b < a if kind == "min_by" else b > a
            return value2 if better else value1
        if not fielded:
            if pos != 0:
                raise TypeError(
                    f"The {pos} field selected on a basic type. A field expression on a basic "
                    "type can only select the 0th field (which means selecting the entire "
                    "basic type)."
                )
            return _combine(kind, value1, value2)
        combined = _combine(kind, value1[pos], value2[pos])
        if isinstance(value2, tuple):
            items = list(value1)
            items[pos] = combined  # type: ignore[index]
            return tuple(items)
        result = copy.copy(value1)  # a new record: the one emitted before stays as it was
        result[pos] = combined
        return result


def _combine(kind: str, a: Any, b: Any) -> Any:
    if kind == "sum":
        return a + b
    if kind == "min":
        return b if b < a else a
    return b if b > a else a


def unaligned(strategy: WatermarkStrategy) -> None:
    """Say once that watermark alignment on a strategy assigned in the middle of a stream
    changes nothing (only a source's strategy, ``from_source``'s, pauses its source)."""
    if strategy.alignment is not None:
        ignored(
            "assign_timestamps_and_watermarks(...with_watermark_alignment())",
            "only sources pause for their alignment group (FLIP-182): give the strategy to "
            "from_source()",
        )


#: PyFlink's names of the Python operators around a custom partitioning and out of a keyed
#: stream (``PythonConfigUtil``'s)
PARTITION_CUSTOM_MAP = "_partition_custom_map_operator"
KEY_BY_MAP = "_stream_key_by_map_operator"
VALUES_OPERATOR = "_keyed_stream_values_operator"


class PartitionTagger(MapFunction):
    """``partition_custom``'s first operator: ``(partition, record)``, the partition from the
    user's partitioner and key selector (opened and closed with it); ``num_partitions`` is the
    parallelism of the operator the edge feeds, set when the job is built (PyFlink sets it
    then too)."""

    def __init__(self, partitioner: Any, key_selector: Any) -> None:
        self.partitioner = partitioner
        self.key_selector = key_selector
        self.num_partitions = -1

    def open(self, runtime_context: Any) -> None:
        for function in (self.partitioner, self.key_selector):
            if isinstance(function, Function):
                function.open(runtime_context)
        if self.num_partitions <= 0:
            raise ValueError(
                f"The partition number should be a positive value, got {self.num_partitions}"
            )

    def close(self) -> None:
        for function in (self.partitioner, self.key_selector):
            if isinstance(function, Function):
                function.close()

    def map(self, value: Any) -> Any:
        partition = getattr(self.partitioner, "partition", self.partitioner)
        get_key = getattr(self.key_selector, "get_key", self.key_selector)
        return (partition(get_key(value), self.num_partitions), value)


def _id_partition(partition: int, num_partitions: int) -> int:
    return partition


def _partition_of(tagged: tuple[int, Any]) -> int:
    return tagged[0]


def _value_of(tagged: tuple[int, Any]) -> Any:
    return tagged[1]


class _Discarding:
    """Flink's ``DiscardingSink``: every record is dropped."""

    def __init__(self, **context: Any) -> None:
        pass

    def write(self, records: Any) -> None:
        pass

    def pre_commit(self, checkpoint_id: int) -> None:
        pass

    def commit(self, checkpoint_id: int) -> None:
        pass

    def restore(self, states: list[Any]) -> None:
        pass

    def close(self, *, finished: bool) -> None:
        pass


__getattr__ = missing("pyflink.datastream.data_stream")

__all__ = [
    "AllWindowedStream",
    "BroadcastConnectedStream",
    "BroadcastStream",
    "CachedDataStream",
    "CloseableIterator",
    "ConnectedStreams",
    "DataStream",
    "DataStreamSink",
    "KeyedStream",
    "WindowedStream",
]
