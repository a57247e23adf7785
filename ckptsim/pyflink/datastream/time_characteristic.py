"""``pyflink.datastream.time_characteristic``: ``TimeCharacteristic`` (Flink 1.x; Flink 2
uses event time wherever a stream has timestamps: setting it has no effect)."""

from __future__ import annotations

import enum


class TimeCharacteristic(enum.Enum):
    ProcessingTime = 0
    IngestionTime = 1
    EventTime = 2


__all__ = ["TimeCharacteristic"]
