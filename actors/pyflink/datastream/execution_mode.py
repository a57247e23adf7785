"""``pyflink.datastream.execution_mode``: ``RuntimeExecutionMode`` (``execution.runtime-mode``)."""

from __future__ import annotations

import enum


class RuntimeExecutionMode(enum.Enum):
    STREAMING = 0
    BATCH = 1
    AUTOMATIC = 2


__all__ = ["RuntimeExecutionMode"]
