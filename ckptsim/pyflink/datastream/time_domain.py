"""``pyflink.datastream.time_domain``: ``TimeDomain`` (the job model's own)."""

from __future__ import annotations

from ckptsim.pyflink._unsupported import missing
from runtime.functions import TimeDomain

__getattr__ = missing("pyflink.datastream.time_domain")

__all__ = ["TimeDomain"]
