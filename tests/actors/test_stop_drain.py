"""``stop --drain`` on the deterministic simulation: a stop-with-savepoint with drain advances
the sources to the end of event time before the savepoint's barrier, so a keyed event-time
tumbling window job outputs its last, incomplete windows (fired at ``MAX_WATERMARK``) and
finishes; without drain those windows never fire."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from ckptsim import StreamExecutionEnvironment
from ckptsim.testing import Simulation
from runtime.functions import ProcessWindowFunction
from runtime.status import JobStatus
from runtime.watermarks import MAX_WATERMARK, WatermarkStrategy
from runtime.windows import TumblingEventTimeWindows

#: one record every 10 ms of event time per key, far more than are read before the stop
RECORDS = 1_000_000


class Fired(ProcessWindowFunction):
    """(key, start, end, count, fired at the end of event time)."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        w = context.window()
        at_end = context.current_watermark() == MAX_WATERMARK
        yield (key, w.start, w.end, sum(1 for _ in elements), at_end)


def windows_job(drain: bool, storage: str) -> Callable[[StreamExecutionEnvironment], None]:
    def build(env: StreamExecutionEnvironment) -> None:
        env.set_parallelism(2)
        env.enable_checkpointing(50)
        env.stop_with_savepoint(after_records=3_000, drain=drain, directory=storage)
        (
            env.from_generator(lambda i: (i % 3, i * 10), RECORDS, rate=2_000)
            .assign_timestamps_and_watermarks(
                WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
                    lambda e, _: e[1]
                )
            )
            .key_by(lambda e: e[0])
            .window(TumblingEventTimeWindows.of(1_000))
            .process(Fired())
            .collect("windows")
        )

    return build


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_stop_with_drain_flushes_the_last_windows_without_drain_not(
    seed: int, tmp_path: Any
) -> None:
    fired: dict[bool, list[Any]] = {}
    for drain in (False, True):
        sim = Simulation(seed=seed, storage="filesystem")
        result = sim.run(windows_job(drain, str(tmp_path / f"sp-{drain}")))
        assert result.status is JobStatus.FINISHED
        assert len(result.savepoints) == 1, result.failures
        fired[drain] = result.collected("windows")
        ends = {w[1] for w in fired[drain]}
        for key in range(3):  # per key, windows from 0 on without a gap
            starts = sorted(w[1] for w in fired[drain] if w[0] == key)
            assert starts == list(range(0, 1_000 * len(starts), 1_000)), (drain, key)
        assert ends, "windows fired before the stop"
    assert not any(w[4] for w in fired[False]), "without drain, no window fires at the end"
    last = [w for w in fired[True] if w[4]]
    assert last, "with drain, the last windows fire at the end of event time"
    # the windows fired before the stop are the same; drain adds the incomplete last ones
    before = sorted(w for w in fired[True] if not w[4])
    assert before[: len(fired[False])] == sorted(fired[False])[: len(before)]
    assert any(w[3] < 1_000 // 10 for w in last), "an incomplete window"
    assert all(w[1] >= max(v[1] for v in fired[False] if v[0] == w[0]) for w in last)
