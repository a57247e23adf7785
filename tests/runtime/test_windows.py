"""Windows without threads: windows, assigners, triggers, the merging window set, and the
``WindowOperator`` driven directly (elements, watermarks, processing time, snapshots)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest

from runtime import serde
from runtime.datastream import StreamEnvironment
from runtime.descriptors import WindowDescriptor
from runtime.functions import AggregateFunction, ProcessWindowFunction, WindowFunction
from runtime.graph import GraphError
from runtime.operators import OperatorContext, TaskTime
from runtime.state import KeyedStateBackend, ReducingState, ValueStateDescriptor, key_group_range
from runtime.watermarks import MAX_WATERMARK, MIN_WATERMARK
from runtime.windows import (
    ContinuousEventTimeTrigger,
    CountSlidingWindowAssigner,
    CountTrigger,
    CountTumblingWindowAssigner,
    CountWindow,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindow,
    GlobalWindows,
    MergingWindowAssigner,
    MergingWindowSet,
    ProcessingTimeSessionWindows,
    ProcessingTimeTrigger,
    PurgingTrigger,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TimeWindow,
    Trigger,
    TriggerResult,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    Window,
    WindowAssigner,
    WindowOperator,
    window_of,
)


class Ms:
    """PyFlink's ``Time``/``Duration``: anything with ``to_milliseconds()``."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def to_milliseconds(self) -> int:
        return self.ms


class Clock(WindowAssigner.WindowAssignerContext):
    def __init__(self, now: int = 0) -> None:
        self.now = now

    def get_current_processing_time(self) -> int:
        return self.now


def tw(start: int, end: int) -> TimeWindow:
    return TimeWindow(start, end)


# --- windows and assigners ----------------------------------------------------------------------


def test_a_time_window_is_start_inclusive_end_exclusive_and_equal_by_its_bounds() -> None:
    w = tw(0, 5)
    assert w.max_timestamp() == 4
    assert w == tw(0, 5) and hash(w) == hash(tw(0, 5)) and w != tw(0, 6) and w != (0, 5)
    assert w.intersects(tw(5, 9)) and w.intersects(tw(-3, 0)) and not w.intersects(tw(6, 9))
    assert w.cover(tw(3, 9)) == tw(0, 9)
    assert repr(w) == "TimeWindow(start=0, end=5)"
    assert sorted([tw(3, 4), tw(1, 9), tw(1, 2)]) == [tw(1, 2), tw(1, 9), tw(3, 4)]


@pytest.mark.parametrize(
    ("timestamp", "offset", "size", "start"),
    [(7, 0, 5, 5), (5, 0, 5, 5), (4, 0, 5, 0), (-1, 0, 5, -5), (-5, 0, 5, -5), (7, 2, 5, 7),
     (6, 2, 5, 2), (1, -1, 5, -1), (3_600_000 * 25 + 7, -3_600_000 * 8, 86_400_000, 57_600_000)],
)  # fmt: skip
def test_window_starts_align_to_the_epoch_plus_offset_as_flink_s(
    timestamp: int, offset: int, size: int, start: int
) -> None:
    assert TimeWindow.get_window_start_with_offset(timestamp, offset, size) == start


def test_tumbling_and_sliding_event_time_windows_of_a_timestamp() -> None:
    ctx = Clock()
    assert TumblingEventTimeWindows.of(Ms(5)).assign_windows("x", 7, ctx) == [tw(5, 10)]
    assert TumblingEventTimeWindows.of(5, Ms(2)).assign_windows("x", 6, ctx) == [tw(2, 7)]
    # a record is in size / slide windows, latest start first (as Flink lists them)
    sliding = SlidingEventTimeWindows.of(Ms(5), Ms(2))
    assert sliding.assign_windows("x", 1, ctx) == [tw(0, 5), tw(-2, 3)]
    assert sliding.assign_windows("x", 4, ctx) == [tw(4, 9), tw(2, 7), tw(0, 5)]
    assert SlidingEventTimeWindows.of(10, 5, 3).assign_windows("x", 3, ctx) == [
        tw(3, 13),
        tw(-2, 8),
    ]
    assert TumblingEventTimeWindows.of(5).is_event_time()
    assert isinstance(TumblingEventTimeWindows.of(5).get_default_trigger(), EventTimeTrigger)


def test_event_time_windows_refuse_a_record_without_timestamp() -> None:
    for assigner in (
        TumblingEventTimeWindows.of(5),
        SlidingEventTimeWindows.of(5, 1),
        EventTimeSessionWindows.with_gap(5),
    ):
        with pytest.raises(RuntimeError, match="assign_timestamps_and_watermarks"):
            assigner.assign_windows("x", MIN_WATERMARK, Clock())


def test_processing_time_windows_use_the_current_processing_time() -> None:
    ctx = Clock(now=12)
    assert TumblingProcessingTimeWindows.of(5).assign_windows("x", 999, ctx) == [tw(10, 15)]
    assert SlidingProcessingTimeWindows.of(10, 5).assign_windows("x", 0, ctx) == [
        tw(10, 20),
        tw(5, 15),
    ]
    assert ProcessingTimeSessionWindows.with_gap(3).assign_windows("x", 0, ctx) == [tw(12, 15)]
    assert not TumblingProcessingTimeWindows.of(5).is_event_time()
    assert isinstance(
        ProcessingTimeSessionWindows.with_gap(3).get_default_trigger(), ProcessingTimeTrigger
    )


def test_assigner_parameters_are_checked_as_flink_checks_them() -> None:
    with pytest.raises(ValueError, match="abs\\(offset\\) < size"):
        TumblingEventTimeWindows.of(5, 5)
    with pytest.raises(ValueError, match="abs\\(offset\\) < slide"):
        SlidingEventTimeWindows.of(10, 5, -5)
    with pytest.raises(ValueError, match="0 < gap"):
        EventTimeSessionWindows.with_gap(0)
    with pytest.raises(ValueError, match="duration"):
        TumblingEventTimeWindows.of("5 s")
    with pytest.raises(ValueError, match=">= 1"):
        CountTumblingWindowAssigner.of(0)


class GapOfSecondField(SessionWindowTimeGapExtractor):
    def extract(self, element: Any) -> int:
        return int(element[1])


def test_sessions_start_a_window_of_their_gap_and_dynamic_gaps_come_from_the_element() -> None:
    ctx = Clock()
    assert EventTimeSessionWindows.with_gap(Ms(5)).assign_windows(("a", 3), 3, ctx) == [tw(3, 8)]
    dynamic = EventTimeSessionWindows.with_dynamic_gap(GapOfSecondField())
    assert dynamic.assign_windows(("a", 4), 10, ctx) == [tw(10, 14)]
    plain = EventTimeSessionWindows.with_dynamic_gap(lambda e: e * 2)
    assert plain.assign_windows(3, 10, ctx) == [tw(10, 16)]
    with pytest.raises(ValueError, match="0 < gap"):
        dynamic.assign_windows(("a", 0), 10, ctx)


class Merges(MergingWindowAssigner.MergeCallback):
    def __init__(self) -> None:
        self.merges: list[tuple[set[Any], Any]] = []

    def merge(self, to_be_merged: Any, merge_result: Any) -> None:
        self.merges.append((set(to_be_merged), merge_result))


def test_overlapping_and_touching_time_windows_merge_into_their_cover() -> None:
    callback = Merges()
    TimeWindow.merge_windows([tw(8, 10), tw(0, 3), tw(2, 5), tw(12, 13), tw(5, 6)], callback)
    # [0,3) [2,5) [5,6) overlap or touch; [8,10) and [12,13) stand alone (no callback)
    assert callback.merges == [({tw(0, 3), tw(2, 5), tw(5, 6)}, tw(0, 6))]


def test_windows_are_data_in_state_and_timers() -> None:
    for window in (tw(-5, 10), CountWindow(7), GlobalWindow.get()):
        namespace = window.namespace()
        assert serde.loads(serde.dumps(namespace)) == namespace
        assert window_of(namespace) == window
    assert GlobalWindow.get().max_timestamp() == MAX_WATERMARK


class FakeRuntime:
    def __init__(self) -> None:
        self.backend = KeyedStateBackend()

    def get_state(self, descriptor: Any) -> Any:
        return self.backend.state(descriptor)


class CountingContext(WindowAssigner.WindowAssignerContext):
    def __init__(self, runtime: FakeRuntime) -> None:
        self.runtime = runtime

    def get_runtime_context(self) -> Any:
        return self.runtime


def test_count_windows_number_a_key_s_records_as_pyflink_s() -> None:
    runtime = FakeRuntime()
    runtime.backend.current_key = "k"
    ctx = CountingContext(runtime)
    tumbling = CountTumblingWindowAssigner.of(2)
    assert [tumbling.assign_windows(n, 0, ctx) for n in range(5)] == [
        [CountWindow(0)],
        [CountWindow(0)],
        [CountWindow(1)],
        [CountWindow(1)],
        [CountWindow(2)],
    ]
    sliding = CountSlidingWindowAssigner.of(4, 2)
    runtime.backend.current_key = "other"  # a count per key
    assert [[w.id for w in sliding.assign_windows(n, 0, ctx)] for n in range(6)] == [
        [0],
        [0],
        [1, 0],
        [1, 0],
        [2, 1],
        [2, 1],
    ]


# --- triggers ------------------------------------------------------------------------------------


class FakeTriggerContext(Trigger.OnMergeContext):
    def __init__(self, watermark: int = MIN_WATERMARK, now: int = 0) -> None:
        self.watermark = watermark
        self.now = now
        self.timers: set[tuple[str, int]] = set()
        self.backend = KeyedStateBackend()
        self.backend.current_key = "k"
        self.backend.current_namespace = (0, 5)

    def get_current_processing_time(self) -> int:
        return self.now

    def get_current_watermark(self) -> int:
        return self.watermark

    def register_event_time_timer(self, time: int) -> None:
        self.timers.add(("event", time))

    def register_processing_time_timer(self, time: int) -> None:
        self.timers.add(("processing", time))

    def delete_event_time_timer(self, time: int) -> None:
        self.timers.discard(("event", time))

    def delete_processing_time_timer(self, time: int) -> None:
        self.timers.discard(("processing", time))

    def get_partitioned_state(self, state_descriptor: Any) -> Any:
        return self.backend.state(state_descriptor, namespaced=True)


def test_the_event_time_trigger_waits_for_the_watermark_then_fires_at_the_window_s_end() -> None:
    trigger, ctx = EventTimeTrigger.create(), FakeTriggerContext(watermark=3)
    assert trigger.on_element("x", 2, tw(0, 5), ctx) is TriggerResult.CONTINUE
    assert ctx.timers == {("event", 4)}
    assert trigger.on_event_time(3, tw(0, 5), ctx) is TriggerResult.CONTINUE
    assert trigger.on_event_time(4, tw(0, 5), ctx) is TriggerResult.FIRE
    ctx.watermark = 4  # a late element of a window still kept: fire at once
    assert trigger.on_element("x", 1, tw(0, 5), ctx) is TriggerResult.FIRE
    trigger.clear(tw(0, 5), ctx)
    assert ctx.timers == set()


def test_the_processing_time_trigger_fires_on_its_timer() -> None:
    trigger, ctx = ProcessingTimeTrigger.create(), FakeTriggerContext(now=1)
    assert trigger.on_element("x", 0, tw(0, 5), ctx) is TriggerResult.CONTINUE
    assert ctx.timers == {("processing", 4)}
    assert trigger.on_processing_time(4, tw(0, 5), ctx) is TriggerResult.FIRE
    assert trigger.on_event_time(4, tw(0, 5), ctx) is TriggerResult.CONTINUE


def test_the_count_trigger_counts_in_window_state_and_purging_makes_a_fire_purge() -> None:
    ctx = FakeTriggerContext()
    count = CountTrigger.of(2)
    results = [count.on_element(n, 0, GlobalWindow.get(), ctx) for n in range(4)]
    assert results == [TriggerResult.CONTINUE, TriggerResult.FIRE] * 2
    purging = PurgingTrigger.of(CountTrigger.of(2))
    results = [purging.on_element(n, 0, GlobalWindow.get(), ctx) for n in range(2)]
    assert results == [TriggerResult.CONTINUE, TriggerResult.FIRE_AND_PURGE]
    assert TriggerResult.FIRE_AND_PURGE.is_fire() and TriggerResult.PURGE.is_purge()
    assert not TriggerResult.FIRE.is_purge() and not TriggerResult.CONTINUE.is_fire()


def test_a_continuous_event_time_trigger_fires_every_interval_within_the_window() -> None:
    trigger, ctx = ContinuousEventTimeTrigger.of(Ms(10)), FakeTriggerContext()
    window = tw(0, 35)
    assert trigger.on_element("x", 3, window, ctx) is TriggerResult.CONTINUE
    assert ctx.timers == {("event", 34), ("event", 10)}
    assert trigger.on_event_time(10, window, ctx) is TriggerResult.FIRE
    assert ("event", 20) in ctx.timers
    assert trigger.on_event_time(34, window, ctx) is TriggerResult.FIRE


# --- the merging window set ------------------------------------------------------------------------


class RecordedMerges:
    def __init__(self) -> None:
        self.calls: list[tuple[Window, set[Window], Window, list[Window]]] = []

    def __call__(
        self, result: Window, merged: Any, state_window: Window, merged_state: list[Window]
    ) -> None:
        self.calls.append((result, set(merged), state_window, list(merged_state)))


def merging_set(backend: KeyedStateBackend) -> MergingWindowSet:
    assigner = EventTimeSessionWindows.with_gap(3)
    return MergingWindowSet(assigner, backend.state(ValueStateDescriptor("merging-window-set")))


def test_a_merging_set_maps_merged_windows_to_one_state_window_and_persists_per_key() -> None:
    backend = KeyedStateBackend()
    backend.current_key = "k"
    windows = merging_set(backend)
    merges = RecordedMerges()
    assert windows.add_window(tw(0, 3), merges) == tw(0, 3)
    assert windows.add_window(tw(10, 13), merges) == tw(10, 13)
    assert not merges.calls
    assert windows.get_state_window(tw(0, 3)) == tw(0, 3)
    # [2, 5) merges with [0, 3): the result keeps [0, 3)'s state window
    assert windows.add_window(tw(2, 5), merges) == tw(0, 5)
    assert merges.calls == [(tw(0, 5), {tw(0, 3)}, tw(0, 3), [])]
    assert windows.get_state_window(tw(0, 5)) == tw(0, 3)
    assert windows.get_state_window(tw(0, 3)) is None
    # [4, 11) bridges both: one state window stays, the other's state merges into it
    assert windows.add_window(tw(4, 11), merges) == tw(0, 13)
    result, merged, kept, merged_away = merges.calls[-1]
    assert (result, merged) == (tw(0, 13), {tw(0, 5), tw(10, 13)})
    assert {kept, *merged_away} == {tw(0, 3), tw(10, 13)} and len(merged_away) == 1
    windows.persist()
    again = merging_set(backend)
    assert again.get_state_window(tw(0, 13)) == kept
    backend.current_key = "another key"
    assert merging_set(backend).get_state_window(tw(0, 13)) is None
    backend.current_key = "k"
    again.retire_window(tw(0, 13))
    again.persist()
    assert merging_set(backend).mapping == {}
    with pytest.raises(RuntimeError, match="not in the in-flight window set"):
        again.retire_window(tw(0, 13))


# --- the window operator -----------------------------------------------------------------------------


def op_ctx(now: int = 0) -> OperatorContext:
    time = TaskTime()
    time.processing = now
    return OperatorContext(
        subtask=0,
        parallelism=1,
        max_parallelism=128,
        key_groups=key_group_range(0, 1, 128),
        time=time,
    )


class Summary(ProcessWindowFunction):
    """(key, start, end, sorted values) per firing; counts its calls of clear()."""

    cleared: list[Any] = []

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        w = context.window()
        yield (key, w.start, w.end, sorted(v for _, v in elements))

    def clear(self, context: Any) -> None:
        Summary.cleared.append(context.window())


def window_op(
    assigner: WindowAssigner,
    *,
    trigger: Trigger | None = None,
    lateness: int = 0,
    contents: str = "list",
    incremental: Any = None,
    function: Any = None,
    kind: str | None = "process",
    now: int = 0,
) -> WindowOperator:
    op = WindowOperator(
        "window-2",
        "W",
        lambda r: r[0],
        assigner=assigner,
        trigger=trigger or assigner.get_default_trigger(),
        allowed_lateness=lateness,
        contents=contents,
        incremental=incremental,
        function=Summary() if function is None and kind == "process" else function,
        function_kind=kind,
    )
    op.open(op_ctx(now))
    return op


def feed(op: WindowOperator, *records: tuple[Any, int | None]) -> list[tuple[Any, int | None]]:
    """``(record, timestamp)`` pairs in; ``(output, timestamp)`` pairs out."""
    recs = [r for r, _ in records]
    out, stamps = op.process_timestamped(recs, [t for _, t in records])
    return list(zip(out, stamps, strict=True))


def watermark(op: WindowOperator, wm: int) -> list[tuple[Any, int | None]]:
    (out, stamps), passed = op.process_watermark(wm)
    assert passed == wm
    return list(zip(out, stamps, strict=True))


def test_tumbling_event_time_windows_fire_when_the_watermark_passes_their_end() -> None:
    op = window_op(TumblingEventTimeWindows.of(5))
    assert feed(op, (("a", 1), 1), (("b", 2), 2), (("a", 3), 4), (("a", 7), 7)) == []
    assert watermark(op, 3) == []
    # outputs carry the window's max timestamp
    assert watermark(op, 4) == [(("a", 0, 5, [1, 3]), 4), (("b", 0, 5, [2]), 4)]
    assert watermark(op, MAX_WATERMARK) == [(("a", 5, 10, [7]), 9)]
    assert len(op.backend) == 0 and len(op.timers().event_time) == 0  # all cleaned up


def test_late_records_are_dropped_unless_allowed_lateness_keeps_their_window() -> None:
    strict = window_op(TumblingEventTimeWindows.of(5))
    feed(strict, (("a", 1), 1))
    assert watermark(strict, 10) == [(("a", 0, 5, [1]), 4)]
    assert feed(strict, (("a", 2), 2)) == [] and strict.num_late_records_dropped == 1

    lenient = window_op(TumblingEventTimeWindows.of(5), lateness=3)
    feed(lenient, (("a", 1), 1))
    assert watermark(lenient, 5) == [(("a", 0, 5, [1]), 4)]
    # late, but within the lateness: the window fires again at once, with everything
    assert feed(lenient, (("a", 2), 2)) == [(("a", 0, 5, [1, 2]), 4)]
    assert lenient.num_late_records_dropped == 0
    assert watermark(lenient, 7) == []  # the cleanup timer at 4 + 3 clears the window
    assert len(lenient.backend) == 0
    assert feed(lenient, (("a", 3), 3)) == [] and lenient.num_late_records_dropped == 1


def test_sliding_windows_fire_each_window_of_a_record() -> None:
    op = window_op(SlidingEventTimeWindows.of(4, 2))
    feed(op, (("a", 1), 1), (("a", 2), 2), (("a", 5), 5))
    assert watermark(op, MAX_WATERMARK) == [
        (("a", -2, 2, [1]), 1),
        (("a", 0, 4, [1, 2]), 3),
        (("a", 2, 6, [2, 5]), 5),
        (("a", 4, 8, [5]), 7),
    ]


class Add(AggregateFunction):
    def create_accumulator(self) -> Any:
        return [0, 0]

    def add(self, value: Any, accumulator: Any) -> Any:
        return [accumulator[0] + 1, accumulator[1] + value[1]]

    def get_result(self, accumulator: Any) -> Any:
        return tuple(accumulator)

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        return [acc_a[0] + acc_b[0], acc_a[1] + acc_b[1]]


class WithWindow(WindowFunction):
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        return [(key, window.start, *inputs)]


def test_reduce_and_aggregate_keep_one_value_per_window() -> None:
    reduced = window_op(
        TumblingEventTimeWindows.of(10),
        contents="reduce",
        incremental=lambda a, b: (a[0], a[1] + b[1]),
        kind=None,
    )
    feed(reduced, *[(("a", v), v) for v in range(5)])
    table = reduced.backend.table("window-contents", "reducing")
    assert list(table.values()) == [("a", 10)]
    assert watermark(reduced, 9) == [(("a", 10), 9)]

    aggregated = window_op(
        TumblingEventTimeWindows.of(10),
        contents="aggregate",
        incremental=Add(),
        function=WithWindow(),
        kind="apply",
    )
    feed(aggregated, *[(("a", v), v) for v in range(5)], (("b", 1), 12))
    assert watermark(aggregated, MAX_WATERMARK) == [(("a", 0, (5, 10)), 9), (("b", 10, (1, 1)), 19)]


def test_session_windows_merge_their_state_and_timers() -> None:
    op = window_op(EventTimeSessionWindows.with_gap(3))
    feed(op, (("a", 1), 1), (("a", 10), 10))
    timers = op.timers().event_time
    assert len(timers) == 2  # one per session (trigger and cleanup timer coincide)
    feed(op, (("a", 3), 3))  # [3, 6) merges into [1, 6)
    assert len(timers) == 2
    assert timers.peek() is not None and timers.peek().timestamp == 5  # type: ignore[union-attr]
    feed(op, (("a", 6), 6))  # [6, 9) touches [1, 6): one session [1, 9)
    feed(op, (("a", 8), 8))  # [8, 11) bridges to [10, 13): [1, 13)
    assert len(timers) == 1
    assert len(op.backend.table("window-contents", "list")) == 1  # one state window left
    assert watermark(op, MAX_WATERMARK) == [(("a", 1, 13, [1, 3, 6, 8, 10]), 12)]
    assert len(op.backend) == 0


def test_session_aggregates_merge_their_accumulators() -> None:
    op = window_op(
        EventTimeSessionWindows.with_gap(3), contents="aggregate", incremental=Add(), kind=None
    )
    feed(op, (("a", 1), 1), (("a", 5), 5), (("a", 10), 10), (("a", 3), 3))
    assert watermark(op, MAX_WATERMARK) == [((3, 9), 7), ((1, 10), 12)]


def test_processing_time_windows_fire_once_processing_time_passed_their_end() -> None:
    op = window_op(TumblingProcessingTimeWindows.of(10), now=3)
    feed(op, (("a", 1), None))
    assert op.next_processing_time() == 10  # the timer at 9 fires after 9, as Flink's
    (out, stamps), _ = op.on_processing_time(9)
    assert out == []
    # a record at 9 still belongs to [0, 10)
    assert op.ctx is not None
    op.ctx.time.processing = 9
    feed(op, (("a", 2), None))
    op.ctx.time.processing = 10
    (out, stamps), _ = op.on_processing_time(10)
    assert list(zip(out, stamps, strict=True)) == [(("a", 0, 10, [1, 2]), 9)]
    assert op.next_processing_time() is None and len(op.backend) == 0


def test_processing_time_sessions_merge_and_fire_after_the_gap() -> None:
    op = window_op(ProcessingTimeSessionWindows.with_gap(5), now=0)
    assert op.ctx is not None
    for now, value in ((0, 1), (3, 2), (7, 3)):
        op.ctx.time.processing = now
        feed(op, (("a", value), None))
    assert op.next_processing_time() == 12
    (out, _), _ = op.on_processing_time(12)
    assert out == [("a", 0, 12, [1, 2, 3])]


def test_an_event_time_window_without_timestamps_is_a_clear_error() -> None:
    op = window_op(TumblingEventTimeWindows.of(5))
    with pytest.raises(RuntimeError, match="assign_timestamps_and_watermarks"):
        op.process_batch([("a", 1)])


def test_count_windows_fire_every_size_records_of_a_key() -> None:
    op = window_op(
        CountTumblingWindowAssigner.of(2),
        function=lambda key, window, inputs: [(key, window.id, [v for _, v in inputs])],
        kind="apply",
    )
    out = feed(op, *[((k, v), None) for k, v in ("a1", "b1", "a2", "a3", "b2", "a4")])
    assert out == [
        (("a", 0, ["1", "2"]), MAX_WATERMARK),
        (("b", 0, ["1", "2"]), MAX_WATERMARK),
        (("a", 1, ["3", "4"]), MAX_WATERMARK),
    ]
    # fired windows are purged: only the per-key counters stay
    assert len(op.backend.table("window-contents", "list")) == 0


def test_a_global_window_with_a_count_trigger_fires_with_everything_so_far() -> None:
    op = window_op(
        GlobalWindows.create(),
        trigger=CountTrigger.of(2),
        function=lambda key, window, inputs: [(window, [v for _, v in inputs])],
        kind="apply",
    )
    out = feed(op, *[(("a", v), 0) for v in range(5)])
    assert out == [
        ((GlobalWindow.get(), [0, 1]), MAX_WATERMARK),
        ((GlobalWindow.get(), [0, 1, 2, 3]), MAX_WATERMARK),
    ]
    assert watermark(op, MAX_WATERMARK) == []  # never fires on time; no cleanup timer
    assert len(op.timers().event_time) == 0


class PerWindowCount(ProcessWindowFunction):
    """Counts firings per window (window state) and per key (global state)."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        fired = context.window_state().get_state(ValueStateDescriptor("fired"))
        total = context.global_state().get_state(ValueStateDescriptor("total"))
        fired.update((fired.value() or 0) + 1)
        total.update((total.value() or 0) + 1)
        yield (context.window().start, fired.value(), total.value())

    def clear(self, context: Any) -> None:
        context.window_state().get_state(ValueStateDescriptor("fired")).clear()


def test_window_state_is_per_window_and_cleared_with_it_global_state_per_key() -> None:
    op = window_op(TumblingEventTimeWindows.of(5), lateness=10, function=PerWindowCount())
    feed(op, (("a", 1), 1))
    assert [o for o, _ in watermark(op, 4)] == [(0, 1, 1)]
    assert [o for o, _ in feed(op, (("a", 2), 2))] == [(0, 2, 2)]  # late: fires again
    feed(op, (("a", 6), 6))
    assert [o for o, _ in watermark(op, 9)] == [(5, 1, 3)]
    watermark(op, MAX_WATERMARK)
    assert op.backend.table("fired") == {}  # cleared by clear() at the cleanup time
    assert list(op.backend.table("total").values()) == [3]


def test_window_contents_trigger_state_and_timers_survive_a_snapshot_and_restore() -> None:
    """A snapshot mid-stream, written as JSON and read back into a fresh operator: the
    restored operator's output equals the uninterrupted one's (sessions, count trigger
    state, timers)."""

    def make() -> WindowOperator:
        return window_op(
            EventTimeSessionWindows.with_gap(3), trigger=PurgingTrigger.of(CountTrigger.of(3))
        )

    first = [(("a", 1), 1), (("b", 1), 1), (("a", 2), 2), (("b", 9), 9)]
    rest = [(("a", 4), 4), (("b", 10), 10), (("b", 11), 11), (("a", 20), 20)]
    whole = make()
    expected = feed(whole, *first) + feed(whole, *rest) + watermark(whole, MAX_WATERMARK)

    before = make()
    assert feed(before, *first) == []
    snapshot = serde.loads(json.dumps(serde.encode(before.snapshot_state(1))))
    assert snapshot["timers"]["event"]  # the pending window timers are in it
    assert {"window-contents", "merging-window-set", "count"} <= set(snapshot["states"])
    after = make()
    after.restore_state([snapshot])
    assert feed(after, *rest) + watermark(after, MAX_WATERMARK) == expected
    assert [o for o, _ in expected] == [("a", 1, 7, [1, 2, 4]), ("b", 9, 14, [9, 10, 11])]


def test_a_restore_keeps_the_windows_of_the_subtask_s_key_groups() -> None:
    whole = window_op(TumblingEventTimeWindows.of(5))
    feed(whole, *[((k, 1), 1) for k in "abcdefgh"])
    snapshot = whole.snapshot_state(1)
    seen = []
    for subtask in (0, 1):
        part = WindowOperator(
            "window-2",
            "W",
            lambda r: r[0],
            assigner=TumblingEventTimeWindows.of(5),
            trigger=EventTimeTrigger(),
            function=Summary(),
            function_kind="process",
        )
        part.open(
            OperatorContext(
                subtask=subtask,
                parallelism=2,
                max_parallelism=128,
                key_groups=key_group_range(subtask, 2, 128),
            )
        )
        part.restore_state([snapshot])
        seen.append(sorted(o[0] for o, _ in watermark(part, MAX_WATERMARK)))
    assert sorted(seen[0] + seen[1]) == list("abcdefgh") and seen[0] and seen[1]


def test_count_trigger_state_is_window_state() -> None:
    op = window_op(TumblingEventTimeWindows.of(5), trigger=CountTrigger.of(3))
    feed(op, (("a", 1), 1), (("a", 2), 2), (("a", 6), 6))
    count = op.backend.table("count", "reducing")
    assert count == {("a", (0, 5)): 2, ("a", (5, 10)): 1}
    assert isinstance(
        op.trigger_context.get_partitioned_state(CountTrigger(1).count), ReducingState
    )


class InPlace(AggregateFunction):
    """Changes its accumulator in place (PyFlink allows it: its state is serialized at once)."""

    def create_accumulator(self) -> Any:
        return [0]

    def add(self, value: Any, accumulator: Any) -> Any:
        accumulator[0] += value[1]
        return accumulator

    def get_result(self, accumulator: Any) -> Any:
        return accumulator[0]


def test_a_snapshot_keeps_the_accumulator_as_it_was_when_taken() -> None:
    op = window_op(
        TumblingEventTimeWindows.of(10), contents="aggregate", incremental=InPlace(), kind=None
    )
    feed(op, (("a", 1), 1))
    snapshot = op.snapshot_state(1)
    feed(op, (("a", 2), 2))  # after the snapshot, before it is written
    restored = window_op(
        TumblingEventTimeWindows.of(10), contents="aggregate", incremental=InPlace(), kind=None
    )
    restored.restore_state([serde.loads(serde.dumps(snapshot))])
    assert watermark(restored, MAX_WATERMARK) == [(1, 9)]
    assert watermark(op, MAX_WATERMARK) == [(3, 9)]


class NotMerging(Trigger):
    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> TriggerResult:
        return TriggerResult.CONTINUE


def test_the_windowed_stream_api_refuses_what_flink_refuses() -> None:
    keyed = StreamEnvironment().from_collection([("a", 1)]).key_by(lambda r: r[0])
    with pytest.raises(GraphError, match="needs a WindowAssigner"):
        keyed.window(5)  # type: ignore[arg-type]
    windowed = keyed.window(EventTimeSessionWindows.with_gap(5))
    with pytest.raises(GraphError, match="needs a trigger that can merge"):
        windowed.trigger(NotMerging()).process(Summary())
    tumbling = keyed.window(TumblingEventTimeWindows.of(5))
    with pytest.raises(GraphError, match="a window function must be"):
        tumbling.apply(42)
    with pytest.raises(GraphError, match="needs an AggregateFunction"):
        tumbling.aggregate(lambda a, b: a)
    with pytest.raises(GraphError, match="allowed_lateness"):
        tumbling.allowed_lateness(-1)
    with pytest.raises(GraphError, match="count_window"):
        keyed.count_window(0)
    with pytest.raises(GraphError, match="AllWindowFunction"):
        keyed.window_all(GlobalWindows.create()).apply(42)
    stream = tumbling.allowed_lateness(Ms(20)).reduce(lambda a, b: a, name="Sums")
    node = stream.nodes[0]
    assert isinstance(node.operator, WindowDescriptor)
    assert (node.name, node.operator.allowed_lateness) == ("Sums", 20)
