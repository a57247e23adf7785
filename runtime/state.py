"""Keyed state: key groups, ``ValueState`` and ``ListState``, snapshots as JSON-safe data.

Keys are assigned to key groups (``max_parallelism`` of them, 128 by default) with Flink's
``KeyGroupRangeAssignment``: ``murmurHash(hashCode(key)) % max_parallelism``, and key groups
to subtasks by range. String keys hash like Java's ``String.hashCode``, integers like
``Long.hashCode``, other keys by a CRC of their canonical JSON; all hashes are stable across
processes (Python's ``hash()`` of a string is not).
"""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import types
import typing
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, Literal, overload

from runtime import serde
from runtime.row import Row

DEFAULT_MAX_PARALLELISM = 128
#: the most key groups a job can have (Flink's ``KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM``)
UPPER_BOUND_MAX_PARALLELISM = 1 << 15


def default_max_parallelism(parallelism: int) -> int:
    """Flink's default max parallelism for an operator of ``parallelism`` subtasks (when
    ``pipeline.max-parallelism`` is not set): 128 up to parallelism 85, then the power of two at
    or above 1.5 x the parallelism, at most 32768."""
    wanted = parallelism + parallelism // 2
    power = 1 << max(wanted - 1, 0).bit_length()
    return min(max(power, DEFAULT_MAX_PARALLELISM), UPPER_BOUND_MAX_PARALLELISM)


_MASK = 0xFFFFFFFF
#: key groups a backend remembers, by key
_GROUP_CACHE_LIMIT = 1 << 20


def _int32(value: int) -> int:
    value &= _MASK
    return value - (1 << 32) if value & 0x80000000 else value


def _rotl(value: int, bits: int) -> int:
    value &= _MASK
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def murmur_hash(code: int) -> int:
    """Flink's ``MathUtils.murmurHash``: a non-negative int."""
    code = (code * 0xCC9E2D51) & _MASK
    code = _rotl(code, 15)
    code = (code * 0x1B873593) & _MASK
    code = _rotl(code, 13)
    code = (code * 5 + 0xE6546B64) & _MASK
    code ^= 4
    code ^= code >> 16
    code = (code * 0x85EBCA6B) & _MASK
    code ^= code >> 13
    code = (code * 0xC2B2AE35) & _MASK
    code ^= code >> 16
    signed = _int32(code)
    if signed >= 0:
        return signed
    return -signed if signed != -(1 << 31) else 0


def hash_code(key: Any) -> int:
    """A stable 32-bit hash of a key (Java ``hashCode`` for str and int).

    A function of the key's type and value only: ``True`` and ``1`` are equal in Python but
    hash differently here (as ``Boolean`` and ``Long`` do in Java), whatever was hashed before.
    Callers that route many records cache per key themselves (the partitioner, per channel).
    """
    if isinstance(key, str):
        h = 0
        data = key.encode("utf-16-be")
        for i in range(0, len(data), 2):
            h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK
        code = _int32(h)
    elif isinstance(key, bool):
        code = 1231 if key else 1237
    elif isinstance(key, int):
        code = _int32(key ^ (key >> 32))
    else:
        code = _int32(zlib.crc32(serde.dumps(key, where="a key").encode()))
    return code


def key_group_for(
    key: Any,
    max_parallelism: int = DEFAULT_MAX_PARALLELISM,
    key_hash: Callable[[Any], int] = hash_code,
) -> int:
    return murmur_hash(key_hash(key)) % max_parallelism


def operator_index_for_key_group(key_group: int, parallelism: int, max_parallelism: int) -> int:
    return key_group * parallelism // max_parallelism


def key_group_range(subtask: int, parallelism: int, max_parallelism: int) -> range:
    """The key groups a subtask owns (``KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex``)."""
    start = ((subtask * max_parallelism) + parallelism - 1) // parallelism
    end = (((subtask + 1) * max_parallelism) + parallelism - 1) // parallelism
    return range(start, end)


_MISSING = object()


def _millis(value: Any, what: str) -> int:
    """Milliseconds from an int or from a time object with ``to_milliseconds()`` (PyFlink's
    ``Time`` and ``Duration``)."""
    to_ms = getattr(value, "to_milliseconds", None)
    ms = to_ms() if callable(to_ms) else value
    if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
        raise ValueError(f"{what} must be a duration >= 0 (ms or Time), got {value!r}")
    return ms


# --- time-to-live ----------------------------------------------------------------------------


class StateTtlConfig:
    """Flink's ``StateTtlConfig`` (processing time): an entry expires ``ttl`` after it was
    last written (``OnCreateAndWrite``) or also read (``OnReadAndWrite``); an expired entry is
    never returned (``NeverReturnExpired``) or returned until it is cleaned up
    (``ReturnExpiredIfNotCleanedUp``: ckptsim cleans up on access, so it is returned once)."""

    class UpdateType(enum.Enum):
        Disabled = 0
        OnCreateAndWrite = 1
        OnReadAndWrite = 2

    class StateVisibility(enum.Enum):
        ReturnExpiredIfNotCleanedUp = 0
        NeverReturnExpired = 1

    class TtlTimeCharacteristic(enum.Enum):
        ProcessingTime = 0

    def __init__(
        self,
        ttl: int,
        update_type: StateTtlConfig.UpdateType = UpdateType.OnCreateAndWrite,
        state_visibility: StateTtlConfig.StateVisibility = StateVisibility.NeverReturnExpired,
        cleanup_in_background: bool = True,
    ) -> None:
        self.ttl = ttl
        self.update_type = update_type
        self.state_visibility = state_visibility
        self.cleanup_in_background = cleanup_in_background

    @staticmethod
    def new_builder(ttl: Any) -> StateTtlConfig.Builder:
        return StateTtlConfig.Builder(ttl)

    def get_ttl(self) -> int:
        return self.ttl

    def get_update_type(self) -> StateTtlConfig.UpdateType:
        return self.update_type

    def get_state_visibility(self) -> StateTtlConfig.StateVisibility:
        return self.state_visibility

    def get_ttl_time_characteristic(self) -> StateTtlConfig.TtlTimeCharacteristic:
        return StateTtlConfig.TtlTimeCharacteristic.ProcessingTime

    def is_enabled(self) -> bool:
        return self.update_type is not StateTtlConfig.UpdateType.Disabled

    class Builder:
        def __init__(self, ttl: Any) -> None:
            self._ttl = _millis(ttl, "a state TTL")
            self._update = StateTtlConfig.UpdateType.OnCreateAndWrite
            self._visibility = StateTtlConfig.StateVisibility.NeverReturnExpired
            self._background = True

        def set_update_type(self, update_type: StateTtlConfig.UpdateType) -> StateTtlConfig.Builder:
            self._update = update_type
            return self

        def update_ttl_on_create_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)

        def set_state_visibility(
            self, visibility: StateTtlConfig.StateVisibility
        ) -> StateTtlConfig.Builder:
            self._visibility = visibility
            return self

        def return_expired_if_not_cleaned_up(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(
                StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
            )

        def never_return_expired(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)

        def set_ttl_time_characteristic(
            self, characteristic: StateTtlConfig.TtlTimeCharacteristic
        ) -> StateTtlConfig.Builder:
            return self

        def use_processing_time(self) -> StateTtlConfig.Builder:
            return self

        def cleanup_full_snapshot(self) -> StateTtlConfig.Builder:
            return self

        def cleanup_incrementally(
            self, cleanup_size: int, run_cleanup_for_every_record: bool
        ) -> StateTtlConfig.Builder:
            return self

        def cleanup_in_rocksdb_compact_filter(
            self, query_time_after_num_entries: int, periodic_compaction_time: Any = None
        ) -> StateTtlConfig.Builder:
            return self

        def disable_cleanup_in_background(self) -> StateTtlConfig.Builder:
            self._background = False
            return self

        def set_ttl(self, ttl: Any) -> StateTtlConfig.Builder:
            self._ttl = _millis(ttl, "a state TTL")
            return self

        def build(self) -> StateTtlConfig:
            return StateTtlConfig(self._ttl, self._update, self._visibility, self._background)


# --- descriptors --------------------------------------------------------------------------------


class StateDescriptor:
    """Names a keyed state and its kind; ``type_info`` is the state's declared type (kept for
    the PyFlink API, values are Python objects either way)."""

    kind: ClassVar[str] = "value"

    def __init__(self, name: str, type_info: Any = None) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a state needs a name (a non-empty str), got {name!r}")
        self.name = name
        self.type_info = type_info
        self.ttl_config: StateTtlConfig | None = None

    def get_name(self) -> str:
        return self.name

    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
        self.ttl_config = ttl_config if ttl_config.is_enabled() else None


#: classes whose values a checkpoint holds exactly (their subclasses would come back as them)
_EXACT_TYPES = (decimal.Decimal, dt.datetime, dt.date, dt.time, dt.timedelta)
#: classes whose values, and their subclasses' (as the base class), a checkpoint holds
_DATA_TYPES = (
    type(None),
    bool,
    int,
    float,
    str,
    bytes,
    bytearray,
    tuple,
    list,
    dict,
    set,
    frozenset,
    Row,
)


def unwritable_declared_type(declared: Any) -> str | None:
    """Why a checkpoint cannot hold values of a state's declared type: a Python class, or a
    ``typing`` form of them (``list[X]``, ``dict[K, V]``, ``tuple[X, ...]``, ``X | None``).
    None when it can, or when the declaration says nothing checkable: no type, ``Any``,
    ``object``, or a PyFlink ``TypeInformation`` (each of which ckptsim writes;
    ``PICKLED_BYTE_ARRAY`` means any Python value, checked when it is written)."""
    if declared is None or declared is Any or declared is object:
        return None
    args = typing.get_args(declared)
    if typing.get_origin(declared) is not None:
        origin = typing.get_origin(declared)
        if origin is typing.Literal:
            return None
        if isinstance(origin, type) and origin not in (typing.Union, types.UnionType):
            problem = unwritable_declared_type(origin)
            if problem is not None:
                return problem
        for arg in args:
            if arg is not Ellipsis:
                problem = unwritable_declared_type(arg)
                if problem is not None:
                    return problem
        return None
    if not isinstance(declared, type):
        return None  # a PyFlink TypeInformation, a TypeVar, a string annotation...
    if declared in _EXACT_TYPES or issubclass(declared, _DATA_TYPES):
        return None
    if issubclass(declared, _EXACT_TYPES):
        base = next(b for b in _EXACT_TYPES if issubclass(declared, b))
        return (
            f"a {declared.__name__} is a subclass of {base.__name__} and would come back as "
            f"a {base.__name__}: declare {base.__name__} and convert the values"
        )
    if any(c.__module__ == "numpy" and c.__name__ == "generic" for c in declared.__mro__):
        return None  # NumPy scalars (their dtype is checked when written)
    return (
        f"a checkpoint cannot hold a {declared.__module__}.{declared.__qualname__} "
        "(checkpoints are data, not pickle): declare and keep None, bool, int, float, str, "
        "bytes, Decimal, datetime, date, time, timedelta, list, tuple, dict, set, Row or "
        "NumPy scalars, or convert the value first (e.g. a dataclass with dataclasses.asdict)"
    )


def declared_type_problem(descriptor: StateDescriptor) -> str | None:
    """What is wrong with the types ``descriptor`` declares (None: nothing), naming the
    state: ``state 'last' is declared as ...: ...``."""
    declared = [descriptor.type_info]
    if isinstance(descriptor, MapStateDescriptor):
        declared.insert(0, descriptor.key_type_info)
    for one in declared:
        problem = unwritable_declared_type(one)
        if problem is not None:
            return f"state {descriptor.name!r} is declared as {_shown(one)}: {problem}"
    return None


def _shown(declared: Any) -> str:
    """A declared type as the user wrote it, without module paths: ``dict[str, Point]``."""
    origin, args = typing.get_origin(declared), typing.get_args(declared)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_shown(arg) for arg in args)
    if origin is not None:
        inside = ", ".join("..." if arg is Ellipsis else _shown(arg) for arg in args)
        return f"{_shown(origin)}[{inside}]"
    if declared is type(None):
        return "None"
    if isinstance(declared, type):
        return declared.__qualname__
    return repr(declared)


def declared_states(function: Any) -> list[StateDescriptor]:
    """The state descriptors a user function holds before it runs: its attributes and its
    class's (one level into lists, tuples and dicts of them). Descriptors made in ``open()``
    are checked when ``open()`` asks for their state."""
    found: list[StateDescriptor] = []
    if function is None:
        return found
    holders = [getattr(function, "__dict__", {}), *(vars(c) for c in type(function).__mro__)]
    for holder in holders:
        for name, value in list(holder.items()):
            if name.startswith("__"):
                continue
            items = value.values() if isinstance(value, dict) else value
            for item in items if isinstance(value, list | tuple | dict) else [value]:
                if isinstance(item, StateDescriptor) and item not in found:
                    found.append(item)
    return found


class ValueStateDescriptor(StateDescriptor):
    """Declares a ``ValueState`` named ``name``: ``runtime_context.get_state(descriptor)``."""

    kind = "value"

    def __init__(self, name: str, value_type_info: Any = None) -> None:
        super().__init__(name, value_type_info)


class ListStateDescriptor(StateDescriptor):
    """Declares a ``ListState`` named ``name``: ``runtime_context.get_list_state(descriptor)``."""

    kind = "list"

    def __init__(self, name: str, elem_type_info: Any = None) -> None:
        super().__init__(name, elem_type_info)


class MapStateDescriptor(StateDescriptor):
    """Declares a ``MapState`` named ``name``: ``runtime_context.get_map_state(descriptor)``."""

    kind = "map"

    def __init__(self, name: str, key_type_info: Any = None, value_type_info: Any = None) -> None:
        super().__init__(name, value_type_info)
        self.key_type_info = key_type_info


class ReducingStateDescriptor(StateDescriptor):
    """Declares a ``ReducingState`` named ``name`` that combines what is added with
    ``reduce_function`` (a ``ReduceFunction`` or a function of two values):
    ``runtime_context.get_reducing_state(descriptor)``."""

    kind = "reducing"

    def __init__(self, name: str, reduce_function: Any, type_info: Any = None) -> None:
        super().__init__(name, type_info)
        fn = getattr(reduce_function, "reduce", reduce_function)
        if not callable(fn):
            raise ValueError(f"reducing state {name!r} needs a reduce function")
        self.reduce_function = reduce_function
        self.reduce: Callable[[Any, Any], Any] = fn

    def get_reduce_function(self) -> Any:
        return self.reduce_function


class AggregatingStateDescriptor(StateDescriptor):
    """Declares an ``AggregatingState`` named ``name`` that aggregates what is added with
    ``agg_function`` (an ``AggregateFunction``):
    ``runtime_context.get_aggregating_state(descriptor)``."""

    kind = "aggregating"

    def __init__(self, name: str, agg_function: Any, state_type_info: Any = None) -> None:
        super().__init__(name, state_type_info)
        for method in ("create_accumulator", "add", "get_result"):
            if not callable(getattr(agg_function, method, None)):
                raise ValueError(
                    f"aggregating state {name!r} needs an AggregateFunction (no {method}())"
                )
        self.agg_function = agg_function

    def get_agg_function(self) -> Any:
        return self.agg_function


# --- states -------------------------------------------------------------------------------------


class _Ttl:
    """A state's TTL as its accessors apply it: entries are ``(value, last access)``."""

    __slots__ = ("on_read", "return_expired", "ttl")

    def __init__(self, config: StateTtlConfig) -> None:
        self.ttl = config.ttl
        self.on_read = config.update_type is StateTtlConfig.UpdateType.OnReadAndWrite
        self.return_expired = (
            config.state_visibility is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
        )


class State:
    """A keyed state bound to its backend: reads and writes go to the current key (and, for
    window state, the current namespace)."""

    __slots__ = ("_backend", "_namespaced", "_ttl", "_values")

    def __init__(
        self,
        backend: KeyedStateBackend,
        values: dict[Any, Any],
        ttl: _Ttl | None = None,
        namespaced: bool = False,
    ) -> None:
        self._backend = backend
        self._values = values
        self._ttl = ttl
        self._namespaced = namespaced

    def _slot(self) -> Any:
        backend = self._backend
        if self._namespaced:
            return (backend.current_key, backend.current_namespace)
        return backend.current_key

    def _get(self, slot: Any) -> Any:
        """The stored value of ``slot`` (``_MISSING`` if none or expired)."""
        stored = self._values.get(slot, _MISSING)
        ttl = self._ttl
        if ttl is None or stored is _MISSING:
            return stored
        value, touched = stored
        now = self._backend.now
        if touched + ttl.ttl <= now:
            del self._values[slot]
            return value if ttl.return_expired else _MISSING
        if ttl.on_read:
            self._values[slot] = (value, now)
        return value

    def _put(self, slot: Any, value: Any) -> None:
        self._values[slot] = value if self._ttl is None else (value, self._backend.now)

    def clear(self) -> None:
        self._values.pop(self._slot(), None)


class ValueState(State):
    """One value per key (Flink's ``ValueState``), for the key being processed."""

    __slots__ = ()

    def value(self) -> Any:
        if self._ttl is None and not self._namespaced:
            return self._values.get(self._backend.current_key)
        value = self._get(self._slot())
        return None if value is _MISSING else value

    def update(self, value: Any) -> None:
        slot = self._slot()
        if value is None:
            self._values.pop(slot, None)
        else:
            self._put(slot, value)


class ListState(State):
    """A list per key (Flink's ``ListState``), for the key being processed. With a TTL each
    element expires on its own, as in Flink."""

    __slots__ = ()

    def _elements(self, slot: Any) -> list[Any]:
        stored = self._values.get(slot)
        if not stored:
            return []
        ttl = self._ttl
        if ttl is None:
            return list(stored)
        now = self._backend.now
        live = [(v, t) for v, t in stored if t + ttl.ttl > now]
        shown = stored if ttl.return_expired else live
        values = [v for v, _ in shown]
        if ttl.on_read:
            live = [(v, now) for v, _ in live]
        if live:
            self._values[slot] = live
        else:
            del self._values[slot]
        return values

    def get(self) -> list[Any]:
        return self._elements(self._slot())

    def add(self, value: Any) -> None:
        if value is None:
            raise ValueError("cannot add None to a list state")
        stored = value if self._ttl is None else (value, self._backend.now)
        self._values.setdefault(self._slot(), []).append(stored)

    def add_all(self, values: Iterable[Any]) -> None:
        for value in values:
            self.add(value)

    def update(self, values: Iterable[Any]) -> None:
        slot = self._slot()
        self._values.pop(slot, None)
        self.add_all(values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get())


class MapState(State):
    """A map per key (Flink's ``MapState``); with a TTL each entry expires on its own."""

    __slots__ = ()

    def _map(self, create: bool = False) -> dict[Any, Any] | None:
        slot = self._slot()
        mapping = self._values.get(slot)
        if mapping is None and create:
            mapping = self._values[slot] = {}
        return mapping

    def _live(self, mapping: dict[Any, Any], key: Any) -> Any:
        stored = mapping.get(key, _MISSING)
        ttl = self._ttl
        if ttl is None or stored is _MISSING:
            return stored
        value, touched = stored
        now = self._backend.now
        if touched + ttl.ttl <= now:
            del mapping[key]
            return value if ttl.return_expired else _MISSING
        if ttl.on_read:
            mapping[key] = (value, now)
        return value

    def get(self, key: Any) -> Any:
        mapping = self._map()
        if mapping is None:
            return None
        value = self._live(mapping, key)
        return None if value is _MISSING else value

    def put(self, key: Any, value: Any) -> None:
        mapping = self._map(create=True)
        assert mapping is not None
        mapping[key] = value if self._ttl is None else (value, self._backend.now)

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        for key, value in dict_value.items():
            self.put(key, value)

    def remove(self, key: Any) -> None:
        mapping = self._map()
        if mapping is not None:
            mapping.pop(key, None)
            if not mapping:
                self._values.pop(self._slot(), None)

    def contains(self, key: Any) -> bool:
        mapping = self._map()
        return mapping is not None and self._live(mapping, key) is not _MISSING

    def items(self) -> list[tuple[Any, Any]]:
        mapping = self._map()
        if mapping is None:
            return []
        out = []
        for key in list(mapping):
            value = self._live(mapping, key)
            if value is not _MISSING:
                out.append((key, value))
        return out

    def keys(self) -> list[Any]:
        return [k for k, _ in self.items()]

    def values(self) -> list[Any]:
        return [v for _, v in self.items()]

    def is_empty(self) -> bool:
        return not self.items()

    def __getitem__(self, key: Any) -> Any:
        return self.get(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Any) -> None:
        self.remove(key)

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())


class ReducingState(State):
    """Flink's ``ReducingState``: ``add`` reduces into the one value, ``get`` returns it."""

    __slots__ = ("_reduce",)

    def __init__(
        self,
        backend: KeyedStateBackend,
        values: dict[Any, Any],
        reduce: Callable[[Any, Any], Any],
        ttl: _Ttl | None = None,
        namespaced: bool = False,
    ) -> None:
        super().__init__(backend, values, ttl, namespaced)
        self._reduce = reduce

    def get(self) -> Any:
        value = self._get(self._slot())
        return None if value is _MISSING else value

    def add(self, value: Any) -> None:
        slot = self._slot()
        current = self._get(slot)
        self._put(slot, value if current is _MISSING else self._reduce(current, value))


class AggregatingState(State):
    """Flink's ``AggregatingState``: an accumulator per key; ``get`` returns its result."""

    __slots__ = ("_agg",)

    def __init__(
        self,
        backend: KeyedStateBackend,
        values: dict[Any, Any],
        agg: Any,
        ttl: _Ttl | None = None,
        namespaced: bool = False,
    ) -> None:
        super().__init__(backend, values, ttl, namespaced)
        self._agg = agg

    def get(self) -> Any:
        acc = self._get(self._slot())
        return None if acc is _MISSING else self._agg.get_result(acc)

    def add(self, value: Any) -> None:
        slot = self._slot()
        acc = self._get(slot)
        if acc is _MISSING:
            acc = self._agg.create_accumulator()
        self._put(slot, self._agg.add(value, acc))


class KeyedStateBackend:
    """All keyed state of one operator in one subtask: state name -> key -> value.

    Window state is namespaced: its entries are keyed by ``(key, namespace)`` (the namespace
    is the window), and still grouped by the key's key group. State with a TTL keeps
    ``(value, last access)`` entries; ``now`` is the processing time its accessors compare
    with (the operator sets it).
    """

    def __init__(
        self,
        max_parallelism: int = DEFAULT_MAX_PARALLELISM,
        key_hash: Callable[[Any], int] = hash_code,
    ) -> None:
        self.max_parallelism = max_parallelism
        #: how keys hash into key groups (the partitioner upstream routes by the same)
        self.key_hash = key_hash
        self.current_key: Any = None
        #: the namespace of namespaced (window) state
        self.current_namespace: Any = None
        #: processing time (epoch ms) for state TTL
        self.now = 0
        self._tables: dict[str, dict[Any, Any]] = {}
        self._kinds: dict[str, str] = {}
        #: names of namespaced states, and of states with a TTL
        self._namespaced: set[str] = set()
        self._with_ttl: set[str] = set()
        #: key -> (that key object, its key group); an entry answers only for the very object
        #: it was made for, since equal keys of different types (1, 1.0, True) hash apart
        self._groups: dict[Any, tuple[Any, int]] = {}

    def table(self, name: str, kind: str = "value") -> dict[Any, Any]:
        """The raw key -> value table of a state (the fast path of built-in operators)."""
        known = self._kinds.setdefault(name, kind)
        if known != kind:
            raise ValueError(f"state {name!r} is a {known} state, not a {kind} state")
        return self._tables.setdefault(name, {})

    def value_state(self, name: str) -> ValueState:
        return ValueState(self, self.table(name, "value"))

    def list_state(self, name: str) -> ListState:
        return ListState(self, self.table(name, "list"))

    @overload
    def state(
        self, descriptor: ReducingStateDescriptor, *, namespaced: bool = False
    ) -> ReducingState: ...

    @overload
    def state(
        self, descriptor: AggregatingStateDescriptor, *, namespaced: bool = False
    ) -> AggregatingState: ...

    @overload
    def state(self, descriptor: MapStateDescriptor, *, namespaced: bool = False) -> MapState: ...

    @overload
    def state(self, descriptor: ListStateDescriptor, *, namespaced: bool = False) -> ListState: ...

    @overload
    def state(
        self, descriptor: ValueStateDescriptor, *, namespaced: bool = False
    ) -> ValueState: ...

    @overload
    def state(self, descriptor: StateDescriptor, *, namespaced: bool = False) -> State: ...

    def state(self, descriptor: StateDescriptor, *, namespaced: bool = False) -> State:
        """The state a descriptor names (Flink's ``getPartitionedState``); a declared type a
        checkpoint cannot hold is a ``TypeError`` (before any value is written)."""
        problem = declared_type_problem(descriptor)
        if problem is not None:
            raise TypeError(problem)
        name, kind = descriptor.name, descriptor.kind
        table = self.table(name, kind)
        ttl = _Ttl(descriptor.ttl_config) if descriptor.ttl_config is not None else None
        self._declare(name, namespaced=namespaced, ttl=ttl is not None)
        if isinstance(descriptor, ReducingStateDescriptor):
            return ReducingState(self, table, descriptor.reduce, ttl, namespaced)
        if isinstance(descriptor, AggregatingStateDescriptor):
            return AggregatingState(self, table, descriptor.agg_function, ttl, namespaced)
        if isinstance(descriptor, MapStateDescriptor):
            return MapState(self, table, ttl, namespaced)
        if isinstance(descriptor, ListStateDescriptor):
            return ListState(self, table, ttl, namespaced)
        return ValueState(self, table, ttl, namespaced)

    def _declare(self, name: str, *, namespaced: bool, ttl: bool) -> None:
        for names, on, what in (
            (self._namespaced, namespaced, "namespaced (window) state"),
            (self._with_ttl, ttl, "state with a time-to-live"),
        ):
            if on:
                names.add(name)
            elif name in names:
                raise ValueError(f"state {name!r} was declared as {what} before; it is not now")

    def __len__(self) -> int:
        return sum(len(t) for t in self._tables.values())

    def group_of(self, key: Any) -> int:
        """The key group of ``key`` (remembered per key object)."""
        groups_of = self._groups
        known = groups_of.get(key)
        if known is not None and known[0] is key:
            return known[1]
        group = key_group_for(key, self.max_parallelism, self.key_hash)
        if len(groups_of) < _GROUP_CACHE_LIMIT:
            groups_of[key] = (key, group)
        return group

    def snapshot(self) -> dict[str, Any]:
        """A copy of every state, entries grouped by key group (so state can be rescaled).

        The copy is shallow for value states (a value must not be changed in place after
        ``update``, as with Flink's heap state backend) and copies the lists of list states
        and the dicts of map states. Keys and values stay Python objects; the checkpoint writer
        encodes them as JSON.
        """
        group_of = self.group_of
        states: dict[str, Any] = {}
        for name, table in self._tables.items():
            kind = self._kinds[name]
            copy: Callable[[Any], Any] | None = (
                list if kind == "list" else dict if kind == "map" else None
            )
            namespaced = name in self._namespaced
            groups: dict[int, tuple[list[Any], list[Any]]] = {}
            for key, value in table.items():
                group = group_of(key[0] if namespaced else key)
                columns = groups.get(group)
                if columns is None:
                    columns = groups[group] = ([], [])
                columns[0].append(key)
                columns[1].append(copy(value) if copy is not None else value)
            state: dict[str, Any] = {
                "kind": kind,
                "key_groups": {str(g): {"keys": k, "values": v} for g, (k, v) in groups.items()},
            }
            if namespaced:
                state["namespaced"] = True
            if name in self._with_ttl:
                state["ttl"] = True
            states[name] = state
        return {"max_parallelism": self.max_parallelism, "states": states}

    def restore(self, snapshots: Iterable[dict[str, Any]], key_groups: range | None = None) -> None:
        """Load snapshots (of one or more former subtasks), keeping the given key groups."""
        for snapshot in snapshots:
            if snapshot.get("max_parallelism", self.max_parallelism) != self.max_parallelism:
                raise ValueError(
                    f"keyed state was written with max parallelism {snapshot['max_parallelism']}, "
                    f"the job now has {self.max_parallelism}"
                )
            for name, state in snapshot.get("states", {}).items():
                table = self.table(name, state.get("kind", "value"))
                self._declare(
                    name,
                    namespaced=bool(state.get("namespaced", False)),
                    ttl=bool(state.get("ttl", False)),
                )
                for group, columns in state["key_groups"].items():
                    if key_groups is not None and int(group) not in key_groups:
                        continue
                    table.update(zip(columns["keys"], columns["values"], strict=True))


class ReadOnlyBroadcastState:
    """A broadcast state as ``process_element`` sees it (Flink's ``ReadOnlyBroadcastState``):
    read, not written (values are not copied: do not change them in place). ``clear`` is
    there, as in Flink and PyFlink, but every subtask must keep the same contents."""

    __slots__ = ("_map", "name")

    def __init__(self, name: str, mapping: dict[Any, Any]) -> None:
        self.name = name
        self._map = mapping

    def get(self, key: Any) -> Any:
        return self._map.get(key)

    def contains(self, key: Any) -> bool:
        return key in self._map

    def items(self) -> list[tuple[Any, Any]]:
        return list(self._map.items())

    def keys(self) -> list[Any]:
        return list(self._map)

    def values(self) -> list[Any]:
        return list(self._map.values())

    def is_empty(self) -> bool:
        return not self._map

    def clear(self) -> None:
        self._map.clear()

    def __getitem__(self, key: Any) -> Any:
        return self.get(key)

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {len(self._map)} entries)"


class BroadcastState(ReadOnlyBroadcastState):
    """A broadcast state as ``process_broadcast_element`` sees it (Flink's ``BroadcastState``):
    a map of its own in every subtask, which every subtask must change alike (each gets every
    broadcast element)."""

    __slots__ = ()

    def put(self, key: Any, value: Any) -> None:
        self._map[key] = value

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        self._map.update(dict_value)

    def remove(self, key: Any) -> None:
        self._map.pop(key, None)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Any) -> None:
        self.remove(key)


class BroadcastStateBackend:
    """The broadcast states of one operator in one subtask (Flink's operator state in broadcast
    mode), one map per ``MapStateDescriptor`` given to ``broadcast(...)`` (or, as PyFlink
    allows, first named by another ``MapStateDescriptor`` in the function).

    Each subtask snapshots its own copy; a restore gives every subtask a copy (after a change of
    parallelism, subtask ``i`` the copy of former subtask ``i`` modulo the former parallelism, as
    Flink's round robin: the copies are the same when every subtask changed its state alike).
    """

    def __init__(self, descriptors: Iterable[MapStateDescriptor] = ()) -> None:
        self._declared: dict[str, MapStateDescriptor] = {}
        self._maps: dict[str, dict[Any, Any]] = {}
        for descriptor in descriptors:
            self._declared[descriptor.name] = descriptor
            self._maps[descriptor.name] = {}

    @property
    def names(self) -> list[str]:
        return list(self._declared)

    @overload
    def state(
        self, descriptor: MapStateDescriptor, *, writable: Literal[True]
    ) -> BroadcastState: ...

    @overload
    def state(
        self, descriptor: MapStateDescriptor, *, writable: bool
    ) -> ReadOnlyBroadcastState: ...

    def state(self, descriptor: MapStateDescriptor, *, writable: bool) -> ReadOnlyBroadcastState:
        """The broadcast state ``descriptor`` names: a ``BroadcastState`` when ``writable``."""
        if not isinstance(descriptor, MapStateDescriptor):
            raise TypeError(
                "a broadcast state is named by a MapStateDescriptor, got "
                f"{type(descriptor).__name__}"
            )
        mapping = self._maps.setdefault(descriptor.name, {})
        name = descriptor.name
        return BroadcastState(name, mapping) if writable else ReadOnlyBroadcastState(name, mapping)

    def __len__(self) -> int:
        return sum(len(m) for m in self._maps.values())

    def snapshot(self) -> dict[str, dict[Any, Any]]:
        """A copy of every broadcast state (its map copied; values as they are)."""
        return {name: dict(mapping) for name, mapping in self._maps.items()}

    def restore(self, snapshots: list[dict[str, dict[Any, Any]]], subtask: int) -> None:
        """This subtask's copy of the former subtasks' ``snapshots`` (in their order)."""
        if not snapshots:
            return
        mine = snapshots[subtask % len(snapshots)]
        for name, mapping in mine.items():
            self._maps.setdefault(name, {}).clear()
            self._maps[name].update(mapping)
