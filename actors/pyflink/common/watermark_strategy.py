"""``pyflink.common.watermark_strategy``: ``WatermarkStrategy`` and ``TimestampAssigner`` (the
job model's own, ``runtime.watermarks``)."""

from __future__ import annotations

from runtime.watermarks import TimestampAssigner, WatermarkStrategy

__all__ = ["TimestampAssigner", "WatermarkStrategy"]
