"""``pyflink.datastream.checkpointing_mode``: ``CheckpointingMode`` (the job model's own:
``execution.checkpointing.mode``)."""

from __future__ import annotations

from ckptsim.pyflink._unsupported import missing
from runtime.config import CheckpointingMode

__getattr__ = missing("pyflink.datastream.checkpointing_mode")

__all__ = ["CheckpointingMode"]
