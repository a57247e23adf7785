"""A task's lifecycle as data: its statuses, the events that move it, and the legal
transitions (in the style of h11's ``_state``: one table, one error naming state and event).

    CREATED --start--> RUNNING --end_of_data--> DATA_ENDED --finish--> FINISHED
    RUNNING / DATA_ENDED --stop--> FINISHED   (stop-with-savepoint)
    CREATED / RUNNING / DATA_ENDED --cancel--> CANCELED, --fail--> FAILED
    FINISHED --fail--> FAILED   (a sink's connector failed as it closed, before the runtime
                                 reported the task FINISHED)

``DATA_ENDED`` is Flink's running task whose operators finished (``endData``): it sent end of
data downstream and waits for its inputs to end, its output to be processed and, with
FLIP-147, its final checkpoint, before it ends its partitions and finishes.
"""

from __future__ import annotations

import enum

from runtime.status import ExecutionState


class TaskStatus(enum.Enum):
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    DATA_ENDED = "DATA_ENDED"
    FINISHED = "FINISHED"
    CANCELED = "CANCELED"
    FAILED = "FAILED"

    @property
    def is_terminal(self) -> bool:
        """Reported to the JobMaster as a final state."""
        return self in (TaskStatus.FINISHED, TaskStatus.CANCELED, TaskStatus.FAILED)

    @property
    def is_running(self) -> bool:
        """Processing, or waiting for its final checkpoint: checkpoints are taken."""
        return self in (TaskStatus.RUNNING, TaskStatus.DATA_ENDED)

    @property
    def execution_state(self) -> ExecutionState:
        """Flink's ``ExecutionState`` (a task whose data ended is still RUNNING)."""
        return _EXECUTION_STATE[self]


class TaskEvent(enum.Enum):
    START = "start"
    END_OF_DATA = "end_of_data"
    FINISH = "finish"
    STOP = "stop"
    CANCEL = "cancel"
    FAIL = "fail"


_EXECUTION_STATE = {
    TaskStatus.CREATED: ExecutionState.CREATED,
    TaskStatus.RUNNING: ExecutionState.RUNNING,
    TaskStatus.DATA_ENDED: ExecutionState.RUNNING,
    TaskStatus.FINISHED: ExecutionState.FINISHED,
    TaskStatus.CANCELED: ExecutionState.CANCELED,
    TaskStatus.FAILED: ExecutionState.FAILED,
}

TRANSITIONS: dict[TaskStatus, dict[TaskEvent, TaskStatus]] = {
    TaskStatus.CREATED: {
        TaskEvent.START: TaskStatus.RUNNING,
        TaskEvent.CANCEL: TaskStatus.CANCELED,
        TaskEvent.FAIL: TaskStatus.FAILED,
    },
    TaskStatus.RUNNING: {
        TaskEvent.END_OF_DATA: TaskStatus.DATA_ENDED,
        TaskEvent.STOP: TaskStatus.FINISHED,
        TaskEvent.CANCEL: TaskStatus.CANCELED,
        TaskEvent.FAIL: TaskStatus.FAILED,
    },
    TaskStatus.DATA_ENDED: {
        TaskEvent.FINISH: TaskStatus.FINISHED,
        TaskEvent.STOP: TaskStatus.FINISHED,
        TaskEvent.CANCEL: TaskStatus.CANCELED,
        TaskEvent.FAIL: TaskStatus.FAILED,
    },
    # a sink's connector failed while closing, before the task was reported FINISHED
    TaskStatus.FINISHED: {TaskEvent.FAIL: TaskStatus.FAILED},
    TaskStatus.CANCELED: {},
    TaskStatus.FAILED: {},
}


class IllegalTaskTransition(RuntimeError):
    """A task event that its status does not allow (a bug in the task core)."""

    def __init__(self, status: TaskStatus, event: TaskEvent) -> None:
        allowed = ", ".join(e.value for e in TRANSITIONS[status]) or "none (terminal)"
        super().__init__(
            f"a task in status {status.value} cannot take event {event.value!r} "
            f"(allowed: {allowed})"
        )
        self.status = status
        self.event = event


def transition(status: TaskStatus, event: TaskEvent) -> TaskStatus:
    """The status after ``event``; ``IllegalTaskTransition`` if ``status`` does not allow it."""
    try:
        return TRANSITIONS[status][event]
    except KeyError:
        raise IllegalTaskTransition(status, event) from None
