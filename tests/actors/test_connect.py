"""``connect``: two-input operators (co-map, co-flat-map, co-process, keyed co-process with
shared keyed state and timers), their watermark (the minimum of both inputs'), and recovery."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from actors.faults import FailTask
from ckptsim import StreamExecutionEnvironment
from ckptsim.testing import Simulation
from runtime.functions import CoFlatMapFunction, CoMapFunction, KeyedCoProcessFunction
from runtime.graph import GraphError
from runtime.state import ListStateDescriptor, ValueStateDescriptor
from runtime.watermarks import MAX_WATERMARK, WatermarkStrategy


class Tag(CoMapFunction):
    def map1(self, value: Any) -> Any:
        return ("first", value)

    def map2(self, value: Any) -> Any:
        return ("second", value)


class Repeat(CoFlatMapFunction):
    def flat_map1(self, value: Any) -> Iterable[Any]:
        return [value] * 2

    def flat_map2(self, value: Any) -> Iterable[Any]:
        yield from ()


def test_co_map_and_co_flat_map_see_each_input_through_its_own_method() -> None:
    def job(env: StreamExecutionEnvironment) -> None:
        a = env.from_collection(range(100))
        b = env.from_collection("xyz")
        a.connect(b).map(Tag()).collect("tagged")
        a.connect(b).flat_map(Repeat()).collect("repeated")
        a.connect(b).map((lambda x: -x, str.upper)).collect("pair")

    result = Simulation(seed=1).run(job, {"parallelism.default": 2})
    assert sorted(result.collected("tagged")) == sorted(
        [("first", i) for i in range(100)] + [("second", c) for c in "xyz"]
    )
    assert sorted(result.collected("repeated")) == sorted(list(range(100)) * 2)
    assert sorted(result.collected("pair"), key=str) == sorted(
        [-i for i in range(100)] + ["X", "Y", "Z"], key=str
    )


class Enrich(KeyedCoProcessFunction):
    """Input 1: (key, value); input 2: (key, factor). Emits value * factor once the key's factor
    is known, holding values that came first (keyed state shared by both inputs)."""

    def open(self, runtime_context: Any) -> None:
        self.factor = runtime_context.get_state(ValueStateDescriptor("factor"))
        self.waiting = runtime_context.get_list_state(ListStateDescriptor("waiting"))

    def process_element1(self, value: Any, ctx: Any) -> Iterable[Any]:
        factor = self.factor.value()
        if factor is None:
            self.waiting.add(value[1])
            return []
        return [(ctx.get_current_key(), value[1] * factor)]

    def process_element2(self, value: Any, ctx: Any) -> Iterable[Any]:
        self.factor.update(value[1])
        held = self.waiting.get()
        self.waiting.clear()
        return [(ctx.get_current_key(), v * value[1]) for v in held]


DATA = [(f"k{i % 10}", i) for i in range(3000)]
FACTORS = [(f"k{i}", i + 1) for i in range(10)]
EXPECTED = sorted((k, v * (int(k[1:]) + 1)) for k, v in DATA)


def enrich_job(env: StreamExecutionEnvironment) -> None:
    env.enable_checkpointing(20)
    data = env.from_generator(DATA.__getitem__, len(DATA), rate=10_000)
    factors = env.from_generator(FACTORS.__getitem__, len(FACTORS), rate=20)
    data.key_by(lambda r: r[0]).connect(factors.key_by(lambda r: r[0])).process(Enrich()).collect(
        "enriched"
    )


def test_a_keyed_co_process_function_shares_keyed_state_between_its_inputs() -> None:
    result = Simulation(seed=2).run(enrich_job, {"parallelism.default": 2})
    assert sorted(result.collected("enriched")) == EXPECTED


@pytest.mark.parametrize("unaligned", [False, True])
def test_a_keyed_co_process_operator_recovers_its_state_exactly_once(unaligned: bool) -> None:
    def job(env: StreamExecutionEnvironment) -> None:
        enrich_job(env)
        env.inject_faults(FailTask(task="co-process-3#0", at_record=800))

    settings = {
        "parallelism.default": 2,
        "restart-strategy.type": "fixed-delay",
        "execution.checkpointing.unaligned.enabled": unaligned,
    }
    result = Simulation(seed=3).run(job, settings)
    assert result.restarts == 1
    assert sorted(result.collected("enriched")) == EXPECTED


class WatermarkSeen(KeyedCoProcessFunction):
    def process_element1(self, value: Any, ctx: Any) -> Iterable[Any]:
        yield ctx.timer_service().current_watermark()

    def process_element2(self, value: Any, ctx: Any) -> Iterable[Any]:
        ctx.timer_service().register_event_time_timer(value)
        return []

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        yield ("timer", timestamp, ctx.timer_service().current_watermark())


def test_a_two_input_operator_s_watermark_is_the_minimum_of_its_inputs() -> None:
    """Input 1 runs far ahead in event time; input 2 stays below 1000: the operator's
    watermark stays below it until input 2 ends, and its timers fire as it passes them."""

    def job(env: StreamExecutionEnvironment) -> None:
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
            lambda e, _: e
        )
        ahead = env.from_generator(lambda i: 100_000 + i * 10, 2000, rate=20_000)
        behind = env.from_generator(lambda i: i * 10, 50, rate=100)
        ahead = ahead.assign_timestamps_and_watermarks(strategy)
        behind = behind.assign_timestamps_and_watermarks(strategy)
        ahead.key_by(lambda e: 0).connect(behind.key_by(lambda e: 0)).process(
            WatermarkSeen()
        ).collect("seen")

    settings = {"parallelism.default": 1, "pipeline.auto-watermark-interval": "10 ms"}
    seen = Simulation(seed=4).run(job, settings).collected("seen")
    marks = [s for s in seen if not isinstance(s, tuple)]
    timers = [s for s in seen if isinstance(s, tuple)]
    assert len(marks) == 2000 and max(marks) < 500
    assert max(marks) > 0  # the watermark did advance, held back by the slower input
    # every timer fires once the operator's watermark passes it (the last at the end of time)
    assert sorted(ts for _, ts, _ in timers) == [i * 10 for i in range(50)]
    assert all(wm >= ts for _, ts, wm in timers)
    assert any(wm < MAX_WATERMARK for _, _, wm in timers)


def test_connect_refuses_a_keyed_and_a_non_keyed_stream() -> None:
    env = StreamExecutionEnvironment()
    keyed = env.from_collection([1]).key_by(lambda x: x)
    plain = env.from_collection([2])
    with pytest.raises(GraphError, match="key both"):
        keyed.connect(plain).map(Tag())
    with pytest.raises(GraphError, match="map1"):
        plain.connect(plain).map(lambda x: x)
