"""Event time on actors: timestamps and watermarks across tasks, keyed timers (event and
processing time, on the simulation's virtual clock), the end of input firing every event-time
timer, and timers restored from checkpoints, exactly once."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from actors.faults import FailTask
from ckptsim import StreamExecutionEnvironment
from ckptsim.testing import Simulation
from runtime.functions import KeyedProcessFunction
from runtime.state import MapStateDescriptor
from runtime.tracecheck import check_trace
from runtime.watermarks import MAX_WATERMARK, MIN_WATERMARK, WatermarkStrategy

# (ts, key, value): bursts of a second, a second apart
EVENTS = [(ts, f"k{ts % 7}", ts % 13) for ts in range(0, 30_000, 10) if ts // 1000 % 2 == 0]


class SumPerSecond(KeyedProcessFunction):
    """Sums a key's values per second of event time; the timer at the end of each second
    emits that second's sum (map state: second -> sum)."""

    def open(self, runtime_context: Any) -> None:
        self.sums = runtime_context.get_map_state(MapStateDescriptor("sums"))

    def process_element(self, value: Any, ctx: Any) -> None:
        second = ctx.timestamp() // 1000
        self.sums.put(second, (self.sums.get(second) or 0) + value[2])
        ctx.timer_service().register_event_time_timer(second * 1000 + 999)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        second = timestamp // 1000
        at_end = ctx.timer_service().current_watermark() == MAX_WATERMARK
        yield (ctx.get_current_key(), second, self.sums.get(second), at_end)
        self.sums.remove(second)


def expected_sessions(events: list[tuple[int, str, int]]) -> list[tuple[str, int, int]]:
    """Plain Python: per key and second, the sum of the values."""
    sums: dict[tuple[str, int], int] = {}
    for ts, key, value in events:
        sums[(key, ts // 1000)] = sums.get((key, ts // 1000), 0) + value
    return sorted((k, second, total) for (k, second), total in sums.items())


def sessions(result: Any) -> list[tuple[str, int, int]]:
    return sorted((k, ts, total) for k, ts, total, _ in result.collected("sessions"))


def sessions_job(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(2)
    env.enable_checkpointing(30)
    (
        env.from_generator(EVENTS.__getitem__, len(EVENTS), rate=3000)  # 1 s of (virtual) time
        .set_parallelism(1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[0])
        )
        .set_parallelism(1)
        .key_by(lambda e: e[1])
        .process(SumPerSecond())
        .collect("sessions")
    )


# the source reads 100 records per step and watermarks come every 20 ms of virtual time, so
# timers fire while records still flow (not all at the end of input)
SETTINGS = {"ckptsim.buffer.records": 100, "pipeline.auto-watermark-interval": "20 ms"}


def test_event_time_timers_fire_as_the_watermark_passes_them_across_tasks() -> None:
    result = Simulation(seed=1).run(sessions_job, SETTINGS)
    assert result.succeeded
    assert sessions(result) == expected_sessions(EVENTS)
    # watermarks came while records flowed: most timers fired before the end of input
    at_end = [s for s in result.collected("sessions") if s[3]]
    assert len(at_end) < len(result.collected("sessions")) / 2


@pytest.mark.parametrize("unaligned", [False, True])
def test_timers_are_restored_from_the_checkpoint_and_the_output_stays_exactly_once(
    unaligned: bool,
) -> None:
    """A task with pending timers fails midway: the restored timers fire once, none is lost
    or repeated in the committed output."""
    settings = {
        **SETTINGS,
        "execution.checkpointing.unaligned.enabled": unaligned,
        "restart-strategy.type": "fixed-delay",
    }

    def job(env: StreamExecutionEnvironment) -> None:
        sessions_job(env)
        env.inject_faults(FailTask(task="process-3#1", at_record=300))

    result = Simulation(seed=4).run(job, settings)
    assert result.succeeded and result.restarts == 1
    assert sessions(result) == expected_sessions(EVENTS)


class Watermarks(KeyedProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        yield ctx.timer_service().current_watermark()


def test_a_task_s_watermark_is_the_minimum_over_its_inputs() -> None:
    """Two sources, one far behind in event time: downstream, the watermark never passes the
    slower one's, and the end of input brings the end of event time."""

    def job(env: StreamExecutionEnvironment) -> None:
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
            lambda e, _: e
        )
        fast = env.from_collection(range(100_000, 200_000, 10)).set_parallelism(1)
        slow = env.from_collection(range(0, 1_000, 10)).set_parallelism(1)
        fast = fast.assign_timestamps_and_watermarks(strategy).set_parallelism(1)
        slow = slow.assign_timestamps_and_watermarks(strategy).set_parallelism(1)
        fast.union(slow).key_by(lambda e: 0).process(Watermarks()).set_parallelism(1).collect(
            "seen"
        )

    result = Simulation(seed=2).run(job, {**SETTINGS, "parallelism.default": 1})
    seen = result.collected("seen")
    assert len(seen) == 10_000 + 100
    assert max(seen) < 1_000  # the slow source's events end at 990
    assert min(seen) == MIN_WATERMARK


class FireAtEnd(KeyedProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> None:
        ctx.timer_service().register_event_time_timer(10**12)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        yield (ctx.get_current_key(), ctx.timer_service().current_watermark())


def test_the_end_of_input_fires_every_event_time_timer_even_without_watermarks() -> None:
    def job(env: StreamExecutionEnvironment) -> None:
        (
            env.from_collection(range(50))
            .assign_timestamps_and_watermarks(
                WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda e, _: e)
            )
            .key_by(lambda e: e % 5)
            .process(FireAtEnd())
            .collect("fired")
        )

    result = Simulation(seed=3).run(job, {"parallelism.default": 2})
    assert sorted(result.collected("fired")) == [(k, MAX_WATERMARK) for k in range(5)]


class EveryVirtualSecond(KeyedProcessFunction):
    """Processing-time timers: one second after a key's first record, emit its count."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state("count")

    def process_element(self, value: Any, ctx: Any) -> None:
        if self.count.value() is None:
            now = ctx.timer_service().current_processing_time()
            ctx.timer_service().register_processing_time_timer(now + 1000)
        self.count.update((self.count.value() or 0) + 1)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        yield (ctx.get_current_key(), self.count.value(), ctx.time_domain().name)
        self.count.clear()


def test_processing_time_timers_fire_on_the_simulation_s_virtual_clock() -> None:
    """A rate-limited source (100 records per second over 3 s): each key's timer fires a
    second of virtual time after its first record, with what arrived by then."""

    def job(env: StreamExecutionEnvironment) -> None:
        (
            env.from_generator(lambda i: i, 300, rate=100)
            .set_parallelism(1)
            .key_by(lambda i: i // 100)
            .process(EveryVirtualSecond())
            .set_parallelism(1)
            .collect("counts")
        )

    result = Simulation(seed=5).run(job, {"parallelism.default": 1})
    # a key's 100 records arrive within the second after its first: its timer counts them;
    # the last key's timer is still pending when the input ends, and is dropped (as Flink
    # quiesces the processing-time service at the end of input)
    assert result.collected("counts") == [(0, 100, "PROCESSING_TIME"), (1, 100, "PROCESSING_TIME")]


@pytest.mark.parametrize(
    ("kind", "rule"),
    [("timers", "restore-timers"), ("state_entries", "restore-keyed-state")],
)
def test_the_trace_checker_sees_the_keyed_state_a_snapshot_held_come_back_on_restore(
    kind: str, rule: str
) -> None:
    """Snapshots log their pending timers and keyed state entries (map, window and other
    keyed state) per operator, restores what they gave back; the trace checker requires the
    two to match (planted: one timer, or one entry, lost on restore)."""
    settings = {**SETTINGS, "restart-strategy.type": "fixed-delay"}

    def job(env: StreamExecutionEnvironment) -> None:
        sessions_job(env)
        env.inject_faults(FailTask(task="process-3#1", at_record=300))

    sim = Simulation(seed=4)
    sim.run(job, settings)
    events = sim.events
    restored = [e for e in events if e["event"] == "task_restored"]
    held = [e for e in events if e["event"] == "checkpoint_taken" and e.get(kind)]
    assert held and any(e.get(kind) for e in restored)
    assert check_trace(events).ok
    lost = next(e for e in restored if e.get(kind))
    uid = next(iter(lost[kind]))
    lost[kind][uid] -= 1
    violation = check_trace(events).violation
    assert violation is not None and violation.rule == rule
    assert f"operator {uid} restored" in violation.message


@pytest.mark.parametrize("idleness", [0, 100])
def test_an_idle_source_does_not_hold_back_the_watermark(idleness: int) -> None:
    """A source that sends a record a second, beside one that runs far ahead in event time:
    with ``with_idleness(100 ms)`` the slow one goes idle between its records and the watermark
    downstream follows the fast one; without, the slow one holds it back."""

    def job(env: StreamExecutionEnvironment) -> None:
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
            lambda e, _: e
        )
        if idleness:
            strategy = strategy.with_idleness(idleness)
        slow = env.from_generator(lambda i: i, 5, rate=1).set_parallelism(1)
        fast = env.from_generator(lambda i: 10_000 + i, 2000, rate=1000).set_parallelism(1)
        slow = slow.assign_timestamps_and_watermarks(strategy).set_parallelism(1)
        fast = fast.assign_timestamps_and_watermarks(strategy).set_parallelism(1)
        fast.union(slow).key_by(lambda e: 0).process(Watermarks()).set_parallelism(1).collect(
            "seen"
        )

    settings = {**SETTINGS, "parallelism.default": 1}
    seen = Simulation(seed=6).run(job, settings).collected("seen")
    running = [w for w in seen if w != MAX_WATERMARK]
    if idleness:
        assert max(running) > 10_000
    else:
        assert max(running) < 10
