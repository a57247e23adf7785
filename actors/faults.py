"""Faults to inject into a run: where the protocol must cope with a lost or late message, a
stalled channel or a failed snapshot. Each one is logged as ``fault_injected`` when it strikes.

Tasks are named as in traces and statistics: ``"<vertex id>#<subtask>"``, e.g.
``"reduce-3#0"`` (``ckptsim run --trace`` shows them). Times are milliseconds of the job's
clock (virtual in the simulation)::

    env.execute(runtime="simulation", seed=3, faults=[
        DropAcknowledgement(task="reduce-3#0", checkpoint_id=2),   # checkpoint 2 expires
        StallChannel(producer="source-1#0", consumer="reduce-3#1", at_ms=50, for_ms=200),
    ])
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class DropAcknowledgement:
    """The coordinator never receives this task's acknowledgement of the checkpoint."""

    task: str
    checkpoint_id: int


@dataclass(frozen=True)
class DelayAcknowledgement:
    """The coordinator receives this task's acknowledgement ``delay_ms`` late."""

    task: str
    checkpoint_id: int
    delay_ms: int


@dataclass(frozen=True)
class StallChannel:
    """The channel from ``producer`` to ``consumer`` hands nothing on for a while (its
    queue fills, credits run out, back-pressure forms behind it)."""

    producer: str
    consumer: str
    at_ms: int
    for_ms: int


@dataclass(frozen=True)
class FailSnapshot:
    """The asynchronous part of this task's snapshot fails: it declines the checkpoint with
    ``CHECKPOINT_ASYNC_EXCEPTION``."""

    task: str
    checkpoint_id: int


Fault = DropAcknowledgement | DelayAcknowledgement | StallChannel | FailSnapshot


class FaultPlan:
    """The faults of one run, looked up by the actors where each can strike."""

    def __init__(self, faults: Iterable[Fault] = ()) -> None:
        self.faults = list(faults)
        for fault in self.faults:
            if not isinstance(fault, Fault):
                raise TypeError(f"not a fault: {fault!r} (see actors.faults)")
            for field in ("delay_ms", "for_ms", "at_ms", "checkpoint_id"):
                value = getattr(fault, field, 0)
                if not isinstance(value, int) or value < 0:
                    raise ValueError(f"{fault!r}: {field} must be a whole number >= 0")

    def __bool__(self) -> bool:
        return bool(self.faults)

    def acknowledgement(self, task: str, checkpoint_id: int) -> Fault | None:
        for fault in self.faults:
            if (
                isinstance(fault, DropAcknowledgement | DelayAcknowledgement)
                and fault.task == task
                and fault.checkpoint_id == checkpoint_id
            ):
                return fault
        return None

    def fails_snapshot(self, task: str, checkpoint_id: int) -> bool:
        return any(
            isinstance(f, FailSnapshot) and f.task == task and f.checkpoint_id == checkpoint_id
            for f in self.faults
        )

    def stalls(self, producer: str, consumer: str) -> list[StallChannel]:
        return [
            f
            for f in self.faults
            if isinstance(f, StallChannel) and f.producer == producer and f.consumer == consumer
        ]
