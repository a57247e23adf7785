"""Watermark alignment (Flink's FLIP-182, ``with_watermark_alignment``) on the simulation: two
sources of one alignment group, one ten times faster in event time than the other. The
sources report their watermarks to the JobMaster, which announces the group's minimum plus the
allowed drift every update interval; the fast one pauses while it is ahead of that and goes on
when the slow one catches up. It still takes every checkpoint while it is paused."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from actors.faults import FailTask
from ckptsim import StreamExecutionEnvironment
from ckptsim.testing import Simulation
from runtime.operators import OperatorContext
from runtime.watermarks import BoundedOutOfOrdernessGenerator, WatermarkStrategy

#: event time per record: the slow source's records are 1 ms apart, the fast one's 10 ms;
#: both read 10 records per ms of (virtual) processing time
SLOW_STEP, FAST_STEP, PER_MS = 1, 10, 10
SLOW_RECORDS, FAST_RECORDS = 22_000, 2_000
DRIFT, UPDATE_INTERVAL, WATERMARK_INTERVAL = 1_000, 20, 5
SETTINGS = {
    "parallelism.default": 1,
    "pipeline.auto-watermark-interval": f"{WATERMARK_INTERVAL} ms",
    "ckptsim.buffer.records": PER_MS,
}

#: (source, watermark) in the order the sources' generators emitted them (the simulation runs
#: one actor at a time, so the order is the run's)
EMITTED: list[tuple[str, int]] = []


class Backlog:
    """A source with a backlog (as a Kafka partition behind): record ``n`` is ``n * step``
    ms of event time; it reads ``PER_MS`` records a millisecond and does not catch up after a
    pause (the next read goes on at the same pace)."""

    def __init__(self, count: int, step: int) -> None:
        self.count, self.step = count, step
        self.index = 0
        self.ready_at = 0

    def read(self, max_records: int, now: int) -> Sequence[Any] | None:
        if self.index >= self.count:
            return None
        if now < self.ready_at:
            return []
        stop = min(self.count, self.index + min(max_records, PER_MS))
        batch = [(n, n * self.step) for n in range(self.index, stop)]
        self.index, self.ready_at = stop, now + 1
        return batch

    def next_ready(self, now: int) -> int | None:
        return None if self.index >= self.count else max(self.ready_at, now + 1)

    def position(self) -> Any:
        return self.index

    def seek(self, position: Any) -> None:
        self.index = int(position)


class Recording(BoundedOutOfOrdernessGenerator):
    """Monotonous timestamps; records each watermark it emits in ``EMITTED``."""

    def __init__(self, name: str) -> None:
        super().__init__(0)
        self.name = name
        self.last: int | None = None

    def on_periodic_emit(self) -> int | None:
        watermark = super().on_periodic_emit()
        if watermark is not None and watermark != self.last:
            self.last = watermark
            EMITTED.append((self.name, watermark))
        return watermark


def strategy(name: str, aligned: bool) -> WatermarkStrategy:
    made = WatermarkStrategy.for_generator(lambda: Recording(name)).with_timestamp_assigner(
        lambda e, _: e[1]
    )
    return made.with_watermark_alignment("feeds", DRIFT, UPDATE_INTERVAL) if aligned else made


def job(aligned: bool, *, fail: bool = False) -> Any:
    def build(env: StreamExecutionEnvironment) -> None:
        env.enable_checkpointing(30)

        def source(name: str, count: int, step: int) -> Any:
            def reader(ctx: OperatorContext) -> Backlog:
                return Backlog(count, step)

            return env.from_source(reader, name=name, uid=name).assign_timestamps_and_watermarks(
                strategy(name, aligned)
            )

        fast = source("fast", FAST_RECORDS, FAST_STEP)
        slow = source("slow", SLOW_RECORDS, SLOW_STEP)
        fast.map(lambda e: ("fast", e[0])).union(slow.map(lambda e: ("slow", e[0]))).map(
            lambda e: e
        ).collect("out")
        if fail:
            env.inject_faults(FailTask(task="fast#0", at_record=1000))

    return build


def expected_output() -> Counter[Any]:
    return Counter(
        [("fast", n) for n in range(FAST_RECORDS)] + [("slow", n) for n in range(SLOW_RECORDS)]
    )


def fast_leads(emitted: list[tuple[str, int]], after: int) -> list[int]:
    """For every watermark the fast source emitted once the slow one's passed ``after`` (the
    slow one's watermark is its processing time times ``SLOW_STEP * PER_MS``), how far it was
    ahead of the slow one's latest."""
    slow, leads = None, []
    for name, watermark in emitted:
        if name == "slow":
            slow = watermark
        elif slow is not None and slow > after:
            leads.append(watermark - slow)
    return leads


@pytest.fixture(autouse=True)
def _fresh() -> None:
    EMITTED.clear()


@pytest.mark.parametrize("buffer_size", [0, 3])
def test_the_fast_source_pauses_within_the_drift_and_without_alignment_runs_ahead(
    buffer_size: int,
) -> None:
    """What is asserted: from ``3 + buffer_size`` update intervals of processing time on (the
    first report goes out one update interval after the start, the first announcement that
    counts both sources up to one more later, and the pause is checked against the watermark
    of ``buffer_size`` intervals before: Flink 2.3's
    ``pipeline.watermark-alignment.buffer-size``), every watermark the fast source emits is
    at most the slow one's latest + the drift + what the fast one reads in ``buffer_size``
    update intervals and one watermark interval (records read until the next check and the
    next emission carry it that far past the limit). The group's minimum the sources hear is
    at most one report and one announcement old; as watermarks only grow, a stale minimum is
    a lower limit, never a looser one. Without alignment the fast one runs far ahead."""
    warm_up = (3 + buffer_size) * UPDATE_INTERVAL * PER_MS * SLOW_STEP
    slack = (buffer_size * UPDATE_INTERVAL + WATERMARK_INTERVAL) * PER_MS * FAST_STEP
    settings = {**SETTINGS, "pipeline.watermark-alignment.buffer-size": buffer_size}

    sim = Simulation(seed=5)
    result = sim.run(job(aligned=True), settings)
    assert result.succeeded
    assert Counter(result.collected("out")) == expected_output()
    leads = fast_leads(EMITTED, warm_up)
    assert len(leads) > 20
    assert max(leads) <= DRIFT + slack
    assert max(leads) > DRIFT  # it does go as far as it may
    paused = [e for e in sim.events if e["event"] == "source_paused_for_alignment"]
    assert paused and {e["task"] for e in paused} == {"fast#0"}  # the slow one never waits
    assert all(e["checked"] > e["max_watermark"] for e in paused)

    EMITTED.clear()
    result = Simulation(seed=5).run(job(aligned=False), settings)
    assert result.succeeded
    assert max(fast_leads(EMITTED, warm_up)) > 10 * DRIFT


def test_checkpoints_complete_while_a_source_is_paused_and_a_failover_stays_exactly_once() -> None:
    """The fast source fails after 1000 records: the job restores the last checkpoint, the
    new attempt's sources report again and the fast one pauses again; checkpoints complete
    while it is paused (its barriers are not held up) and the output is exactly once."""
    sim = Simulation(seed=7)
    result = sim.run(
        job(aligned=True, fail=True), {**SETTINGS, "restart-strategy.type": "fixed-delay"}
    )
    assert result.succeeded and result.restarts == 1
    assert Counter(result.collected("out")) == expected_output()
    events = sim.events
    for attempt in (0, 1):
        pauses = [
            e
            for e in events
            if e["event"] == "source_paused_for_alignment" and e["attempt"] == attempt
        ]
        assert pauses, f"attempt {attempt} never paused"
    # a checkpoint completed between a pause of the fast source and its resumption
    paused_at: float | None = None
    completed_while_paused = 0
    for e in events:
        if e.get("task") == "fast#0" and e["event"] == "source_paused_for_alignment":
            paused_at = e["time_ms"]
        elif e.get("task") == "fast#0" and e["event"] == "source_resumed":
            paused_at = None
        elif e["event"] == "checkpoint_completed" and paused_at is not None:
            completed_while_paused += 1
    assert completed_while_paused >= 3
