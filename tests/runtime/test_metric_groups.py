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


def test_a_meter_is_a_meter_view_updated_every_5_s() -> None:
    """As Flink's ``MeterView`` (PyFlink's meter is one, on the Java side): its rate is 0.0
    until its first update, then the growth of the count over the span (rounded down to a
    multiple of 5 s) per second, as of the last update; marks in between change the count
    at once, the rate at the next update."""
    meter = MetricGroup().meter("checks", time_span_in_seconds=12)  # a 10 s span
    assert isinstance(meter, Meter)
    for _ in range(1200):
        meter.mark_event()
    assert meter.get_count() == 1200
    assert meter.get_rate() == 0.0  # no update yet: Flink's reads 0.0 too
    meter.update()  # 5 s
    assert meter.get_rate() == 120.0  # 1200 over the 10 s span
    meter.mark_event(300)
    assert meter.get_rate() == 120.0 and meter.get_count() == 1500
    meter.update()  # 10 s
    assert meter.get_rate() == 150.0
    meter.update()  # 15 s: the count 10 s ago was 1200
    assert meter.get_rate() == 30.0
    meter.update()  # 20 s: no events over the span
    assert meter.get_rate() == 0.0 and meter.get_count() == 1500


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


def test_asking_for_a_metric_again_gives_the_same_metric() -> None:
    """``get_metrics_group().counter("processed").inc()`` inside ``map`` (a common PyFlink
    style) counts every record in one registered counter, as PyFlink's groups (Beam's cells by
    name) do, instead of registering a new counter per record; a gauge registered again reads
    the last callable."""
    root = MetricGroup()
    for _ in range(5):
        root.counter("processed").inc()
        root.add_group("parity", "odd").counter("n").inc(2)
        root.meter("perSecond").mark_event()
        root.distribution("size").update(3)
    root.gauge("depth", lambda: 1)
    root.gauge("depth", lambda: 7)
    snapshot = root.snapshot()
    assert len(snapshot) == 5, snapshot
    by_name = {m["name"]: m["value"] for m in snapshot}
    assert by_name["processed"] == 5 and by_name["n"] == 10
    assert by_name["perSecond"]["count"] == 5 and by_name["size"]["count"] == 5
    assert by_name["depth"] == 7
    assert len(root.meters()) == 1
