"""Keyed timers: Flink's heap-of-heaps order, set semantics, deletion, and timers as keyed
state (snapshot by key group, restore of one's own key groups)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from runtime.state import hash_code, key_group_for, key_group_range
from runtime.timers import HeapPriorityQueue, InternalTimerService, TimerQueue


def queue(subtask: int = 0, parallelism: int = 1) -> TimerQueue:
    return TimerQueue(key_group_range(subtask, parallelism, 128), 128, hash_code)


def drain(q: TimerQueue, until: int) -> list[tuple[object, int]]:
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


def test_equal_timestamps_fire_in_the_heap_order_flink_gives_them() -> None:
    """Two keys in different key groups with the same timestamp: the heap of key-group heaps
    decides, as in Flink (this is the order PyFlink's event_time_timer example prints at 5000:
    Bob before Alice; their key groups there are 10 and 51)."""

    def pyflink_like(key: object) -> int:
        return {"Alice": -233107591, "Bob": 1437887470}[str(key)]

    assert key_group_for("Alice", 128, pyflink_like) != key_group_for("Bob", 128, pyflink_like)
    q = TimerQueue(key_group_range(0, 2, 128), 128, pyflink_like)
    # registration order of the example: Alice 3000, Bob 6000, Alice 5000, Bob 4000, Alice
    # 7000, Bob 5000, Bob 9000, Alice 12000
    for key, ts in [
        ("Alice", 3000),
        ("Bob", 6000),
        ("Alice", 5000),
        ("Bob", 4000),
        ("Alice", 7000),
        ("Bob", 5000),
        ("Bob", 9000),
        ("Alice", 12000),
    ]:
        q.add(key, None, ts)
    order = [k for k, _ in drain(q, 1 << 62)]
    assert order == ["Alice", "Bob", "Bob", "Alice", "Bob", "Alice", "Bob", "Alice"]


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
