"""A task's IO metrics, as Flink's REST API shows them per subtask (``read-records``,
``write-records``, ``write-bytes``, ``accumulated-backpressured-time``, ``-idle-time``,
``-busy-time``); and Flink's metric groups, where user functions register their counters,
gauges, meters and distributions (``RuntimeContext.get_metrics_group()``).

The task shell observes each mail it handles (when it started and ended, on the job clock,
and whether the task's output was back-pressured afterwards); the times are split as
Flink's task does: time spent handling mail is busy, time between mails is back-pressured
while the output has no credit and idle otherwise. Pure bookkeeping: no clock of its own.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

JsonDict = dict[str, Any]


@dataclass(slots=True)
class TaskIOMetrics:
    records_in: int = 0
    records_out: int = 0
    bytes_out: int = 0
    backpressured_ms: int = 0
    idle_ms: int = 0
    busy_ms: int = 0
    #: job-clock ms the task started running and reached a terminal state (-1: not yet)
    started_at: int = -1
    ended_at: int = -1
    _last_end: int = -1
    _backpressured: bool = False

    def start(self, now: int) -> None:
        if self.started_at < 0:
            self.started_at = now
            self._last_end = now

    def observe(
        self, start: int, end: int, *, records_in: int, records_out: int, backpressured: bool
    ) -> None:
        """One mail handled from ``start`` to ``end``; the counters are the task's totals."""
        if self._last_end >= 0 and start > self._last_end:
            gap = start - self._last_end
            if self._backpressured:
                self.backpressured_ms += gap
            else:
                self.idle_ms += gap
        self.busy_ms += max(0, end - start)
        self._last_end = max(end, self._last_end)
        self._backpressured = backpressured
        self.records_in = records_in
        self.records_out = records_out

    def wrote(self, nbytes: int) -> None:
        self.bytes_out += nbytes

    def end(self, now: int) -> None:
        if self.ended_at < 0:
            self.observe(
                now,
                now,
                records_in=self.records_in,
                records_out=self.records_out,
                backpressured=False,
            )
            self.ended_at = now

    def snapshot(self, now: int) -> JsonDict:
        """The counters as of ``now`` (a back-pressured or idle stretch still going counts)."""
        backpressured, idle = self.backpressured_ms, self.idle_ms
        if self.ended_at < 0 and self._last_end >= 0 and now > self._last_end:
            if self._backpressured:
                backpressured += now - self._last_end
            else:
                idle += now - self._last_end
        return {
            "records_in": self.records_in,
            "records_out": self.records_out,
            "bytes_out": self.bytes_out,
            "backpressured_ms": backpressured,
            "idle_ms": idle,
            "busy_ms": self.busy_ms,
            "backpressured": self._backpressured and self.ended_at < 0,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
        }


# --- Flink's metric groups (user metrics) ------------------------------------------------------


class Metric:
    """Base of the metrics (Flink's ``Metric``); a gauge is a plain callable."""

    __slots__ = ()


class Counter(Metric):
    """Flink's ``Counter`` (PyFlink's spelling): a count that goes up and down."""

    __slots__ = ("_count",)

    def __init__(self) -> None:
        self._count = 0

    def inc(self, n: int = 1) -> None:
        self._count += n

    def dec(self, n: int = 1) -> None:
        self._count -= n

    def get_count(self) -> int:
        return self._count


class Meter(Metric):
    """Flink's ``Meter``: events marked, and their rate per second over the last
    ``time_span_in_seconds`` of the task's processing time (the job clock: virtual on the
    simulation, so a rate there is as deterministic as the run)."""

    __slots__ = ("_count", "_marks", "_now", "span_ms")

    def __init__(self, now: Callable[[], int], time_span_in_seconds: int = 60) -> None:
        self._now = now
        self.span_ms = max(1, int(time_span_in_seconds)) * 1000
        self._count = 0
        #: (ms, events) marks within the span, oldest first
        self._marks: deque[list[int]] = deque()

    def mark_event(self, value: int = 1) -> None:
        self._count += value
        now = self._now()
        marks = self._marks
        if marks and marks[-1][0] == now:
            marks[-1][1] += value
        else:
            marks.append([now, value])
        self._prune(now)

    def _prune(self, now: int) -> None:
        marks = self._marks
        while marks and marks[0][0] <= now - self.span_ms:
            marks.popleft()

    def get_count(self) -> int:
        return self._count

    def get_rate(self) -> float:
        now = self._now()
        self._prune(now)
        return sum(n for _, n in self._marks) / (self.span_ms / 1000)


class Distribution(Metric):
    """PyFlink's ``Distribution``: count, sum, min and max of the values it was updated with."""

    __slots__ = ("count", "max", "min", "sum")

    def __init__(self) -> None:
        self.count = 0
        self.sum: int | float = 0
        self.min: int | float | None = None
        self.max: int | float | None = None

    def update(self, value: int | float) -> None:
        self.count += 1
        self.sum += value
        self.min = value if self.min is None or value < self.min else self.min
        self.max = value if self.max is None or value > self.max else self.max

    def text(self) -> str:
        """As Flink's REST API shows it (the result of Beam's distribution, PyFlink's)."""
        low = self.min if self.min is not None else 0
        high = self.max if self.max is not None else 0
        return f"DistributionResult{{sum={self.sum}, count={self.count}, min={low}, max={high}}}"


MetricObject = Counter | Meter | Distribution | Callable[[], Any]


@dataclass(frozen=True, slots=True)
class Registered:
    """A user metric: the groups above it (names, ``add_group``'s keys and values), the
    key-value groups as variables (Prometheus labels), its name, kind and the metric."""

    scope: tuple[str, ...]
    variables: tuple[tuple[str, str], ...]
    name: str
    kind: str
    metric: MetricObject


class MetricGroup:
    """Flink's ``MetricGroup`` of an operator (``RuntimeContext.get_metrics_group()``): counters,
    gauges, meters and distributions registered under it and its subgroups. Pure bookkeeping:
    the task reports the values (``snapshot``) when asked; nothing here runs on its own."""

    __slots__ = ("_now", "_registry", "_scope", "_subgroups", "_variables")

    def __init__(
        self,
        now: Callable[[], int] | None = None,
        *,
        registry: list[Registered] | None = None,
        scope: tuple[str, ...] = (),
        variables: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self._now = now or (lambda: 0)
        self._registry: list[Registered] = registry if registry is not None else []
        self._scope = scope
        self._variables = variables
        self._subgroups: dict[tuple[str, str | None], MetricGroup] = {}

    def add_group(self, name: str, extra: str | None = None) -> MetricGroup:
        """A subgroup ``name``; with ``extra``, the key-value pair of groups ``name`` and
        ``extra`` (the value group is returned, and ``name`` becomes a variable)."""
        key = (str(name), None if extra is None else str(extra))
        group = self._subgroups.get(key)
        if group is None:
            scope = (*self._scope, key[0]) if extra is None else (*self._scope, key[0], str(extra))
            variables = (
                self._variables if extra is None else (*self._variables, (key[0], str(extra)))
            )
            group = MetricGroup(self._now, registry=self._registry, scope=scope,
                                variables=variables)  # fmt: skip
            self._subgroups[key] = group
        return group

    def _register(self, name: str, kind: str, metric: MetricObject) -> None:
        self._registry.append(Registered(self._scope, self._variables, str(name), kind, metric))

    def counter(self, name: str) -> Counter:
        counter = Counter()
        self._register(name, "counter", counter)
        return counter

    def gauge(self, name: str, obj: Callable[[], Any]) -> None:
        self._register(name, "gauge", obj)

    def meter(self, name: str, time_span_in_seconds: int = 60) -> Meter:
        meter = Meter(self._now, time_span_in_seconds)
        self._register(name, "meter", meter)
        return meter

    def distribution(self, name: str) -> Distribution:
        distribution = Distribution()
        self._register(name, "distribution", distribution)
        return distribution

    def snapshot(self) -> list[JsonDict]:
        """Every metric's value now (JSON-safe): scope, variables, name, kind, value. A gauge is
        asked here (a gauge that raises is left out, as Flink's reporters skip it)."""
        out: list[JsonDict] = []
        for r in self._registry:
            value: Any
            if isinstance(r.metric, Counter):
                value = r.metric.get_count()
            elif isinstance(r.metric, Meter):
                value = {"rate": r.metric.get_rate(), "count": r.metric.get_count()}
            elif isinstance(r.metric, Distribution):
                d = r.metric
                value = {"count": d.count, "sum": d.sum, "min": d.min, "max": d.max,
                         "text": d.text()}  # fmt: skip
            else:
                try:
                    value = r.metric()
                except Exception:
                    continue
                if not isinstance(value, bool | int | float | str):
                    value = str(value)
            out.append(
                {
                    "scope": list(r.scope),
                    "variables": [list(v) for v in r.variables],
                    "name": r.name,
                    "kind": r.kind,
                    "value": value,
                }
            )
        return out
