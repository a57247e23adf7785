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

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

JsonDict = dict[str, Any]


#: Flink's ``View.UPDATE_INTERVAL_SECONDS``: meters and timer gauges take a sample every 5 s
VIEW_UPDATE_MS = 5000
#: Flink's default time span of a ``MeterView`` and a ``TimerGauge``
TIME_SPAN_S = 60


class MeterView:
    """Flink's ``MeterView`` over a counter: every 5 s (``update``) the count goes into a ring of
    ``span / 5 + 1`` samples, and the rate is (newest - oldest) / span, per second. Until the
    ring went round once the oldest sample is 0: over a job's first minute the rate is the
    count divided by 60, as Flink's."""

    __slots__ = ("_time", "_values", "rate", "span_s")

    def __init__(self, time_span_in_seconds: int = TIME_SPAN_S) -> None:
        self.span_s = max(5, time_span_in_seconds - time_span_in_seconds % 5)
        self._values = [0] * (self.span_s // 5 + 1)
        self._time = 0
        self.rate = 0.0

    def update(self, count: int) -> None:
        values = self._values
        self._time = (self._time + 1) % len(values)
        values[self._time] = count
        self.rate = (count - values[(self._time + 1) % len(values)]) / self.span_s


class TimerGauge:
    """Flink's ``TimerGauge``: the milliseconds measured in each 5 s interval go into a ring of
    ``span / 5`` slots (``update``); the value is their sum over the slots filled so far divided
    by their seconds, ms per second as a whole number from 0 to 1000."""

    __slots__ = ("_filled", "_index", "_values", "value")

    def __init__(self, time_span_in_seconds: int = TIME_SPAN_S) -> None:
        span = max(5, time_span_in_seconds - time_span_in_seconds % 5)
        self._values = [0] * (span // 5)
        self._index = 0
        self._filled = 0
        self.value = 0

    def update(self, measured_ms: int) -> None:
        values = self._values
        values[self._index] = measured_ms
        self._index = (self._index + 1) % len(values)
        self._filled = min(self._filled + 1, len(values))
        total = sum(values[: self._filled]) if self._filled < len(values) else sum(values)
        self.value = max(0, min(1000, total // (5 * self._filled)))


_BACKPRESSURED, _IDLE, _BUSY = 0, 1, 2


@dataclass(slots=True)
class TaskIOMetrics:
    """A subtask's IO counters and Flink's views of them: ``numRecordsInPerSecond`` and the
    other rates are ``MeterView`` s, ``backPressuredTimeMsPerSecond`` and ``idleTimeMsPerSecond``
    ``TimerGauge`` s, sampled every 5 s of the job clock from the task's start. Nothing runs on
    its own: a sample due is taken when a mail is observed or a snapshot asked for, with the
    counts and times as of its instant (time is split at the sample's instant)."""

    records_in: int = 0
    records_out: int = 0
    bytes_out: int = 0
    buffers_out: int = 0
    #: mails other than the default action (Flink's ``mailboxMailsPerSecond`` counts those)
    mails: int = 0
    #: timers the task's operators fired (``fired``, read at each sample and snapshot)
    fired_timers: int = 0
    backpressured_ms: int = 0
    idle_ms: int = 0
    busy_ms: int = 0
    #: job-clock ms the task started running and reached a terminal state (-1: not yet)
    started_at: int = -1
    ended_at: int = -1
    _last_end: int = -1
    _backpressured: bool = False
    #: time before this is split into back-pressured, idle and busy
    _accounted: int = -1
    #: the next sample's instant (-1: not started)
    _next_view: int = -1
    #: ms of each kind since the last sample
    _interval: list[int] = field(default_factory=lambda: [0, 0, 0])
    _meters: dict[str, MeterView] = field(default_factory=dict)
    _timers: list[TimerGauge] = field(default_factory=list)
    #: more counters to keep a ``MeterView`` of (the operators' records in and out), read at
    #: each sample: name -> count
    counters: Callable[[], Mapping[str, int]] | None = None
    _counter_meters: dict[str, MeterView] = field(default_factory=dict)
    #: the task's records in and out as of now, also within a buffer (its ``live_counts``):
    #: read at each sample and snapshot, so the counts and rates advance while a long buffer
    #: is under way
    live: Callable[[], tuple[int, int]] | None = None
    #: the timers the task's operators fired so far
    fired: Callable[[], int] | None = None
    #: the user's meters (``Meter``), whose views are updated with the task's at each sample
    user_meters: Callable[[], Iterable[Meter]] | None = None
    #: the job-clock ms the mail under way started at (-1: none): set by the task's thread
    #: when it takes a mail, so that a snapshot taken meanwhile (from another thread) counts
    #: the time since as busy
    busy_since: int = -1

    def start(self, now: int) -> None:
        if self.started_at < 0:
            self.started_at = now
            self._last_end = now
            self._accounted = now
            self._next_view = now + VIEW_UPDATE_MS
            self._meters = {
                name: MeterView()
                for name in (
                    "records_in",
                    "records_out",
                    "bytes_out",
                    "buffers_out",
                    "mails",
                    "fired_timers",
                )
            }
            self._timers = [TimerGauge(), TimerGauge()]  # back-pressured, idle

    def _account(self, until: int, kind: int) -> None:
        """Time from the last accounted instant to ``until`` was of ``kind``; the samples due
        up to ``until`` are taken on the way."""
        accounted = self._accounted
        if accounted < 0 or until <= accounted:
            return
        interval = self._interval
        while 0 <= self._next_view <= until:
            due = self._next_view
            self._add(kind, due - accounted)
            accounted = due
            self._read_live()
            for name, meter in self._meters.items():
                meter.update(getattr(self, name))
            if self.counters is not None:
                meters = self._counter_meters
                for name, count in self.counters().items():
                    if name not in meters:
                        meters[name] = MeterView()
                    meters[name].update(count)
            if self.user_meters is not None:
                for user_meter in self.user_meters():
                    user_meter.update()
            self._timers[0].update(interval[_BACKPRESSURED])
            self._timers[1].update(interval[_IDLE])
            interval[:] = [0, 0, 0]
            self._next_view = due + VIEW_UPDATE_MS
        self._add(kind, until - accounted)
        self._accounted = until

    def _read_live(self) -> None:
        """The live counts (never below those seen: a racy read may lag one)."""
        live = self.live
        if live is not None:
            records_in, records_out = live()
            self.records_in = max(self.records_in, records_in)
            self.records_out = max(self.records_out, records_out)
        if self.fired is not None:
            self.fired_timers = self.fired()

    def _add(self, kind: int, ms: int) -> None:
        self._interval[kind] += ms
        if kind == _BACKPRESSURED:
            self.backpressured_ms += ms
        elif kind == _IDLE:
            self.idle_ms += ms
        else:
            self.busy_ms += ms

    def observe(
        self, start: int, end: int, *, records_in: int, records_out: int, backpressured: bool
    ) -> None:
        """One mail handled from ``start`` to ``end``; the counters are the task's totals."""
        if start > self._accounted >= 0:  # else nothing to account (``_account`` returns)
            self._account(start, _BACKPRESSURED if self._backpressured else _IDLE)
        if end > self._accounted >= 0:
            self._account(end, _BUSY)
        self._last_end = max(end, self._last_end)
        self._backpressured = backpressured
        self.records_in = max(self.records_in, records_in)
        self.records_out = max(self.records_out, records_out)
        self.busy_since = -1

    def wrote(self, nbytes: int) -> None:
        self.bytes_out += nbytes
        self.buffers_out += 1

    def mail(self) -> None:
        self.mails += 1

    def end(self, now: int) -> None:
        if self.ended_at < 0:
            self._read_live()
            self.observe(
                now,
                now,
                records_in=self.records_in,
                records_out=self.records_out,
                backpressured=False,
            )
            self.ended_at = now
            self._next_view = -1  # no more samples

    def snapshot(self, now: int) -> JsonDict:
        """The counters as of ``now`` (a back-pressured or idle stretch still going counts),
        and Flink's views of them as of their last sample."""
        if self.ended_at < 0:
            busy_since = self.busy_since
            if 0 <= busy_since <= now:  # a mail under way: busy since it started
                self._account(busy_since, _BACKPRESSURED if self._backpressured else _IDLE)
                self._account(now, _BUSY)
            else:
                self._account(now, _BACKPRESSURED if self._backpressured else _IDLE)
            self._read_live()
        rates: JsonDict = {f"{name}_per_s": meter.rate for name, meter in self._meters.items()}
        rates["counter_rates"] = {name: m.rate for name, m in self._counter_meters.items()}
        timers = self._timers
        return {
            "records_in": self.records_in,
            "records_out": self.records_out,
            "bytes_out": self.bytes_out,
            "buffers_out": self.buffers_out,
            "fired_timers": self.fired_timers,
            "backpressured_ms": self.backpressured_ms,
            "idle_ms": self.idle_ms,
            "busy_ms": self.busy_ms,
            "backpressured": self._backpressured and self.ended_at < 0,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            **rates,
            "backpressured_ms_per_s": timers[0].value if timers else 0,
            "idle_ms_per_s": timers[1].value if timers else 0,
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
    """Flink's ``Meter`` as PyFlink registers it, a ``MeterView`` over the events marked: the
    count, and a rate the task updates with its other views every 5 s of the job clock
    (``update``, from ``TaskIOMetrics``): the growth of the count over the last
    ``time_span_in_seconds`` (a multiple of 5, at least 5) per second, 0.0 before the first
    update, as Flink's (and so as deterministic as the run on the simulation)."""

    __slots__ = ("_count", "_view")

    def __init__(self, time_span_in_seconds: int = TIME_SPAN_S) -> None:
        self._count = 0
        self._view = MeterView(int(time_span_in_seconds))

    def mark_event(self, value: int = 1) -> None:
        self._count += value

    def get_count(self) -> int:
        return self._count

    def get_rate(self) -> float:
        return self._view.rate

    def update(self) -> None:
        """Flink's ``View.update``: a sample of the count (every 5 s)."""
        self._view.update(self._count)


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

    __slots__ = ("_own", "_registry", "_scope", "_subgroups", "_variables")

    def __init__(
        self,
        *,
        registry: list[Registered] | None = None,
        scope: tuple[str, ...] = (),
        variables: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self._registry: list[Registered] = registry if registry is not None else []
        self._scope = scope
        self._variables = variables
        self._subgroups: dict[tuple[str, str | None], MetricGroup] = {}
        #: this group's metrics by (name, kind): their place in the registry
        self._own: dict[tuple[str, str], int] = {}

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
            group = MetricGroup(registry=self._registry, scope=scope, variables=variables)
            self._subgroups[key] = group
        return group

    def _metric(self, name: str, kind: str, make: Callable[[], Any]) -> Any:
        """The group's metric ``name`` of this kind, registered on first use: asking again
        (``counter("processed").inc()`` in ``map``, a common PyFlink style) gives the same
        metric, as PyFlink's groups (Beam's cells by name) do, not a new one per record."""
        place = self._own.get((str(name), kind))
        if place is not None:
            return self._registry[place].metric
        metric = make()
        self._own[(str(name), kind)] = len(self._registry)
        self._registry.append(Registered(self._scope, self._variables, str(name), kind, metric))
        return metric

    def counter(self, name: str) -> Counter:
        counter: Counter = self._metric(name, "counter", Counter)
        return counter

    def gauge(self, name: str, obj: Callable[[], Any]) -> None:
        """A gauge ``name`` reading ``obj``; registering the name again replaces the callable
        (PyFlink keeps the last one)."""
        place = self._own.get((str(name), "gauge"))
        if place is None:
            self._metric(name, "gauge", lambda: obj)
        else:
            self._registry[place] = Registered(
                self._scope, self._variables, str(name), "gauge", obj
            )

    def meter(self, name: str, time_span_in_seconds: int = 60) -> Meter:
        meter: Meter = self._metric(name, "meter", lambda: Meter(time_span_in_seconds))
        return meter

    def distribution(self, name: str) -> Distribution:
        distribution: Distribution = self._metric(name, "distribution", Distribution)
        return distribution

    def meters(self) -> list[Meter]:
        """The meters registered under this group's root (their views to update)."""
        return [r.metric for r in self._registry if isinstance(r.metric, Meter)]

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
