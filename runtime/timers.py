"""Keyed timers: Flink's ``InternalTimerService`` over its heap priority queue.

Timers are ``(key, namespace, timestamp)``, a set per clock (registering the same timer twice
keeps one). They fire in the order the heap state backend's ``HeapPriorityQueueSet`` gives
them: one binary heap ordered by timestamp only, with a deduplication map per key group.
Timers with equal timestamps therefore fire in the order the heap's sift operations leave them
(e.g. registered in the order 1..8, they fire 1, 8, 7, ..., 2), which this module reproduces
step by step (a 1-based array, the same sift-up and sift-down), so a job prints its timer
output in the order Flink prints it.

Timers are keyed state: a snapshot lists them by key group, a restore keeps those of the
subtask's key groups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from runtime.state import key_group_for


class Timer:
    """A timer: fires for ``key`` (and ``namespace``, the window of a window operator) at
    ``timestamp``."""

    __slots__ = ("index", "key", "namespace", "timestamp")

    def __init__(self, key: Any, namespace: Any, timestamp: int) -> None:
        self.key = key
        self.namespace = namespace
        self.timestamp = timestamp
        self.index = 0

    def priority(self) -> int:
        return self.timestamp

    def identity(self) -> tuple[Any, Any, int]:
        return (self.key, self.namespace, self.timestamp)

    def __repr__(self) -> str:
        return f"Timer(key={self.key!r}, namespace={self.namespace!r}, ts={self.timestamp})"


class HeapPriorityQueue:
    """Flink's ``HeapPriorityQueue``: a binary heap in an array whose head is at index 1;
    elements know their index, so removal and re-adjustment are O(log n)."""

    def __init__(self, less: Callable[[Any, Any], bool]) -> None:
        self._less = less
        self._heap: list[Any] = [None]

    def __len__(self) -> int:
        return len(self._heap) - 1

    def peek(self) -> Any:
        return self._heap[1] if len(self._heap) > 1 else None

    def poll(self) -> Any:
        return self._remove_at(1) if len(self._heap) > 1 else None

    def add(self, element: Any) -> bool:
        """Adds ``element``; True when it may have become the head."""
        self._heap.append(element)
        element.index = len(self._heap) - 1
        self._sift_up(element.index)
        return bool(element.index == 1)

    def remove(self, element: Any) -> bool:
        index: int = element.index
        self._remove_at(index)
        return index == 1

    def elements(self) -> list[Any]:
        """In array order (no particular priority order)."""
        return self._heap[1:]

    def _remove_at(self, index: int) -> Any:
        heap = self._heap
        removed = heap[index]
        last = len(heap) - 1
        if index != last:
            element = heap[last]
            self._move(element, index)
            heap.pop()
            self._adjust_at(element, index)
        else:
            heap.pop()
        return removed

    def _adjust_at(self, element: Any, index: int) -> None:
        self._sift_down(index)
        if self._heap[index] is element:
            self._sift_up(index)

    def _sift_up(self, index: int) -> None:
        heap, less = self._heap, self._less
        current = heap[index]
        parent = index >> 1
        while parent > 0 and less(current, heap[parent]):
            self._move(heap[parent], index)
            index = parent
            parent >>= 1
        self._move(current, index)

    def _sift_down(self, index: int) -> None:
        heap, less = self._heap, self._less
        size = len(heap) - 1
        current = heap[index]
        first = index << 1
        second = first + 1
        if second <= size and less(heap[second], heap[first]):
            first = second
        while first <= size and less(heap[first], current):
            self._move(heap[first], index)
            index = first
            first = index << 1
            second = first + 1
            if second <= size and less(heap[second], heap[first]):
                first = second
        self._move(current, index)

    def _move(self, element: Any, index: int) -> None:
        self._heap[index] = element
        element.index = index


def _timer_less(a: Timer, b: Timer) -> bool:
    return a.timestamp < b.timestamp


class HeapPriorityQueueSet:
    """The timers of one clock of one operator subtask (Flink's ``HeapPriorityQueueSet``: one
    heap, a deduplication map per key group)."""

    def __init__(
        self,
        key_groups: range,
        max_parallelism: int,
        key_hash: Callable[[Any], int],
        group_of: Callable[[Any], int] | None = None,
    ) -> None:
        self.key_groups = key_groups
        self.max_parallelism = max_parallelism
        self.key_hash = key_hash
        #: a key's key group (the keyed state backend's, which remembers them)
        self._group_of = group_of or (lambda key: key_group_for(key, max_parallelism, key_hash))
        self._heap = HeapPriorityQueue(_timer_less)
        self._members: list[dict[tuple[Any, Any, int], Timer]] = [{} for _ in key_groups]

    def _members_of(self, key: Any) -> dict[tuple[Any, Any, int], Timer]:
        group = self._group_of(key)
        if group not in self.key_groups:
            raise ValueError(
                f"a timer for key {key!r} (key group {group}) registered in a subtask that owns "
                f"key groups {self.key_groups.start}..{self.key_groups.stop - 1}"
            )
        return self._members[group - self.key_groups.start]

    def add(self, key: Any, namespace: Any, timestamp: int) -> None:
        members = self._members_of(key)
        identity = (key, namespace, timestamp)
        if identity not in members:
            timer = members[identity] = Timer(key, namespace, timestamp)
            self._heap.add(timer)

    def delete(self, key: Any, namespace: Any, timestamp: int) -> None:
        timer = self._members_of(key).pop((key, namespace, timestamp), None)
        if timer is not None:
            self._heap.remove(timer)

    def peek(self) -> Timer | None:
        timer: Timer | None = self._heap.peek()
        return timer

    def poll(self) -> Timer | None:
        timer: Timer | None = self._heap.poll()
        if timer is not None:
            del self._members_of(timer.key)[timer.identity()]
        return timer

    def __len__(self) -> int:
        return len(self._heap)

    def snapshot(self) -> dict[str, list[list[Any]]]:
        """``{key group: [[key, namespace, timestamp], ...]}``, in registration order."""
        out: dict[str, list[list[Any]]] = {}
        for offset, members in enumerate(self._members):
            if members:
                out[str(self.key_groups.start + offset)] = [
                    [t.key, t.namespace, t.timestamp] for t in members.values()
                ]
        return out

    def restore(self, snapshot: dict[str, Any]) -> None:
        for group, timers in sorted(snapshot.items(), key=lambda item: int(item[0])):
            if int(group) in self.key_groups:
                for key, namespace, timestamp in timers:
                    self.add(key, namespace, int(timestamp))


class InternalTimerService:
    """An operator subtask's timers, by clock: ``advance_watermark`` and
    ``on_processing_time`` hand out the due timers one at a time, in Flink's order (a timer
    registered while firing, already due, fires in the same round)."""

    def __init__(
        self,
        key_groups: range,
        max_parallelism: int,
        key_hash: Callable[[Any], int],
        group_of: Callable[[Any], int] | None = None,
    ) -> None:
        self.event_time = HeapPriorityQueueSet(key_groups, max_parallelism, key_hash, group_of)
        self.processing_time = HeapPriorityQueueSet(key_groups, max_parallelism, key_hash, group_of)
        #: timers fired so far, of both clocks (Flink's ``numFiredTimers``)
        self.fired = 0

    def poll_due(self, queue: HeapPriorityQueueSet, time: int) -> Timer | None:
        head = queue.peek()
        if head is None or head.timestamp > time:
            return None
        self.fired += 1
        return queue.poll()

    def next_processing_time(self) -> int | None:
        head = self.processing_time.peek()
        return None if head is None else head.timestamp

    def snapshot(self) -> dict[str, Any]:
        return {
            "event": self.event_time.snapshot(),
            "processing": self.processing_time.snapshot(),
        }

    def restore(self, snapshots: Iterable[dict[str, Any]]) -> None:
        for snapshot in snapshots:
            self.event_time.restore(snapshot.get("event", {}))
            self.processing_time.restore(snapshot.get("processing", {}))
