"""Event time: watermark generators, the valve over input channels, and the operator that
assigns timestamps and emits watermarks periodically."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from runtime.operators import OperatorContext, TaskTime, TimestampsAndWatermarksOperator
from runtime.state import key_group_range
from runtime.watermarks import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    BoundedOutOfOrdernessGenerator,
    StatusWatermarkValve,
    WatermarkGenerator,
    WatermarkStrategy,
)


def test_bounded_out_of_orderness_is_the_largest_timestamp_minus_the_bound_minus_one() -> None:
    gen = BoundedOutOfOrdernessGenerator(2000)
    assert gen.on_periodic_emit() == MIN_WATERMARK  # nothing seen yet
    for ts in (1000, 4000, 3000):
        gen.on_event(ts)
    assert gen.on_periodic_emit() == 4000 - 2000 - 1


@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 100)), max_size=40),
)
def test_the_valve_emits_the_minimum_over_channels_and_never_goes_back(
    arrivals: list[tuple[int, int]],
) -> None:
    """The combined watermark is the minimum of the channels' latest watermarks; it is
    emitted only when it advances."""
    valve = StatusWatermarkValve(3)
    latest = [MIN_WATERMARK] * 3
    emitted: list[int] = []
    for channel, wm in arrivals:
        latest[channel] = max(latest[channel], wm)
        out = valve.input_watermark(channel, wm)
        if out is not None:
            emitted.append(out)
            assert out == min(latest)
    assert emitted == sorted(set(emitted))
    if min(latest) > MIN_WATERMARK:
        assert emitted and emitted[-1] == min(latest)


def test_an_idle_channel_does_not_hold_the_watermark_back_and_realigns_when_active() -> None:
    valve = StatusWatermarkValve(2)
    assert valve.input_watermark(0, 10) is None  # channel 1 has none yet
    assert valve.input_idle(1, True) == (10, None)  # channel 1 idle: channel 0 alone counts
    assert valve.input_watermark(0, 20) == 20
    assert valve.input_idle(1, False) == (None, None)  # active again, but behind: not aligned
    assert valve.input_watermark(1, 5) is None
    assert valve.input_watermark(0, 30) == 30  # only channel 0 is aligned
    assert valve.input_watermark(1, 40) is None  # caught up: aligned again
    assert valve.input_watermark(0, 50) == 40


def test_when_every_channel_is_idle_the_task_is_idle_with_the_largest_watermark() -> None:
    valve = StatusWatermarkValve(2)
    valve.input_watermark(0, 10)
    valve.input_watermark(1, 30)
    assert valve.input_idle(0, True) == (30, None)
    assert valve.input_idle(1, True) == (None, True)
    assert valve.input_idle(0, False) == (None, False)


def make_operator(strategy: WatermarkStrategy, time: TaskTime) -> TimestampsAndWatermarksOperator:
    op = TimestampsAndWatermarksOperator("ts-2", "Timestamps", strategy)
    op.open(
        OperatorContext(
            subtask=0,
            parallelism=1,
            max_parallelism=128,
            key_groups=key_group_range(0, 1, 128),
            time=time,
            auto_watermark_interval=200,
        )
    )
    return op


def test_timestamps_are_assigned_and_watermarks_emitted_every_interval_when_they_advance() -> None:
    time = TaskTime(epoch=1_000_000)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(100).with_timestamp_assigner(
        lambda value, previous: value * 10
    )
    op = make_operator(strategy, time)
    records, stamps = op.process_timestamped([5, 3, 9], [None, None, None])
    assert list(records) == [5, 3, 9] and list(stamps) == [50, 30, 90]
    assert op.next_processing_time() == 1_000_200
    time.set_now(100)
    assert op.on_processing_time(time.processing) == (([], []), None)  # not due yet
    time.set_now(200)
    assert op.on_processing_time(time.processing) == (([], []), 90 - 100 - 1)
    assert op.next_processing_time() == 1_000_400
    time.set_now(400)
    assert op.on_processing_time(time.processing) == (([], []), None)  # did not advance
    # upstream watermarks stop here, but the end of event time goes through
    assert op.process_watermark(500) == (([], []), None)
    assert op.process_watermark(MAX_WATERMARK) == (([], []), MAX_WATERMARK)
    assert op.next_processing_time() is None


def test_no_watermarks_still_hands_on_the_end_of_event_time() -> None:
    time = TaskTime()
    op = make_operator(WatermarkStrategy.no_watermarks(), time)
    op.process_timestamped([1], [7])
    time.set_now(1000)
    assert op.on_processing_time(time.processing) == (([], []), None)
    assert op.process_watermark(MAX_WATERMARK)[1] == MAX_WATERMARK


def test_a_punctuated_watermark_goes_out_with_the_next_periodic_emission() -> None:
    class EveryTenth(WatermarkGenerator):
        def on_event(self, timestamp: int) -> int | None:
            return timestamp if timestamp % 10 == 0 else None

    time = TaskTime()
    op = make_operator(
        WatermarkStrategy.for_generator(EveryTenth).with_timestamp_assigner(lambda v, _: v), time
    )
    op.process_timestamped([3, 20, 27], [None, None, None])
    time.set_now(200)
    assert op.on_processing_time(time.processing) == (([], []), 20)
