"""Where actors run. ``ThreadedRuntime``: Pykka threads, the wall clock, a timer thread and a
small pool for the tasks' asynchronous checkpoint parts. The deterministic simulation provides
the same interface (``actors.actor_runtime.ActorRuntime``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pykka

from actors.faults import FaultPlan
from actors.input_channel import InlineInputChannel, InputChannel
from actors.timers import TimerService
from actors.trace import Tracer, wall_stamp
from runtime.clock import Clock, SystemClock

A = TypeVar("A", bound=pykka.Actor)


class ThreadedRuntime:
    """Every actor on its own thread (``pykka.ThreadingActor``, input channels excepted unless
    ``channel_threads``); timers on one more thread; asynchronous checkpoint parts on a pool of
    ``async_threads``."""

    name = "threaded"
    deterministic = False
    default_action_budget = 32

    def __init__(self, *, channel_threads: bool = False, async_threads: int = 2) -> None:
        self.clock: Clock = SystemClock()
        self.epoch_ms = time.time_ns() // 1_000_000 - self.clock.now()
        self._fatal: Callable[[str], None] | None = None
        self.timers = TimerService(self.clock, on_death=self._timers_died)
        self.faults = FaultPlan()
        self.tracer: Tracer | None = None
        #: every actor of this runtime (one job's), for stopping them at the end
        self.spawned: list[pykka.ActorRef[Any]] = []
        self.channel_class: type[pykka.Actor] = (
            InputChannel if channel_threads else InlineInputChannel
        )
        self._async = ThreadPoolExecutor(
            max_workers=max(1, async_threads), thread_name_prefix="ckptsim-async"
        )

    def on_fatal(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(cause)`` if the runtime breaks under the job (its timer thread dies),
        at once if it has already."""
        self._fatal = callback
        if self.timers.death is not None:
            callback(self.timers.death)

    def _timers_died(self, cause: str) -> None:
        if self._fatal is not None:
            self._fatal(cause)

    def stamp(self) -> tuple[str, Any]:
        return wall_stamp()

    def spawn(self, cls: type[A], *args: Any, **kwargs: Any) -> pykka.ActorRef[A]:
        ref = cls.start(*args, **kwargs)
        self.spawned.append(ref)
        return ref

    def schedule(self, ref: pykka.ActorRef[Any], key: Hashable, due: int) -> None:
        self.timers.schedule(ref, key, due)

    def cancel(self, ref: pykka.ActorRef[Any], key: Hashable) -> None:
        self.timers.cancel(ref, key)

    def run_async(self, work: Callable[[], None]) -> None:
        self._async.submit(work)

    def charge(self, records: int, cost_ms: float) -> None:
        if cost_ms > 0:
            time.sleep(cost_ms / 1000)  # a slow operator, in real time

    def future(self) -> pykka.Future[Any]:
        return pykka.ThreadingFuture()

    def wait(self, future: pykka.Future[Any], timeout: float | None) -> Any:
        return future.get(timeout=timeout)

    def shutdown(self) -> None:
        self.timers.stop()
        self._async.shutdown(wait=True, cancel_futures=True)
