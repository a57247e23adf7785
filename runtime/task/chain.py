"""``OperatorChain``: the operators one task runs, one call per buffer (Flink's
``OperatorChain``).

The chain is built from the typed descriptors of its job vertex; each subtask gets its own
operator objects (and its own copy of a stateful process function). Every call into user code
(functions, key selectors, the source reader, a process function's ``open``) is wrapped per
buffer in ``_UserCode``: an exception there is re-raised as ``UserCodeError`` naming the
operator as the user knows it (``map 'Map' (map-2)``, ``key_by selector of reduce-3``); nothing
else is caught, so a bug of ckptsim keeps its own exception and traceback.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import replace
from operator import length_hint
from types import TracebackType
from typing import Any, assert_never

from runtime.descriptors import (
    BroadcastProcessDescriptor,
    CoProcessDescriptor,
    FilterDescriptor,
    FlatMapDescriptor,
    MapBatchDescriptor,
    MapDescriptor,
    NonKeyedProcessDescriptor,
    ProcessDescriptor,
    ReduceDescriptor,
    SinkDescriptor,
    SourceDescriptor,
    TimestampsDescriptor,
    WindowDescriptor,
)
from runtime.effects import TaskEffect
from runtime.failure import UserCodeError
from runtime.functions import KeyedProcessFunction
from runtime.graph import StreamNode
from runtime.metrics import JsonDict, Meter, MetricGroup
from runtime.network import WatermarkStatus
from runtime.operators import (
    BroadcastProcessOperator,
    CoProcessOperator,
    FilterOperator,
    FlatMapOperator,
    GeneratorReader,
    KeyedBroadcastProcessOperator,
    KeyedCoProcessOperator,
    KeyedOperator,
    MapBatchOperator,
    MapOperator,
    NonKeyedProcessOperator,
    Operator,
    OperatorContext,
    ProcessOperator,
    ReduceOperator,
    SideOutputs,
    SourceOperator,
    TimestampsAndWatermarksOperator,
    TwoInputOperator,
    cursor,
    generate_mapped,
    knows_its_pace,
    next_ready_for,
    raised_by_generator,
)
from runtime.task.sinks import SinkOperator
from runtime.windows import WindowOperator

#: operators whose output, chained after a source, is seen only once it leaves the task
_UNSEEN_UNTIL_SENT: frozenset[type] = frozenset(
    {
        MapOperator,
        FilterOperator,
        FlatMapOperator,
        MapBatchOperator,
        TimestampsAndWatermarksOperator,
    }
)

#: what leaves a chain on a watermark or a timer: records with their timestamps, or the
#: watermark itself (an int)
ChainOutput = tuple[Sequence[Any], Sequence[int | None] | None] | int | WatermarkStatus


def make_operator(
    node: StreamNode, *, checkpointing: bool, task: str = "", writer_id: str | None = None
) -> Operator:
    """The runtime operator of one declared operator, for one subtask (``writer_id``: a sink's
    writer, which names its part files)."""
    op = _make_operator(node, checkpointing=checkpointing, task=task, writer_id=writer_id)
    if node.timers_in_rounds:
        op.timers_in_rounds = True
    return op


def _make_operator(
    node: StreamNode, *, checkpointing: bool, task: str, writer_id: str | None
) -> Operator:
    match node.operator:
        case SourceDescriptor(reader=reader):
            return SourceOperator(node.uid, node.name, reader)
        case MapDescriptor(fn=fn):
            return MapOperator(node.uid, node.name, fn)
        case MapBatchDescriptor(fn=fn):
            return MapBatchOperator(node.uid, node.name, fn)
        case FilterDescriptor(fn=fn):
            return FilterOperator(node.uid, node.name, fn)
        case FlatMapDescriptor(fn=fn):
            return FlatMapOperator(node.uid, node.name, fn)
        case ReduceDescriptor(key_selector=key_selector, fn=fn):
            return ReduceOperator(node.uid, node.name, key_selector, fn)
        case ProcessDescriptor(key_selector=key_selector, function=function):
            if isinstance(function, KeyedProcessFunction):
                function = copy.deepcopy(function)  # each subtask its own
            return ProcessOperator(node.uid, node.name, key_selector, function)
        case NonKeyedProcessDescriptor(function=function):
            return NonKeyedProcessOperator(node.uid, node.name, function)
        case TimestampsDescriptor(strategy=strategy):
            return TimestampsAndWatermarksOperator(node.uid, node.name, strategy)
        case CoProcessDescriptor(function=function, key_selectors=selectors):
            if selectors is None:
                return CoProcessOperator(node.uid, node.name, function)
            return KeyedCoProcessOperator(node.uid, node.name, selectors, function)
        case BroadcastProcessDescriptor(
            function=function, state_descriptors=states, key_selector=key_selector
        ):
            if key_selector is None:
                return BroadcastProcessOperator(node.uid, node.name, function, states)
            return KeyedBroadcastProcessOperator(
                node.uid, node.name, key_selector, function, states
            )
        case WindowDescriptor() as window:
            return WindowOperator(
                node.uid,
                node.name,
                window.key_selector,
                assigner=window.assigner,
                trigger=window.trigger,
                allowed_lateness=window.allowed_lateness,
                contents=window.contents,
                incremental=window.incremental,
                function=window.function,
                function_kind=window.function_kind,
                late_data_tag=window.late_data_tag,
            )
        case SinkDescriptor():
            return SinkOperator(
                node.uid,
                node.name,
                node.operator,
                checkpointing=checkpointing,
                writer=task,
                writer_id=writer_id,
            )
        case _:
            assert_never(node.operator)


class _UserCode:
    """``with _UserCode(labels, index):`` around calls into the user code of operator
    ``index``: an ``Exception`` from it is re-raised as ``UserCodeError`` naming
    ``labels[index]`` (the user's exception as its cause); a ``UserCodeError`` (already naming
    its operator) and what is not an ``Exception`` pass unchanged. Entered once per buffer,
    not per record: a loop over the operators moves ``index`` on."""

    __slots__ = ("index", "labels")

    def __init__(self, labels: Sequence[str], index: int) -> None:
        self.labels = labels
        self.index = index

    def __enter__(self) -> _UserCode:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if isinstance(error, Exception) and not isinstance(error, UserCodeError):
            raise UserCodeError(self.labels[self.index]) from error


class OperatorChain:
    """The operators of a task. ``side_outputs``: the side outputs of the last operator that
    are read (its ``SideOutputs`` collects their records; the task takes them with
    ``take_side_outputs`` after each call into the chain, before anything it sends next)."""

    def __init__(
        self,
        nodes: Sequence[StreamNode],
        *,
        checkpointing: bool = False,
        task: str = "",
        writer_ids: Mapping[str, str] | None = None,
        side_outputs: frozenset[str] = frozenset(),
    ) -> None:
        """``writer_ids``: by sink uid, the writer id its connector names part files by."""
        if not nodes:
            raise ValueError("a chain has at least one operator")
        self.nodes = list(nodes)
        writers = writer_ids or {}
        self.operators = [
            make_operator(n, checkpointing=checkpointing, task=task, writer_id=writers.get(n.uid))
            for n in nodes
        ]
        #: the side outputs of the last operator, when any is read
        self.side_outputs: SideOutputs | None = None
        if side_outputs:
            self.side_outputs = self.operators[-1].side = SideOutputs(side_outputs)
        self.labels = [n.label for n in nodes]
        self._key_labels = [f"key_by selector of {n.uid}" for n in nodes]
        self._costs = [n.cost if n.cost != (0.0, 0.0) else None for n in nodes]
        self._keyed: list[KeyedOperator | None] = [
            op if isinstance(op, KeyedOperator) else None for op in self.operators
        ]
        self.sinks = [op for op in self.operators if isinstance(op, SinkOperator)]
        head = self.operators[0]
        self.source = head if isinstance(head, SourceOperator) else None
        #: a two-input head (``connect``): records and watermarks say which input they are of
        self.two_input = head if isinstance(head, TwoInputOperator) else None
        #: declared operator cost not yet spent, ms
        self.cost_ms = 0.0
        #: Flink's operator metrics: records each operator took and emitted, and its metric
        #: group (``open`` makes them)
        self.records_in = [0] * len(self.operators)
        self.records_out = [0] * len(self.operators)
        self.metric_groups: list[MetricGroup] = []
        #: a map chained right after a generator source runs in the source's read (``open``
        #: finds it): a read batch then goes on from the operator after it (``read_through``)
        self._read_map: MapOperator | None = None

    # --- lifecycle ------------------------------------------------------------------------------

    def open(
        self,
        ctx: OperatorContext,
        states: dict[str, list[Any]] | None,
        *,
        restored_checkpoint: int = 0,
        other_sink_states: dict[str, list[Any]] | None = None,
    ) -> None:
        """Open every operator (user code: a process function's ``open``, the source's reader
        factory), then restore the state of a restore (``states`` by operator uid) of
        checkpoint ``restored_checkpoint`` (``other_sink_states``: a sink's states that other
        subtasks restore, ``TaskRestore``)."""
        self.metric_groups = [MetricGroup() for _ in self.operators]
        for index, op in enumerate(self.operators):
            with _UserCode(self.labels, index):
                op.open(replace(ctx, metrics=self.metric_groups[index]))
        self._read_map = self._map_after_generator()
        if states is None:
            return
        for index, op in enumerate(self.operators):
            mine = states.get(op.uid)
            if isinstance(op, SourceOperator) and mine:
                with _UserCode(self.labels, index):  # the reader seeks to the restored position
                    op.restore_state(list(mine))
            elif isinstance(op, SinkOperator):
                others = (other_sink_states or {}).get(op.uid, ())
                op.restore_sink(list(mine or ()), restored_checkpoint, list(others))
            elif mine:
                op.restore_state(list(mine))

    # --- records --------------------------------------------------------------------------------

    def process(
        self, records: Sequence[Any], keys: Sequence[Any] | None = None, start: int = 0
    ) -> Sequence[Any]:
        """Run ``records`` through the operators from ``start``; what the last one emits
        (``run`` also gives their timestamps)."""
        return self.run(records, keys, start)[0]

    def run(
        self,
        records: Sequence[Any],
        keys: Sequence[Any] | None = None,
        start: int = 0,
        timestamps: Sequence[int | None] | None = None,
        input_index: int = 0,
    ) -> tuple[Sequence[Any], Sequence[int | None] | None]:
        """Run ``records`` (with their keys, when shipped by a ``key_by`` edge, and their event
        timestamps, if any) through the operators from ``start``; returns what the last one
        emits, with its timestamps (None: the records have none). A two-input head takes them
        as its input ``input_index``."""
        operators, costs, keyed = self.operators, self._costs, self._keyed
        with _UserCode(self.labels, start) as user_code:
            head = self.two_input
            if start == 0 and head is not None:
                cost = costs[0]
                if cost is not None:
                    self.cost_ms += cost[0] + cost[1] * len(records)
                self.records_in[0] += len(records)
                records, timestamps = head.process_input(input_index, records, timestamps)
                self.records_out[0] += len(records)
                keys = None
                start = 1
            for index in range(start, len(operators)):
                user_code.index = index
                if not len(records):
                    return records, timestamps
                cost = costs[index]
                if cost is not None:
                    self.cost_ms += cost[0] + cost[1] * len(records)
                op = operators[index]
                self.records_in[index] += len(records)
                keyed_op = keyed[index]
                if keyed_op is not None:
                    if keys is None:
                        keys = self._keys(index, records)
                    if keyed_op.batching:  # BATCH: the whole input first, sorted at its end
                        keyed_op.buffer_batch(records, keys, timestamps)
                        return [], None
                    if timestamps is None and not op.assigns_timestamps:
                        records = keyed_op.process_keyed_batch(records, keys)
                    else:
                        if timestamps is None:
                            timestamps = [None] * len(records)
                        records, timestamps = keyed_op.process_keyed_timestamped(
                            records, keys, timestamps
                        )
                elif timestamps is None and not op.assigns_timestamps:
                    records = op.process_batch(records)
                else:
                    if timestamps is None:
                        timestamps = [None] * len(records)
                    records, timestamps = op.process_timestamped(records, timestamps)
                op.loop = None
                self.records_out[index] += len(records)
                keys = None
        return records, timestamps

    def take_side_outputs(self) -> list[tuple[str, list[Any], list[int | None]]]:
        """The records emitted to side outputs since the last call: (tag, records, timestamps)."""
        side = self.side_outputs
        if side is None or not side.pending:
            return []
        return side.take()

    # --- time ---------------------------------------------------------------------------------

    def advance_watermark(
        self, watermark: int, start: int = 0, input_index: int = 0
    ) -> list[ChainOutput]:
        """The chain's input watermark advanced (or operator ``start - 1`` emitted one): each
        operator in turn fires what it is due and hands the watermark on (or keeps it).
        Returns what leaves the chain, in order: records and the watermark, if it got through.
        A two-input head's watermark is the minimum of its inputs'."""
        out: list[ChainOutput] = []
        head = self.two_input
        if start == 0 and head is not None:
            combined = head.input_watermark(input_index, watermark)
            if combined is None:
                return out
            watermark = combined
        for index in range(start, len(self.operators)):
            op = self.operators[index]
            with _UserCode(self.labels, index):
                (records, stamps), handed_on = op.process_watermark(watermark)
            if records:
                self.records_out[index] += len(records)
                out.append(self.run(records, None, index + 1, stamps))
            if handed_on is None:
                return out
            watermark = handed_on
        out.append(watermark)
        return out

    def timer_counts(self) -> dict[str, int]:
        """Pending timers per keyed operator that has any (for the trace: a snapshot holds
        them, a restore must give them back)."""
        counts: dict[str, int] = {}
        for op in self.operators:
            if isinstance(op, KeyedOperator):
                pending = op.pending_timers()
                if pending:
                    counts[op.uid] = pending
        return counts

    def state_entry_counts(self) -> dict[str, int]:
        """Keyed state entries per keyed operator that has any (for the trace, as timers)."""
        counts: dict[str, int] = {}
        for op in self.operators:
            if isinstance(op, KeyedOperator):
                entries = len(op.backend)
                if entries:
                    counts[op.uid] = entries
        return counts

    def fired_timers(self) -> int:
        """Timers the operators fired so far, of both clocks (Flink's task ``numFiredTimers``).
        Read from another thread too."""
        return sum(op.fired_timers for op in self._keyed if op is not None)

    @property
    def has_timers(self) -> bool:
        for op in self.operators:  # noqa: SIM110 - a loop, not any(generator): asked after every mail
            if op.has_timers:
                return True
        return False

    def next_processing_time(self) -> int | None:
        """The earliest processing time (epoch ms) an operator needs to be woken at."""
        due: int | None = None
        for op in self.operators:
            if op.has_timers:
                when = op.next_processing_time()
                if when is not None and (due is None or when < due):
                    due = when
        return due

    def on_processing_time(self, now: int) -> list[ChainOutput]:
        """Processing time reached ``now`` (epoch ms): each operator's due timers fire, and a
        periodic watermark generator may emit a watermark (which goes on through the chain)."""
        out: list[ChainOutput] = []
        for index, op in enumerate(self.operators):
            if not op.has_timers:
                continue
            due = op.next_processing_time()
            if due is None or due > now:
                continue
            with _UserCode(self.labels, index):
                (records, stamps), watermark = op.on_processing_time(now)
            if records:
                self.records_out[index] += len(records)
                out.append(self.run(records, None, index + 1, stamps))
            status = op.take_status_change()
            if status is not None:  # idleness goes straight downstream (operators pass it on)
                out.append(WatermarkStatus(status))
            if watermark is not None:
                out.extend(self.advance_watermark(watermark, index + 1))
        return out

    def close_functions(self) -> None:
        """The user functions' ``close`` (the task ends normally)."""
        for index, op in enumerate(self.operators):
            with _UserCode(self.labels, index):
                op.close_function()

    def _keys(self, index: int, records: Sequence[Any]) -> list[Any]:
        op = self.operators[index]
        assert isinstance(op, KeyedOperator)
        with _UserCode(self._key_labels, index):
            return op.keys_of(records)

    @property
    def read_through(self) -> int:
        """The operator a batch ``read_source`` returned goes on from (``run``'s ``start``): 1,
        or 2 where the read ran the map chained after a generator source itself."""
        return 1 if self._read_map is None else 2

    def read_source(self, max_records: int, now: int) -> Sequence[Any] | None:
        """The source reads its next batch (empty: none ready yet; None: the end). A generator
        source with a map chained right after it runs the map in the same pass
        (``_read_mapped``): the batch is then the map's output, run on from
        ``read_through``."""
        source = self.source
        assert source is not None and source.reader is not None
        if self._read_map is not None:
            return self._read_mapped(self._read_map, max_records, now)
        with _UserCode(self.labels, 0):
            batch = source.reader.read(max_records, now)
        if batch:
            self.records_out[0] += len(batch)
        if batch and self._costs[0] is not None:
            cost = self._costs[0]
            self.cost_ms += cost[0] + cost[1] * len(batch)
        return batch

    def _map_after_generator(self) -> MapOperator | None:
        """The map a generator source's read runs (``_read_mapped``): a map (without side
        outputs) chained right after it."""
        source, ops = self.source, self.operators
        if source is None or type(source.reader) is not GeneratorReader or len(ops) < 2:
            return None
        op = ops[1]
        return op if type(op) is MapOperator and op.side is None else None

    def _read_mapped(self, op: MapOperator, max_records: int, now: int) -> list[Any] | None:
        """``read_source`` of a generator whose records go through the map ``op`` (operator 1)
        in the same pass: the counts, costs and ``op``'s cursor as ``run`` would have them; an
        exception names the operator whose function raised it (with the counts as if the two
        had run one after the other)."""
        reader = self.source.reader if self.source is not None else None
        assert isinstance(reader, GeneratorReader)
        indices = reader.next_indices(max_records, now)
        if not indices:
            return None if indices is None else []
        n = len(indices)
        self.records_out[0] += n
        self.records_in[1] += n
        try:
            batch = generate_mapped(reader.fn, op.fn, cursor(op, indices))
        except Exception as error:
            if isinstance(error, UserCodeError):
                raise
            if raised_by_generator(error):  # the source emitted none of them: the map took none
                op.loop = None
                self.records_out[0] -= n
                self.records_in[1] -= n
                raise UserCodeError(self.labels[0]) from error
            self._charge_cost(n)
            raise UserCodeError(self.labels[1]) from error
        op.loop = None
        reader.advance(n)
        self._charge_cost(n)
        self.records_out[1] += n
        return batch

    def _charge_cost(self, n: int) -> None:
        """The declared costs of the source and the map after it, for a read of ``n``."""
        for cost in self._costs[:2]:
            if cost is not None:
                self.cost_ms += cost[0] + cost[1] * n

    def source_watermarks(self) -> TimestampsAndWatermarksOperator | None:
        """A source's watermark generator chained right after it (``from_source``'s
        strategy), if any: the watermark it emitted is what the source emitted."""
        if self.source is not None and len(self.operators) > 1:
            op = self.operators[1]
            if isinstance(op, TimestampsAndWatermarksOperator):
                return op
        return None

    @property
    def source_read_is_unseen_until_sent(self) -> bool:
        """A source's read runs only through plain functions (map, filter, flat_map,
        map_batch, a watermark generator) that read no clock and reach no sink: what it read
        is seen nowhere until the task's output buffers leave it, so it may read late, in
        bigger batches, as long as no mail finds it behind."""
        return self.source is not None and all(
            type(op) in _UNSEEN_UNTIL_SENT for op in self.operators[1:]
        )

    @property
    def source_knows_its_pace(self) -> bool:
        """The source's reader says when records will be ready, exactly (``knows_its_pace``)."""
        source = self.source
        return source is not None and source.reader is not None and knows_its_pace(source.reader)

    def source_ready_at(self, now: int, count: int = 1) -> int | None:
        """When the source's next record will be ready (rate-limited sources; None: it
        does not wait), or ``count`` of them, where its reader says."""
        source = self.source
        assert source is not None and source.reader is not None
        with _UserCode(self.labels, 0):
            return next_ready_for(source.reader, now, count)

    def end_input(self) -> Sequence[Any]:
        """All input consumed: every operator ends in turn (Flink's ``finishOperators``); what
        one emits runs through the rest. Returns what the last one emits."""
        out: list[Any] = []
        for index, op in enumerate(self.operators):
            with _UserCode(self.labels, index):
                produced = op.end_input()
            if len(produced):
                self.records_out[index] += len(produced)
                out.extend(self.process(produced, None, index + 1))
        return out

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> Sequence[Any]:
        out: list[Any] = []
        for index, op in enumerate(self.operators):
            with _UserCode(self.labels, index):
                produced = op.prepare_snapshot_pre_barrier(checkpoint_id)
            if len(produced):
                self.records_out[index] += len(produced)
                out.extend(self.process(produced, None, index + 1))
        return out

    # --- checkpoints ----------------------------------------------------------------------------

    def source_position(self) -> dict[str, Any] | None:
        """The source's position (its uid to the position; None: the task runs no source),
        as a snapshot would record it: a finished task reports it as final."""
        source = self.source
        if source is None or source.reader is None:
            return None
        with _UserCode(self.labels, 0):  # the reader's position
            return {source.uid: source.snapshot_state(-1)["position"]}

    def snapshot_state(self, checkpoint_id: int) -> dict[str, Any]:
        """The synchronous part: every operator's state (its copy), by uid."""
        states: dict[str, Any] = {}
        for index, op in enumerate(self.operators):
            if isinstance(op, SourceOperator):
                with _UserCode(self.labels, index):  # the reader's position
                    state = op.snapshot_state(checkpoint_id)
            else:
                state = op.snapshot_state(checkpoint_id)
            if state is not None:
                states[op.uid] = state
        return states

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for index, op in enumerate(self.operators):
            with _UserCode(self.labels, index):
                op.notify_checkpoint_complete(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        for index, op in enumerate(self.operators):
            with _UserCode(self.labels, index):
                op.notify_checkpoint_aborted(checkpoint_id)

    def close_sinks(self, *, commit: bool, keep_collected: bool) -> None:
        for sink in self.sinks:
            sink.close(commit=commit, keep_collected=keep_collected)

    # --- what the runtime carries out ----------------------------------------------------------

    def take_effects(self) -> list[TaskEffect]:
        """What the sinks asked of their connectors, in order."""
        if not self.sinks:
            return []
        effects: list[TaskEffect] = []
        for sink in self.sinks:
            if sink.effects:
                effects.extend(sink.take_effects())
        return effects

    def take_cost(self) -> float:
        cost, self.cost_ms = self.cost_ms, 0.0
        return cost

    def user_meters(self) -> list[Meter]:
        """The meters the operators' functions registered (the task updates their views)."""
        return [meter for group in self.metric_groups for meter in group.meters()]

    def live_counts(self, index: int) -> tuple[int, int]:
        """Operator ``index``'s records in and out as of now, also in the middle of a buffer
        it goes through (``Operator.loop``): the records it has not taken yet are not counted
        in, and a one-to-one operator has emitted one less than it took. Read from another
        thread too (a racy read of ints; the reader keeps the counts from going back)."""
        op = self.operators[index]
        records_in, records_out = self.records_in[index], self.records_out[index]
        if op.side is not None:
            records_out += op.side.emitted
        loop = op.loop
        if loop is not None:
            left = length_hint(loop)
            records_in -= left
            if op.one_to_one and op.side is None:
                records_out += max(0, op.loop_len - left - 1)
        return records_in, records_out

    def record_counts(self) -> dict[str, int]:
        """Each operator's records in and out, ``<uid>.numRecordsIn`` / ``.numRecordsOut`` (what
        the task keeps a rate of), as of now (``live_counts``)."""
        out: dict[str, int] = {}
        for index, op in enumerate(self.operators):
            records_in, records_out = self.live_counts(index)
            out[f"{op.uid}.numRecordsIn"] = records_in
            out[f"{op.uid}.numRecordsOut"] = records_out
        return out

    def operator_metrics(self) -> dict[str, JsonDict]:
        """Flink's operator metrics, by operator uid: records in and out, the watermarks,
        and the user's metrics (``MetricGroup.snapshot``)."""
        out: dict[str, JsonDict] = {}
        ops = self.operators
        for index, op in enumerate(ops):
            watermark = op.current_watermark
            following = ops[index + 1].current_watermark if index + 1 < len(ops) else watermark
            records_in, records_out = self.live_counts(index)
            out[op.uid] = {
                "numRecordsIn": records_in,
                "numRecordsOut": records_out,
                "currentOutputWatermark": following,
                "user": self.metric_groups[index].snapshot() if self.metric_groups else [],
            }
            if not isinstance(op, SourceOperator):  # a source has no input (Flink: no gauge)
                out[op.uid]["currentInputWatermark"] = watermark
            if isinstance(op, WindowOperator):  # late records not sent to a side output
                out[op.uid]["numLateRecordsDropped"] = op.num_late_records_dropped
        return out

    def sink_label(self, uid: str) -> str:
        """A sink as the user knows it (a failing connector is named by it)."""
        for node in self.nodes:
            if node.uid == uid:
                return node.label
        return uid
