"""``pyflink.datastream.timerservice``: ``TimerService`` (the job model's own)."""

from __future__ import annotations

from ckptsim.pyflink._unsupported import missing
from runtime.functions import TimerService

__getattr__ = missing("pyflink.datastream.timerservice")

__all__ = ["TimerService"]
