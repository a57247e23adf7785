"""Flink's metric groups in the job model (``runtime.metrics``): what a function registers,
under which scope, and the values the task reports; pure bookkeeping on the task's clock."""

from __future__ import annotations

from runtime.metrics import Counter, Distribution, Meter, MetricGroup


def test_groups_scope_their_metrics_and_a_key_value_group_is_a_variable() -> None:
    root = MetricGroup()
    orders = root.add_group("orders")
    assert root.add_group("orders") is orders  # the same group again, as Flink's
    rejected = orders.counter("rejected")
    by_reason = root.add_group("reason", "over_limit").counter("rejected")
    rejected.inc()
    rejected.inc(3)
    rejected.dec()
    by_reason.inc()
    assert isinstance(rejected, Counter) and rejected.get_count() == 3
    snapshot = root.snapshot()
    assert [(m["scope"], m["variables"], m["name"], m["value"]) for m in snapshot] == [
        (["orders"], [], "rejected", 3),
        (["reason", "over_limit"], [["reason", "over_limit"]], "rejected", 1),
    ]


def test_a_meter_is_a_rate_over_its_time_span_on_the_tasks_clock() -> None:
    now = [0]
    meter = MetricGroup(lambda: now[0]).meter("checks", time_span_in_seconds=10)
    assert isinstance(meter, Meter)
    for t in range(0, 20_000, 100):  # 10 events a second for 20 s
        now[0] = t
        meter.mark_event()
    assert meter.get_count() == 200
    assert meter.get_rate() == 10.0
    now[0] = 24_900
    assert meter.get_rate() == 5.0  # half of the span has no events
    now[0] = 40_000
    assert meter.get_rate() == 0.0 and meter.get_count() == 200


def test_a_distribution_and_gauges_as_reported() -> None:
    group = MetricGroup()
    amounts = group.distribution("amount")
    assert isinstance(amounts, Distribution)
    for value in (5, -2, 9):
        amounts.update(value)
    group.gauge("largest", lambda: 9)
    group.gauge("broken", lambda: 1 // 0)
    group.gauge("name", lambda: "acme")
    values = {m["name"]: m["value"] for m in group.snapshot()}
    assert values["amount"]["text"] == "DistributionResult{sum=12, count=3, min=-2, max=9}"
    assert values["largest"] == 9 and values["name"] == "acme"
    assert "broken" not in values  # a gauge that raises is left out, the task goes on
