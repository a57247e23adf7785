"""Watermark alignment on the JobMaster's side (Flink's FLIP-182, the ``SourceCoordinator``'s
part): the source tasks of an alignment group report the watermark they last emitted; every
update interval the group's minimum is computed and each of its running sources is told the
largest watermark it may have emitted and still go on (minimum + its allowed drift). A source
above it pauses (``runtime.task.StreamTaskCore``) until a later announcement lets it go on.

Pure: ``report`` and ``tick`` return effects; the scheduler owns it and starts it afresh with
every attempt (a restored source reports anew, as Flink's coordinator forgets a subtask that
is reset).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from runtime.checkpoint import TaskId
from runtime.effects import ScheduleTimer, Send
from runtime.messages import ReportedWatermark, WatermarkAlignment
from runtime.watermarks import MAX_WATERMARK

AlignmentEffect = Send | ScheduleTimer


@dataclass(frozen=True, slots=True)
class AnnounceCombinedWatermark:
    """Timer key: the ``group``'s combined watermark is due to be announced (``attempt``'s)."""

    group: str
    attempt: int


@dataclass(slots=True)
class _Source:
    group: str
    watermark: int
    max_drift: int


class WatermarkAlignmentCoordinator:
    def __init__(self, attempt: int = 0) -> None:
        self.attempt = attempt
        self._sources: dict[TaskId, _Source] = {}
        #: per group, the update interval its announcements run at (the smallest reported)
        self._intervals: dict[str, int] = {}
        #: groups whose announcement timer runs
        self._ticking: set[str] = set()

    def report(self, msg: ReportedWatermark, now: int) -> list[AlignmentEffect]:
        """A source's watermark; the group's first report starts its announcements."""
        if msg.attempt != self.attempt:
            return []  # an earlier attempt's source
        self._sources[msg.task] = _Source(msg.group, msg.watermark, msg.max_drift)
        interval = max(1, msg.update_interval)
        self._intervals[msg.group] = min(self._intervals.get(msg.group, interval), interval)
        if msg.group in self._ticking:
            return []
        self._ticking.add(msg.group)
        return [ScheduleTimer(key=AnnounceCombinedWatermark(msg.group, self.attempt), due=now)]

    def combined(self, group: str) -> int | None:
        """The group's combined watermark: the minimum its sources reported (None: none did)."""
        marks = [s.watermark for s in self._sources.values() if s.group == group]
        return min(marks) if marks else None

    def tick(
        self, key: AnnounceCombinedWatermark, now: int, running: Callable[[TaskId], bool]
    ) -> list[AlignmentEffect]:
        """Announce ``key.group``'s maximum watermark to its sources that still run, and
        schedule the next announcement (none once every source of the group ended)."""
        group = key.group
        if key.attempt != self.attempt or group not in self._ticking:
            return []
        combined = self.combined(group)
        if combined is None or combined == MAX_WATERMARK:
            self._ticking.discard(group)
            return []
        out: list[AlignmentEffect] = []
        for task, source in self._sources.items():
            if source.group == group and running(task):
                allowed = min(MAX_WATERMARK, combined + source.max_drift)
                out.append(Send(to=task, message=WatermarkAlignment(max_watermark=allowed)))
        out.append(ScheduleTimer(key=key, due=now + self._intervals[group]))
        return out

    def stop(self) -> None:
        """The job no longer runs: no more announcements."""
        self._ticking.clear()
