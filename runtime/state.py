"""Keyed state: key groups, ``ValueState`` and ``ListState``, snapshots as JSON-safe data.

Keys are assigned to key groups (``max_parallelism`` of them, 128 by default) with Flink's
``KeyGroupRangeAssignment``: ``murmurHash(hashCode(key)) % max_parallelism``, and key groups
to subtasks by range. String keys hash like Java's ``String.hashCode``, integers like
``Long.hashCode``, other keys by a CRC of their canonical JSON; all hashes are stable across
processes (Python's ``hash()`` of a string is not).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from runtime import serde

DEFAULT_MAX_PARALLELISM = 128
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


class ValueState:
    """One value per key (Flink's ``ValueState``), for the key being processed."""

    __slots__ = ("_backend", "_values")

    def __init__(self, backend: KeyedStateBackend, values: dict[Any, Any]) -> None:
        self._backend = backend
        self._values = values

    def value(self) -> Any:
        return self._values.get(self._backend.current_key)

    def update(self, value: Any) -> None:
        if value is None:
            self._values.pop(self._backend.current_key, None)
        else:
            self._values[self._backend.current_key] = value

    def clear(self) -> None:
        self._values.pop(self._backend.current_key, None)


class ListState:
    """A list per key (Flink's ``ListState``), for the key being processed."""

    __slots__ = ("_backend", "_values")

    def __init__(self, backend: KeyedStateBackend, values: dict[Any, Any]) -> None:
        self._backend = backend
        self._values = values

    def get(self) -> list[Any]:
        return list(self._values.get(self._backend.current_key, ()))

    def add(self, value: Any) -> None:
        self._values.setdefault(self._backend.current_key, []).append(value)

    def add_all(self, values: Iterable[Any]) -> None:
        self._values.setdefault(self._backend.current_key, []).extend(values)

    def update(self, values: Iterable[Any]) -> None:
        items = list(values)
        if items:
            self._values[self._backend.current_key] = items
        else:
            self._values.pop(self._backend.current_key, None)

    def clear(self) -> None:
        self._values.pop(self._backend.current_key, None)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get())


class KeyedStateBackend:
    """All keyed state of one operator in one subtask: state name -> key -> value."""

    def __init__(
        self,
        max_parallelism: int = DEFAULT_MAX_PARALLELISM,
        key_hash: Callable[[Any], int] = hash_code,
    ) -> None:
        self.max_parallelism = max_parallelism
        #: how keys hash into key groups (the partitioner upstream routes by the same)
        self.key_hash = key_hash
        self.current_key: Any = None
        self._tables: dict[str, dict[Any, Any]] = {}
        self._kinds: dict[str, str] = {}
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

    def __len__(self) -> int:
        return sum(len(t) for t in self._tables.values())

    def snapshot(self) -> dict[str, Any]:
        """A copy of every state, entries grouped by key group (so state can be rescaled).

        The copy is shallow for value states (a value must not be changed in place after
        ``update``, as with Flink's heap state backend) and copies the lists of list states.
        Keys and values stay Python objects; the checkpoint writer encodes them as JSON.
        """
        groups_of = self._groups
        states: dict[str, Any] = {}
        for name, table in self._tables.items():
            copy_lists = self._kinds[name] == "list"
            groups: dict[int, tuple[list[Any], list[Any]]] = {}
            for key, value in table.items():
                known = groups_of.get(key)
                if known is not None and known[0] is key:
                    group = known[1]
                else:
                    group = key_group_for(key, self.max_parallelism, self.key_hash)
                    if len(groups_of) < _GROUP_CACHE_LIMIT:
                        groups_of[key] = (key, group)
                columns = groups.get(group)
                if columns is None:
                    columns = groups[group] = ([], [])
                columns[0].append(key)
                columns[1].append(list(value) if copy_lists else value)
            states[name] = {
                "kind": self._kinds[name],
                "key_groups": {str(g): {"keys": k, "values": v} for g, (k, v) in groups.items()},
            }
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
                for group, columns in state["key_groups"].items():
                    if key_groups is not None and int(group) not in key_groups:
                        continue
                    table.update(zip(columns["keys"], columns["values"], strict=True))
