"""Faults to inject into a run: where the protocol must cope with a lost or late message, a
stalled channel or a failed snapshot. Each one is logged as ``fault_injected`` when it strikes.

Each fault strikes once in a run (a restarted job does not fail again at the same
record). From a script: ``env.inject_faults(...)``; from the command line:
``-D ckptsim.faults='fail-task:task=map-2#0,at-record=500'`` (``parse_faults``).

Tasks are named as in traces and statistics: ``"<vertex id>#<subtask>"``, e.g.
``"reduce-3#0"`` (``ckptsim run --trace`` shows them). Times are milliseconds of the job's
clock (virtual in the simulation)::

    env.execute(runtime="simulation", seed=3, faults=[
        DropAcknowledgement(task="reduce-3#0", checkpoint_id=2),   # checkpoint 2 expires
        StallChannel(producer="source-1#0", consumer="reduce-3#1", at_ms=50, for_ms=200),
    ])
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
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


@dataclass(frozen=True)
class FailTask:
    """The task fails (as if its user code raised) when it has processed ``at_record``
    records, or while taking checkpoint ``during_checkpoint`` (the synchronous part): the
    job fails over, as its restart strategy allows."""

    task: str
    at_record: int | None = None
    during_checkpoint: int | None = None


@dataclass(frozen=True)
class CrashTask:
    """The task's actor itself dies when it has processed ``at_record`` records; its
    supervisor, the JobMaster, notices and fails the job over."""

    task: str
    at_record: int


Fault = (
    DropAcknowledgement | DelayAcknowledgement | StallChannel | FailSnapshot | FailTask | CrashTask
)
"""Any fault a run can be given (``execute(faults=[...])``, ``inject_faults``): each strikes
once per run, at a point the run reaches (a record count, a checkpoint, a time), naming its
task as ``"<vertex>#<subtask>"``."""

#: the ``ckptsim.faults`` spelling of each fault and of its fields
_KINDS: dict[str, tuple[type, dict[str, str]]] = {
    "drop-ack": (DropAcknowledgement, {"task": "task", "checkpoint": "checkpoint_id"}),
    "delay-ack": (
        DelayAcknowledgement,
        {"task": "task", "checkpoint": "checkpoint_id", "delay-ms": "delay_ms"},
    ),
    "stall-channel": (
        StallChannel,
        {"producer": "producer", "consumer": "consumer", "at-ms": "at_ms", "for-ms": "for_ms"},
    ),
    "fail-snapshot": (FailSnapshot, {"task": "task", "checkpoint": "checkpoint_id"}),
    "fail-task": (
        FailTask,
        {"task": "task", "at-record": "at_record", "checkpoint": "during_checkpoint"},
    ),
    "crash-task": (CrashTask, {"task": "task", "at-record": "at_record"}),
}
_TEXT_FIELDS = {"task", "producer", "consumer"}


def parse_faults(text: str) -> list[Fault]:
    """``kind:key=value,...; kind:...`` (the ``ckptsim.faults`` setting), e.g.
    ``fail-task:task=map-2#0,at-record=500; drop-ack:task=reduce-3#1,checkpoint=2``."""
    faults: list[Fault] = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        kind, _, fields = part.partition(":")
        kind = kind.strip()
        if kind not in _KINDS:
            raise ValueError(
                f"unknown fault {kind!r} in ckptsim.faults; known: {', '.join(sorted(_KINDS))}"
            )
        cls, names = _KINDS[kind]
        values: dict[str, object] = {}
        for item in filter(None, (f.strip() for f in fields.split(","))):
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep or key not in names:
                raise ValueError(
                    f"fault {kind!r}: expected key=value with a key among "
                    f"{', '.join(names)}, got {item!r}"
                )
            field = names[key]
            if field in _TEXT_FIELDS:
                values[field] = value.strip()
            else:
                try:
                    values[field] = int(value)
                except ValueError:
                    raise ValueError(
                        f"fault {kind!r}: {key} must be a number, got {value!r}"
                    ) from None
        try:
            faults.append(cls(**values))
        except TypeError:
            missing = [k for k, f in names.items() if f not in values]
            raise ValueError(f"fault {kind!r}: missing {', '.join(missing)}") from None
    return faults


class FaultPlan:
    """The faults of one run, looked up by the actors where each can strike."""

    def __init__(self, faults: Iterable[Fault] = ()) -> None:
        self.faults = list(faults)
        self._fired: set[int] = set()  # each fault strikes once in a run (not after restarts)
        self._lock = threading.Lock()
        for fault in self.faults:
            if not isinstance(fault, Fault):
                raise TypeError(f"not a fault: {fault!r} (see actors.faults)")
            for field in ("delay_ms", "for_ms", "at_ms", "checkpoint_id", "at_record"):
                value = getattr(fault, field, 0)
                if value is None and field == "at_record":
                    continue
                if not isinstance(value, int) or value < 0:
                    raise ValueError(f"{fault!r}: {field} must be a whole number >= 0")
            if isinstance(fault, FailTask) and (fault.at_record is None) == (
                fault.during_checkpoint is None
            ):
                raise ValueError(f"{fault!r}: give at_record or during_checkpoint, one of them")
        #: per task, the fewest records after which a failure of it may strike (a task that
        #: processed fewer, or has none, needs no search: ``task_failure`` runs per buffer)
        self._first_failure: dict[str, int] = {}
        for fault in self.faults:
            if isinstance(fault, FailTask | CrashTask) and fault.at_record is not None:
                first = self._first_failure.get(fault.task)
                if first is None or fault.at_record < first:
                    self._first_failure[fault.task] = fault.at_record

    def check_targets(self, tasks: Iterable[str], channels: Iterable[tuple[str, str]]) -> None:
        """Every fault names a task (or a channel) of the job: one that names nothing would
        never strike, and a run meant to test a failure would pass without one."""
        known = sorted(set(tasks))
        links = set(channels)
        for fault in self.faults:
            if isinstance(fault, StallChannel):
                if (fault.producer, fault.consumer) not in links:
                    raise ValueError(
                        f"{fault!r}: the job has no channel from {fault.producer!r} to "
                        f"{fault.consumer!r}; its channels: "
                        + ", ".join(f"{p} -> {c}" for p, c in sorted(links))
                    )
            elif fault.task not in known:
                raise ValueError(
                    f"{fault!r}: the job has no task {fault.task!r}; its tasks: " + ", ".join(known)
                )

    def _strike(self, match: Callable[[Fault], bool]) -> Fault | None:
        with self._lock:
            for index, fault in enumerate(self.faults):
                if index not in self._fired and match(fault):
                    self._fired.add(index)
                    return fault
        return None

    def task_failure(self, task: str, records: int) -> Fault | None:
        """A ``FailTask``/``CrashTask`` due now that the task processed ``records`` records."""
        first = self._first_failure.get(task)
        if first is None or records < first:
            return None
        return self._strike(
            lambda f: (
                isinstance(f, FailTask | CrashTask)
                and f.task == task
                and f.at_record is not None
                and records >= f.at_record
            )
        )

    def fails_checkpoint(self, task: str, checkpoint_id: int) -> Fault | None:
        return self._strike(
            lambda f: (
                isinstance(f, FailTask) and f.task == task and f.during_checkpoint == checkpoint_id
            )
        )

    def __bool__(self) -> bool:
        return bool(self.faults)

    def acknowledgement(self, task: str, checkpoint_id: int) -> Fault | None:
        return self._strike(
            lambda f: (
                isinstance(f, DropAcknowledgement | DelayAcknowledgement)
                and f.task == task
                and f.checkpoint_id == checkpoint_id
            )
        )

    def fails_snapshot(self, task: str, checkpoint_id: int) -> bool:
        return (
            self._strike(
                lambda f: (
                    isinstance(f, FailSnapshot)
                    and f.task == task
                    and f.checkpoint_id == checkpoint_id
                )
            )
            is not None
        )

    def stalls(self, producer: str, consumer: str) -> list[StallChannel]:
        """Stalls of this channel not yet begun (a redeployed channel does not stall again)."""
        with self._lock:
            return [
                f
                for i, f in enumerate(self.faults)
                if i not in self._fired
                and isinstance(f, StallChannel)
                and f.producer == producer
                and f.consumer == consumer
            ]

    def spent(self) -> set[int]:
        """The faults that struck (by their index in ``faults``)."""
        with self._lock:
            return set(self._fired)

    def mark_spent(self, indices: Iterable[int]) -> None:
        """These faults struck elsewhere (in a TaskManager process): not again in this run."""
        with self._lock:
            self._fired.update(indices)

    def stall_began(self, fault: StallChannel) -> None:
        with self._lock:
            self._fired.update(i for i, f in enumerate(self.faults) if f is fault)
