"""``pyflink.metrics``: Flink's metric groups, as a function's ``open`` gets them from
``runtime_context.get_metrics_group()`` (the job model's own: ``runtime.metrics``). Their values
are served on the REST paths Flink's dashboard reads and, with ``metrics.reporter.prom.*``, to
Prometheus (docs/metrics.md)."""

from __future__ import annotations

from runtime.metrics import Counter, Distribution, Meter, Metric, MetricGroup

__all__ = ["Counter", "Distribution", "Meter", "Metric", "MetricGroup"]
