"""``pyflink.datastream.time_domain``: ``TimeDomain`` (the job model's own)."""

from __future__ import annotations

from runtime.functions import TimeDomain

__all__ = ["TimeDomain"]
