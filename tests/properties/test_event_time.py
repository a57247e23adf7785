"""Event time under failures, on the deterministic simulation: random event streams (out of
order within a bound), random parallelism, checkpoint interval, watermark interval and
alignment mode, one or two task failures or actor crashes at random records or checkpoints.

The job sums each key's values per second of event time in map state and emits a second's sum
when the watermark passes its end (an event-time timer per key and second). Timers and map
state are keyed state: restored from the checkpoint, they must give exactly the failure-free
output (each (key, second) once, with its whole sum), and the trace checker must find that
every restore gave back the timers its checkpoint held. A failing example prints the
``Simulation(...)`` that replays it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from ckptsim import StreamExecutionEnvironment
from ckptsim.testing import Simulation, simulations
from runtime.functions import KeyedProcessFunction
from runtime.state import MapStateDescriptor
from runtime.status import JobStatus
from runtime.watermarks import WatermarkStrategy
from tests.conftest import system_examples
from tests.properties.test_recovery import MODES, RESTARTS

BOUND = 300  # out-of-orderness of the streams, ms of event time


class SumPerSecond(KeyedProcessFunction):
    def open(self, runtime_context: Any) -> None:
        self.sums = runtime_context.get_map_state(MapStateDescriptor("sums"))

    def process_element(self, value: Any, ctx: Any) -> None:
        second = ctx.timestamp() // 1000
        self.sums.put(second, (self.sums.get(second) or 0) + value[2])
        ctx.timer_service().register_event_time_timer(second * 1000 + 999)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        second = timestamp // 1000
        yield (ctx.get_current_key(), second, self.sums.get(second))
        self.sums.remove(second)


@st.composite
def event_streams(draw: st.DrawFn) -> list[tuple[int, int, int]]:
    """(timestamp, key, value): timestamps rising by 0-40 ms, each displaced by up to the
    bound (so late records never fall behind the watermark)."""
    n = draw(st.integers(50, 600))
    keys = draw(st.integers(1, 9))
    seed = draw(st.integers(0, 2**16))
    out, ts = [], 0
    for i in range(n):
        ts += (seed * 7 + i * 13) % 41
        jitter = (seed + i * 31) % (BOUND // 2)
        out.append((max(0, ts - jitter), (seed + i) % keys, (i * 17 + seed) % 23))
    return out


def expected(events: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    sums: dict[tuple[int, int], int] = {}
    for ts, key, value in events:
        sums[(key, ts // 1000)] = sums.get((key, ts // 1000), 0) + value
    return sorted((key, second, total) for (key, second), total in sums.items())


@settings(max_examples=system_examples() // 2)
@given(
    events=event_streams(),
    sim=simulations(failures=2),
    mode=st.sampled_from(["aligned", "unaligned"]),
    parallelism=st.integers(1, 3),
    interval=st.integers(10, 30),
    watermarks=st.integers(5, 50),
)
def test_event_time_timers_and_state_after_failures_give_the_failure_free_output(
    events: list[tuple[int, int, int]],
    sim: Simulation,
    mode: str,
    parallelism: int,
    interval: int,
    watermarks: int,
) -> None:
    """Exactly once with event time: whatever fails when, each key's per-second sum comes out
    once and whole (pending timers and map state restored from the checkpoint, none lost,
    none fired twice), and every restore gives back exactly the timers its checkpoint held."""

    def job(env: StreamExecutionEnvironment) -> None:
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(BOUND).with_timestamp_assigner(
            lambda e, _: e[0]
        )
        (
            env.from_generator(events.__getitem__, len(events), rate=2000)
            .assign_timestamps_and_watermarks(strategy)
            .key_by(lambda e: e[1])
            .process(SumPerSecond())
            .collect("sums")
        )

    settings_ = {
        **RESTARTS,
        **MODES[mode],
        "parallelism.default": parallelism,
        "execution.checkpointing.interval": f"{interval} ms",
        "pipeline.auto-watermark-interval": f"{watermarks} ms",
    }
    note(f"simulation: {sim!r}")
    result = sim.run(job, settings_)
    assert result.status is JobStatus.FINISHED, (result.failure, result.failures)
    assert sim.report is not None and sim.report.ok
    event(f"restarts: {result.restarts}")
    assert sorted(result.collected("sums")) == expected(events)
