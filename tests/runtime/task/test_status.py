"""A task's lifecycle as a transition table: every legal transition, and one error naming the
status and the event for every other one."""

from __future__ import annotations

import pytest

from runtime.status import ExecutionState
from runtime.task.status import (
    TRANSITIONS,
    IllegalTaskTransition,
    TaskEvent,
    TaskStatus,
    transition,
)

LEGAL = [
    (status, event, target) for status, row in TRANSITIONS.items() for event, target in row.items()
]


@pytest.mark.parametrize(("status", "event", "target"), LEGAL)
def test_a_legal_event_moves_the_task_as_the_table_says(
    status: TaskStatus, event: TaskEvent, target: TaskStatus
) -> None:
    assert transition(status, event) is target


ILLEGAL = [
    (status, event)
    for status in TaskStatus
    for event in TaskEvent
    if event not in TRANSITIONS[status]
]


@pytest.mark.parametrize(("status", "event"), ILLEGAL)
def test_every_other_event_is_one_error_naming_status_and_event(
    status: TaskStatus, event: TaskEvent
) -> None:
    with pytest.raises(IllegalTaskTransition) as raised:
        transition(status, event)
    assert f"status {status.value}" in str(raised.value)
    assert f"event {event.value!r}" in str(raised.value)
    assert (raised.value.status, raised.value.event) == (status, event)


def test_the_lifecycle_of_a_bounded_task() -> None:
    status = TaskStatus.CREATED
    for event in (TaskEvent.START, TaskEvent.END_OF_DATA, TaskEvent.FINISH):
        status = transition(status, event)
    assert status is TaskStatus.FINISHED and status.is_terminal


def test_a_task_whose_data_ended_still_runs_and_takes_checkpoints() -> None:
    assert TaskStatus.DATA_ENDED.is_running
    assert TaskStatus.DATA_ENDED.execution_state is ExecutionState.RUNNING
    assert not TaskStatus.CREATED.is_running
    assert {s.execution_state for s in TaskStatus if s.is_terminal} == {
        ExecutionState.FINISHED,
        ExecutionState.CANCELED,
        ExecutionState.FAILED,
    }
