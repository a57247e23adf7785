"""``pyflink.common.time``: ``Duration``, ``Instant`` and ``Time``.

``Duration`` and ``Time`` are amounts of milliseconds (``to_milliseconds()``, which every
ckptsim API taking a duration understands; a ``Duration`` is also a ``datetime.timedelta``).
"""

from __future__ import annotations

import datetime
from typing import Any

from ckptsim.pyflink._unsupported import missing


class Duration(datetime.timedelta):
    """A length of time, as Java's ``java.time.Duration`` (``Duration.of_seconds(2)``)."""

    @staticmethod
    def of_days(days: int) -> Duration:
        return Duration(days=days)

    @staticmethod
    def of_hours(hours: int) -> Duration:
        return Duration(hours=hours)

    @staticmethod
    def of_minutes(minutes: int) -> Duration:
        return Duration(minutes=minutes)

    @staticmethod
    def of_seconds(seconds: int) -> Duration:
        return Duration(seconds=seconds)

    @staticmethod
    def of_millis(millis: int) -> Duration:
        return Duration(milliseconds=millis)

    @staticmethod
    def of_nanos(nanos: int) -> Duration:
        return Duration(microseconds=nanos / 1000)

    def to_milliseconds(self) -> int:
        return self // datetime.timedelta(milliseconds=1)

    def to_millis(self) -> int:
        return self.to_milliseconds()

    def __repr__(self) -> str:
        return f"Duration({self.to_milliseconds()} ms)"


class Instant:
    """A point in time: seconds and nanoseconds since the epoch (Java's ``Instant``)."""

    def __init__(self, seconds: int, nanos: int) -> None:
        self.seconds = seconds
        self.nanos = nanos

    def to_epoch_milli(self) -> int:
        return self.seconds * 1000 + self.nanos // 1_000_000

    @staticmethod
    def of_epoch_milli(epoch_milli: int) -> Instant:
        return Instant(epoch_milli // 1000, epoch_milli % 1000 * 1_000_000)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Instant)
            and self.seconds == other.seconds
            and self.nanos == other.nanos
        )

    def __hash__(self) -> int:
        return hash((self.seconds, self.nanos))

    def __repr__(self) -> str:
        return f"Instant<{self.seconds}, {self.nanos}>"


class Time:
    """An interval in milliseconds (PyFlink's ``Time``: ``Time.seconds(5)``)."""

    def __init__(self, milliseconds: int) -> None:
        self._milliseconds = milliseconds

    def to_milliseconds(self) -> int:
        return self._milliseconds

    @staticmethod
    def milliseconds(milliseconds: int) -> Time:
        return Time(milliseconds)

    @staticmethod
    def seconds(seconds: int) -> Time:
        return Time(seconds * 1000)

    @staticmethod
    def minutes(minutes: int) -> Time:
        return Time(minutes * 60_000)

    @staticmethod
    def hours(hours: int) -> Time:
        return Time(hours * 3_600_000)

    @staticmethod
    def days(days: int) -> Time:
        return Time(days * 86_400_000)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Time) and self._milliseconds == other._milliseconds

    def __hash__(self) -> int:
        return hash(self._milliseconds)

    def __str__(self) -> str:
        return f"{self._milliseconds} ms"

    def __repr__(self) -> str:
        return f"Time({self._milliseconds} ms)"


def millis(value: Any) -> int:
    """Milliseconds of a ``Duration``, ``Time``, ``timedelta`` or int."""
    to_ms = getattr(value, "to_milliseconds", None)
    if callable(to_ms):
        return int(to_ms())
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected a Duration, Time or milliseconds, got {value!r}")
    return value


__getattr__ = missing("pyflink.common.time")

__all__ = ["Duration", "Instant", "Time"]
