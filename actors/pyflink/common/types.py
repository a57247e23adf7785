"""``pyflink.common.types``: ``Row`` and ``RowKind`` (the job model's own: rows travel between
tasks and sit in checkpoints)."""

from __future__ import annotations

from runtime.row import Row, RowKind

__all__ = ["Row", "RowKind"]
