"""``pyflink.common.types``: ``Row`` and ``RowKind`` (the job model's own: rows travel between
tasks and sit in checkpoints)."""

from __future__ import annotations

from ckptsim.pyflink._unsupported import missing
from runtime.row import Row, RowKind

__getattr__ = missing("pyflink.common.types")

__all__ = ["Row", "RowKind"]
