"""Checkpoint storage as the coordinator sees it: where a checkpoint goes and how it is finalized.

The only module of ``runtime`` allowed to do file I/O (the file-system storage lives here too
once the actor runtime writes real checkpoints). ``InMemoryCheckpointStorage`` keeps nothing on
disk and is what the pure protocol tests use.
"""

from __future__ import annotations

from typing import Protocol

from runtime.checkpoint import CheckpointProperties, CompletedCheckpoint


class CheckpointStorageError(OSError):
    """Storage failed (an ``IOException`` in Flink): ``IO_EXCEPTION`` or ``FINALIZE_CHECKPOINT_FAILURE``."""


class CheckpointStorage(Protocol):
    def initialize_location(
        self, checkpoint_id: int, props: CheckpointProperties, target: str | None
    ) -> str | None:
        """Prepare the checkpoint's location; returns its reference (None: default)."""

    def finalize(self, checkpoint: CompletedCheckpoint) -> str | None:
        """Write the checkpoint's metadata; returns its external path (None: not externalized)."""


class InMemoryCheckpointStorage:
    """No files: locations and external paths are ``None``."""

    def initialize_location(
        self, checkpoint_id: int, props: CheckpointProperties, target: str | None
    ) -> str | None:
        return target

    def finalize(self, checkpoint: CompletedCheckpoint) -> str | None:
        return None
