"""Flink's ``PrometheusReporter`` on ckptsim: the metrics of the jobs this process runs, in
Prometheus' text format, on a port of their own (``metrics.reporter.prom.factory.class:
org.apache.flink.metrics.prometheus.PrometheusReporterFactory``, ``metrics.reporter.prom.port``).

Names and labels are Flink's: a metric is ``flink_`` + its group's logical scope + its name
(``flink_taskmanager_job_task_operator_numRecordsIn``,
``flink_jobmanager_job_numberOfCompletedCheckpoints``), characters Prometheus does not take
become ``_``, and the scope's variables are labels (``job_id``, ``task_name``,
``subtask_index``, ``operator_name``, ...; a user's key-value group adds its key). Counters,
gauges and meters (their rate) are gauges, as Flink reports them; a distribution is a summary
(count and sum). The values are read from the jobs' REST views when Prometheus scrapes
(``runtime.rest``: the tasks' own counters), never sampled in between.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector

from runtime import rest

FACTORY = "org.apache.flink.metrics.prometheus.PrometheusReporterFactory"
#: the host label of every metric (the MiniCluster's task manager and job manager run here)
HOST = "localhost"

_INVALID = re.compile(r"[^a-zA-Z0-9:_]")


def metric_name(*parts: str) -> str:
    """Flink's Prometheus name: ``flink_`` and the parts joined by ``_``, each character
    Prometheus does not take as ``_``."""
    return _INVALID.sub("_", "_".join(("flink", *parts)))


class _Families:
    """Metric families by name, each with its label names (the first sample fixes them)."""

    def __init__(self, filter_label_values: bool = True) -> None:
        self.filter_label_values = filter_label_values
        self.gauges: dict[str, GaugeMetricFamily] = {}
        self.summaries: dict[str, SummaryMetricFamily] = {}
        self.labels: dict[str, list[str]] = {}

    def gauge(self, name: str, help_text: str, labels: Mapping[str, str], value: float) -> None:
        family = self.gauges.get(name)
        if family is None:
            family = GaugeMetricFamily(name, help_text, labels=list(labels))
            self.gauges[name], self.labels[name] = family, list(labels)
        family.add_metric(self._values(name, labels), value)

    def summary(
        self, name: str, help_text: str, labels: Mapping[str, str], count: int, total: float
    ) -> None:
        family = self.summaries.get(name)
        if family is None:
            family = SummaryMetricFamily(name, help_text, labels=list(labels))
            self.summaries[name], self.labels[name] = family, list(labels)
        family.add_metric(self._values(name, labels), count, total)

    def _values(self, name: str, labels: Mapping[str, str]) -> list[str]:
        """The label values in the family's order; as Flink's reporter with
        ``filterLabelValueCharacters`` (the default), each character Prometheus does not take
        in a name as ``_`` (``slow lookup -> Sink: Print`` is ``slow_lookup____Sink:_Print``)."""
        values = [labels.get(k, "") for k in self.labels[name]]
        if self.filter_label_values:
            return [_INVALID.sub("_", v) for v in values]
        return values

    def all(self) -> Iterator[Metric]:
        yield from self.gauges.values()
        yield from self.summaries.values()


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    return None  # a gauge of another type: Flink's reporter skips it as well


def _job_labels(view: rest.JobView) -> dict[str, str]:
    return {"job_id": view.job_id, "job_name": view.name, "host": HOST}


def _task_labels(
    view: rest.JobView, vertex: rest.VertexView, s: rest.SubtaskView
) -> dict[str, str]:
    return {
        "host": HOST,
        "tm_id": view.taskmanager_id,
        "job_id": view.job_id,
        "job_name": view.name,
        "task_id": vertex.id,
        "task_name": vertex.name,
        "task_attempt_id": hashlib.md5(
            f"{view.job_id}:{vertex.id}:{s.index}:{s.attempt}".encode(), usedforsecurity=False
        ).hexdigest(),
        "task_attempt_num": str(s.attempt),
        "subtask_index": str(s.index),
    }


def collect_views(views: Iterable[rest.JobView], filter_label_values: bool = True) -> list[Metric]:
    """The metric families of these jobs, as Flink's PrometheusReporter shows them
    (``filter_label_values``: its ``filterLabelValueCharacters``)."""
    families = _Families(filter_label_values)
    for view in views:
        job = _job_labels(view)
        for name, text in rest.job_metrics(view).items():
            value = _number(_parse(text))
            if value is not None:
                families.gauge(metric_name("jobmanager", "job", name), name, job, value)
        for vertex in view.vertices:
            for s in vertex.subtasks:
                _task(families, view, vertex, s)
    return list(families.all())


def _parse(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


def _task(
    families: _Families, view: rest.JobView, vertex: rest.VertexView, s: rest.SubtaskView
) -> None:
    labels = _task_labels(view, vertex, s)
    values = rest.subtask_metric_values(view, vertex, s)
    for name, value in values.items():
        if "." in name and not name.startswith(rest.TASK_GROUPS):
            continue  # an operator's (below)
        number = _number(value)
        if number is not None:
            families.gauge(metric_name("taskmanager", "job", "task", name), name, labels, number)
    for operator, op in dict(s.metrics.get("operators", {})).items():
        op_labels = {
            **labels,
            "operator_id": hashlib.md5(
                f"{vertex.id}:{operator}".encode(), usedforsecurity=False
            ).hexdigest(),
            "operator_name": operator,
        }
        scope = ("taskmanager", "job", "task", "operator")
        prefix = rest.metric_scope_name(operator) + "."
        for metric in rest.OPERATOR_METRICS:
            number = _number(values.get(prefix + metric))
            if number is not None:
                families.gauge(metric_name(*scope, metric), metric, op_labels, number)
        for user in op.get("user", ()):
            _user(families, scope, op_labels, user)


def _user(
    families: _Families,
    scope: Sequence[str],
    labels: Mapping[str, str],
    user: Mapping[str, Any],
) -> None:
    """A user's metric: its groups in the name (a key-value group's key only), the key-value
    groups' values as labels."""
    variables = dict((str(k), str(v)) for k, v in user["variables"])
    groups: list[str] = []
    parts = list(user["scope"])
    index = 0
    while index < len(parts):
        part = parts[index]
        groups.append(part)
        # a key group is followed by its value group: the value is a label, not a name part
        if part in variables and index + 1 < len(parts) and parts[index + 1] == variables[part]:
            index += 2
        else:
            index += 1
    name = metric_name(*scope, *groups, user["name"])
    mine = {**labels, **{_INVALID.sub("_", k): v for k, v in variables.items()}}
    value = user["value"]
    kind = user["kind"]
    if kind == "meter":
        families.gauge(name, user["name"], mine, float(value["rate"]))
    elif kind == "distribution":
        families.summary(name, user["name"], mine, int(value["count"]), float(value["sum"]))
    else:
        number = _number(value)
        if number is not None:
            families.gauge(name, user["name"], mine, number)


class _JobsCollector(Collector):
    def __init__(self, registry: Any, filter_label_values: bool) -> None:
        self.registry = registry
        self.filter_label_values = filter_label_values

    def collect(self) -> Iterable[Metric]:
        views = [job.view() for job in list(self.registry.live.values())]
        return collect_views(views, self.filter_label_values)


def ports(spec: str) -> list[int]:
    """``metrics.reporter.prom.port``: a port, or a range ``9250-9260`` (Flink tries each)."""
    text = str(spec).strip()
    wanted = f"metrics.reporter.prom.port {spec}: give a port (9249) or a range (9250-9260)"
    if "-" in text:
        low, _, high = text.partition("-")
        if not (low.strip().isdigit() and high.strip().isdigit()):
            raise ValueError(wanted)
        first, last = int(low), int(high)
        if not 0 <= first <= last <= 65535:
            raise ValueError(f"metrics.reporter.prom.port {spec}: not a port range")
        return list(range(first, last + 1))
    if not text.isdigit():
        raise ValueError(wanted)
    port = int(text)
    if not 0 <= port <= 65535:
        raise ValueError(f"metrics.reporter.prom.port {spec}: a port is a number from 0 to 65535")
    return [port]


class PrometheusReporter:
    """Serves the metrics of the jobs of a ``JobRegistry`` (``registry.live``) on ``port``
    (the first free one of a range), until ``stop``."""

    def __init__(
        self,
        registry: Any,
        port_spec: str = "9249",
        host: str | None = None,
        filter_label_values: bool = True,
    ) -> None:
        self.collectors = CollectorRegistry(auto_describe=False)
        self.collectors.register(_JobsCollector(registry, filter_label_values))
        self.host = host or "0.0.0.0"
        error: OSError | None = None
        for port in ports(port_spec):
            try:
                server, thread = start_http_server(port, self.host, registry=self.collectors)
            except OSError as failed:
                error = failed
                continue
            self._server, self._thread = server, thread
            self.port = int(server.server_address[1])
            break
        else:
            raise OSError(f"no free port in metrics.reporter.prom.port {port_spec}: {error}")
        self._stopped = threading.Event()

    @property
    def url(self) -> str:
        host = "localhost" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}/metrics"

    def stop(self) -> None:
        if not self._stopped.is_set():
            self._stopped.set()
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()
