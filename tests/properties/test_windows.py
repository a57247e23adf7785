"""Windows under failures, on the deterministic simulation: a windowed job (tumbling, sliding,
session or count windows; reduce, aggregate, process or apply) whose window task or source
fails or crashes at a random record, restarting with a fixed delay, aligned or unaligned.

Window contents, trigger state, merging-window sets and window timers are keyed state, so the
restored job must go on exactly where its checkpoint left it: the committed output of the
collect sink (transactional: published on checkpoint completion) is exactly the failure-free
output, which plain Python computes. Every run's trace is also checked (consistent cuts,
restores that give back the timers their snapshots held). A failing example prints the
``Simulation(seed=..., schedule=..., faults=...)`` that replays it:
``Simulation(...).run(windowed_job(kind), settings)``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from ckptsim import StreamExecutionEnvironment
from ckptsim.testing import TASK_FAILURES, FaultSpec, Simulation, simulations
from runtime.datastream import DataStream, KeyedStream
from runtime.functions import AggregateFunction, ProcessWindowFunction
from runtime.status import JobStatus
from runtime.watermarks import WatermarkStrategy
from runtime.windows import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from tests.conftest import system_examples

# (key, timestamp, value): 4 keys (two per window subtask), out of order by up to 30 ms (never
# late: the watermark trails the largest timestamp by 30 ms), with pauses that end sessions
KEYS = (3, 4, 5, 6)
COUNT = 240
EVENTS = [
    (KEYS[i % 4], i * 10 + (i * 7) % 4 * 10 - 30 + 200 * (i // 60), (i * 13) % 10)
    for i in range(COUNT)
]

RESTARTS: dict[str, object] = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": 5,
    "restart-strategy.fixed-delay.delay": "5 ms",
    "execution.checkpointing.tolerable-failed-checkpoints": 1000,
    "execution.checkpointing.timeout": "60 ms",
    "ckptsim.buffer.records": 16,
    "pipeline.auto-watermark-interval": "15 ms",
}


class Sum(AggregateFunction):
    def create_accumulator(self) -> Any:
        return (0, 0)

    def add(self, value: Any, accumulator: Any) -> Any:
        return (accumulator[0] + 1, accumulator[1] + value[2])

    def get_result(self, accumulator: Any) -> Any:
        return accumulator

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])


class Describe(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        values = [e[2] for e in elements]
        yield (key, context.window().start, context.window().end, len(values), sum(values))


def _tumbling(keyed: KeyedStream) -> DataStream:
    return keyed.window(TumblingEventTimeWindows.of(150)).reduce(
        lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]),
        lambda key, window, reduced: [(key, window.start, window.end, *reduced[0][1:])],
    )


def _sliding(keyed: KeyedStream) -> DataStream:
    return keyed.window(SlidingEventTimeWindows.of(200, 100)).aggregate(
        Sum(), lambda key, window, acc: [(key, window.start, window.end, *acc[0])]
    )


def _session(keyed: KeyedStream) -> DataStream:
    return keyed.window(EventTimeSessionWindows.with_gap(60)).process(Describe())


def _count(keyed: KeyedStream) -> DataStream:
    return keyed.count_window(5, 3).apply(
        lambda key, window, inputs: [(key, window.id, sorted(e[1] for e in inputs))]
    )


WINDOWS: dict[str, Callable[[KeyedStream], DataStream]] = {
    "tumbling reduce": _tumbling,
    "sliding aggregate": _sliding,
    "session process": _session,
    "count apply": _count,
}


def windowed_job(kind: str) -> Callable[[StreamExecutionEnvironment], None]:
    def build(env: StreamExecutionEnvironment) -> None:
        env.set_parallelism(2)
        keyed = (
            env.from_generator(EVENTS.__getitem__, COUNT, rate=COUNT * 2)  # half a second
            .set_parallelism(1)
            .assign_timestamps_and_watermarks(
                WatermarkStrategy.for_bounded_out_of_orderness(30).with_timestamp_assigner(
                    lambda e, _: e[1]
                )
            )
            .set_parallelism(1)
            .key_by(lambda e: e[0])
        )
        WINDOWS[kind](keyed).collect("out")

    return build


def failure_free(kind: str) -> Counter[Any]:
    """Plain Python: what the job emits when nothing fails."""
    out: list[Any] = []
    if kind == "count apply":
        for key in KEYS:
            times = [ts for k, ts, _ in EVENTS if k == key]
            for index in range(len(times)):
                window = times[index * 3 : index * 3 + 5]
                if len(window) == 5:
                    out.append((key, index, tuple(sorted(window))))
        return Counter(out)
    groups: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    stamps: dict[tuple[int, int, int], int] = {}
    if kind == "session process":
        for key in KEYS:
            spans = sorted((ts, v) for k, ts, v in EVENTS if k == key)
            start, end, values = spans[0][0], spans[0][0] + 60, [spans[0][1]]
            for ts, v in spans[1:]:
                if ts <= end:
                    end, values = max(end, ts + 60), [*values, v]
                else:
                    groups[(key, start, end)] = values
                    start, end, values = ts, ts + 60, [v]
            groups[(key, start, end)] = values
    else:
        size, slide = (150, 150) if kind == "tumbling reduce" else (200, 100)
        for key, ts, value in EVENTS:
            last = ts - ts % slide
            for start in range(last, ts - size, -slide):
                groups[(key, start, start + size)].append(value)
                if kind == "tumbling reduce":  # (latest timestamp, sum)
                    stamps[(key, start, start + size)] = max(
                        stamps.get((key, start, start + size), ts), ts
                    )
    for (key, start, end), values in groups.items():
        first = stamps[(key, start, end)] if kind == "tumbling reduce" else len(values)
        out.append((key, start, end, first, sum(values)))
    return Counter(out)


def _hashable(record: Any) -> Any:
    return tuple(tuple(f) if isinstance(f, list) else f for f in record)


def test_the_failure_free_expectation_is_what_a_run_without_failures_commits() -> None:
    """The property's reference (plain Python) is the failure-free output."""
    for kind in WINDOWS:
        result = Simulation(seed=11).run(
            windowed_job(kind), {**RESTARTS, "execution.checkpointing.interval": "20 ms"}
        )
        assert Counter(_hashable(r) for r in result.collected("out")) == failure_free(kind), kind


#: one or two task failures or actor crashes within the records a task of this job processes
FAILURES = st.lists(
    st.builds(
        FaultSpec,
        kind=st.sampled_from(TASK_FAILURES),
        target=st.integers(0, 63),
        at_record=st.integers(1, 130),
    ),
    min_size=1,
    max_size=2,
)


@st.composite
def failing_simulations(draw: st.DrawFn) -> Simulation:
    """A seed and schedule, and task failures at records this job reaches."""
    sim = draw(simulations())
    return Simulation(seed=sim.seed, schedule=sim.schedule, faults=tuple(draw(FAILURES)))


@settings(max_examples=max(4, system_examples() // 8))
@given(
    kind=st.sampled_from(sorted(WINDOWS)),
    sim=failing_simulations(),
    unaligned=st.booleans(),
    interval=st.integers(10, 30),
)
def test_a_windowed_job_commits_the_failure_free_output_exactly_once_however_it_fails(
    kind: str, sim: Simulation, unaligned: bool, interval: int
) -> None:
    """Exactly-once with windows: whatever task fails or crashes at whatever record, the
    committed output of the recovered job equals the failure-free output (no window lost,
    none fired twice, none with a record missing or counted twice): window contents, trigger
    state, session merges and window timers all come back from the restored checkpoint."""
    note(f"replay: {sim!r}.run(windowed_job({kind!r}), settings)")
    settings_ = {
        **RESTARTS,
        "execution.checkpointing.interval": f"{interval} ms",
        "execution.checkpointing.unaligned.enabled": unaligned,
    }
    result = sim.run(windowed_job(kind), settings_)
    assert result.status is JobStatus.FINISHED, (result.failure, result.failures)
    assert sim.report is not None and sim.report.ok
    event(f"restarts: {result.restarts}")
    observed = Counter(_hashable(r) for r in result.collected("out"))
    assert observed == failure_free(kind)
