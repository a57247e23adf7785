"""Operators, as a task runs them: one call per buffer, state as JSON-safe snapshots.

Every operator takes a batch of records and returns a batch (``process_batch``): a map over a
buffer is one call. Keyed operators keep their state in a ``KeyedStateBackend``; sources keep
their read position as operator state, so a restored source resumes right after it. Sinks are
the task's (``runtime.task.sinks``): they do no I/O, their connectors do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from runtime.partition import key_hash_of, plain_selector
from runtime.state import KeyedStateBackend, ListState, ValueState

UserFn = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class OperatorContext:
    """Where an operator runs."""

    subtask: int
    parallelism: int
    max_parallelism: int
    key_groups: range
    buffer_records: int = 4096


class Operator:
    """Base: a pass-through with no state."""

    def __init__(self, uid: str, name: str) -> None:
        self.uid = uid
        self.name = name
        self.ctx: OperatorContext | None = None

    def open(self, ctx: OperatorContext) -> None:
        self.ctx = ctx

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        return records

    def end_input(self) -> Sequence[Any]:
        """All input consumed: emit what is left (default: nothing)."""
        return ()

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


class MapOperator(Operator):
    def __init__(self, uid: str, name: str, fn: UserFn) -> None:
        super().__init__(uid, name)
        self.fn = fn

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        fn = self.fn
        return [fn(r) for r in records]


class MapBatchOperator(Operator):
    """The user function takes and returns a whole buffer (a list or an Arrow batch)."""

    def __init__(self, uid: str, name: str, fn: UserFn) -> None:
        super().__init__(uid, name)
        self.fn = fn

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        out: Sequence[Any] | None = self.fn(records)
        if out is None:
            raise TypeError(
                f"map_batch {self.name!r} ({self.uid}) returned None for a buffer of "
                f"{len(records)} record(s); return the records to emit (an empty list emits none)"
            )
        return out


class FilterOperator(Operator):
    def __init__(self, uid: str, name: str, fn: UserFn) -> None:
        super().__init__(uid, name)
        self.fn = fn

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        fn = self.fn
        return [r for r in records if fn(r)]


class FlatMapOperator(Operator):
    def __init__(self, uid: str, name: str, fn: UserFn) -> None:
        super().__init__(uid, name)
        self.fn = fn

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        fn = self.fn
        out: list[Any] = []
        extend = out.extend
        for record in records:
            produced = fn(record)
            if produced is None:
                raise TypeError(
                    f"flat_map {self.name!r} ({self.uid}) returned None for the record "
                    f"{record!r}; return an iterable of the records to emit (an empty list "
                    "emits none)"
                )
            extend(produced)
        return out


class KeyedOperator(Operator):
    def __init__(self, uid: str, name: str, key_selector: UserFn) -> None:
        super().__init__(uid, name)
        self.key_selector = key_selector
        self.backend = KeyedStateBackend()

    def open(self, ctx: OperatorContext) -> None:
        """Fresh state for this subtask; ``restore_state`` (after ``open``) fills it."""
        super().open(ctx)
        self.backend = KeyedStateBackend(ctx.max_parallelism, key_hash_of(self.key_selector))

    def keys_of(self, records: Sequence[Any]) -> list[Any]:
        """The key of every record (the ``key_by`` selector, user code)."""
        key_of = plain_selector(self.key_selector)
        return [key_of(r) for r in records]

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        return self.process_keyed_batch(records, self.keys_of(records))

    def process_keyed_batch(self, records: Sequence[Any], keys: Sequence[Any]) -> Sequence[Any]:
        raise NotImplementedError

    def snapshot_state(self, checkpoint_id: int) -> Any:
        return self.backend.snapshot()

    def restore_state(self, states: list[Any]) -> None:
        key_groups = self.ctx.key_groups if self.ctx is not None else None
        self.backend.restore([s for s in states if s], key_groups)


class ReduceOperator(KeyedOperator):
    """Flink's keyed reduce: emits the running aggregate of the record's key."""

    STATE = "_reduce"

    def process_keyed_batch(self, records: Sequence[Any], keys: Sequence[Any]) -> Sequence[Any]:
        reduce = self.fn
        table = self.backend.table(self.STATE)
        get = table.get
        out: list[Any] = []
        append = out.append
        for key, record in zip(keys, records, strict=True):
            acc = get(key, _MISSING)
            value = record if acc is _MISSING else reduce(acc, record)
            table[key] = value
            append(value)
        return out

    def __init__(self, uid: str, name: str, key_selector: UserFn, fn: UserFn) -> None:
        super().__init__(uid, name, key_selector)
        self.fn = fn


_MISSING = object()


class RuntimeContext:
    """What a keyed process function sees: its subtask and its keyed state."""

    def __init__(self, backend: KeyedStateBackend, ctx: OperatorContext) -> None:
        self._backend = backend
        self.subtask_index = ctx.subtask
        self.parallelism = ctx.parallelism

    def get_state(self, name: str) -> ValueState:
        return self._backend.value_state(name)

    def get_list_state(self, name: str) -> ListState:
        return self._backend.list_state(name)

    def get_current_key(self) -> Any:
        return self._backend.current_key


class KeyedProcessFunction:
    """Flink's ``KeyedProcessFunction``: ``open`` once, ``process_element`` per record.

    ``process_element`` returns (or yields) the records to emit. State comes from the runtime
    context: ``self.total = ctx.get_state("total")`` in ``open``, then ``self.total.value()`` /
    ``self.total.update(v)`` for the current key.
    """

    def open(self, ctx: RuntimeContext) -> None:
        """Called once before the first record."""

    def process_element(self, value: Any, ctx: RuntimeContext) -> Iterable[Any] | None:
        raise NotImplementedError


class _FunctionAdapter(KeyedProcessFunction):
    def __init__(self, fn: UserFn) -> None:
        self.fn = fn

    def process_element(self, value: Any, ctx: RuntimeContext) -> Iterable[Any] | None:
        result: Iterable[Any] | None = self.fn(value, ctx)
        return result


class ProcessOperator(KeyedOperator):
    def __init__(
        self, uid: str, name: str, key_selector: UserFn, function: KeyedProcessFunction | UserFn
    ) -> None:
        super().__init__(uid, name, key_selector)
        self.function = (
            function if isinstance(function, KeyedProcessFunction) else _FunctionAdapter(function)
        )
        self.runtime_context: RuntimeContext | None = None

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self.runtime_context = RuntimeContext(self.backend, ctx)
        self.function.open(self.runtime_context)

    def process_keyed_batch(self, records: Sequence[Any], keys: Sequence[Any]) -> Sequence[Any]:
        assert self.runtime_context is not None, "open() first"
        backend, process, ctx = self.backend, self.function.process_element, self.runtime_context
        out: list[Any] = []
        for key, record in zip(keys, records, strict=True):
            backend.current_key = key
            produced = process(record, ctx)
            if produced is not None:
                out.extend(produced)
        return out


class SourceReader(Protocol):
    """A subtask's share of a source, readable in batches from a restorable position."""

    def read(self, max_records: int, now: int) -> Sequence[Any] | None:
        """Up to ``max_records`` records; empty when none is ready yet; None at the end."""

    def next_ready(self, now: int) -> int | None:
        """When records become ready again (rate-limited sources), or None."""

    def position(self) -> Any:
        """JSON-safe position: the read resumes right after it."""

    def seek(self, position: Any) -> None: ...


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
        if self.index >= self.count:
            return None
        limit = max_records
        if self.rate is not None:
            if self._started_at is None:
                self._started_at = now
            allowed = int((now - self._started_at) / 1000 * self.rate) + 1 - self._emitted
            limit = max(0, min(limit, allowed))
        stop = min(self.count, self.index + limit * self.stride)
        fn = self.fn
        batch = [fn(n) for n in range(self.index, stop, self.stride)]
        self.index += len(batch) * self.stride
        self._emitted += len(batch)
        return batch

    def next_ready(self, now: int) -> int | None:
        if self.rate is None or self.index >= self.count or self._started_at is None:
            return None
        due = self._started_at + int(self._emitted / self.rate * 1000)
        return max(due, now + 1)

    def position(self) -> Any:
        return {"index": self.index, "emitted": self._emitted}

    def seek(self, position: Any) -> None:
        self.index = int(position["index"])
        self._emitted = int(position.get("emitted", 0))


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
