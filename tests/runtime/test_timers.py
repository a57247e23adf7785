"""Keyed timers: Flink's heap-of-heaps order, set semantics, deletion, and timers as keyed
state (snapshot by key group, restore of one's own key groups)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.state import hash_code, key_group_for, key_group_range
from runtime.timers import HeapPriorityQueue, HeapPriorityQueueSet, InternalTimerService


def queue(subtask: int = 0, parallelism: int = 1) -> HeapPriorityQueueSet:
    return HeapPriorityQueueSet(key_group_range(subtask, parallelism, 128), 128, hash_code)


def drain(q: HeapPriorityQueueSet, until: int) -> list[tuple[object, int]]:
    service = InternalTimerService(range(0), 128, hash_code)
    out = []
    while (timer := service.poll_due(q, until)) is not None:
        out.append((timer.key, timer.timestamp))
    return out


@given(st.lists(st.tuples(st.sampled_from("abcdefgh"), st.integers(0, 50)), max_size=60))
def test_timers_fire_in_timestamp_order_and_each_timer_once(
    timers: list[tuple[str, int]],
) -> None:
    """Whatever the registration order: timers come out by timestamp, a timer registered
    twice comes out once, and none before its time."""
    q = queue()
    for key, ts in timers:
        q.add(key, None, ts)
    fired = drain(q, 25)
    assert [ts for _, ts in fired] == sorted(ts for _, ts in fired)
    assert sorted(fired) == sorted({(k, t) for k, t in timers if t <= 25})
    assert len(q) == len({(k, t) for k, t in timers if t > 25})


@pytest.mark.parametrize(
    ("keys", "flink"),
    [  # what PyFlink 2.3 printed for these keys, one event-time timer each at the same time
        ([1, 2, 3], [1, 3, 2]),
        ([3, 2, 1], [3, 1, 2]),
        ([1, 2, 3, 4, 5, 6, 7, 8], [1, 8, 7, 6, 5, 4, 3, 2]),
        (["a", "b", "c", "d", "e"], ["a", "e", "d", "c", "b"]),
    ],
)
def test_equal_timestamps_fire_in_the_order_flinks_heap_gives_them(
    keys: list[object], flink: list[object]
) -> None:
    """Flink's heap state backend keeps timers in one binary heap ordered by timestamp only:
    ties come out as its sift operations leave them, whatever the keys' key groups."""
    q = queue()
    for key in keys:
        q.add(key, None, 5)
    assert [k for k, _ in drain(q, 5)] == flink


def test_a_deleted_timer_does_not_fire_and_deleting_an_unknown_one_is_harmless() -> None:
    q = queue()
    q.add("a", None, 5)
    q.add("b", None, 5)
    q.delete("a", None, 5)
    q.delete("zz", None, 7)
    assert drain(q, 10) == [("b", 5)]


def test_a_timer_for_a_key_group_of_another_subtask_is_refused() -> None:
    q = queue(0, 2)  # key groups 0..63
    foreign = next(k for k in map(str, range(1000)) if key_group_for(k) >= 64)
    try:
        q.add(foreign, None, 1)
    except ValueError as error:
        assert "key group" in str(error)
    else:
        raise AssertionError("a foreign key's timer was accepted")


def test_timers_are_keyed_state_restored_by_key_group() -> None:
    """A snapshot lists the timers by key group; a restore into two subtasks gives each the
    timers of its own key groups, and together all of them."""
    q = queue()
    keys = [f"k{i}" for i in range(40)]
    for i, key in enumerate(keys):
        q.add(key, None, i)
        q.add(key, ("w", 1), 100 + i)
    snapshot = q.snapshot()
    halves = [queue(s, 2) for s in (0, 1)]
    for half in halves:
        half.restore(snapshot)
    fired = [drain(h, 1 << 62) for h in halves]
    assert sorted(fired[0] + fired[1]) == sorted(drain(q, 1 << 62))
    for subtask, half_fired in enumerate(fired):
        for fired_key, _ in half_fired:
            assert key_group_for(fired_key) in key_group_range(subtask, 2, 128)


def test_the_heap_removes_any_element_and_keeps_its_order() -> None:
    class Item:
        def __init__(self, value: int) -> None:
            self.value = value
            self.index = 0

    rng = random.Random(5)
    heap = HeapPriorityQueue(lambda a, b: a.value < b.value)
    items = [Item(rng.randrange(100)) for _ in range(200)]
    for item in items:
        heap.add(item)
    for item in rng.sample(items, 80):
        heap.remove(item)
        items.remove(item)
    out = []
    while len(heap):
        out.append(heap.poll().value)
    assert out == sorted(i.value for i in items)
