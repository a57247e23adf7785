"""``pyflink.common.watermark_strategy``: ``WatermarkStrategy`` and ``TimestampAssigner`` (the
job model's own, ``runtime.watermarks``); ``Duration``, which PyFlink's module imported,
resolves here too (``_unsupported.missing``)."""

from __future__ import annotations

from ckptsim.pyflink._unsupported import missing
from runtime.watermarks import TimestampAssigner, WatermarkStrategy

__getattr__ = missing("pyflink.common.watermark_strategy")

__all__ = ["TimestampAssigner", "WatermarkStrategy"]
