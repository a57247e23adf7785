"""Operators, as a task runs them: one call per buffer, state as JSON-safe snapshots.

Every operator takes a batch of records and returns a batch (``process_batch``): a map over a
buffer is one call. Keyed operators keep their state in a ``KeyedStateBackend``; sources keep
their read position as operator state, so a restored source resumes right after it. Sinks are
the task's (``runtime.task.sinks``): they do no I/O, their connectors do.
"""

from __future__ import annotations

import copy
import dis
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import CodeType
from typing import Any, Protocol

from runtime.functions import (
    Function,
    KeyedBroadcastProcessFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    RuntimeContext,
    TimeDomain,
    TimerService,
)
from runtime.metrics import MetricGroup
from runtime.partition import key_hash_of, key_order_of, plain_selector
from runtime.state import (
    BroadcastStateBackend,
    KeyedStateBackend,
    MapStateDescriptor,
    StateDescriptor,
)
from runtime.timers import InternalTimerService, Timer
from runtime.watermarks import MAX_WATERMARK, MIN_WATERMARK, WatermarkStrategy

UserFn = Callable[..., Any]

#: what a timer or watermark makes an operator emit: records with their timestamps, then (for a
#: watermark) the watermark to hand on, None when it goes no further
Emitted = tuple[list[Any], list[int | None]]


class TaskTime:
    """The task's clocks as its operators read them: processing time (epoch milliseconds, the
    job clock's now plus its epoch: virtual on the simulation) and the task's epoch."""

    __slots__ = ("epoch", "processing")

    def __init__(self, epoch: int = 0) -> None:
        self.epoch = epoch
        self.processing = epoch

    def set_now(self, now: int) -> None:
        self.processing = self.epoch + now


@dataclass(frozen=True, slots=True)
class OperatorContext:
    """Where an operator runs."""

    subtask: int
    parallelism: int
    max_parallelism: int
    key_groups: range
    buffer_records: int = 4096
    #: the task's clocks (set by the task before each mail)
    time: TaskTime = field(default_factory=TaskTime)
    task_name: str = ""
    attempt: int = 0
    #: ``pipeline.auto-watermark-interval``: how often generators are asked (0: never)
    auto_watermark_interval: int = 200
    #: ``execution.runtime-mode: BATCH``: keyed operators take their whole input, sorted by key
    batch: bool = False
    #: ``pipeline.global-job-parameters``
    job_parameters: Mapping[str, str] = field(default_factory=dict)
    #: the operator's metric group (``RuntimeContext.get_metrics_group()``; the chain gives
    #: each operator its own)
    metrics: MetricGroup | None = None


class SideOutputs:
    """The records an operator emitted to its side outputs (``yield tag, value``) since the task
    last took them: per tag, the records and their timestamps. Only the operator whose side
    outputs are read has one (the last of its chain); records of a tag nobody reads are
    dropped."""

    __slots__ = ("emitted", "pending", "tags")

    def __init__(self, tags: frozenset[str]) -> None:
        self.tags = tags
        self.pending: dict[str, tuple[list[Any], list[int | None]]] = {}
        #: records emitted to the side outputs read (Flink's operator counts them as output)
        self.emitted = 0

    def add(self, tag_id: str, value: Any, timestamp: int | None) -> None:
        if tag_id not in self.tags:
            return
        self.emitted += 1
        entry = self.pending.get(tag_id)
        if entry is None:
            entry = self.pending[tag_id] = ([], [])
        entry[0].append(value)
        entry[1].append(timestamp)

    def take(self) -> list[tuple[str, list[Any], list[int | None]]]:
        """What was emitted, per tag (and forgets it)."""
        taken = [(tag, records, stamps) for tag, (records, stamps) in self.pending.items()]
        self.pending = {}
        return taken


def split_side_outputs(
    produced: Iterable[Any],
    timestamp: int | None,
    out: list[Any],
    out_ts: list[int | None] | None,
    side: SideOutputs,
) -> None:
    """What a function produced for one record (or timer), for an operator whose side outputs
    are read: a pair ``(OutputTag, value)`` goes to that side output, anything else to ``out``
    (PyFlink's test: a tuple whose first field is an ``OutputTag``)."""
    for item in produced:
        if isinstance(item, tuple) and len(item) > 1 and isinstance(item[0], OutputTag):
            side.add(item[0].tag_id, item[1], timestamp)
        else:
            out.append(item)
            if out_ts is not None:
                out_ts.append(timestamp)


def cursor(op: Operator, records: Sequence[Any]) -> Iterator[Any]:
    """The iterator an operator goes through a buffer's records with, kept on the operator
    (``loop``): the records it has taken so far are known without counting each one (the
    iterator knows how many are left, ``operator.length_hint``), so the task's metrics advance
    within a long buffer while the record path pays nothing per record."""
    it = iter(records)
    op.loop = it
    op.loop_len = len(records)
    return it


class Operator:
    """Base: a pass-through with no state.

    Records come in buffers: ``process_batch`` for a buffer without timestamps (the fast path),
    ``process_timestamped`` when the records carry event timestamps (a list parallel to the
    records, None for a record without one). Watermarks reach ``process_watermark``; due
    processing-time timers ``on_processing_time``.
    """

    #: makes timestamps (its output carries them even when its input did not)
    assigns_timestamps = False
    #: fires due event-time timers in rounds, as PyFlink's Python operators
    #: (``StreamNode.timers_in_rounds``)
    timers_in_rounds = False
    #: has timers or a periodic action: the task asks ``next_processing_time``
    has_timers = False
    #: where its side outputs go, when they are read (set by the chain)
    side: SideOutputs | None = None
    #: the records of the buffer it is going through one by one (``cursor``), and their
    #: number: what the task's metrics read while a long buffer is under way (None: none)
    loop: Iterator[Any] | None = None
    loop_len = 0
    #: emits one record per record it takes (a map without side outputs): its output count
    #: advances with ``loop`` too
    one_to_one = False

    def __init__(self, uid: str, name: str) -> None:
        self.uid = uid
        self.name = name
        self.ctx: OperatorContext | None = None
        self.current_watermark = MIN_WATERMARK

    def open(self, ctx: OperatorContext) -> None:
        self.ctx = ctx

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        return records

    def process_timestamped(
        self, records: Sequence[Any], timestamps: Sequence[int | None]
    ) -> tuple[Sequence[Any], Sequence[int | None]]:
        """Default for operators with one output per input record: timestamps carry over."""
        return self.process_batch(records), timestamps

    def process_watermark(self, watermark: int) -> tuple[Emitted, int | None]:
        """The input's watermark advanced: what it fires, and the watermark to hand on."""
        self.current_watermark = watermark
        return ([], []), watermark

    def next_processing_time(self) -> int | None:
        """When this operator next needs ``on_processing_time`` (epoch ms), or None."""
        return None

    def take_status_change(self) -> bool | None:
        """The stream this operator emits went idle (True) or active again (False) since the
        last call (a watermark generator with idleness), or None."""
        return None

    def on_processing_time(self, now: int) -> tuple[Emitted, int | None]:
        """Processing time reached ``now``: what fires, and a watermark to emit (a periodic
        watermark generator)."""
        return ([], []), None

    def end_input(self) -> Sequence[Any]:
        """All input consumed: emit what is left (default: nothing)."""
        return ()

    def close_function(self) -> None:
        """The task ends: the user function's ``close``."""

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> Sequence[Any]:
        """Records to emit before the barrier (keep it minimal, as in Flink)."""
        return ()

    def snapshot_state(self, checkpoint_id: int) -> Any:
        """JSON-safe state, or None when the operator is stateless."""
        return None

    def restore_state(self, states: list[Any]) -> None:
        """Load the states of the subtasks that ran this operator before."""

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """A checkpoint completed everywhere (two-phase commit sinks commit here)."""

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        """A checkpoint was aborted."""


class _RuntimeContext(RuntimeContext):
    """The runtime context of an operator's function: where it runs, and keyed state when the
    operator is keyed. Also ckptsim's older spelling: ``subtask_index``, ``parallelism``,
    ``get_state(name)``."""

    def __init__(self, ctx: OperatorContext, backend: KeyedStateBackend | None) -> None:
        self._ctx = ctx
        self._backend = backend
        self.subtask_index = ctx.subtask
        self.parallelism = ctx.parallelism

    def _keyed(self) -> KeyedStateBackend:
        if self._backend is None:
            raise RuntimeError("keyed state can only be used on a keyed stream (after key_by)")
        return self._backend

    def get_state(self, state_descriptor: Any) -> Any:
        if isinstance(state_descriptor, str):
            return self._keyed().value_state(state_descriptor)
        return self._keyed().state(state_descriptor)

    def get_list_state(self, state_descriptor: Any) -> Any:
        if isinstance(state_descriptor, str):
            return self._keyed().list_state(state_descriptor)
        return self._keyed().state(state_descriptor)

    def get_map_state(self, state_descriptor: Any) -> Any:
        return self._keyed().state(state_descriptor)

    def get_reducing_state(self, state_descriptor: Any) -> Any:
        return self._keyed().state(state_descriptor)

    def get_aggregating_state(self, state_descriptor: Any) -> Any:
        return self._keyed().state(state_descriptor)

    def get_current_key(self) -> Any:
        return self._keyed().current_key

    def get_task_name(self) -> str:
        return self._ctx.task_name

    def get_number_of_parallel_subtasks(self) -> int:
        return self._ctx.parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        return self._ctx.max_parallelism

    def get_index_of_this_subtask(self) -> int:
        return self._ctx.subtask

    def get_attempt_number(self) -> int:
        return self._ctx.attempt

    def get_task_name_with_subtasks(self) -> str:
        ctx = self._ctx  # Flink's TaskInfo: "NAME (i/n)#attempt"
        return f"{ctx.task_name} ({ctx.subtask + 1}/{ctx.parallelism})#{ctx.attempt}"

    def get_job_parameter(self, key: str, default_value: str) -> str:
        return self._ctx.job_parameters.get(key, default_value)

    def get_metrics_group(self) -> MetricGroup:
        group = self._ctx.metrics
        if group is None:  # an operator opened bare (unit tests): metrics nobody reports
            group = MetricGroup()
        return group


def _bind(fn: Any, method: str, ctx: OperatorContext, backend: KeyedStateBackend | None) -> Any:
    """The callable of a user function: a plain callable as it is; a function object copied
    for this subtask, opened, and its ``method``."""
    if isinstance(fn, Function) or (not callable(fn) and hasattr(fn, method)):
        mine = copy.deepcopy(fn)
        mine.open(_RuntimeContext(ctx, backend))
        return mine, getattr(mine, method)
    return None, fn


def _callable_of(fn: Any, method: str) -> Any:
    """Before ``open`` (an operator used bare, in unit tests): the method of a function object."""
    return getattr(fn, method) if isinstance(fn, Function) else fn


class _UserFunctionOperator(Operator):
    """An operator around one user function (a callable, or a function object whose
    ``method`` it calls)."""

    method = "map"

    def __init__(self, uid: str, name: str, fn: UserFn) -> None:
        super().__init__(uid, name)
        self.user_function = fn
        self._function: Function | None = None
        self.fn = _callable_of(fn, self.method)

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self._function, self.fn = _bind(self.user_function, self.method, ctx, None)

    def close_function(self) -> None:
        if self._function is not None:
            self._function.close()


class MapOperator(_UserFunctionOperator):
    """A map; as PyFlink's, it may return ``(tag, value)`` for a side output that is read."""

    method = "map"
    one_to_one = True

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        fn = self.fn
        if self.side is None:
            return [fn(r) for r in cursor(self, records)]
        return self.process_timestamped(records, [None] * len(records))[0]

    def process_timestamped(
        self, records: Sequence[Any], timestamps: Sequence[int | None]
    ) -> tuple[Sequence[Any], Sequence[int | None]]:
        side = self.side
        if side is None:
            return self.process_batch(records), timestamps
        fn = self.fn
        out: list[Any] = []
        out_ts: list[int | None] = []
        for record, ts in zip(cursor(self, records), timestamps, strict=True):
            split_side_outputs((fn(record),), ts, out, out_ts, side)
        return out, out_ts


class MapBatchOperator(_UserFunctionOperator):
    """The user function takes and returns a whole buffer (a list or an Arrow batch)."""

    method = "map_batch"

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        out: Sequence[Any] | None = self.fn(records)
        if out is None:
            raise TypeError(
                f"map_batch {self.name!r} ({self.uid}) returned None for a buffer of "
                f"{len(records)} record(s); return the records to emit (an empty list emits none)"
            )
        return out

    def process_timestamped(
        self, records: Sequence[Any], timestamps: Sequence[int | None]
    ) -> tuple[Sequence[Any], Sequence[int | None]]:
        """Timestamps carry over when the buffer keeps its length, else the output has none."""
        out = self.process_batch(records)
        return out, timestamps if len(out) == len(records) else [None] * len(out)


class FilterOperator(_UserFunctionOperator):
    method = "filter"

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        fn = self.fn
        return [r for r in cursor(self, records) if fn(r)]

    def process_timestamped(
        self, records: Sequence[Any], timestamps: Sequence[int | None]
    ) -> tuple[Sequence[Any], Sequence[int | None]]:
        fn = self.fn
        kept = [(r, t) for r, t in zip(cursor(self, records), timestamps, strict=True) if fn(r)]
        return [r for r, _ in kept], [t for _, t in kept]


class FlatMapOperator(_UserFunctionOperator):
    """A flat map; as PyFlink's, it may emit ``(tag, value)`` for a side output that is read."""

    method = "flat_map"

    def _produce(self, record: Any) -> Iterable[Any]:
        produced = self.fn(record)
        if produced is None:
            raise TypeError(
                f"flat_map {self.name!r} ({self.uid}) returned None for the record "
                f"{record!r}; return an iterable of the records to emit (an empty list "
                "emits none)"
            )
        return produced  # type: ignore[no-any-return]

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        if self.side is not None:
            return self.process_timestamped(records, [None] * len(records))[0]
        out: list[Any] = []
        extend = out.extend
        produce = self._produce
        for record in cursor(self, records):
            extend(produce(record))
        return out

    def process_timestamped(
        self, records: Sequence[Any], timestamps: Sequence[int | None]
    ) -> tuple[Sequence[Any], Sequence[int | None]]:
        out: list[Any] = []
        out_ts: list[int | None] = []
        side = self.side
        for record, ts in zip(cursor(self, records), timestamps, strict=True):
            if side is None:
                before = len(out)
                out.extend(self._produce(record))
                out_ts.extend([ts] * (len(out) - before))
            else:
                split_side_outputs(self._produce(record), ts, out, out_ts, side)
        return out, out_ts


class _TimerServiceView(TimerService):
    """What a function's ``ctx.timer_service()`` is: the clocks, and (keyed operators) timers
    of the current key."""

    def __init__(self, operator: Operator, keyed: KeyedOperator | None) -> None:
        self._operator = operator
        self._keyed = keyed

    def current_processing_time(self) -> int:
        ctx = self._operator.ctx
        return ctx.time.processing if ctx is not None else 0

    def current_watermark(self) -> int:
        return self._operator.current_watermark

    def _timers(self) -> tuple[InternalTimerService, Any]:
        keyed = self._keyed
        if keyed is None:
            raise RuntimeError("setting timers is only supported on a keyed stream (after key_by)")
        return keyed.timers(), keyed.backend.current_key

    def register_processing_time_timer(self, timestamp: int) -> None:
        timers, key = self._timers()
        if not self._quiesced():
            timers.processing_time.add(key, None, int(timestamp))

    def register_event_time_timer(self, timestamp: int) -> None:
        timers, key = self._timers()
        if not self._quiesced():
            timers.event_time.add(key, None, int(timestamp))

    def _quiesced(self) -> bool:
        """BATCH: timers registered while a key's timers fire at its end are ignored (as
        Flink's ``BatchExecutionInternalTimeService``)."""
        keyed = self._keyed
        return keyed is not None and keyed.quiesced

    def delete_processing_time_timer(self, timestamp: int) -> None:
        timers, key = self._timers()
        timers.processing_time.delete(key, None, int(timestamp))

    def delete_event_time_timer(self, timestamp: int) -> None:
        timers, key = self._timers()
        timers.event_time.delete(key, None, int(timestamp))


class KeyedOperator(Operator):
    """An operator on a keyed stream: keyed state by key group, and keyed timers.

    In BATCH mode (Flink's sorted inputs) the operator takes its whole input first
    (``buffer_batch``) and processes it at the end of input, key after key in the keys' order
    and by timestamp within a key; at the end of each key its timers fire with the watermark at
    the end of time, as Flink's ``BatchExecutionInternalTimeService`` does."""

    def __init__(self, uid: str, name: str, key_selector: UserFn) -> None:
        super().__init__(uid, name)
        self.key_selector = key_selector
        self.backend = KeyedStateBackend()
        self._timers: InternalTimerService | None = None
        #: BATCH: (key, record, timestamp) of the whole input, and whether timers are quiesced
        self.batching = False
        self._batch: list[tuple[Any, Any, int | None]] = []
        self.quiesced = False

    def open(self, ctx: OperatorContext) -> None:
        """Fresh state for this subtask; ``restore_state`` (after ``open``) fills it."""
        super().open(ctx)
        self.backend = KeyedStateBackend(ctx.max_parallelism, key_hash_of(self.key_selector))
        self._timers = None
        self.batching = ctx.batch
        self._batch = []

    def timers(self) -> InternalTimerService:
        """The operator's timer service, made at its first use."""
        if self._timers is None:
            ctx = self.ctx
            assert ctx is not None, "open() first"
            self._timers = InternalTimerService(
                ctx.key_groups, ctx.max_parallelism, self.backend.key_hash, self.backend.group_of
            )
            self.has_timers = True
        return self._timers

    def pending_timers(self) -> int:
        timers = self._timers
        return 0 if timers is None else len(timers.event_time) + len(timers.processing_time)

    @property
    def fired_timers(self) -> int:
        """Timers fired so far (Flink's ``numFiredTimers`` counts them per task)."""
        timers = self._timers
        return 0 if timers is None else timers.fired

    def keys_of(self, records: Sequence[Any]) -> list[Any]:
        """The key of every record (the ``key_by`` selector, user code)."""
        key_of = plain_selector(self.key_selector)
        return [key_of(r) for r in records]

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        return self.process_keyed_batch(records, self.keys_of(records))

    def process_keyed_batch(self, records: Sequence[Any], keys: Sequence[Any]) -> Sequence[Any]:
        raise NotImplementedError

    def process_keyed_timestamped(
        self, records: Sequence[Any], keys: Sequence[Any], timestamps: Sequence[int | None]
    ) -> tuple[Sequence[Any], Sequence[int | None]]:
        """Default for one output per input (a reduce): timestamps carry over."""
        return self.process_keyed_batch(records, keys), timestamps

    def process_timestamped(
        self, records: Sequence[Any], timestamps: Sequence[int | None]
    ) -> tuple[Sequence[Any], Sequence[int | None]]:
        return self.process_keyed_timestamped(records, self.keys_of(records), timestamps)

    # --- BATCH execution ------------------------------------------------------------------------

    def buffer_batch(
        self, records: Sequence[Any], keys: Sequence[Any], timestamps: Sequence[int | None] | None
    ) -> None:
        stamps: Sequence[int | None] = (
            timestamps if timestamps is not None else [None] * len(records)
        )
        self._batch.extend(zip(keys, records, stamps, strict=True))

    def end_input(self) -> Sequence[Any]:
        if not self.batching:
            return ()
        items, self._batch = self._batch, []
        order = key_order_of(self.key_selector)

        def sort_key(item: tuple[Any, Any, int | None]) -> Any:
            ts = MIN_WATERMARK if item[2] is None else item[2]
            return (order(item[0]) if order is not None else item[0], ts)

        try:
            items.sort(key=sort_key)
        except TypeError:  # keys Python cannot order among themselves
            items.sort(key=lambda item: (repr(item[0]), sort_key(item)[1]))
        out: list[Any] = []
        backend = self.backend
        self.current_watermark = MIN_WATERMARK  # a key sees the end of time only at its end
        start = 0
        while start < len(items):
            key = items[start][0]
            stop = start
            while stop < len(items) and items[stop][0] == key:
                stop += 1
            group = items[start:stop]
            backend.current_key = key
            out.extend(
                self.process_key_group(
                    [r for _, r, _ in group], [k for k, _, _ in group], [t for _, _, t in group]
                )
            )
            out.extend(self._end_of_key())
            start = stop
        self.current_watermark = MAX_WATERMARK
        return out

    def process_key_group(
        self, records: Sequence[Any], keys: Sequence[Any], timestamps: Sequence[int | None]
    ) -> Sequence[Any]:
        """BATCH: the records of one key (default: as they would be processed streaming)."""
        return self.process_keyed_timestamped(records, keys, timestamps)[0]

    def _end_of_key(self) -> list[Any]:
        """BATCH: the key's timers fire, event time first, with the watermark at the end of
        time; timers they register are ignored."""
        timers = self._timers
        if timers is None:
            return []
        out: list[Any] = []
        out_ts: list[int | None] = []
        self.current_watermark = MAX_WATERMARK
        self.quiesced = True
        backend = self.backend
        for queue, fire in (
            (timers.event_time, self.on_event_time),
            (timers.processing_time, self.on_processing_timer),
        ):
            while (timer := queue.poll()) is not None:
                timers.fired += 1
                backend.current_key = timer.key
                fire(timer, out, out_ts)
        self.quiesced = False
        self.current_watermark = MIN_WATERMARK
        return out

    # --- timers -----------------------------------------------------------------------------------

    def process_watermark(self, watermark: int) -> tuple[Emitted, int | None]:
        self.current_watermark = watermark
        timers = self._timers
        out: list[Any] = []
        out_ts: list[int | None] = []
        if timers is not None:
            queue = timers.event_time
            backend = self.backend
            if self.timers_in_rounds:
                # PyFlink (``AbstractPythonFunctionOperator.advanceWatermark``): Java fires
                # every timer due, and gets the timers the Python function registered (or
                # deleted) meanwhile only when its bundle ends: those fire in the next round
                while True:
                    due: list[Timer] = []
                    while (timer := timers.poll_due(queue, watermark)) is not None:
                        due.append(timer)
                    if not due:
                        break
                    for fired in due:
                        backend.current_key = fired.key
                        self.on_event_time(fired, out, out_ts)
            else:
                while (timer := timers.poll_due(queue, watermark)) is not None:
                    backend.current_key = timer.key
                    self.on_event_time(timer, out, out_ts)
        return (out, out_ts), watermark

    def next_processing_time(self) -> int | None:
        """A processing-time timer for T fires once processing time passed T, at T + 1 (as
        Flink's ``ProcessingTimeServiceUtil.getProcessingTimeDelay``: a record arriving at T
        still belongs before the timer, as one with timestamp T before a watermark T)."""
        timers = self._timers
        due = None if timers is None else timers.next_processing_time()
        return None if due is None else due + 1

    def on_processing_time(self, now: int) -> tuple[Emitted, int | None]:
        timers = self._timers
        out: list[Any] = []
        out_ts: list[int | None] = []
        if timers is not None:
            queue = timers.processing_time
            backend = self.backend
            backend.now = now
            while (timer := timers.poll_due(queue, now - 1)) is not None:
                backend.current_key = timer.key
                self.on_processing_timer(timer, out, out_ts)
        return (out, out_ts), None

    def on_event_time(self, timer: Timer, out: list[Any], out_ts: list[int | None]) -> None:
        """An event-time timer of ``timer.key`` fired (the key is current)."""

    def on_processing_timer(self, timer: Timer, out: list[Any], out_ts: list[int | None]) -> None:
        """A processing-time timer fired (the key is current)."""

    # --- state ------------------------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int) -> Any:
        snapshot = self.backend.snapshot()
        if self._timers is not None and (
            len(self._timers.event_time) or len(self._timers.processing_time)
        ):
            snapshot["timers"] = self._timers.snapshot()
        return snapshot

    def restore_state(self, states: list[Any]) -> None:
        key_groups = self.ctx.key_groups if self.ctx is not None else None
        mine = [s for s in states if s]
        self.backend.restore(mine, key_groups)
        timers = [s["timers"] for s in mine if s.get("timers")]
        if timers:
            self.timers().restore(timers)


class ReduceOperator(KeyedOperator):
    """Flink's keyed reduce: emits the running aggregate of the record's key."""

    STATE = "_reduce"

    def __init__(self, uid: str, name: str, key_selector: UserFn, fn: UserFn) -> None:
        super().__init__(uid, name, key_selector)
        self.user_function = fn
        self._function: Function | None = None
        self.fn = _callable_of(fn, "reduce")

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self._function, self.fn = _bind(self.user_function, "reduce", ctx, self.backend)

    def close_function(self) -> None:
        if self._function is not None:
            self._function.close()

    def process_key_group(
        self, records: Sequence[Any], keys: Sequence[Any], timestamps: Sequence[int | None]
    ) -> Sequence[Any]:
        """BATCH: only the key's final value (Flink's ``BatchGroupedReduceOperator``)."""
        out = self.process_keyed_batch(records, keys)
        return out[-1:]

    def process_keyed_batch(self, records: Sequence[Any], keys: Sequence[Any]) -> Sequence[Any]:
        reduce = self.fn
        table = self.backend.table(self.STATE)
        out: list[Any] = []
        # method calls, not bound methods in locals: Python 3.11 specialises these calls
        for key, record in zip(keys, cursor(self, records), strict=True):
            acc = table.get(key, _MISSING)
            value = record if acc is _MISSING else reduce(acc, record)
            table[key] = value
            out.append(value)
        return out


_MISSING = object()


class _ProcessContext(
    _RuntimeContext, KeyedProcessFunction.OnTimerContext, ProcessFunction.Context
):
    """The context a process function sees: in ``open`` its runtime context, in
    ``process_element`` and ``on_timer`` the record's (or timer's) timestamp, the timer
    service, and the current key."""

    def __init__(
        self, ctx: OperatorContext, backend: KeyedStateBackend | None, timers: TimerService
    ) -> None:
        super().__init__(ctx, backend)
        self._timer_service = timers
        self.current_timestamp: int | None = None
        self.domain = TimeDomain.EVENT_TIME

    def timestamp(self) -> int | None:
        return self.current_timestamp

    def timer_service(self) -> TimerService:
        return self._timer_service

    def time_domain(self) -> TimeDomain:
        return self.domain


class _FunctionAdapter(KeyedProcessFunction):
    """A plain function ``fn(value, ctx)`` as a process function."""

    def __init__(self, fn: UserFn) -> None:
        self.fn = fn

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        result: Iterable[Any] | None = self.fn(value, ctx)
        return result


class _FiresTimers:
    """Keyed timers call the function's ``on_timer`` with the timer's key current: output of an
    event-time timer has the timer's timestamp, of a processing-time timer none."""

    context: _ProcessContext | None
    function: Any
    side: SideOutputs | None

    def _fire(
        self,
        timer: Timer,
        domain: TimeDomain,
        ts: int | None,
        out: list[Any],
        out_ts: list[int | None],
    ) -> None:
        ctx = self.context
        assert ctx is not None
        ctx.domain = domain
        ctx.current_timestamp = timer.timestamp
        produced = self.function.on_timer(timer.timestamp, ctx)
        if produced is not None:
            side = self.side
            if side is None:
                before = len(out)
                out.extend(produced)
                out_ts.extend([ts] * (len(out) - before))
            else:
                split_side_outputs(produced, ts, out, out_ts, side)
        ctx.current_timestamp = None
        ctx.domain = TimeDomain.EVENT_TIME

    def on_event_time(self, timer: Timer, out: list[Any], out_ts: list[int | None]) -> None:
        self._fire(timer, TimeDomain.EVENT_TIME, timer.timestamp, out, out_ts)

    def on_processing_timer(self, timer: Timer, out: list[Any], out_ts: list[int | None]) -> None:
        self._fire(timer, TimeDomain.PROCESSING_TIME, None, out, out_ts)


class ProcessOperator(_FiresTimers, KeyedOperator):
    """Flink's ``KeyedProcessOperator``: ``process_element`` per record with its key current,
    ``on_timer`` for the key's timers. Output of an element has the element's timestamp, of
    an event-time timer the timer's, of a processing-time timer none."""

    def __init__(
        self, uid: str, name: str, key_selector: UserFn, function: KeyedProcessFunction | UserFn
    ) -> None:
        super().__init__(uid, name, key_selector)
        self.function: Any = (
            function if isinstance(function, KeyedProcessFunction) else _FunctionAdapter(function)
        )
        self.context: _ProcessContext | None = None

    @property
    def runtime_context(self) -> _ProcessContext | None:
        return self.context

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self.context = _ProcessContext(ctx, self.backend, _TimerServiceView(self, self))
        self.function.open(self.context)

    def close_function(self) -> None:
        self.function.close()

    def process_keyed_batch(self, records: Sequence[Any], keys: Sequence[Any]) -> Sequence[Any]:
        out, _ = self._process(records, keys, None)
        return out

    def process_keyed_timestamped(
        self, records: Sequence[Any], keys: Sequence[Any], timestamps: Sequence[int | None]
    ) -> tuple[Sequence[Any], Sequence[int | None]]:
        return self._process(records, keys, timestamps)

    def _process(
        self,
        records: Sequence[Any],
        keys: Sequence[Any],
        timestamps: Sequence[int | None] | None,
    ) -> tuple[list[Any], list[int | None]]:
        ctx = self.context
        assert ctx is not None, "open() first"
        assert self.ctx is not None
        backend, process = self.backend, self.function.process_element
        backend.now = self.ctx.time.processing
        ctx.domain = TimeDomain.EVENT_TIME
        out: list[Any] = []
        out_ts: list[int | None] = []
        side = self.side
        if timestamps is None:
            for key, record in zip(keys, cursor(self, records), strict=True):
                backend.current_key = key
                produced = process(record, ctx)
                if produced is not None:
                    if side is None:
                        out.extend(produced)
                    else:
                        split_side_outputs(produced, None, out, None, side)
            return out, out_ts
        for key, record, ts in zip(keys, cursor(self, records), timestamps, strict=True):
            backend.current_key = key
            ctx.current_timestamp = ts
            produced = process(record, ctx)
            if produced is not None:
                if side is None:
                    before = len(out)
                    out.extend(produced)
                    out_ts.extend([ts] * (len(out) - before))
                else:
                    split_side_outputs(produced, ts, out, out_ts, side)
        ctx.current_timestamp = None
        return out, out_ts


class NonKeyedProcessOperator(Operator):
    """Flink's ``ProcessOperator``: a ``ProcessFunction`` over every record (no timers: they
    need a key)."""

    assigns_timestamps = False

    def __init__(self, uid: str, name: str, function: ProcessFunction | UserFn) -> None:
        super().__init__(uid, name)
        self.user_function = function
        self.function: Any = None
        self.context: _ProcessContext | None = None

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        fn = self.user_function
        self.function = copy.deepcopy(fn) if isinstance(fn, Function) else _FunctionAdapter(fn)
        self.context = _ProcessContext(ctx, None, _TimerServiceView(self, None))
        self.function.open(self.context)

    def close_function(self) -> None:
        if self.function is not None:
            self.function.close()

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        out, _ = self.process_timestamped(records, [None] * len(records))
        return out

    def process_timestamped(
        self, records: Sequence[Any], timestamps: Sequence[int | None]
    ) -> tuple[list[Any], list[int | None]]:
        ctx = self.context
        assert ctx is not None, "open() first"
        process = self.function.process_element
        out: list[Any] = []
        out_ts: list[int | None] = []
        side = self.side
        for record, ts in zip(cursor(self, records), timestamps, strict=True):
            ctx.current_timestamp = ts
            produced = process(record, ctx)
            if produced is not None:
                if side is None:
                    before = len(out)
                    out.extend(produced)
                    out_ts.extend([ts] * (len(out) - before))
                else:
                    split_side_outputs(produced, ts, out, out_ts, side)
        ctx.current_timestamp = None
        return out, out_ts


class TimestampsAndWatermarksOperator(Operator):
    """Flink's ``TimestampsAndWatermarksOperator``: gives each record its event timestamp and
    emits the generator's watermark every ``pipeline.auto-watermark-interval`` of processing
    time when it advanced. Watermarks from upstream stop here, except the end of event time."""

    assigns_timestamps = True
    has_timers = True

    def __init__(self, uid: str, name: str, strategy: WatermarkStrategy) -> None:
        super().__init__(uid, name)
        self.strategy = strategy
        self.generator = strategy.make_generator()
        self.assigner = strategy.assigner
        self._next_emit: int | None = None
        self._last_record_at = 0
        self.idle = False
        #: the stream went idle (True) or active again (False) in the last call: the chain
        #: sends the status downstream
        self.status_change: bool | None = None
        #: the largest watermark the generator returned from ``on_event``
        self._punctuated = MIN_WATERMARK
        #: the watermark before the end of event time (the last one the stream had)
        self.before_end = MIN_WATERMARK

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self.generator = self.strategy.make_generator()
        interval = ctx.auto_watermark_interval
        # BATCH: no progressive watermarks, only the end of event time
        periodic = interval > 0 and not ctx.batch
        self._next_emit = ctx.time.processing + interval if periodic else None
        self._last_record_at = ctx.time.processing

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        out, _ = self.process_timestamped(records, [None] * len(records))
        return out

    def process_timestamped(
        self, records: Sequence[Any], timestamps: Sequence[int | None]
    ) -> tuple[Sequence[Any], Sequence[int | None]]:
        assign = self.assigner
        if assign is not None:
            stamped: list[int | None] = [
                int(assign(r, MIN_WATERMARK if t is None else t))
                for r, t in zip(records, timestamps, strict=True)
            ]
        else:
            stamped = list(timestamps)
        on_event = self.generator.on_event
        for ts in stamped:
            punctuated = on_event(MIN_WATERMARK if ts is None else ts)
            if punctuated is not None and punctuated > self._punctuated:
                self._punctuated = punctuated  # goes out with the next periodic emission
        if self.ctx is not None:
            self._last_record_at = self.ctx.time.processing
        return records, stamped

    def process_watermark(self, watermark: int) -> tuple[Emitted, int | None]:
        if watermark == MAX_WATERMARK and self.current_watermark != MAX_WATERMARK:
            self.before_end = self.current_watermark
            self.current_watermark = MAX_WATERMARK
            self._next_emit = None
            return ([], []), MAX_WATERMARK
        return ([], []), None

    def next_processing_time(self) -> int | None:
        return self._next_emit

    def on_processing_time(self, now: int) -> tuple[Emitted, int | None]:
        due = self._next_emit
        if due is None or now < due:
            return ([], []), None
        ctx = self.ctx
        assert ctx is not None
        self._next_emit = now + ctx.auto_watermark_interval
        idleness = self.strategy.idleness
        if idleness and now - self._last_record_at >= idleness:
            if not self.idle:  # no records for the idle timeout: the stream is idle
                self.idle = True
                self.status_change = True
            return ([], []), None
        periodic = self.generator.on_periodic_emit()
        watermark = self._punctuated if periodic is None else max(periodic, self._punctuated)
        if watermark > self.current_watermark:
            self.current_watermark = watermark
            if self.idle:  # a watermark makes the stream active again (before it goes out)
                self.idle = False
                self.status_change = False
            return ([], []), watermark
        return ([], []), None

    def take_status_change(self) -> bool | None:
        change, self.status_change = self.status_change, None
        return change

    def end_input(self) -> Sequence[Any]:
        self._next_emit = None
        return ()


class _CoAdapter:
    """A co-function as the two ``process_element`` methods of a co-process function: a
    ``CoMapFunction``/``CoFlatMapFunction`` object or a pair of plain functions."""

    def __init__(self, function: Any, kind: str) -> None:
        self.function = function
        self.kind = kind

    def open(self, runtime_context: Any) -> None:
        if isinstance(self.function, Function):
            self.function.open(runtime_context)

    def close(self) -> None:
        if isinstance(self.function, Function):
            self.function.close()

    def _call(self, index: int, value: Any) -> Iterable[Any] | None:
        fn = self.function
        method = fn[index - 1] if isinstance(fn, tuple) else getattr(fn, f"{self.kind}{index}")
        if self.kind == "map":
            return [method(value)]
        produced: Iterable[Any] | None = method(value)
        if produced is None:
            raise TypeError(
                f"flat_map{index} returned None for the record {value!r}; return an iterable "
                "of the records to emit (an empty list emits none)"
            )
        return produced

    def process_element1(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        return self._call(1, value)

    def process_element2(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        return self._call(2, value)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any] | None:
        return None


def co_function(function: Any) -> Any:
    """The co-process function the two-input operators call: a co-process function as it
    is, a co-map or co-flat-map function adapted (a ``(fn1, fn2)`` pair: a co-map)."""
    if isinstance(function, tuple):
        return _CoAdapter(function, "map")
    if callable(getattr(function, "process_element1", None)):
        return function
    if callable(getattr(function, "flat_map1", None)):
        return _CoAdapter(function, "flat_map")
    return _CoAdapter(function, "map")


class TwoInputOperator(Operator):
    """The head of a task with two logical inputs (``connect``): records of input 1 and 2 go
    to ``process_element1``/``2``; its watermark is the minimum of the two inputs'
    (Flink's ``AbstractStreamOperator.processWatermark1/2``)."""

    assigns_timestamps = True

    def __init__(self, uid: str, name: str, function: Any) -> None:
        super().__init__(uid, name)
        self.user_function = function
        self.function: Any = None
        self.context: _ProcessContext | None = None
        self.input_watermarks = [MIN_WATERMARK, MIN_WATERMARK]

    def _backend(self) -> KeyedStateBackend | None:
        return None

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self.function = co_function(copy.deepcopy(self.user_function))
        keyed = self if isinstance(self, KeyedCoProcessOperator) else None
        self.context = _ProcessContext(ctx, self._backend(), _TimerServiceView(self, keyed))
        self.function.open(self.context)

    def close_function(self) -> None:
        if self.function is not None:
            self.function.close()

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        return self.process_input(0, records, None)[0]

    def process_timestamped(
        self, records: Sequence[Any], timestamps: Sequence[int | None]
    ) -> tuple[Sequence[Any], Sequence[int | None]]:
        return self.process_input(0, records, timestamps)

    def keys_of(self, index: int, records: Sequence[Any]) -> list[Any] | None:
        return None

    def process_input(
        self, index: int, records: Sequence[Any], timestamps: Sequence[int | None] | None
    ) -> tuple[list[Any], list[int | None]]:
        ctx = self.context
        assert ctx is not None and self.ctx is not None, "open() first"
        process = self.function.process_element1 if index == 0 else self.function.process_element2
        keys = self.keys_of(index, records)
        backend = self._backend()
        if backend is not None:
            backend.now = self.ctx.time.processing
        stamps: Sequence[int | None] = (
            timestamps if timestamps is not None else [None] * len(records)
        )
        out: list[Any] = []
        out_ts: list[int | None] = []
        side = self.side
        for position, (record, ts) in enumerate(zip(records, stamps, strict=True)):
            if backend is not None and keys is not None:
                backend.current_key = keys[position]
            ctx.current_timestamp = ts
            produced = process(record, ctx)
            if produced is not None:
                if side is None:
                    before = len(out)
                    out.extend(produced)
                    out_ts.extend([ts] * (len(out) - before))
                else:
                    split_side_outputs(produced, ts, out, out_ts, side)
        ctx.current_timestamp = None
        return out, out_ts

    def input_watermark(self, index: int, watermark: int) -> int | None:
        """Input ``index``'s watermark advanced: the operator's, if that advanced too."""
        self.input_watermarks[index] = watermark
        combined = min(self.input_watermarks)
        return combined if combined > self.current_watermark else None


class CoProcessOperator(TwoInputOperator):
    """``connect`` of two streams (no keys): co-map, co-flat-map or ``CoProcessFunction``."""


class KeyedCoProcessOperator(_FiresTimers, TwoInputOperator, KeyedOperator):
    """``connect`` of two keyed streams: keyed state and timers shared by both inputs (the
    keys of both sides are one key space), ``on_timer`` as a keyed process function's."""

    def __init__(
        self, uid: str, name: str, key_selectors: tuple[UserFn, UserFn], function: Any
    ) -> None:
        KeyedOperator.__init__(self, uid, name, key_selectors[0])
        self.user_function = function
        self.function = None
        self.context = None
        self.input_watermarks = [MIN_WATERMARK, MIN_WATERMARK]
        self.key_selectors = key_selectors

    def _backend(self) -> KeyedStateBackend | None:
        return self.backend

    def open(self, ctx: OperatorContext) -> None:
        KeyedOperator.open(self, ctx)
        TwoInputOperator.open(self, ctx)

    def keys_of(self, index: int, records: Sequence[Any]) -> list[Any] | None:  # type: ignore[override]
        key_of = plain_selector(self.key_selectors[index])
        return [key_of(r) for r in records]

    def process_keyed_batch(self, records: Sequence[Any], keys: Sequence[Any]) -> Sequence[Any]:
        return self.process_input(0, records, None)[0]

    def process_keyed_timestamped(
        self, records: Sequence[Any], keys: Sequence[Any], timestamps: Sequence[int | None]
    ) -> tuple[Sequence[Any], Sequence[int | None]]:
        return self.process_input(0, records, timestamps)

    def close_function(self) -> None:
        TwoInputOperator.close_function(self)


class _NoKey:
    """The current key while a keyed broadcast operator processes a broadcast element: there is
    none, and keyed state says so when it is used."""

    __slots__ = ()

    def __hash__(self) -> int:
        raise RuntimeError(
            "keyed state has no current key in process_broadcast_element: use "
            "ctx.apply_to_keyed_state(state_descriptor, function) for the state of every key"
        )

    def __eq__(self, other: object) -> bool:
        return other is self

    def __repr__(self) -> str:
        return "<no key>"


_NO_KEY = _NoKey()


class _BroadcastContext(
    _ProcessContext,
    KeyedBroadcastProcessFunction.OnTimerContext,
    KeyedBroadcastProcessFunction.Context,
):
    """The context of a broadcast process function: read-only broadcast state for the other
    input's records and timers (``writable`` False), read-write for broadcast records; the
    keyed operator's timers, current key and (broadcast side) ``apply_to_keyed_state``."""

    def __init__(
        self,
        ctx: OperatorContext,
        operator: Operator,
        backend: KeyedStateBackend | None,
        timers: TimerService,
        states: BroadcastStateBackend,
        *,
        writable: bool,
    ) -> None:
        super().__init__(ctx, backend, timers)
        self._operator = operator
        self._states = states
        self.writable = writable

    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> Any:
        return self._states.state(state_descriptor, writable=self.writable)

    def current_processing_time(self) -> int:
        return self._ctx.time.processing

    def current_watermark(self) -> int:
        return self._operator.current_watermark

    def get_current_key(self) -> Any:
        key = self._keyed().current_key
        return None if key is _NO_KEY else key

    def apply_to_keyed_state(
        self, state_descriptor: StateDescriptor, function: Callable[[Any, Any], None]
    ) -> None:
        if not self.writable:
            raise RuntimeError(
                "apply_to_keyed_state is for process_broadcast_element (the keyed side has "
                "its key's state)"
            )
        backend = self._keyed()
        state = backend.state(state_descriptor)
        table = backend.table(state_descriptor.name, state_descriptor.kind)
        current = backend.current_key
        try:
            for key in list(table):
                if key in table:  # not cleared by the function meanwhile
                    backend.current_key = key
                    function(key, state)
        finally:
            backend.current_key = current


class _BroadcastInputs:
    """Input 0 (the other stream) to ``process_element`` with read-only broadcast state, input
    1 (the broadcast stream) to ``process_broadcast_element`` with read-write broadcast state;
    the broadcast state in every snapshot, restored as a copy (Flink's
    ``CoBroadcastWith(Non)KeyedOperator``). In BATCH mode the broadcast input comes first:
    the other input's records wait for the end of input (a keyed one sorted by key, as keyed
    operators take their input in BATCH mode)."""

    user_function: Any
    function: Any
    ctx: OperatorContext | None
    side: SideOutputs | None
    context: _ProcessContext | None
    state_descriptors: tuple[MapStateDescriptor, ...]
    broadcast: BroadcastStateBackend
    read_write: _BroadcastContext | None

    def _open_broadcast(
        self, operator: Operator, ctx: OperatorContext, backend: KeyedStateBackend | None
    ) -> None:
        self.broadcast = BroadcastStateBackend(self.state_descriptors)
        self.function = copy.deepcopy(self.user_function)
        keyed = operator if isinstance(operator, KeyedOperator) else None
        timers = _TimerServiceView(operator, keyed)
        self.context = _BroadcastContext(
            ctx, operator, backend, timers, self.broadcast, writable=False
        )
        self.read_write = _BroadcastContext(
            ctx, operator, backend, timers, self.broadcast, writable=True
        )
        self.function.open(_RuntimeContext(ctx, backend))

    def _key_of(self) -> UserFn | None:
        return None

    def _backend_of(self) -> KeyedStateBackend | None:
        return None

    def _hold(self, records: Sequence[Any], timestamps: Sequence[int | None] | None) -> bool:
        """BATCH: keep the other input's records until the end of input (the broadcast input
        is read first, as Flink reads it in BATCH mode); False when streaming."""
        return False

    def process_input(
        self, index: int, records: Sequence[Any], timestamps: Sequence[int | None] | None
    ) -> tuple[list[Any], list[int | None]]:
        if index == 0 and self._hold(records, timestamps):
            return [], []
        return self._process(index, records, timestamps, None)

    def _process(
        self,
        index: int,
        records: Sequence[Any],
        timestamps: Sequence[int | None] | None,
        keys: Sequence[Any] | None,
    ) -> tuple[list[Any], list[int | None]]:
        assert self.ctx is not None and self.context is not None and self.read_write is not None
        backend = self._backend_of()
        key_of = self._key_of()
        if index == 0:
            ctx: _ProcessContext = self.context
            process = self.function.process_element
        else:
            ctx = self.read_write
            process = self.function.process_broadcast_element
            key_of = None
            if backend is not None:
                backend.current_key = _NO_KEY
        if backend is not None:
            backend.now = self.ctx.time.processing
        stamps: Sequence[int | None] = (
            timestamps if timestamps is not None else [None] * len(records)
        )
        out: list[Any] = []
        out_ts: list[int | None] = []
        side = self.side
        for position, (record, ts) in enumerate(zip(records, stamps, strict=True)):
            if key_of is not None and backend is not None:
                backend.current_key = keys[position] if keys is not None else key_of(record)
            ctx.current_timestamp = ts
            produced = process(record, ctx)
            if produced is not None:
                if side is None:
                    before = len(out)
                    out.extend(produced)
                    out_ts.extend([ts] * (len(out) - before))
                else:
                    split_side_outputs(produced, ts, out, out_ts, side)
        ctx.current_timestamp = None
        return out, out_ts


class BroadcastProcessOperator(_BroadcastInputs, TwoInputOperator):
    """``connect`` of a non-keyed stream with a broadcast stream: a
    ``BroadcastProcessFunction``."""

    def __init__(
        self,
        uid: str,
        name: str,
        function: Any,
        state_descriptors: tuple[MapStateDescriptor, ...],
    ) -> None:
        TwoInputOperator.__init__(self, uid, name, function)
        self.state_descriptors = state_descriptors
        self.broadcast = BroadcastStateBackend(state_descriptors)
        self.read_write = None

    def open(self, ctx: OperatorContext) -> None:
        Operator.open(self, ctx)
        self._open_broadcast(self, ctx, None)
        self._held: list[tuple[Any, int | None]] = []

    def _hold(self, records: Sequence[Any], timestamps: Sequence[int | None] | None) -> bool:
        if self.ctx is None or not self.ctx.batch:
            return False
        stamps = timestamps if timestamps is not None else [None] * len(records)
        self._held.extend(zip(records, stamps, strict=True))
        return True

    def end_input(self) -> Sequence[Any]:
        """BATCH: the other input's records, now that the broadcast input has ended."""
        held, self._held = self._held, []
        if not held:
            return ()
        return self._process(0, [r for r, _ in held], [t for _, t in held], None)[0]

    def snapshot_state(self, checkpoint_id: int) -> Any:
        return {"broadcast": self.broadcast.snapshot()}

    def restore_state(self, states: list[Any]) -> None:
        assert self.ctx is not None, "open() first"
        copies = [s["broadcast"] for s in states if s and "broadcast" in s]
        self.broadcast.restore(copies, self.ctx.subtask)


class KeyedBroadcastProcessOperator(
    _FiresTimers, _BroadcastInputs, TwoInputOperator, KeyedOperator
):
    """``connect`` of a keyed stream with a broadcast stream: a
    ``KeyedBroadcastProcessFunction`` (keyed state and timers of the keyed side's keys; its
    ``on_timer`` sees read-only broadcast state)."""

    def __init__(
        self,
        uid: str,
        name: str,
        key_selector: UserFn,
        function: Any,
        state_descriptors: tuple[MapStateDescriptor, ...],
    ) -> None:
        KeyedOperator.__init__(self, uid, name, key_selector)
        self.user_function = function
        self.function = None
        self.context = None
        self.read_write = None
        self.input_watermarks = [MIN_WATERMARK, MIN_WATERMARK]
        self.state_descriptors = state_descriptors
        self.broadcast = BroadcastStateBackend(state_descriptors)

    def open(self, ctx: OperatorContext) -> None:
        KeyedOperator.open(self, ctx)
        self._open_broadcast(self, ctx, self.backend)

    def _key_of(self) -> UserFn | None:
        return plain_selector(self.key_selector)

    def keys_of(self, records: Sequence[Any]) -> list[Any]:  # type: ignore[override]
        return KeyedOperator.keys_of(self, records)

    def _hold(self, records: Sequence[Any], timestamps: Sequence[int | None] | None) -> bool:
        if not self.batching:
            return False
        self.buffer_batch(records, self.keys_of(records), timestamps)
        return True

    def process_keyed_timestamped(
        self, records: Sequence[Any], keys: Sequence[Any], timestamps: Sequence[int | None]
    ) -> tuple[Sequence[Any], Sequence[int | None]]:
        """BATCH: one key's records of the keyed input, at the end of input."""
        return self._process(0, records, timestamps, keys)

    def _backend_of(self) -> KeyedStateBackend | None:
        return self.backend

    def close_function(self) -> None:
        TwoInputOperator.close_function(self)

    def snapshot_state(self, checkpoint_id: int) -> Any:
        snapshot = KeyedOperator.snapshot_state(self, checkpoint_id)
        snapshot["broadcast"] = self.broadcast.snapshot()
        return snapshot

    def restore_state(self, states: list[Any]) -> None:
        assert self.ctx is not None, "open() first"
        KeyedOperator.restore_state(self, states)
        copies = [s["broadcast"] for s in states if s and "broadcast" in s]
        self.broadcast.restore(copies, self.ctx.subtask)


class SourceReader(Protocol):
    """A subtask's share of a source, readable in batches from a restorable position."""

    def read(self, max_records: int, now: int) -> Sequence[Any] | None:
        """Up to ``max_records`` records; empty when none is ready yet; None at the end."""

    def next_ready(self, now: int) -> int | None:
        """When records become ready again (rate-limited sources), or None."""

    def position(self) -> Any:
        """JSON-safe position: the read resumes right after it."""

    def seek(self, position: Any) -> None: ...


def next_ready_for(reader: SourceReader, now: int, count: int) -> int | None:
    """When ``count`` records will be ready (or all that are left, if fewer), for a reader
    that says (an optional ``next_ready_for(now, count)``); else when the next one will be
    (``next_ready``)."""
    ready = getattr(reader, "next_ready_for", None)
    if ready is None or count <= 1:
        return reader.next_ready(now)
    due: int | None = ready(now, count)
    return due


def knows_its_pace(reader: SourceReader) -> bool:
    """Whether the reader says when any number of records will be ready
    (``next_ready_for``), and its ``next_ready`` is ``now`` while one is ready already."""
    return callable(getattr(reader, "next_ready_for", None))


class CollectionReader:
    """Subtask ``i`` of ``p`` reads ``items[i::p]``."""

    def __init__(self, items: Sequence[Any], subtask: int, parallelism: int) -> None:
        self.items = items
        self.stride = parallelism
        self.start = subtask
        self.offset = 0  # records of this subtask emitted so far

    def read(self, max_records: int, now: int) -> Sequence[Any] | None:
        first = self.start + self.offset * self.stride
        if first >= len(self.items):
            return None
        batch = self.items[first : first + max_records * self.stride : self.stride]
        self.offset += len(batch)
        return list(batch)

    def next_ready(self, now: int) -> int | None:
        return None

    def position(self) -> Any:
        return {"offset": self.offset}

    def seek(self, position: Any) -> None:
        self.offset = int(position["offset"])

    @staticmethod
    def check_position(items: Sequence[Any], position: Any, subtask: int, parallelism: int) -> None:
        """A restored position of subtask ``subtask`` of ``parallelism``: a ``ValueError``
        naming the field unless it is one the subtask can reach."""
        share = len(range(subtask, len(items), parallelism))
        _check_count(position, "offset", share, f"subtask {subtask} of {parallelism} reads {share}")

    @staticmethod
    def check_final(items: Sequence[Any], position: Any, subtask: int, parallelism: int) -> None:
        """The final position of subtask ``subtask`` of ``parallelism``, which finished: a
        ``ValueError`` naming the field unless the subtask had read all of its share."""
        CollectionReader.check_position(items, position, subtask, parallelism)
        _only_fields(position, "offset")
        share = len(range(subtask, len(items), parallelism))
        if position["offset"] != share:
            raise ValueError(
                f"field 'offset' is {position['offset']}: subtask {subtask} of {parallelism} "
                f"finishes after reading all of its {share} records"
            )


class GeneratorReader:
    """Subtask ``i`` of ``p`` emits ``fn(n)`` for ``n = i, i+p, ...`` below ``count``, at most
    ``rate`` records per second over all subtasks (None: as fast as possible)."""

    def __init__(
        self, fn: UserFn, count: int, subtask: int, parallelism: int, rate: float | None
    ) -> None:
        self.fn = fn
        self.count = count
        self.subtask = subtask
        self.stride = parallelism
        self.index = subtask
        self.rate = rate / parallelism if rate else None
        self._started_at: int | None = None
        self._emitted = 0

    def read(self, max_records: int, now: int) -> Sequence[Any] | None:
        indices = self.next_indices(max_records, now)
        if indices is None:
            return None
        fn = self.fn
        batch = [fn(n) for n in indices]
        self.advance(len(batch))
        return batch

    def next_indices(self, max_records: int, now: int) -> range | None:
        """The ``n`` of the records the next read emits (None: the end); ``advance`` moves the
        position past them once they were emitted."""
        if self.index >= self.count:
            return None
        limit = max_records
        if self.rate is not None:
            if self._started_at is None:
                # a restored reader goes on at the rate from where it was, not from nothing:
                # as if it had started when its emitted records would have begun
                self._started_at = now - int(self._emitted / self.rate * 1000)
            limit = max(0, min(limit, self._allowed(now)))
        stop = min(self.count, self.index + limit * self.stride)
        return range(self.index, stop, self.stride)

    def _allowed(self, now: int) -> int:
        """How many more records the rate allows by ``now`` (rate-limited, started)."""
        assert self.rate is not None and self._started_at is not None
        return int((now - self._started_at) / 1000 * self.rate) + 1 - self._emitted

    def advance(self, emitted: int) -> None:
        self.index += emitted * self.stride
        self._emitted += emitted

    def next_ready(self, now: int) -> int | None:
        if self.rate is None or self.index >= self.count or self._started_at is None:
            return None
        if self._allowed(now) > 0:
            return now  # one is ready already (a read stopped short of it at its limit)
        due = self._started_at + int(self._emitted / self.rate * 1000)
        return max(due, now + 1)

    def next_ready_for(self, now: int, count: int) -> int | None:
        """When ``count`` more records (or the rest, if fewer are left) will be ready: the
        first ms at which ``next_indices`` allows them all."""
        if self.rate is None or self.index >= self.count or self._started_at is None:
            return None
        left = -(-(self.count - self.index) // self.stride)
        last = self._emitted + max(1, min(count, left)) - 1  # allowed once the clock passes it
        due = self._started_at + -(-last * 1000 // self.rate)
        return max(int(due), now + 1)

    def position(self) -> Any:
        return {"index": self.index, "emitted": self._emitted}

    def seek(self, position: Any) -> None:
        self.index = int(position["index"])
        self._emitted = int(position.get("emitted", 0))

    @staticmethod
    def check_position(count: int, position: Any, subtask: int, parallelism: int) -> None:
        """A restored position of subtask ``subtask`` of ``parallelism``: a ``ValueError``
        naming the field unless it is one the subtask can reach (it emits ``fn(n)`` for
        ``n = subtask, subtask + parallelism, ...`` below ``count``)."""
        share = len(range(subtask, count, parallelism))
        what = f"subtask {subtask} of {parallelism} emits {share} of the {count} records"
        emitted = _check_count(position, "emitted", share, what, required=False)
        index = _whole(position, "index")
        if emitted is None:
            emitted = (index - subtask) // parallelism
        if index != subtask + emitted * parallelism:
            raise ValueError(
                f"field 'index' is {index}: {what}; after {emitted} of them its next index is "
                f"{subtask + emitted * parallelism}"
            )

    @staticmethod
    def check_final(count: int, position: Any, subtask: int, parallelism: int) -> None:
        """The final position of subtask ``subtask`` of ``parallelism``, which finished: a
        ``ValueError`` naming the field unless the subtask had emitted all of its share."""
        GeneratorReader.check_position(count, position, subtask, parallelism)
        _only_fields(position, "index", "emitted")
        share = len(range(subtask, count, parallelism))
        end = subtask + share * parallelism
        if position["index"] != end:
            raise ValueError(
                f"field 'index' is {position['index']}: subtask {subtask} of {parallelism} "
                f"finishes after emitting all of its {share} records (next index {end})"
            )


def generate_mapped(fn: UserFn, then: UserFn, indices: Iterable[int]) -> list[Any]:
    """``then(fn(n))`` for every ``n``: a generator's records through the map chained right
    after the source, in one pass (a list less, and a loop less per record). Which of the two
    an exception came from: ``raised_by_generator``."""
    return [then(fn(n)) for n in indices]


#: the code the pass runs in (its comprehension's, unless the comprehension is inlined), and
#: the offset of the first instruction after the call of ``fn``: an exception of ``fn`` leaves
#: that frame before it, one of ``then`` at or after it (a function written in Python is
#: entered a few cache entries past its call instruction, so the call's own offset is not it)
_MAPPED_CODE: CodeType = next(
    (c for c in generate_mapped.__code__.co_consts if isinstance(c, CodeType)),
    generate_mapped.__code__,
)
_MAPPED_INSTRUCTIONS = list(dis.get_instructions(_MAPPED_CODE))
_MAPPED_THEN_FROM: int = _MAPPED_INSTRUCTIONS[
    next(i for i, ins in enumerate(_MAPPED_INSTRUCTIONS) if ins.opname == "CALL") + 1
].offset


def raised_by_generator(error: BaseException) -> bool:
    """Whether ``error``, raised out of ``generate_mapped``, was raised by its ``fn`` (else by
    its ``then``)."""
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is _MAPPED_CODE:
            return tb.tb_lasti < _MAPPED_THEN_FROM
        tb = tb.tb_next
    raise AssertionError("the exception did not come out of generate_mapped") from error


def _only_fields(position: Any, *fields: str) -> None:
    """A position of exactly ``fields`` (as the reader writes it): a ``ValueError`` naming a
    missing or an extra one."""
    for name in fields:
        if name not in position:
            raise ValueError(f"field {name!r} is missing")
    extra = sorted(set(position) - set(fields), key=str)
    if extra:
        raise ValueError(f"field {extra[0]!r} is not one of the source's ({', '.join(fields)})")


def _whole(position: Any, field: str) -> int:
    if not isinstance(position, dict) or field not in position:
        raise ValueError(f"field {field!r} is missing")
    value = position[field]
    if type(value) is not int:
        raise ValueError(f"field {field!r} must be a whole number, got {value!r}")
    return value


def _check_count(
    position: Any, field: str, most: int, what: str, *, required: bool = True
) -> int | None:
    """``position[field]``, a whole number from 0 to ``most``."""
    if not required and isinstance(position, dict) and field not in position:
        return None
    value = _whole(position, field)
    if not 0 <= value <= most:
        raise ValueError(f"field {field!r} is {value}: {what}, so it is from 0 to {most}")
    return value


class SourceOperator(Operator):
    """The head of a source task; its state is the reader's position."""

    def __init__(
        self, uid: str, name: str, make_reader: Callable[[OperatorContext], SourceReader]
    ) -> None:
        super().__init__(uid, name)
        self.make_reader = make_reader
        self.reader: SourceReader | None = None
        self._restored: Any = None

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self.reader = self.make_reader(ctx)
        if self._restored is not None:
            self.reader.seek(self._restored)

    def snapshot_state(self, checkpoint_id: int) -> Any:
        assert self.reader is not None
        return {"position": self.reader.position()}

    def restore_state(self, states: list[Any]) -> None:
        mine = [s for s in states if s]
        if len(mine) > 1:
            raise ValueError(
                f"source {self.name!r}: cannot restore {len(mine)} positions into one subtask"
            )
        self._restored = mine[0]["position"] if mine else None
        if self.reader is not None and self._restored is not None:
            self.reader.seek(self._restored)
