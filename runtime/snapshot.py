"""A subtask's state as data: what a task writes for a checkpoint (``TaskSnapshot``) and a
checkpoint as read back from storage (``LoadedCheckpoint``, one ``LoadedTaskState`` per subtask).

Shared by the task (which takes snapshots), the checkpoint storage (which writes and reads them),
the scheduler's messages and the job model (which restores from them); it knows none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.checkpoint import TaskId
from runtime.network import Buffer


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSnapshot:
    """What one subtask stores for one checkpoint: operator state and channel state (JSON-safe)."""

    checkpoint_id: int
    task: TaskId
    operator_states: dict[str, Any]
    input_channels: dict[int, list[Buffer]]
    output_channels: dict[int, list[Buffer]]
    #: the task had consumed all its input (its operators ended; it waits for its final
    #: checkpoint): after a restore from this snapshot it does not end its operators again
    ended_input: bool = False

    @property
    def persisted_bytes(self) -> int:
        """In-flight data persisted: input and output channel state (Flink's persisted data)."""
        return sum(b.size for bufs in self.input_channels.values() for b in bufs) + sum(
            b.size for bufs in self.output_channels.values() for b in bufs
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedTaskState:
    operator_states: dict[str, Any]
    input_channels: dict[int, list[Buffer]]
    output_channels: dict[int, list[Buffer]]
    ended_input: bool = False
    #: the state files it was read from (what errors name)
    files: tuple[str, ...] = ()
    #: the uids of every operator the task ran, stateless ones too (None: not recorded)
    operators: frozenset[str] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedCheckpoint:
    """A checkpoint read back from disk, every file verified."""

    path: str
    checkpoint_id: int
    timestamp: int
    is_savepoint: bool
    job_name: str
    #: the operators with state in it
    operator_uids: list[str]
    tasks: dict[TaskId, LoadedTaskState]
    finished_tasks: frozenset[TaskId] = frozenset()
    #: the final source positions of finished tasks that ran a source (field
    #: ``final_positions`` of the metadata, from format version 3)
    final_positions: dict[TaskId, dict[str, Any]] = field(default_factory=dict)
    #: the metadata's format version (``runtime.storage.FORMAT_VERSION`` when written now)
    format_version: int = 0

    @property
    def all_operator_uids(self) -> frozenset[str] | None:
        """Every operator of the job it was taken of, stateless ones too (None: its state files
        do not say)."""
        found: set[str] = set()
        for state in self.tasks.values():
            if state.operators is None:
                return None
            found |= state.operators
        return frozenset(found) if self.tasks else None
