"""``pyflink.metrics.metricbase``: where PyFlink defines its metric classes."""

from __future__ import annotations

from runtime.metrics import Counter, Distribution, Meter, Metric, MetricGroup

__all__ = ["Counter", "Distribution", "Meter", "Metric", "MetricGroup"]
