"""Timers for actors: Pykka has none. One thread keeps a heap of due times and ``tell``s
``TimerFired(key)`` to the actor that asked, when its time comes."""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Hashable
from typing import Any

import pykka
import structlog

from runtime.clock import Clock
from runtime.messages import TimerFired

log = structlog.get_logger(__name__)


class TimerService:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._heap: list[tuple[int, int, str, Hashable]] = []
        self._live: dict[tuple[str, Hashable], tuple[int, pykka.ActorRef[Any]]] = {}
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="ckptsim-timers", daemon=True)
        self._thread.start()

    def schedule(self, ref: pykka.ActorRef[Any], key: Hashable, due: int) -> None:
        with self._cv:
            seq = next(self._seq)
            self._live[(ref.actor_urn, key)] = (seq, ref)
            heapq.heappush(self._heap, (due, seq, ref.actor_urn, key))
            self._cv.notify()

    def cancel(self, ref: pykka.ActorRef[Any], key: Hashable) -> None:
        with self._cv:
            self._live.pop((ref.actor_urn, key), None)

    def cancel_all(self, ref: pykka.ActorRef[Any]) -> None:
        with self._cv:
            for entry in [k for k in self._live if k[0] == ref.actor_urn]:
                del self._live[entry]

    def stop(self) -> None:
        with self._cv:
            self._stopped = True
            self._cv.notify()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._stopped:
                    if self._heap:
                        wait = (self._heap[0][0] - self.clock.now()) / 1000
                        if wait <= 0:
                            break
                        self._cv.wait(timeout=wait)
                    else:
                        self._cv.wait()
                if self._stopped:
                    return
                _, seq, urn, key = heapq.heappop(self._heap)
                live = self._live.get((urn, key))
                if live is None or live[0] != seq:
                    continue  # cancelled or rescheduled
                del self._live[(urn, key)]
                ref = live[1]
            try:
                ref.tell(TimerFired(key=key))
            except pykka.ActorDeadError:
                log.debug("timer_target_gone", key=repr(key))
