"""What an actor needs from the runtime it runs on: ``ActorRuntime``, provided by the threaded
runtime (``actors.execution``) and the deterministic simulation (``actors.simulation``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Protocol, TypeVar

import pykka

from actors.faults import FaultPlan
from actors.trace import Tracer
from runtime.clock import Clock

A = TypeVar("A", bound=pykka.Actor)


class ActorRuntime(Protocol):
    name: str
    clock: Clock
    channel_class: type[pykka.Actor]
    #: a run is a function of its seed (virtual time, one thread)
    deterministic: bool
    #: default actions a task runs back to back while its mailbox is empty
    default_action_budget: int
    #: faults to inject into this run
    faults: FaultPlan
    #: epoch milliseconds at the clock's 0: what the REST API shows timestamps against
    epoch_ms: int
    #: where the run's trace goes (``actors.trace``), if it is traced
    tracer: Tracer | None

    def stamp(self) -> tuple[str, Any]:
        """The run's time for a trace event: ``(key, value)``."""
        ...

    def spawn(self, cls: type[A], *args: Any, **kwargs: Any) -> pykka.ActorRef[A]: ...

    def schedule(self, ref: pykka.ActorRef[Any], key: Hashable, due: int) -> None: ...

    def cancel(self, ref: pykka.ActorRef[Any], key: Hashable) -> None: ...

    def run_async(self, work: Callable[[], None]) -> None:
        """Run ``work`` off the caller's thread (Flink's asynchronous operations pool); it
        reports back by ``tell``."""
        ...

    def charge(self, records: int, cost_ms: float) -> None:
        """The running task processed ``records`` and its operators declared ``cost_ms``."""
        ...

    def future(self) -> pykka.Future[Any]: ...

    def wait(self, future: pykka.Future[Any], timeout: float | None) -> Any: ...

    def shutdown(self) -> None: ...
