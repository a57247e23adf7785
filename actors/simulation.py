"""The deterministic simulation runtime: a whole job on one thread, under a seeded scheduler
and a virtual clock, so that a seed replays a run message for message.

The same actor classes run here as on threads. ``SimulationRuntime.spawn`` gives each class a
subclass that plugs into Pykka's actor seam (``actors.pykka_seam``: inbox, futures, loop
start): the inbox belongs to the scheduler, no thread is started, and a future
never blocks (waiting on one runs the simulation until it is set).

The scheduler repeatedly picks one actor that has mail and is not busy, by a seeded choice (or
by a choice sequence given from outside, e.g. by Hypothesis), and delivers its oldest message.
Each inbox is FIFO, so the order between two actors (a channel's order) is kept; only the
interleaving between actors varies. The asynchronous checkpoint parts queued with
``run_async`` are one more candidate of that choice.

Virtual time: handling a message makes its actor busy for ``message_cost_us`` plus
``record_cost_us`` per record a task processed plus any operator cost it declared; each actor
is busy on its own (as tasks on separate cores are). When no actor may run, the clock jumps
to the next timer or the end of the next busy period. Checkpoint intervals, timeouts and rate
limits cost no wall time.
"""

from __future__ import annotations

import contextlib
import contextvars
import heapq
import itertools
import random
import time
from bisect import bisect_left, bisect_right, insort
from collections import deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import pykka

from actors.faults import FaultPlan
from actors.input_channel import InputChannel
from actors.pykka_seam import (
    Envelope,
    SeamActor,
    ThreadingFuture,
    deliver,
    run_on_start,
    stop_now,
    unregister_all,
)
from actors.trace import Tracer
from runtime.clock import Clock, ManualClock
from runtime.messages import CancelTask, TimerFired

A = TypeVar("A", bound=pykka.Actor)
T = TypeVar("T")

_ACTIVE: contextvars.ContextVar[SimulationRuntime | None] = contextvars.ContextVar(
    "ckptsim_simulation", default=None
)


def active_simulation() -> SimulationRuntime | None:
    """The simulation running on this thread right now, if any (for virtual log times)."""
    return _ACTIVE.get()


SIMULATION_EPOCH_MS = 1_767_225_600_000


#: a simulated timer: (due µs, sequence, actor urn, key, actor)
_TimerEntry = tuple[int, int, str, Hashable, pykka.ActorRef[Any]]


class SimulationStalled(RuntimeError):
    """No actor has mail, no timer is due and the job has not ended: it never will."""


@dataclass(eq=False)
class _Mailbox:
    index: int
    actor: pykka.Actor
    name: str
    queue: deque[Envelope[Any]] = field(default_factory=deque)
    busy_until: int = 0  # virtual microseconds


class _ReadySet:
    """The mailboxes that may run now, as their indices in ascending order: the scheduler
    draws the k-th of them (in index order, as it did by sorting them every step). A sorted
    list kept with ``bisect`` (C code: a binary search and one memory move per change), so a
    step costs about the same whether the job has ten mailboxes or ten thousand; a byte per
    mailbox answers membership."""

    __slots__ = ("_member", "indices")

    def __init__(self) -> None:
        #: the members, ascending
        self.indices: list[int] = []
        self._member = bytearray(64)

    @property
    def count(self) -> int:
        return len(self.indices)

    def __contains__(self, index: int) -> bool:
        return index < len(self._member) and bool(self._member[index])

    def add(self, index: int) -> None:
        member = self._member
        if index >= len(member):
            member.extend(bytes(max(index + 1, 2 * len(member)) - len(member)))
        if not member[index]:
            member[index] = 1
            insort(self.indices, index)

    def discard(self, index: int) -> None:
        if index in self:
            self._member[index] = 0
            indices = self.indices
            del indices[bisect_left(indices, index)]

    def kth(self, k: int) -> int:
        """The index of the k-th member (0-based) in ascending order."""
        return self.indices[k]

    def take(self, k: int) -> int:
        """The k-th member (0-based, ascending), taken out."""
        index = self.indices.pop(k)
        self._member[index] = 0
        return index


class _SimInbox:
    def __init__(self, simulation: SimulationRuntime) -> None:
        self.simulation = simulation
        self.box: _Mailbox | None = None

    def put(self, envelope: Envelope[Any], /) -> None:
        box = self.box
        if box is None:
            raise RuntimeError("a simulated actor got mail before it started")
        if isinstance(envelope.message, CancelTask):
            # Flink cancels a task from outside its mailbox (an interrupt of its thread): the
            # cancellation does not wait behind the buffers queued for it
            box.queue.appendleft(envelope)
        else:
            box.queue.append(envelope)
        simulation = self.simulation
        if box.index not in simulation._with_mail:  # ``_has_mail``, inline: once a message
            simulation._has_mail(box)

    def get(self) -> Envelope[Any]:
        raise RuntimeError("a simulated inbox is read by the scheduler, not by a loop")

    def empty(self) -> bool:
        return self.box is None or not self.box.queue

    def qsize(self) -> int:
        return 0 if self.box is None else len(self.box.queue)


class _SimFuture(ThreadingFuture[Any]):
    """Never blocks: ``get`` runs the simulation until the future is set."""

    simulation: SimulationRuntime

    def get(self, *, timeout: float | None = None) -> Any:
        if self._result is None and self._get_hook is None:
            self.simulation.run_until(lambda: self._result is not None, timeout)
        return super().get(timeout=timeout)


class _SimulatedActor(SeamActor):
    """Mixed in before an actor class: the simulation owns its inbox and runs its messages."""

    _simulation: ClassVar[SimulationRuntime]

    @classmethod
    def make_inbox(cls) -> Any:
        return _SimInbox(cls._simulation)

    @classmethod
    def make_future(cls) -> pykka.Future[Any]:
        return cls._simulation.future()

    def start_loop(self) -> None:
        self._simulation._register(self)
        run_on_start(self)  # on_start, at once


class SimulationRuntime:
    """Runs actors single-threaded under a seeded scheduler and a virtual clock."""

    name = "simulation"
    deterministic = True
    #: virtual time 0 is this epoch instant (2026-01-01T00:00:00Z), so that the REST API's
    #: epoch timestamps of a seed's run are always the same
    epoch_ms = SIMULATION_EPOCH_MS
    #: one default action per scheduling step: every buffer is a point where schedules differ
    default_action_budget = 1

    def __init__(
        self,
        *,
        seed: int = 0,
        schedule: Sequence[int] = (),
        message_cost_us: int = 10,
        record_cost_us: int = 1,
        async_cost_us: int = 200,
        max_steps: int | None = None,
    ) -> None:
        self.seed = seed
        self.choices = list(schedule)
        self.message_cost_us = message_cost_us
        self.async_cost_us = async_cost_us
        self.record_cost_us = record_cost_us
        self.max_steps = max_steps
        self.channel_class: type[pykka.Actor] = InputChannel
        self.faults = FaultPlan()
        self.tracer: Tracer | None = None
        self._manual = ManualClock()
        self.clock: Clock = self._manual
        self.now_us = 0
        self.steps = 0
        self.decisions = 0
        self._rng = random.Random(seed)
        self._randbelow: Callable[[int], int] = self._rng._randbelow  # type: ignore[attr-defined]
        self._boxes: list[_Mailbox] = []
        self._with_mail: dict[int, _Mailbox] = {}
        #: mailboxes with mail: those not busy (may run now), and the busy ones by the end of
        #: their busy period (entries of a box that since ran or emptied are skipped)
        self._ready = _ReadySet()
        self._busy: list[tuple[int, int]] = []
        #: asynchronous checkpoint parts, in the order they may run (when, then as queued):
        #: when each may run, and its work; each part that may run now is a candidate. Queued
        #: with the clock's time plus a constant, they arrive in that order: appended.
        self._async_due: list[int] = []
        self._async_work: list[Callable[[], None]] = []
        #: the live timers only: a cancelled or rescheduled one leaves the heap at once
        self._timers: list[_TimerEntry] = []
        self._live_timers: dict[tuple[str, Hashable], _TimerEntry] = {}
        self._timer_seq = itertools.count()
        self._classes: dict[type[pykka.Actor], type[pykka.Actor]] = {}
        self._current: _Mailbox | None = None
        self._deadline: int | None = None
        self._charged_us = 0
        self._by_urn: dict[str, pykka.Actor] = {}
        #: called every ``progress_interval`` wall seconds while the job runs (read-only)
        self.on_progress: Callable[[], None] | None = None
        self.progress_interval = 0.5
        self._next_progress = 0.0

    # --- the ActorRuntime interface ----------------------------------------------------------------

    def stamp(self) -> tuple[str, Any]:
        """Virtual time: two runs of one seed write the same trace, byte for byte."""
        return "time_ms", self.now_us / 1000

    def spawn(self, cls: type[A], *args: Any, **kwargs: Any) -> pykka.ActorRef[A]:
        simulated = self._classes.get(cls)
        if simulated is None:
            simulated = type(f"Simulated{cls.__name__}", (_SimulatedActor, cls), {})
            simulated._simulation = self  # type: ignore[attr-defined]
            self._classes[cls] = simulated
        ref: pykka.ActorRef[A] = simulated.start(*args, **kwargs)  # type: ignore[assignment]
        return ref

    def schedule(self, ref: pykka.ActorRef[Any], key: Hashable, due: int) -> None:
        live = (ref.actor_urn, key)
        if live in self._live_timers:  # rescheduled: the old entry goes
            self._remove_timer(self._live_timers[live])
        entry = (due * 1000, next(self._timer_seq), ref.actor_urn, key, ref)
        self._live_timers[live] = entry
        heapq.heappush(self._timers, entry)

    def cancel(self, ref: pykka.ActorRef[Any], key: Hashable) -> None:
        entry = self._live_timers.pop((ref.actor_urn, key), None)
        if entry is not None:
            self._remove_timer(entry)

    def _remove_timer(self, entry: _TimerEntry) -> None:
        """Out of the heap (O(n): it holds only live timers, a few per actor)."""
        timers = self._timers
        index = timers.index(entry)
        last = timers.pop()
        if index < len(timers):
            timers[index] = last
            heapq.heapify(timers)

    def run_async(self, work: Callable[[], None]) -> None:
        """Queued as its own candidate, ready after ``async_cost_us`` of virtual time (the
        write of a snapshot takes time; parts may complete in any order)."""
        ready = self.now_us + self.async_cost_us
        due = self._async_due
        if not due or due[-1] <= ready:
            due.append(ready)
            self._async_work.append(work)
        else:  # not reached while the clock only moves forward; kept in order all the same
            at = bisect_right(due, ready)
            due.insert(at, ready)
            self._async_work.insert(at, work)

    def charge(self, records: int, cost_ms: float) -> None:
        """The actor being run processed ``records`` and declared ``cost_ms`` of work."""
        self._charged_us += records * self.record_cost_us + round(cost_ms * 1000)

    def future(self) -> pykka.Future[Any]:
        future = _SimFuture()
        future.simulation = self
        return future

    def wait(self, future: pykka.Future[Any], timeout: float | None) -> Any:
        return future.get(timeout=timeout)

    def shutdown(self) -> None:
        """Deliver what is still in the inboxes (stop messages), then stop what still runs."""
        # out of Pykka's registry at once: one by one, as each stops, costs O(actors²)
        unregister_all([box.actor.actor_ref for box in self._boxes])
        token = _ACTIVE.set(self)
        try:
            guard = 0
            self._deadline = None
            while (self._with_mail or self._async_due) and guard < 1_000_000:
                guard += 1
                self._step(only_mail=True)
            for box in self._boxes:
                if box.actor.actor_ref.is_alive():
                    stop_now(box.actor)
        finally:
            _ACTIVE.reset(token)
        self._timers.clear()
        self._live_timers.clear()
        self._async_due.clear()
        self._async_work.clear()

    @contextlib.contextmanager
    def activated(self) -> Iterator[None]:
        """Mark this simulation as the one running on this thread (virtual log times)."""
        token = _ACTIVE.set(self)
        try:
            yield
        finally:
            _ACTIVE.reset(token)

    # --- running ----------------------------------------------------------------------------------

    def run_until(self, done: Callable[[], bool], timeout: float | None = None) -> None:
        """Run steps until ``done()``; ``timeout`` is in virtual seconds."""
        if self._current is not None:
            raise RuntimeError(
                "an actor waited on a future inside the simulation; actors must only tell"
            )
        deadline = None if timeout is None else self.now_us + round(timeout * 1_000_000)
        self._deadline = deadline
        token = _ACTIVE.set(self)
        try:
            while not done():
                if self.on_progress is not None and self.steps % 512 == 0:
                    self._maybe_report_progress()
                if deadline is not None and self.now_us >= deadline and not self._runnable():
                    raise pykka.Timeout(f"{timeout} seconds of virtual time")
                if self.max_steps is not None and self.steps >= self.max_steps:
                    raise SimulationStalled(f"no end after {self.steps} steps ({self.describe()})")
                if not self._step():
                    raise SimulationStalled(
                        "no actor has mail, no timer is due and the job has not ended "
                        f"({self.describe()})"
                    )
        finally:
            _ACTIVE.reset(token)

    def _has_mail(self, box: _Mailbox) -> None:
        """``box`` got mail: it may run now, or once its busy period ends."""
        if box.index in self._with_mail:
            return
        self._with_mail[box.index] = box
        if box is self._current:
            return  # it is running: placed when it is done (``_step``)
        self._place(box)

    def _place(self, box: _Mailbox) -> None:
        if box.busy_until <= self.now_us:
            self._ready.add(box.index)
        else:
            heapq.heappush(self._busy, (box.busy_until, box.index))

    def _promote(self) -> None:
        """Busy mailboxes whose busy period ended by now may run."""
        busy, now = self._busy, self.now_us
        while busy and busy[0][0] <= now:
            until, index = heapq.heappop(busy)
            box = self._with_mail.get(index)
            if box is not None and box.busy_until == until:
                self._ready.add(index)

    def _next_busy_end(self) -> int | None:
        busy = self._busy
        while busy:
            until, index = busy[0]
            box = self._with_mail.get(index)
            if box is not None and box.busy_until == until and index not in self._ready:
                return until
            heapq.heappop(busy)  # stale: the box ran or emptied since
        return None

    def _runnable(self) -> bool:
        self._promote()
        due = self._async_due
        return bool(self._ready.indices) or (bool(due) and due[0] <= self.now_us)

    def _step(self, *, only_mail: bool = False) -> bool:
        """One scheduling step: among the mailboxes that may run (in index order) and then
        the asynchronous parts that may run (in the order they may run), the seeded choice
        runs one: a mailbox's oldest message, or the part."""
        now = self.now_us
        busy = self._busy
        if busy and busy[0][0] <= now:
            self._promote()
        ready = self._ready
        runnable = len(ready.indices)
        due = self._async_due
        parts = bisect_right(due, now) if due and due[0] <= now else 0
        count = runnable + parts
        if count == 0:
            if only_mail:
                waits = due[:1]
                busy_end = self._next_busy_end()
                if busy_end is not None:
                    waits.append(busy_end)
                if waits:  # busy actors, parts not ready: let their time pass
                    self._set_time(max(now, min(waits)))
                    return True
                return False
            return self._advance()
        choice = 0 if count == 1 else self._choose(count)
        self.steps += 1
        if choice >= runnable:
            del due[choice - runnable]
            self._async_work.pop(choice - runnable)()
            return True
        index = ready.indices.pop(choice)  # ``ready.take(choice)``, inline
        ready._member[index] = 0
        box = self._boxes[index]
        queue = box.queue
        envelope = queue.popleft()
        with_mail = self._with_mail
        if not queue:
            del with_mail[index]
        self._current, self._charged_us = box, 0
        try:
            deliver(box.actor, envelope)
        finally:
            self._current = None
        box.busy_until = now + self.message_cost_us + self._charged_us
        if index in with_mail:  # mail left, or sent to itself meanwhile
            self._place(box)
        return True

    def _choose(self, count: int) -> int:
        if count == 1:
            return 0
        k = self.decisions
        self.decisions += 1
        if k < len(self.choices):
            return self.choices[k] % count
        # ``randrange(count)`` draws exactly this for a positive count, after checks that cost
        # a tenth of a step: the same seed draws the same choices
        return self._randbelow(count)

    def _advance(self) -> bool:
        """Move the clock to the next event: a timer, or the end of a busy period."""
        upcoming = self._async_due[:1]
        busy_end = self._next_busy_end()
        if busy_end is not None:
            upcoming.append(busy_end)
        if self._timers:
            upcoming.append(self._timers[0][0])
        if not upcoming:
            return False
        target = max(self.now_us, min(upcoming))
        if self._deadline is not None and target > self._deadline:
            self._set_time(max(self.now_us, self._deadline))  # the timeout comes first
            return True
        self._set_time(target)
        while self._timers and self._timers[0][0] <= self.now_us:
            _, _, urn, key, ref = heapq.heappop(self._timers)
            del self._live_timers[(urn, key)]
            if ref.is_alive():
                ref.tell(TimerFired(key=key))
        return True

    def _set_time(self, now_us: int) -> None:
        self.now_us = now_us
        self._manual.set(now_us // 1000)

    def _register(self, actor: pykka.Actor) -> None:
        inbox = actor.actor_inbox
        assert isinstance(inbox, _SimInbox)
        box = _Mailbox(len(self._boxes), actor, type(actor).__name__.removeprefix("Simulated"))
        inbox.box = box
        self._boxes.append(box)
        self._by_urn[actor.actor_urn] = actor

    def inspect(self, ref: pykka.ActorRef[Any], look: Callable[[Any], T]) -> T:
        """Read an actor's state between two steps, on this thread: no message, so the
        schedule is not touched (the progress line of a simulated run)."""
        if self._current is not None:
            raise RuntimeError("an actor cannot inspect another inside the simulation")
        return look(self._by_urn[ref.actor_urn])

    def _maybe_report_progress(self) -> None:
        """Every ``progress_interval`` seconds of wall time (read only here: the schedule does
        not depend on it), call ``on_progress``."""
        now = time.monotonic()
        if now < self._next_progress:
            return
        self._next_progress = now + self.progress_interval
        assert self.on_progress is not None
        self.on_progress()

    def describe(self) -> str:
        waiting = [f"{b.name}#{b.index}: {len(b.queue)} mails" for b in self._with_mail.values()]
        return (
            f"virtual time {self.now_us / 1000:.3f} ms, {self.steps} steps, "
            f"{len(self._live_timers)} timers, {len(self._async_due)} async parts"
            + (f"; {', '.join(waiting)}" if waiting else "")
        )
