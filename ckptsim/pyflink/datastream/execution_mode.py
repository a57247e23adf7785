"""``pyflink.datastream.execution_mode``: ``RuntimeExecutionMode`` (``execution.runtime-mode``)."""

from __future__ import annotations

import enum

from ckptsim.pyflink._unsupported import missing


class RuntimeExecutionMode(enum.Enum):
    STREAMING = 0
    BATCH = 1
    AUTOMATIC = 2


__getattr__ = missing("pyflink.datastream.execution_mode")

__all__ = ["RuntimeExecutionMode"]
