"""Timers for actors: Pykka has none. One thread keeps a heap of due times and ``tell``s
``TimerFired(key)`` to the actor that asked, when its time comes.

A cancelled timer leaves the heap at once (the coordinator cancels a checkpoint's timeout timer
whenever the checkpoint ends, so with the default 10-minute timeout the heap would otherwise
hold one dead entry per checkpoint for ten minutes). Should the thread die anyway, it reports
the error to ``on_death`` (the runtime fails the job with it) instead of leaving the job
waiting for timers that never fire.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable, Hashable
from typing import Any

import pykka

from actors.logs import get_logger
from runtime.clock import Clock
from runtime.messages import TimerFired

log = get_logger(__name__)

#: heap entries: (due ms, sequence, actor urn, key)
_Entry = tuple[int, int, str, Hashable]


def wait_seconds(due: int, now: int) -> float:
    """How long the thread sleeps for a timer due at ``due`` (ms): never more than a
    ``Condition`` accepts (``threading.TIMEOUT_MAX``), however far away it is."""
    return min((due - now) / 1000, threading.TIMEOUT_MAX)


class TimerService:
    def __init__(self, clock: Clock, *, on_death: Callable[[str], None] | None = None) -> None:
        self.clock = clock
        self.on_death = on_death
        #: why the thread died, if it did
        self.death: str | None = None
        self._heap: list[_Entry] = []
        self._live: dict[tuple[str, Hashable], tuple[_Entry, pykka.ActorRef[Any]]] = {}
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="ckptsim-timers", daemon=True)
        self._thread.start()

    def schedule(self, ref: pykka.ActorRef[Any], key: Hashable, due: int) -> None:
        with self._cv:
            self._remove((ref.actor_urn, key))  # rescheduled: the old entry goes
            entry = (due, next(self._seq), ref.actor_urn, key)
            self._live[(ref.actor_urn, key)] = (entry, ref)
            heapq.heappush(self._heap, entry)
            self._cv.notify()

    def cancel(self, ref: pykka.ActorRef[Any], key: Hashable) -> None:
        with self._cv:
            self._remove((ref.actor_urn, key))

    def __len__(self) -> int:
        """Entries in the heap: the live timers (a cancelled one is gone at once)."""
        with self._cv:
            return len(self._heap)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        with self._cv:
            self._stopped = True
            self._cv.notify()
        self._thread.join(timeout=5)

    def _remove(self, live: tuple[str, Hashable]) -> None:
        """Take a live timer out of the heap (O(n): the heap holds only live timers, a handful
        per actor)."""
        found = self._live.pop(live, None)
        if found is None:
            return
        entry = found[0]
        heap = self._heap
        index = heap.index(entry)
        last = heap.pop()
        if index < len(heap):
            heap[index] = last
            heapq.heapify(heap)

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as error:  # reported, then the thread ends
            self.death = f"the timer thread died: {type(error).__name__}: {error}"
            log.error("timer_service_died", error=f"{type(error).__name__}: {error}")
            if self.on_death is not None:
                self.on_death(self.death)

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self._stopped:
                    if self._heap:
                        wait = wait_seconds(self._heap[0][0], self.clock.now())
                        if wait <= 0:
                            break
                        self._cv.wait(timeout=wait)
                    else:
                        self._cv.wait()
                if self._stopped:
                    return
                _, _, urn, key = heapq.heappop(self._heap)
                _, ref = self._live.pop((urn, key))
            self._fire(ref, key)

    def _fire(self, ref: pykka.ActorRef[Any], key: Hashable) -> None:
        try:
            ref.tell(TimerFired(key=key))
        except pykka.ActorDeadError:
            log.debug("timer_target_gone", key=repr(key))
