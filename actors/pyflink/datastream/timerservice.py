"""``pyflink.datastream.timerservice``: ``TimerService`` (the job model's own)."""

from __future__ import annotations

from runtime.functions import TimerService

__all__ = ["TimerService"]
