"""Time for the protocol core: a ``Clock`` protocol, the wall clock and a manual clock, and timers.

The core never reads time itself: every ``handle(msg, now)`` is given ``now`` in milliseconds.
Timers are data: a core object asks for one with a ``ScheduleTimer`` effect and later receives
``TimerFired``. ``TimerQueue`` is the pure bookkeeping any runtime (test harness, deterministic
simulation, threaded timer service) can use to decide which timers are due.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Hashable, Iterator
from typing import Protocol


class Clock(Protocol):
    """Milliseconds since an arbitrary origin (a job's start, for the clocks here)."""

    def now(self) -> int: ...


class SystemClock:
    """The wall clock, as milliseconds since the clock was created (monotonic)."""

    def __init__(self) -> None:
        self._origin = time.monotonic_ns()

    def now(self) -> int:
        return (time.monotonic_ns() - self._origin) // 1_000_000


class ManualClock:
    """A clock that moves only when told to, like trio's ``MockClock`` or Flink's ``ManualClock``."""

    def __init__(self, start: int = 0) -> None:
        self._now = start

    def now(self) -> int:
        return self._now

    def advance(self, millis: int) -> int:
        if millis < 0:
            raise ValueError(f"a clock cannot go back (advance by {millis} ms)")
        self._now += millis
        return self._now

    def set(self, when: int) -> None:
        if when < self._now:
            raise ValueError(f"a clock cannot go back (from {self._now} to {when})")
        self._now = when


class TimerQueue:
    """Scheduled timers by key; a key scheduled again replaces its earlier due time.

    Ties in due time are broken by scheduling order, so a run is deterministic.
    """

    def __init__(self) -> None:
        self._due: dict[Hashable, tuple[int, int]] = {}
        self._heap: list[tuple[int, int, Hashable]] = []
        self._seq = itertools.count()

    def schedule(self, key: Hashable, due: int) -> None:
        entry = (due, next(self._seq))
        self._due[key] = entry
        heapq.heappush(self._heap, (entry[0], entry[1], key))

    def cancel(self, key: Hashable) -> None:
        self._due.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._due

    def __len__(self) -> int:
        return len(self._due)

    def scheduled(self) -> Iterator[Hashable]:
        return iter(self._due)

    def pop_due(self, now: int) -> tuple[Hashable, int] | None:
        """Remove and return the earliest timer due at or before ``now`` (key, due), if any."""
        self._drop_stale()
        if not self._heap or self._heap[0][0] > now:
            return None
        due, _, key = heapq.heappop(self._heap)
        del self._due[key]
        return key, due

    def _drop_stale(self) -> None:
        while self._heap:
            due, seq, key = self._heap[0]
            if self._due.get(key) == (due, seq):
                return
            heapq.heappop(self._heap)
