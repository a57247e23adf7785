"""Rates as Flink's ``MeterView`` s give them, on the deterministic simulation: a task's rates,
its operators' and a program's meter are views of their counts sampled together every 5 s of
the job clock over a minute, so they agree with each other, and read 0.0 before their first
sample (as Flink's do), whatever the counts."""

from __future__ import annotations

from typing import Any

import pytest

from ckptsim import StreamExecutionEnvironment, WatermarkStrategy
from ckptsim._web import JobRegistry
from runtime import rest
from runtime.functions import KeyedProcessFunction, MapFunction, RuntimeContext


class _Marking(MapFunction):
    """Marks a meter event per record."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.meter = runtime_context.get_metrics_group().meter("events")

    def map(self, value: Any) -> Any:
        self.meter.mark_event()
        return value


def _finished(records: int, rate: float) -> dict[str, str]:
    """``generator (rate/s) -> rebalance -> Marking -> key_by -> reduce`` run to its end on the
    simulation: the Marking task's metrics."""
    registry = JobRegistry()
    env = StreamExecutionEnvironment()
    env.set_parallelism(1)
    # every record leaves its task at once (no flusher tick to wait for): the counts at a
    # sample are the records read by then
    env.configure({"execution.buffer-timeout.interval": 0})
    (
        env.from_generator(lambda i: i, records, rate=rate, name="numbers")
        .rebalance()
        .map(_Marking(), name="Marking")  # type: ignore[arg-type]
        .key_by(lambda x: x % 2)
        .reduce(lambda a, b: a + b, name="Reduce")
        .collect("out")
    )
    result = env.execute("rates", runtime="simulation", observer=registry, timeout=1000)
    assert result.succeeded, result.failure
    (view,) = registry.finished_views()
    vertex = next(v for v in view.vertices if v.name == "Marking")
    return rest.vertex_metrics(view, vertex)


def test_task_operator_and_user_rates_are_one_view_of_the_same_counts() -> None:
    """1200 records at 20 a second: the last sample (55 s, 1100 records; the view's count a
    minute before counts as 0) is the rate of the task, of its operator and of the meter the
    function marks per record."""
    values = _finished(1200, 20)
    assert values["0.numRecordsIn"] == values["0.Marking.numRecordsIn"] == "1200"
    assert values["0.Marking.events"] == values["0.numRecordsInPerSecond"]
    assert values["0.Marking.numRecordsInPerSecond"] == values["0.numRecordsInPerSecond"]
    assert values["0.Marking.numRecordsOutPerSecond"] == values["0.numRecordsOutPerSecond"]
    assert float(values["0.numRecordsInPerSecond"]) == 1100 / 60


def test_before_the_first_sample_every_rate_reads_0() -> None:
    """A job over in less than 5 s (virtual): no view was sampled, so a rate is 0.0 with
    1200 events marked, as Flink's ``MeterView`` reads before its first update."""
    values = _finished(1200, 1000)
    assert values["0.numRecordsIn"] == "1200"
    for name in (
        "0.numRecordsInPerSecond",
        "0.numRecordsOutPerSecond",
        "0.Marking.numRecordsInPerSecond",
        "0.Marking.numRecordsOutPerSecond",
        "0.Marking.events",
    ):
        assert values[name] == "0.0", name


class _TimerPerRecord(KeyedProcessFunction):
    """An event-time timer per record, at the record's timestamp plus a second."""

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        ctx.timer_service().register_event_time_timer(value * 100 + 1000)
        return []

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Any:
        yield timestamp


def test_fired_timers_are_counted_per_task() -> None:
    """Flink's ``numFiredTimers`` (and its ``MeterView``): every timer the task's operators
    fired, event and processing time; here one per record, 200 over 10 s (virtual)."""
    registry = JobRegistry()
    env = StreamExecutionEnvironment()
    env.set_parallelism(1)
    (
        env.from_generator(lambda i: i, 200, rate=20, name="numbers")
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
                lambda e, _: e * 100
            )
        )
        .key_by(lambda x: x % 4)
        .process(_TimerPerRecord(), name="Timers")
        .collect("fired")
    )
    result = env.execute("timers", runtime="simulation", observer=registry, timeout=1000)
    assert result.succeeded, result.failure
    assert len(result.collected("fired")) == 200
    (view,) = registry.finished_views()
    vertex = next(v for v in view.vertices if "Timers" in v.name)
    values = rest.vertex_metrics(view, vertex)
    assert values["0.numFiredTimers"] == "200"
    assert float(values["0.numFiredTimersPerSecond"]) > 0
    source = next(v for v in view.vertices if v.id != vertex.id)
    assert rest.vertex_metrics(view, source)["0.numFiredTimers"] == "0"


@pytest.mark.parametrize("aligned", [True, False])
def test_an_aligned_source_reports_its_drift(aligned: bool) -> None:
    """FLIP-182's ``watermarkAlignmentDrift`` on each source of an alignment group (the fast
    and slow backlogs of ``tests/actors/test_watermark_alignment.py``): its last watermark
    minus the largest it may reach (the group's minimum plus the drift). At the end the slow
    source is the group's minimum, so its drift is minus the allowed drift plus at most what
    it read since the last announcement; the fast one, held back, never ended far above 0.
    Sources outside a group have no such gauge, as in Flink."""
    from tests.actors import test_watermark_alignment as feeds  # noqa: PLC0415

    registry = JobRegistry()
    env = StreamExecutionEnvironment()
    env.configure({key: str(value) for key, value in feeds.SETTINGS.items()})
    feeds.job(aligned)(env)
    result = env.execute("aligned", runtime="simulation", seed=5, observer=registry)
    assert result.succeeded, result.failure
    (view,) = registry.finished_views()
    drift: dict[str, int] = {}
    for vertex in view.vertices:
        for name, value in rest.vertex_metrics(view, vertex).items():
            if name.endswith(".watermarkAlignmentDrift"):
                drift[name] = int(value)
    if not aligned:
        assert drift == {}
        return
    slow, fast = (
        drift["0.Source__slow.watermarkAlignmentDrift"],
        drift["0.Source__fast.watermarkAlignmentDrift"],
    )
    interval = feeds.UPDATE_INTERVAL * feeds.PER_MS
    assert -feeds.DRIFT <= slow <= -feeds.DRIFT + 2 * interval * feeds.SLOW_STEP
    assert fast <= 2 * interval * feeds.FAST_STEP


def test_back_pressure_is_soft_back_pressure() -> None:
    """A source ahead of a slow map (2 ms a record, virtual; small buffers): its back-pressured time is
    Flink's soft back-pressure (no credit: it stops reading), never hard (a task here never
    blocks inside a record waiting for a buffer)."""
    registry = JobRegistry()
    env = StreamExecutionEnvironment()
    env.set_parallelism(1)
    env.configure({"ckptsim.buffer.records": "10"})
    (
        env.from_collection(list(range(5000)), name="numbers")
        .rebalance()
        .map(lambda x: x, name="Slow")
        .processing_cost(per_record_ms=2)
        .collect("out")
    )
    result = env.execute("slow", runtime="simulation", observer=registry, timeout=1000)
    assert result.succeeded, result.failure
    (view,) = registry.finished_views()
    source = next(v for v in view.vertices if not v.inputs)
    values = rest.vertex_metrics(view, source)
    assert int(values["0.backPressuredTimeMsPerSecond"]) > 0
    assert values["0.softBackPressuredTimeMsPerSecond"] == values["0.backPressuredTimeMsPerSecond"]
    assert values["0.hardBackPressuredTimeMsPerSecond"] == "0"
