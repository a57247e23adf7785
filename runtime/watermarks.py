"""Event time: watermark strategies and generators, and the valve that merges the watermarks of
a task's input channels (Flink's ``WatermarkStrategy``, ``WatermarkGenerator`` and
``StatusWatermarkValve``).

A ``WatermarkStrategy`` names how records get their timestamps (a ``TimestampAssigner``) and
how watermarks follow them: ``for_monotonous_timestamps()``, ``for_bounded_out_of_orderness
(ms)``, ``no_watermarks()``, optionally ``with_idleness(ms)``. The operator that applies it
(``DataStream.assign_timestamps_and_watermarks``) asks its generator for a watermark every
``pipeline.auto-watermark-interval`` of processing time and emits it when it advanced.

Between tasks, watermarks travel as events behind the records of each channel. A task's
watermark is the minimum over its active (non-idle) input channels, emitted when it advances;
an idle channel does not hold it back, and when every channel is idle the task is idle too.
The end of a bounded input sends ``MAX_WATERMARK``, which fires every pending event-time timer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Java's Long.MIN_VALUE / MAX_VALUE: no watermark yet, and the end of event time
MIN_WATERMARK = -(1 << 63)
MAX_WATERMARK = (1 << 63) - 1


def millis(value: Any, what: str) -> int:
    """Milliseconds from an int or a time object with ``to_milliseconds()`` (PyFlink's
    ``Duration``/``Time``)."""
    to_ms = getattr(value, "to_milliseconds", None)
    ms = to_ms() if callable(to_ms) else value
    if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
        raise ValueError(f"{what} must be a duration >= 0 (ms, Duration or Time), got {value!r}")
    return ms


class TimestampAssigner:
    """Extracts a record's event timestamp (ms); ``record_timestamp`` is the timestamp it
    already had, ``MIN_WATERMARK`` when none."""

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        raise NotImplementedError


class WatermarkGenerator:
    """Flink's ``WatermarkGenerator``: sees every event, and is asked periodically."""

    def on_event(self, timestamp: int) -> int | None:
        """A watermark to emit at once (punctuated), or None."""
        return None

    def on_periodic_emit(self) -> int | None:
        return None


class BoundedOutOfOrdernessGenerator(WatermarkGenerator):
    """Watermark = the largest timestamp seen - out-of-orderness - 1 (Flink's
    ``BoundedOutOfOrdernessWatermarks``; monotonous timestamps are the case 0)."""

    def __init__(self, out_of_orderness: int) -> None:
        self.out_of_orderness = out_of_orderness
        self.max_timestamp = MIN_WATERMARK + out_of_orderness + 1

    def on_event(self, timestamp: int) -> int | None:
        self.max_timestamp = max(self.max_timestamp, timestamp)
        return None

    def on_periodic_emit(self) -> int | None:
        return self.max_timestamp - self.out_of_orderness - 1


class NoWatermarksGenerator(WatermarkGenerator):
    pass


@dataclass(frozen=True, slots=True)
class WatermarkStrategy:
    """How a stream gets timestamps and watermarks (PyFlink's spelling)."""

    make_generator: Callable[[], WatermarkGenerator]
    assigner: Callable[[Any, int], int] | None = None
    #: processing time without records after which the stream is idle (0: never)
    idleness: int = 0
    #: ``with_watermark_alignment``: (group, max drift ms, update interval ms); a source whose
    #: strategy it is pauses while ahead of its group (FLIP-182, ``runtime.scheduler.alignment``)
    alignment: tuple[str, int, int] | None = None

    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        return WatermarkStrategy(lambda: BoundedOutOfOrdernessGenerator(0))

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: Any) -> WatermarkStrategy:
        bound = millis(max_out_of_orderness, "max_out_of_orderness")
        return WatermarkStrategy(lambda: BoundedOutOfOrdernessGenerator(bound))

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        return WatermarkStrategy(NoWatermarksGenerator)

    @staticmethod
    def for_generator(make_generator: Callable[[], WatermarkGenerator]) -> WatermarkStrategy:
        return WatermarkStrategy(make_generator)

    def with_timestamp_assigner(self, timestamp_assigner: Any) -> WatermarkStrategy:
        """``timestamp_assigner``: a ``TimestampAssigner``, or a function ``(value,
        record_timestamp) -> ms``."""
        extract = getattr(timestamp_assigner, "extract_timestamp", timestamp_assigner)
        if not callable(extract):
            raise TypeError(
                "with_timestamp_assigner() needs a TimestampAssigner or a function, got "
                f"{type(timestamp_assigner).__name__}"
            )
        return WatermarkStrategy(self.make_generator, extract, self.idleness, self.alignment)

    def with_idleness(self, idle_timeout: Any) -> WatermarkStrategy:
        timeout = millis(idle_timeout, "idle_timeout")
        return WatermarkStrategy(self.make_generator, self.assigner, timeout, self.alignment)

    def with_watermark_alignment(
        self,
        watermark_group: str,
        max_allowed_watermark_drift: Any,
        update_interval: Any = None,
    ) -> WatermarkStrategy:
        """Flink's watermark alignment (FLIP-182): sources of ``watermark_group`` more than
        ``max_allowed_watermark_drift`` ahead of the group's minimum watermark pause, checked
        every ``update_interval`` (default 1 s), until the group catches up. Only a source's
        strategy aligns (one assigned right after the source, as ``from_source`` does);
        checkpoints go on while a source is paused."""
        if not isinstance(watermark_group, str):
            raise TypeError(f"watermark_group must be a str, got {watermark_group!r}")
        drift = millis(max_allowed_watermark_drift, "max_allowed_watermark_drift")
        interval = 1000 if update_interval is None else millis(update_interval, "update_interval")
        return WatermarkStrategy(
            self.make_generator, self.assigner, self.idleness, (watermark_group, drift, interval)
        )


class StatusWatermarkValve:
    """Merges the watermarks and idleness of a task's input channels (Flink's
    ``StatusWatermarkValve``): returns what the task emits, when anything changes."""

    def __init__(self, num_channels: int) -> None:
        self.watermarks = [MIN_WATERMARK] * num_channels
        self.idle = [False] * num_channels
        #: a channel counts once its watermark caught up with the last one emitted
        self.aligned = [True] * num_channels
        self.last_output = MIN_WATERMARK
        self.output_idle = False

    def input_watermark(self, channel: int, watermark: int) -> int | None:
        """A watermark arrived on ``channel``; returns the new combined watermark, if any."""
        if self.idle[channel] or watermark <= self.watermarks[channel]:
            return None
        self.watermarks[channel] = watermark
        if not self.aligned[channel] and watermark >= self.last_output:
            self.aligned[channel] = True
        return self._min_of_aligned()

    def input_idle(self, channel: int, idle: bool) -> tuple[int | None, bool | None]:
        """A channel went idle (or active again). Returns ``(watermark, status)``: a combined
        watermark to emit and the task's new idleness, each None when unchanged."""
        if idle == self.idle[channel]:
            return None, None
        self.idle[channel] = idle
        watermark: int | None = None
        if idle:
            self.aligned[channel] = False
            if all(self.idle):
                # every input idle: the largest watermark seen goes out (Flink 1.15+)
                top = max(self.watermarks)
                if top > self.last_output:
                    self.last_output = watermark = top
            else:
                watermark = self._min_of_aligned()
        else:
            self.aligned[channel] = self.watermarks[channel] >= self.last_output
        status = all(self.idle)
        if status == self.output_idle:
            return watermark, None
        self.output_idle = status
        return watermark, status

    def _min_of_aligned(self) -> int | None:
        candidates = [
            w
            for w, a, i in zip(self.watermarks, self.aligned, self.idle, strict=True)
            if a and not i
        ]
        if not candidates:
            return None
        low = min(candidates)
        if low > self.last_output:
            self.last_output = low
            return low
        return None
