"""``execution.runtime-mode: BATCH``: keyed operators take their input sorted by key, a reduce
emits only its final value per key, timers fire at the end of each key, no checkpoints."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from ckptsim import StreamExecutionEnvironment
from ckptsim.testing import Simulation
from runtime.functions import KeyedProcessFunction
from runtime.watermarks import MAX_WATERMARK, MIN_WATERMARK

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "the", "end"] * 7


def word_count(env: StreamExecutionEnvironment) -> None:
    env.set_runtime_mode("BATCH")
    env.enable_checkpointing(10)  # ignored in BATCH, as in Flink
    (
        env.from_collection(WORDS)
        .set_parallelism(2)
        .map(lambda w: (w, 1))
        .set_parallelism(2)
        .key_by(lambda p: p[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .collect("counts")
    )


def test_a_batch_reduce_emits_each_key_once_in_key_order_and_takes_no_checkpoint() -> None:
    result = Simulation(seed=1).run(word_count, {"parallelism.default": 1})
    assert result.collected("counts") == sorted(Counter(WORDS).items())
    assert result.completed_checkpoint_ids == []


def test_the_order_of_keys_in_batch_mode_is_the_streams_key_order() -> None:
    def job(env: StreamExecutionEnvironment) -> None:
        env.set_runtime_mode("BATCH")
        (
            env.from_collection(WORDS)
            .map(lambda w: (w, 1))
            .key_by(lambda p: p[0], key_order=lambda k: (len(k), k))
            .reduce(lambda a, b: (a[0], a[1] + b[1]))
            .collect("counts")
        )

    result = Simulation(seed=2).run(job, {"parallelism.default": 1})
    assert [w for w, _ in result.collected("counts")] == sorted(
        set(WORDS), key=lambda w: (len(w), w)
    )


class Timers(KeyedProcessFunction):
    """Registers an event-time and a processing-time timer per record; reports what fires."""

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        ctx.timer_service().register_event_time_timer(value[1])
        ctx.timer_service().register_processing_time_timer(10**15)
        yield ("element", ctx.get_current_key(), ctx.timer_service().current_watermark())

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        ctx.timer_service().register_event_time_timer(timestamp + 1)  # ignored: quiesced
        yield (ctx.time_domain().name, ctx.get_current_key(), timestamp)


def test_batch_timers_fire_at_the_end_of_each_key_event_time_first() -> None:
    def job(env: StreamExecutionEnvironment) -> None:
        env.set_runtime_mode("BATCH")
        records = [("b", 20), ("a", 5), ("b", 10), ("a", 7)]
        env.from_collection(records).key_by(lambda r: r[0]).process(Timers()).collect("out")

    out = Simulation(seed=3).run(job, {"parallelism.default": 1}).collected("out")
    assert out == [
        ("element", "a", MIN_WATERMARK),
        ("element", "a", MIN_WATERMARK),
        ("EVENT_TIME", "a", 5),
        ("EVENT_TIME", "a", 7),
        ("PROCESSING_TIME", "a", 10**15),
        ("element", "b", MIN_WATERMARK),
        ("element", "b", MIN_WATERMARK),
        ("EVENT_TIME", "b", 10),
        ("EVENT_TIME", "b", 20),
        ("PROCESSING_TIME", "b", 10**15),
    ]
    assert MAX_WATERMARK not in [o[2] for o in out if o[0] == "element"]
