"""Keyed state: key hashing and key groups (Flink's ``KeyGroupRangeAssignment``), value and
list state, snapshots by key group and their restore into another parallelism."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from runtime import serde
from runtime.state import (
    DEFAULT_MAX_PARALLELISM,
    AggregatingStateDescriptor,
    KeyedStateBackend,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
    hash_code,
    key_group_for,
    key_group_range,
    murmur_hash,
    operator_index_for_key_group,
)

# --- hashing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "java"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),  # "hello".hashCode()
        ("polygenelubricants", -(2**31)),  # Java's classic Integer.MIN_VALUE string hash
        ("\U0001f600", 55357 * 31 + 56832),  # hashed as its two UTF-16 code units
        (0, 0),
        (1, 1),
        (-1, 0),  # Long.hashCode(-1L)
        (-2, 1),
        (2**32, 1),
        (True, 1231),  # Boolean.hashCode
        (False, 1237),
    ],
)
def test_hash_code_is_javas_hash_code_for_strings_longs_and_booleans(key: Any, java: int) -> None:
    assert hash_code(key) == java


def test_hash_code_of_a_key_does_not_depend_on_what_was_hashed_before() -> None:
    """``1``, ``1.0`` and ``True`` are equal in Python, yet each keeps its own hash whatever
    order they are hashed in (a process-wide cache used to answer 1231 for ``1`` after
    ``True`` had been hashed, so routing depended on the process's history)."""
    fresh = {repr(k): hash_code(k) for k in (1, 1.0, True, (1, "a"), (True, "a"))}
    for order in ([True, 1, 1.0], [1.0, True, 1], [(True, "a"), (1, "a")]):
        for key in order:
            assert hash_code(key) == fresh[repr(key)]
    assert len({fresh["1"], fresh["1.0"], fresh["True"]}) == 3
    assert fresh["(1, 'a')"] != fresh["(True, 'a')"]


def test_other_keys_hash_by_their_canonical_data_stably() -> None:
    assert hash_code((1, "a")) == hash_code((1, "a"))
    assert hash_code(frozenset({3, 1, 2})) == hash_code(frozenset({2, 3, 1}))
    assert hash_code((1, 2)) != hash_code((2, 1))
    assert -(2**31) <= hash_code(("x", 10**30)) < 2**31


def _murmur3_32(data: bytes, seed: int = 0) -> int:
    """Reference MurmurHash3 (x86, 32 bit) over bytes, written from its specification."""

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    h = seed
    for (block,) in struct.iter_unpack("<I", data[: len(data) // 4 * 4]):
        k = (block * 0xCC9E2D51) & 0xFFFFFFFF
        k = rotl(k, 15)
        k = (k * 0x1B873593) & 0xFFFFFFFF
        h = rotl(h ^ k, 13)
        h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


@pytest.mark.parametrize("code", [0, 1, -1, 42, 99162322, -(2**31), 2**31 - 1, 1231])
def test_murmur_hash_is_murmur3_of_the_int_made_non_negative_as_flinks(code: int) -> None:
    raw = _murmur3_32(struct.pack("<i", code))
    signed = raw - 2**32 if raw >= 2**31 else raw
    expected = signed if signed >= 0 else (-signed if signed != -(2**31) else 0)
    assert murmur_hash(code) == expected


# --- key groups ------------------------------------------------------------------------------


@pytest.mark.parametrize("parallelism", [1, 2, 3, 7, 128])
def test_every_key_group_belongs_to_exactly_the_subtask_whose_range_holds_it(
    parallelism: int,
) -> None:
    maxp = DEFAULT_MAX_PARALLELISM
    ranges = [key_group_range(s, parallelism, maxp) for s in range(parallelism)]
    assert [g for r in ranges for g in r] == list(range(maxp))  # contiguous, no gap or overlap
    for group in range(maxp):
        owner = operator_index_for_key_group(group, parallelism, maxp)
        assert group in ranges[owner]


def test_key_groups_are_within_max_parallelism() -> None:
    for key in [*range(500), *map(str, range(500)), (1, 2), None]:
        assert 0 <= key_group_for(key, 10) < 10
        assert key_group_for(key) == murmur_hash(hash_code(key)) % DEFAULT_MAX_PARALLELISM


# --- value and list state --------------------------------------------------------------------


def test_value_state_is_per_key_and_none_clears_it() -> None:
    backend = KeyedStateBackend()
    state = backend.value_state("count")
    backend.current_key = "a"
    state.update(1)
    backend.current_key = "b"
    assert state.value() is None
    state.update(2)
    backend.current_key = "a"
    assert state.value() == 1
    state.update(None)
    assert state.value() is None and len(backend) == 1
    backend.current_key = "b"
    state.clear()
    assert len(backend) == 0


def test_list_state_adds_updates_and_hands_out_copies() -> None:
    backend = KeyedStateBackend()
    state = backend.list_state("seen")
    backend.current_key = 7
    state.add(1)
    state.add_all([2, 3])
    got = state.get()
    got.append(99)  # a copy: the state is unchanged
    assert list(state) == [1, 2, 3]
    state.update([])
    assert state.get() == [] and len(backend) == 0


def test_a_state_name_keeps_its_kind() -> None:
    backend = KeyedStateBackend()
    backend.value_state("x")
    with pytest.raises(ValueError, match="'x' is a value state, not a list state"):
        backend.list_state("x")


# --- snapshots and restore -------------------------------------------------------------------


def _filled(keys: list[Any]) -> KeyedStateBackend:
    backend = KeyedStateBackend()
    values, lists = backend.value_state("v"), backend.list_state("l")
    for key in keys:
        backend.current_key = key
        values.update(f"value of {key!r}")
        lists.add(key)
    return backend


def test_a_snapshot_groups_entries_by_key_group_and_restores_them_all() -> None:
    keys: list[Any] = [*range(50), *(f"k{i}" for i in range(50)), (1, "a"), 2.5]
    snapshot = _filled(keys).snapshot()
    assert snapshot["max_parallelism"] == DEFAULT_MAX_PARALLELISM
    for state in snapshot["states"].values():
        for group, columns in state["key_groups"].items():
            assert all(key_group_for(k) == int(group) for k in columns["keys"])
    restored = KeyedStateBackend()
    restored.restore([snapshot])
    for key in keys:
        restored.current_key = key
        assert restored.value_state("v").value() == f"value of {key!r}"
        assert restored.list_state("l").get() == [key]


def test_a_snapshot_is_not_changed_by_later_updates_of_list_state() -> None:
    backend = _filled(["a"])
    snapshot = backend.snapshot()
    backend.current_key = "a"
    backend.list_state("l").add("later")
    (columns,) = snapshot["states"]["l"]["key_groups"].values()
    assert columns["values"] == [["a"]]


def test_equal_keys_of_different_types_in_two_states_keep_their_own_key_groups() -> None:
    """``True`` in one state and ``1`` in another: each is grouped by its own hash."""
    backend = KeyedStateBackend()
    backend.current_key = 1
    backend.value_state("ints").update("one")
    backend.current_key = True
    backend.value_state("bools").update("yes")
    states = backend.snapshot()["states"]
    (int_group,) = states["ints"]["key_groups"]
    (bool_group,) = states["bools"]["key_groups"]
    assert int(int_group) == key_group_for(1) and int(bool_group) == key_group_for(True)
    assert int_group != bool_group


@pytest.mark.parametrize(("before", "after"), [(2, 3), (3, 1), (1, 4)])
def test_restoring_by_key_group_range_rescales_keyed_state(before: int, after: int) -> None:
    maxp = DEFAULT_MAX_PARALLELISM
    keys = [f"user-{i}" for i in range(200)]
    old = [KeyedStateBackend() for _ in range(before)]
    for key in keys:
        owner = operator_index_for_key_group(key_group_for(key), before, maxp)
        old[owner].current_key = key
        old[owner].value_state("v").update(key.upper())
    snapshots = [b.snapshot() for b in old]
    new = [KeyedStateBackend() for _ in range(after)]
    for subtask, backend in enumerate(new):
        backend.restore(snapshots, key_group_range(subtask, after, maxp))
    assert sum(len(b) for b in new) == len(keys)  # every key lands once
    for key in keys:
        owner = operator_index_for_key_group(key_group_for(key), after, maxp)
        new[owner].current_key = key
        assert new[owner].value_state("v").value() == key.upper()


def test_state_written_with_another_max_parallelism_is_refused() -> None:
    snapshot = KeyedStateBackend(max_parallelism=64).snapshot()
    with pytest.raises(ValueError, match="max parallelism 64, the job now has 128"):
        KeyedStateBackend().restore([snapshot])


# --- state kinds by descriptor, time-to-live, namespaces ---------------------------------------


class _Avg:
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: int, acc: tuple[int, int]) -> tuple[int, int]:
        return (acc[0] + value, acc[1] + 1)

    def get_result(self, acc: tuple[int, int]) -> float:
        return acc[0] / acc[1]

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


def test_map_reducing_and_aggregating_state_per_key_survive_a_snapshot() -> None:
    backend = KeyedStateBackend()
    m = backend.state(MapStateDescriptor("m"))
    r = backend.state(ReducingStateDescriptor("r", lambda a, b: a + b))
    a = backend.state(AggregatingStateDescriptor("a", _Avg()))
    for key, value in [("x", 1), ("y", 10), ("x", 3)]:
        backend.current_key = key
        m.put(value, str(value))
        r.add(value)
        a.add(value)
    backend.current_key = "x"
    assert dict(m.items()) == {1: "1", 3: "3"}
    assert (r.get(), a.get()) == (4, 2.0)
    restored = KeyedStateBackend()
    m2 = restored.state(MapStateDescriptor("m"))
    r2 = restored.state(ReducingStateDescriptor("r", lambda a, b: a + b))
    a2 = restored.state(AggregatingStateDescriptor("a", _Avg()))
    restored.restore([serde.loads(serde.dumps(backend.snapshot()))])
    restored.current_key = "y"
    assert (dict(m2.items()), r2.get(), a2.get()) == ({10: "10"}, 10, 10.0)


def test_state_with_a_ttl_expires_after_it_as_flinks_processing_time_ttl() -> None:
    """OnCreateAndWrite: a read does not extend the life; OnReadAndWrite: it does. An expired
    value is never returned (NeverReturnExpired), and expiry survives a snapshot."""

    def state(update: StateTtlConfig.UpdateType) -> tuple[KeyedStateBackend, Any]:
        backend = KeyedStateBackend()
        descriptor = ValueStateDescriptor("v")
        descriptor.enable_time_to_live(
            StateTtlConfig.new_builder(1000).set_update_type(update).build()
        )
        backend.current_key = "k"
        return backend, backend.state(descriptor)

    backend, on_write = state(StateTtlConfig.UpdateType.OnCreateAndWrite)
    on_write.update(1)  # at 0
    backend.now = 900
    assert on_write.value() == 1
    backend.now = 1000
    assert on_write.value() is None  # 1000 ms after the write
    backend, on_read = state(StateTtlConfig.UpdateType.OnReadAndWrite)
    on_read.update(1)
    backend.now = 900
    assert on_read.value() == 1  # read at 900: lives until 1900
    backend.now = 1800
    snapshot = serde.loads(serde.dumps(backend.snapshot()))
    restored = KeyedStateBackend()
    descriptor = ValueStateDescriptor("v")
    descriptor.enable_time_to_live(
        StateTtlConfig.new_builder(1000)
        .set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)
        .build()
    )
    again = restored.state(descriptor)
    restored.restore([snapshot])
    restored.current_key = "k"
    restored.now = 1899
    assert again.value() == 1
    restored.now = 2899
    assert again.value() is None


def test_namespaced_state_keeps_a_value_per_key_and_namespace_grouped_by_the_key() -> None:
    backend = KeyedStateBackend()
    contents = backend.state(ListStateDescriptor("window-contents"), namespaced=True)
    for key, window, value in [("a", (0, 10), 1), ("a", (10, 20), 2), ("b", (0, 10), 3)]:
        backend.current_key, backend.current_namespace = key, window
        contents.add(value)
    backend.current_key, backend.current_namespace = "a", (0, 10)
    assert contents.get() == [1]
    snapshot = backend.snapshot()["states"]["window-contents"]
    assert snapshot["namespaced"] is True
    groups = {int(g): cols["keys"] for g, cols in snapshot["key_groups"].items()}
    assert groups[key_group_for("a")] == [("a", (0, 10)), ("a", (10, 20))]
