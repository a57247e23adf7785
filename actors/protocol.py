"""Messages between actors that are transport, not protocol decisions: what a channel actor
(the network between two tasks) receives from its producer and its consumer, wiring, and the
questions asked from outside the actor system.

Protocol messages (triggers, acknowledgements, barriers inside ``Deliver``, what the JobMaster's
scheduler takes) are the runtime core's own dataclasses (``runtime.messages``); the ones other
actors send the JobMaster are named here too. Everything here is frozen and slotted as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime.checkpoint import TaskId
from runtime.messages import (  # noqa: F401
    CancelJob,
    SinkResults,
    SourceProgress,
    TaskStateUpdate,
)
from runtime.network import ChannelItem

# what tasks, the launcher and the REST API send the JobMaster, named here as before
from runtime.scheduler.effects import SnapshotOutcome  # noqa: F401

# --- to an input channel (the network between two tasks) -----------------------------------------


@dataclass(frozen=True, slots=True)
class Deliver:
    """The producer sends an item (a buffer it has a credit for, or an event)."""

    item: ChannelItem


@dataclass(frozen=True, slots=True)
class Credit:
    """The consumer freed buffers of this channel: credits for the producer."""

    credits: int = 1


@dataclass(frozen=True, slots=True)
class AllRecordsProcessed:
    """The consumer processed the channel's end of data (for the producer, FLIP-147)."""


# --- wiring (JobMaster -> the actors it deployed, before StartTask) -------------------------------


@dataclass(frozen=True, slots=True)
class WireChannel:
    producer: Any  # ActorRef of the upstream task


@dataclass(frozen=True, slots=True)
class WireTask:
    coordinator: Any
    outputs: list[Any]
    inputs: list[Any]


@dataclass(frozen=True, slots=True)
class WireCoordinator:
    tasks: dict[TaskId, Any]


# --- to the JobMaster (besides the scheduler's messages, runtime.messages) ------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class FailJob:
    """What runs the job broke (its timer thread died): the job fails for good with ``cause``
    instead of waiting for timers that never fire."""

    cause: str


@dataclass(frozen=True, slots=True)
class Deploy:
    """Start the job."""


@dataclass(frozen=True, slots=True)
class QueryProgress:
    """Ask (from outside the actor system only) for a progress snapshot."""


# --- from outside the actor system (the REST API: ckptsim/_web.py) -----------------------------------


@dataclass(frozen=True, slots=True)
class QueryJob:
    """Ask (from outside the actor system only) for the job as the REST API shows it: status
    and its history, task states and their last metrics, the task and coordinator refs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotRequest:
    """A savepoint, a stop-with-savepoint or a checkpoint asked for from outside (Flink's
    ``POST /jobs/:jobid/savepoints``, ``/stop``, ``/checkpoints``); ``reply`` (a future) is
    completed with a ``SnapshotOutcome``."""

    kind: str  # "savepoint" | "stop" | "checkpoint" | "full_checkpoint" (SnapshotKind)
    directory: str | None = None
    reply: Any = None
    drain: bool = False  # ``stop`` with ``{"drain": true}``


# --- between processes (runtime="processes") ---------------------------------------------------------

#: the words every "record cannot cross" failure carries (``ckptsim run`` exits 2 on it)
CANNOT_CROSS = "cannot cross to another process"


class CannotCross(TypeError):
    """A message for an actor in another process cannot be pickled: a record (or a sink's
    value) that is not picklable. ``value_type``: the type of the first record that does not
    pickle (the message's own type when no record is to blame); ``reason``: pickle's error."""

    def __init__(self, address: str, value_type: str, reason: str) -> None:
        self.address = address
        self.value_type = value_type
        self.reason = reason
        #: the operator that emitted it, as the user knows it (set by the task that sent it)
        self.operator: str | None = None
        super().__init__(
            f"a value of type {value_type} {CANNOT_CROSS} (pickle: {reason}); on "
            "runtime='processes' records and sink values must be picklable"
        )

    def describe(self, task: str) -> str:
        """One line for the user: the operator (else the task), the value's type, what to do."""
        what = (
            f"{self.operator} emitted a record of type {self.value_type}"
            if self.operator is not None
            else f"task {task} sent a {self.value_type} (state or values of its operators)"
        )
        return (
            f"{what} that {CANNOT_CROSS} (pickle: {self.reason}): on runtime='processes' "
            "records, state and sink values must be picklable; make them picklable (no "
            "locks, open files, sockets or generators) or run the job with runtime='threaded'"
        )
