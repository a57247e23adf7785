"""Rates as Flink's ``MeterView`` s give them, on the deterministic simulation: a task's rates,
its operators' and a program's meter are views of their counts sampled together every 5 s of
the job clock over a minute, so they agree with each other, and read 0.0 before their first
sample (as Flink's do), whatever the counts."""

from __future__ import annotations

from typing import Any

from ckptsim import StreamExecutionEnvironment
from ckptsim._web import JobRegistry
from runtime import rest
from runtime.functions import MapFunction, RuntimeContext


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
