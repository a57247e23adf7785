"""Windows on actors (the deterministic simulation): Flink's own windowing examples and a
parallel job give what PyFlink 2.3 prints; event-time windows fire as watermarks pass while
records flow; processing-time windows on virtual time; count windows; window state and timers
restored from checkpoints, exactly once; the trace shows the window timers a snapshot held."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from actors.faults import CrashTask, FailTask
from ckptsim import StreamExecutionEnvironment
from ckptsim.testing import Simulation
from runtime.datastream import DataStream, KeyedStream
from runtime.functions import (
    AggregateFunction,
    AllWindowFunction,
    MapFunction,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    WindowFunction,
)
from runtime.operators import OperatorContext, SourceReader
from runtime.state import hash_code
from runtime.tracecheck import check_trace
from runtime.watermarks import MAX_WATERMARK, WatermarkStrategy
from runtime.windows import (
    EventTimeSessionWindows,
    ProcessingTimeSessionWindows,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
)

FLINK = Path(__file__).parent / "flink_windows"

# --- Flink's windowing examples (pyflink/examples/datastream/windowing), parallelism 1 ------------


class CountWindowProcessFunction(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        return [(key, context.window().start, context.window().end, len(list(elements)))]


class GapOfSecondField(SessionWindowTimeGapExtractor):
    def extract(self, element: Any) -> int:
        return int(element[1])


class SumWindowFunction(WindowFunction):
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        return [(key, sum(i[0] for i in inputs))]


def event_time_example(assigner: WindowAssigner, data: list[tuple[str, int]]) -> Any:
    def build(env: StreamExecutionEnvironment) -> None:
        env.set_parallelism(1)
        (
            env.from_collection(data)
            .assign_timestamps_and_watermarks(
                WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
                    lambda value, _: int(value[1])
                )
            )
            .key_by(lambda x: x[0])
            .window(assigner)
            .process(CountWindowProcessFunction())
            .collect("out")
        )

    return build


def tumbling_count_window(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(1)
    data = [(1, "hi"), (2, "hello"), (3, "hi"), (4, "hello"), (5, "hi"), (6, "hello"), (6, "hello")]
    env.from_collection(data).key_by(lambda x: x[1]).count_window(2).apply(
        SumWindowFunction()
    ).collect("out")


EXAMPLE_DATA = [("hi", 1), ("hi", 2), ("hi", 3), ("hi", 4), ("hi", 5), ("hi", 8), ("hi", 9)]
EXAMPLE_DATA += [("hi", 15)]
SESSION_DATA = [r for r in EXAMPLE_DATA if r[1] != 5]

#: what `python <example>.py` prints with apache-flink 2.3 (Java's tuple form, parsed)
FLINK_EXAMPLES: dict[str, tuple[Callable[[StreamExecutionEnvironment], None], list[Any]]] = {
    "tumbling_time_window": (
        event_time_example(TumblingEventTimeWindows.of(5), EXAMPLE_DATA),
        [("hi", 0, 5, 4), ("hi", 5, 10, 3), ("hi", 15, 20, 1)],
    ),
    "sliding_time_window": (
        event_time_example(SlidingEventTimeWindows.of(5, 2), EXAMPLE_DATA),
        [
            ("hi", -2, 3, 2),
            ("hi", 0, 5, 4),
            ("hi", 2, 7, 4),
            ("hi", 4, 9, 3),
            ("hi", 6, 11, 2),
            ("hi", 8, 13, 2),
            ("hi", 12, 17, 1),
            ("hi", 14, 19, 1),
        ],
    ),
    "session_with_gap_window": (
        event_time_example(EventTimeSessionWindows.with_gap(5), SESSION_DATA),
        [("hi", 1, 14, 6), ("hi", 15, 20, 1)],
    ),
    "session_with_dynamic_gap_window": (
        event_time_example(
            EventTimeSessionWindows.with_dynamic_gap(GapOfSecondField()), SESSION_DATA
        ),
        [("hi", 1, 30, 7)],
    ),
    "tumbling_count_window": (tumbling_count_window, [("hi", 4), ("hello", 6), ("hello", 12)]),
}


@pytest.mark.parametrize("example", sorted(FLINK_EXAMPLES))
def test_flink_s_windowing_examples_give_what_flink_prints(example: str) -> None:
    build, printed = FLINK_EXAMPLES[example]
    result = Simulation(seed=1).run(build)
    assert result.collected("out") == printed


# --- a parallel job, compared per subtask with PyFlink's output --------------------------------------

KEYS = "abcdefgh"
DATA = sorted(
    ((KEYS[(i * 5 + i // 7) % len(KEYS)], (i * 3) % 61 + i // 2, i % 11) for i in range(120)),
    key=lambda r: r[1],
)


def pyflink_key_hash(key: str) -> int:
    """Java's ``hashCode`` of the ``Row(key)`` PyFlink keys a stream by (``Row.of("a")``:
    159)."""
    return 62 + hash_code(key)


class CountSum(AggregateFunction):
    def create_accumulator(self) -> Any:
        return (0, 0)

    def add(self, value: Any, accumulator: Any) -> Any:
        return (accumulator[0] + 1, accumulator[1] + value[2])

    def get_result(self, accumulator: Any) -> Any:
        return accumulator

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])


class Bounds(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        for count, total in elements:
            yield ("sliding", key, context.window().start, context.window().end, count, total)


class Named(WindowFunction):
    def __init__(self, name: str) -> None:
        self.name = name

    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        for r in inputs:
            yield (self.name, key, window.start, window.end, r[1], r[2])


class CountOut(WindowFunction):
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        values = [r[2] for r in inputs]
        return [("count", key, window.id, len(values), sum(values), min(values))]


class BySubtask(MapFunction):
    """Tags each record with the print prefix Flink gives it (subtask index + 1)."""

    def open(self, runtime_context: Any) -> None:
        self.prefix = runtime_context.get_index_of_this_subtask() + 1

    def map(self, value: Any) -> Any:
        return (self.prefix, value)


def keyed_windows_p2(env: StreamExecutionEnvironment) -> None:
    """tests/actors/flink_windows/keyed_windows_p2.pyflink in ckptsim's spelling."""
    env.set_parallelism(1)
    keyed = (
        env.from_collection(DATA)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda r, _: r[1])
        )
        .key_by(lambda r: r[0], key_hash=pyflink_key_hash)
    )

    def out(stream: DataStream, name: str) -> None:
        tagged = stream.set_parallelism(2).map(BySubtask())  # type: ignore[arg-type]
        tagged.set_parallelism(2).collect(name)

    out(
        keyed.window(TumblingEventTimeWindows.of(10)).reduce(
            lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]), Named("tumbling")
        ),
        "tumbling",
    )
    out(keyed.window(SlidingEventTimeWindows.of(10, 5)).aggregate(CountSum(), Bounds()), "sliding")
    out(
        keyed.window(EventTimeSessionWindows.with_gap(3)).reduce(
            lambda a, b: (a[0], a[1], a[2] + b[2]), Named("session")
        ),
        "session",
    )
    out(keyed.count_window(3, 2).apply(CountOut()), "count")


def by_subtask(lines: Iterable[tuple[int, tuple[Any, ...]]]) -> dict[int, list[tuple[Any, ...]]]:
    out: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for subtask, record in lines:
        out[subtask].append(record)
    return dict(out)


def flink_printed(name: str) -> list[tuple[int, tuple[Any, ...]]]:
    """Flink's print lines ``N> (a,b,...)`` as (N, fields)."""
    lines = []
    for line in (FLINK / name).read_text().splitlines():
        prefix, text = line.split("> ", 1)
        fields = tuple(
            int(f) if f.lstrip("-").isdigit() else f for f in text.strip("()").split(",")
        )
        lines.append((int(prefix), fields))
    return lines


def test_windows_at_parallelism_two_print_what_pyflink_prints_subtask_by_subtask() -> None:
    """Tumbling reduce, sliding aggregate with a ProcessWindowFunction, sessions, sliding count
    windows over 8 keys on 2 subtasks: each subtask's records and their order equal PyFlink's
    (which keys a subtask owns, and equal-timestamp windows firing in its timer heap's order)."""
    result = Simulation(seed=3).run(
        keyed_windows_p2, {"pipeline.auto-watermark-interval": "10 min"}
    )
    flink = flink_printed("keyed_windows_p2.out")
    for kind in ("tumbling", "sliding", "session", "count"):
        ours = by_subtask(result.collected(kind))
        theirs = by_subtask((p, r) for p, r in flink if r[0] == kind)
        assert set(ours) == {1, 2}
        assert ours == theirs, kind


# --- window_all: the whole stream, at parallelism 1 --------------------------------------------------

ALL_DATA = sorted(((f"k{i % 3}", (i * 7) % 23 + i, i % 5) for i in range(40)), key=lambda r: r[1])


class AllBounds(AllWindowFunction):
    def apply(self, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        for r in inputs:
            yield ("tumbling", window.start, window.end, r[1], r[2])


class AllKeys(ProcessAllWindowFunction):
    def process(self, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        keys = sorted({e[0] for e in elements})
        w = context.window()
        yield ("sliding", w.start, w.end, len(keys), "+".join(keys))


class SessionCountSum(CountSum):
    def get_result(self, accumulator: Any) -> Any:
        return ("session", *accumulator)


def window_all_job(env: StreamExecutionEnvironment) -> None:
    """tests/actors/flink_windows/window_all.pyflink in ckptsim's spelling."""
    env.set_parallelism(1)
    timed = env.from_collection(ALL_DATA).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda r, _: r[1])
    )
    timed.window_all(TumblingEventTimeWindows.of(10)).reduce(
        lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]), AllBounds()
    ).collect("tumbling")
    timed.window_all(SlidingEventTimeWindows.of(10, 4)).process(AllKeys()).collect("sliding")
    timed.window_all(EventTimeSessionWindows.with_gap(2)).aggregate(SessionCountSum()).collect(
        "session"
    )


def test_window_all_gives_what_pyflink_prints() -> None:
    result = Simulation(seed=4).run(window_all_job, {"pipeline.auto-watermark-interval": "10 min"})
    printed = [
        ast.literal_eval(line)
        for line in (FLINK / "window_all.out").read_text().split("\n")
        if line
    ]
    assert len(printed) == 28
    for kind in ("tumbling", "sliding", "session"):
        assert result.collected(kind) == [p for p in printed if p[0] == kind], kind


# --- event time with watermarks while records flow ---------------------------------------------------

# (key, timestamp, value): 5 keys, timestamps 0..3990 ms, a little out of order (up to 40 ms)
EVENTS = [(f"k{i % 5}", i * 10 + (i * 37) % 5 * 10 - 20 * (i % 3 == 0), i % 7) for i in range(400)]
EVENTS = [(k, max(0, ts), v) for k, ts, v in EVENTS]

# watermarks every 20 ms of virtual time; the source emits its 400 records over 1.3 s
STREAMING = {"ckptsim.buffer.records": 20, "pipeline.auto-watermark-interval": "20 ms"}


class Described(ProcessWindowFunction):
    """(key, start, end, count, sum, fired before the end of input)."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        values = [e[2] for e in elements]
        w = context.window()
        before_end = context.current_watermark() != MAX_WATERMARK
        yield (key, w.start, w.end, len(values), sum(values), before_end)


def event_time_job(assigner: WindowAssigner, parallelism: int = 2) -> Any:
    def build(env: StreamExecutionEnvironment) -> None:
        env.set_parallelism(parallelism)
        env.enable_checkpointing(40)
        (
            env.from_generator(EVENTS.__getitem__, len(EVENTS), rate=300)
            .set_parallelism(1)
            .assign_timestamps_and_watermarks(
                WatermarkStrategy.for_bounded_out_of_orderness(50).with_timestamp_assigner(
                    lambda e, _: e[1]
                )
            )
            .set_parallelism(1)
            .key_by(lambda e: e[0])
            .window(assigner)
            .process(Described())
            .collect("windows")
        )

    return build


def windows_of(events: Sequence[tuple[str, int, int]], windows: Any) -> list[Any]:
    """Plain Python: per key and window, count and sum of the values."""
    acc: dict[tuple[str, int, int], list[int]] = defaultdict(list)
    for key, ts, value in events:
        for start, end in windows(ts):
            acc[(key, start, end)].append(value)
    return sorted((k, s, e, len(v), sum(v)) for (k, s, e), v in acc.items())


def sessions_of(events: Sequence[tuple[str, int, int]], gap_of: Callable[[Any], int]) -> list[Any]:
    out = []
    per_key: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for key, ts, value in events:
        per_key[key].append((ts, ts + gap_of((key, ts, value)), value))
    for key, spans in per_key.items():
        spans.sort()
        start, end, values = spans[0][0], spans[0][1], [spans[0][2]]
        for s, e, v in spans[1:]:
            if s <= end:  # overlapping or touching windows merge
                end, values = max(end, e), [*values, v]
            else:
                out.append((key, start, end, len(values), sum(values)))
                start, end, values = s, e, [v]
        out.append((key, start, end, len(values), sum(values)))
    return sorted(out)


def tumbling(size: int) -> Callable[[int], list[tuple[int, int]]]:
    return lambda ts: [(ts - ts % size, ts - ts % size + size)]


def sliding(size: int, slide: int) -> Callable[[int], list[tuple[int, int]]]:
    def of(ts: int) -> list[tuple[int, int]]:
        last = ts - ts % slide
        return [(s, s + size) for s in range(last, ts - size, -slide)]

    return of


EVENT_TIME_CASES: dict[str, tuple[WindowAssigner, list[Any]]] = {
    "tumbling": (TumblingEventTimeWindows.of(500), windows_of(EVENTS, tumbling(500))),
    "sliding": (SlidingEventTimeWindows.of(600, 200), windows_of(EVENTS, sliding(600, 200))),
    "session": (EventTimeSessionWindows.with_gap(45), sessions_of(EVENTS, lambda e: 45)),
    "dynamic session": (
        EventTimeSessionWindows.with_dynamic_gap(lambda e: 20 + e[2] * 5),
        sessions_of(EVENTS, lambda e: 20 + e[2] * 5),
    ),
}


@pytest.mark.parametrize("case", sorted(EVENT_TIME_CASES))
def test_event_time_windows_fire_as_watermarks_pass_them_while_records_flow(case: str) -> None:
    assigner, expected = EVENT_TIME_CASES[case]
    result = Simulation(seed=5).run(event_time_job(assigner), STREAMING)
    fired = result.collected("windows")
    assert sorted(w[:5] for w in fired) == expected
    # most windows fired as the watermark passed them, not at the end of input
    assert sum(1 for w in fired if w[5]) > len(fired) * 3 // 4


# --- processing time on the simulation's virtual clock ----------------------------------------------


class Bursts(SourceReader):
    """``bursts`` bursts of records ``(key, burst, n)``, one every ``pause_ms`` of (virtual)
    processing time, each read at once; the input ends ``pause_ms`` after the last."""

    def __init__(self, bursts: int, per_burst: int, pause_ms: int) -> None:
        self.bursts = bursts
        self.per_burst = per_burst
        self.pause_ms = pause_ms
        self.started: int | None = None
        self.emitted = 0

    def read(self, max_records: int, now: int) -> Sequence[Any] | None:
        if self.started is None:
            self.started = now
        if self.emitted == self.bursts:
            return None if now >= self.started + self.bursts * self.pause_ms else []
        if now < self.started + self.emitted * self.pause_ms:
            return []
        burst = self.emitted
        self.emitted += 1
        return [(f"k{n % 3}", burst, n) for n in range(self.per_burst)]

    def next_ready(self, now: int) -> int | None:
        if self.started is None:
            return None
        return max(now + 1, self.started + self.emitted * self.pause_ms)

    def position(self) -> Any:
        return {"emitted": self.emitted}

    def seek(self, position: Any) -> None:
        self.emitted = int(position["emitted"])


class BurstsInWindow(ProcessWindowFunction):
    """(key, start, end, the bursts in the window, records)."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        records = list(elements)
        w = context.window()
        yield (key, w.start, w.end, sorted({r[1] for r in records}), len(records))


def processing_time_job(assigner: WindowAssigner) -> Any:
    def build(env: StreamExecutionEnvironment) -> None:
        env.set_parallelism(2)

        def reader(ctx: OperatorContext) -> SourceReader:
            return Bursts(bursts=6, per_burst=30, pause_ms=1000)

        keyed: KeyedStream = env.from_source(reader, name="bursts", parallelism=1).key_by(
            lambda r: r[0]
        )
        (
            keyed.window(assigner)
            .process(BurstsInWindow())
            .process(lambda value, ctx: [(value, ctx.timestamp())])
            .collect("windows")
        )

    return build


def test_tumbling_processing_time_windows_hold_whole_bursts_and_fire_on_virtual_time() -> None:
    result = Simulation(seed=6).run(processing_time_job(TumblingProcessingTimeWindows.of(1000)))
    fired = result.collected("windows")
    per_key: dict[str, list[int]] = defaultdict(list)
    for (key, start, end, bursts, records), ts in fired:
        assert end - start == 1000 and start % 1000 == 0  # aligned to the epoch
        assert ts == end - 1  # the window's max timestamp
        assert records == 10 * len(bursts)  # every burst whole
        per_key[key].extend(bursts)
    # every burst once per key, in order (a burst is read at once, processed at one time)
    assert {k: sorted(b) for k, b in per_key.items()} == {f"k{i}": list(range(6)) for i in range(3)}


def test_sliding_processing_time_windows_hold_each_burst_twice() -> None:
    assigner = SlidingProcessingTimeWindows.of(2000, 1000)
    fired = [
        w for w, _ in Simulation(seed=7).run(processing_time_job(assigner)).collected("windows")
    ]
    seen: dict[tuple[str, int], int] = defaultdict(int)
    for key, start, end, bursts, _ in fired:
        assert end - start == 2000 and start % 1000 == 0
        for burst in bursts:
            seen[(key, burst)] += 1
    # each burst is in two windows; the last one's second window ends after the input did
    # (pending processing-time timers are dropped at the end of input, as in Flink)
    assert {k: n for k, n in seen.items() if k[1] < 5} == {
        (f"k{i}", b): 2 for i in range(3) for b in range(5)
    }
    assert {seen[(f"k{i}", 5)] for i in range(3)} == {1}


@pytest.mark.parametrize(
    "assigner",
    [
        ProcessingTimeSessionWindows.with_gap(300),
        ProcessingTimeSessionWindows.with_dynamic_gap(lambda r: 100 + r[2]),
    ],
    ids=["gap", "dynamic gap"],
)
def test_processing_time_sessions_close_after_their_gap_of_virtual_time(
    assigner: WindowAssigner,
) -> None:
    fired = [
        w for w, _ in Simulation(seed=8).run(processing_time_job(assigner)).collected("windows")
    ]
    # a burst per session: its records arrive within a few ms, the next burst a second later
    assert sorted((key, bursts, n) for key, _, _, bursts, n in fired) == sorted(
        (f"k{i}", [b], 10) for i in range(3) for b in range(6)
    )
    for _, start, end, _, _ in fired:
        assert 100 <= end - start < 1000


# --- count windows ----------------------------------------------------------------------------


def count_windows_job(size: int, slide: int | None) -> Any:
    def build(env: StreamExecutionEnvironment) -> None:
        env.set_parallelism(2)
        env.enable_checkpointing(20)
        (
            env.from_generator(lambda i: (i % 4, i), 203, rate=400)
            .set_parallelism(1)
            .key_by(lambda r: r[0])
            .count_window(size, slide)
            .apply(lambda key, window, inputs: [(key, window.id, [v for _, v in inputs])])
            .collect("counts")
        )

    return build


def expected_count_windows(size: int, slide: int) -> list[Any]:
    """PyFlink's count windows: window i of a key holds its records i*slide .. i*slide+size-1,
    and fires once it has them all."""
    out = []
    for key in range(4):
        values = [i for i in range(203) if i % 4 == key]
        for index in range(len(values)):
            window = values[index * slide : index * slide + size]
            if len(window) == size:
                out.append((key, index, window))
    return sorted(out)


@pytest.mark.parametrize(("size", "slide"), [(5, None), (5, 2), (3, 4)])
def test_count_windows_fire_per_key_every_size_records(size: int, slide: int | None) -> None:
    result = Simulation(seed=9).run(count_windows_job(size, slide), {"ckptsim.buffer.records": 16})
    assert sorted(result.collected("counts")) == expected_count_windows(size, slide or size)


# --- checkpoints: window state and timers, restored exactly once ---------------------------------------


@pytest.mark.parametrize(
    ("fault", "unaligned"),
    [
        (FailTask(task="window-3#1", at_record=150), False),
        (CrashTask(task="window-3#0", at_record=200), True),
    ],
    ids=["fail-aligned", "crash-unaligned"],
)
def test_window_state_and_timers_are_restored_and_the_output_stays_exactly_once(
    fault: FailTask | CrashTask, unaligned: bool
) -> None:
    settings = {
        **STREAMING,
        "restart-strategy.type": "fixed-delay",
        "execution.checkpointing.unaligned.enabled": unaligned,
    }

    def job(env: StreamExecutionEnvironment) -> None:
        event_time_job(EventTimeSessionWindows.with_gap(45))(env)
        env.inject_faults(fault)

    sim = Simulation(seed=4)
    result = sim.run(job, settings)
    assert result.succeeded and result.restarts == 1
    assert sorted(w[:5] for w in result.collected("windows")) == EVENT_TIME_CASES["session"][1]


def test_the_trace_shows_the_window_timers_each_snapshot_held_and_a_restore_gave_back() -> None:
    """Every checkpoint of the window operator lists its pending window timers (one per
    in-flight window and key: trigger and cleanup timer coincide); the restore after a failure
    gives them all back (the trace checker's restore-timers rule), and a trace that loses one
    is a violation."""
    settings = {**STREAMING, "restart-strategy.type": "fixed-delay"}

    def job(env: StreamExecutionEnvironment) -> None:
        event_time_job(TumblingEventTimeWindows.of(500))(env)
        env.inject_faults(FailTask(task="window-3#0", at_record=200))

    sim = Simulation(seed=2)
    sim.run(job, settings)
    taken = [e for e in sim.events if e["event"] == "checkpoint_taken"]
    held = [e["timers"]["window-3"] for e in taken if "window-3" in e.get("timers", {})]
    # a subtask holds the open windows of its keys: at most 2 windows (watermark lag) x keys
    assert held and all(1 <= n <= 2 * 5 for n in held)
    restored = [e for e in sim.events if e["event"] == "task_restored" and e.get("timers")]
    assert restored and check_trace(sim.events).ok
    restored[0]["timers"]["window-3"] += 1
    violation = check_trace(sim.events).violation
    assert violation is not None and violation.rule == "restore-timers"


def test_in_batch_mode_each_key_s_windows_fire_at_its_end_with_the_streaming_result() -> None:
    def job(env: StreamExecutionEnvironment) -> None:
        env.set_runtime_mode("BATCH")
        event_time_job(EventTimeSessionWindows.with_gap(45), parallelism=1)(env)

    fired = Simulation(seed=1).run(job, STREAMING).collected("windows")
    assert sorted(w[:5] for w in fired) == EVENT_TIME_CASES["session"][1]
    assert not any(w[5] for w in fired)  # all with the watermark at the end of time
    assert [w[0] for w in fired] == sorted(w[0] for w in fired)  # key after key, in order
