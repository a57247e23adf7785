"""``pyflink.datastream.checkpointing_mode``: ``CheckpointingMode`` (the job model's own:
``execution.checkpointing.mode``)."""

from __future__ import annotations

from runtime.config import CheckpointingMode

__all__ = ["CheckpointingMode"]
