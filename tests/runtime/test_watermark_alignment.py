"""The JobMaster's side of watermark alignment (``runtime.scheduler.alignment``), on its own:
what a group's sources are told, when, and that an earlier attempt's reports and timers
count for nothing."""

from __future__ import annotations

from collections.abc import Sequence

from runtime.checkpoint import TaskId
from runtime.effects import ScheduleTimer, Send
from runtime.messages import ReportedWatermark, WatermarkAlignment
from runtime.scheduler.alignment import AnnounceCombinedWatermark, WatermarkAlignmentCoordinator
from runtime.watermarks import MAX_WATERMARK

A, B, C = TaskId("a", 0), TaskId("b", 0), TaskId("c", 0)


def report(
    task: TaskId, watermark: int, *, group: str = "g", drift: int = 100
) -> ReportedWatermark:
    return ReportedWatermark(
        task=task, attempt=0, group=group, watermark=watermark, max_drift=drift, update_interval=50
    )


def told(effects: Sequence[object]) -> dict[TaskId, int]:
    return {
        e.to: e.message.max_watermark
        for e in effects
        if isinstance(e, Send)
        and isinstance(e.to, TaskId)
        and isinstance(e.message, WatermarkAlignment)
    }


def test_every_source_of_the_group_hears_the_minimum_plus_its_drift_every_interval() -> None:
    coordinator = WatermarkAlignmentCoordinator()
    first = coordinator.report(report(A, 1000), 10)
    assert first == [ScheduleTimer(key=AnnounceCombinedWatermark("g", 0), due=10)]
    assert coordinator.report(report(B, 400, drift=300), 12) == []  # the timer runs already
    coordinator.report(report(C, 0, group="other"), 12)  # another group counts not
    effects = coordinator.tick(AnnounceCombinedWatermark("g", 0), 10, lambda t: True)
    assert told(effects) == {A: 500, B: 700}
    assert ScheduleTimer(key=AnnounceCombinedWatermark("g", 0), due=60) in effects
    # a source that ended reports the end of event time: it no longer holds the group back
    coordinator.report(report(B, MAX_WATERMARK, drift=300), 55)
    assert told(coordinator.tick(AnnounceCombinedWatermark("g", 0), 60, lambda t: t != B)) == {
        A: 1100
    }
    # once every source of the group ended, the announcements stop
    coordinator.report(report(A, MAX_WATERMARK), 70)
    assert coordinator.tick(AnnounceCombinedWatermark("g", 0), 110, lambda t: True) == []


def test_an_earlier_attempt_s_reports_and_timers_count_for_nothing() -> None:
    coordinator = WatermarkAlignmentCoordinator(attempt=1)
    assert coordinator.report(report(A, 1000), 0) == []  # attempt 0's
    assert coordinator.combined("g") is None
    assert coordinator.tick(AnnounceCombinedWatermark("g", 0), 0, lambda t: True) == []
