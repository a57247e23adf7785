"""Operators, one call per buffer: what each emits, its state, a restored source's position,
and the user errors they name."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.functions import KeyedProcessFunction, RuntimeContext
from runtime.operators import (
    CollectionReader,
    FilterOperator,
    FlatMapOperator,
    GeneratorReader,
    MapBatchOperator,
    MapOperator,
    OperatorContext,
    ProcessOperator,
    ReduceOperator,
    SourceOperator,
)
from runtime.state import key_group_range


def ctx(subtask: int = 0, parallelism: int = 1) -> OperatorContext:
    return OperatorContext(
        subtask=subtask,
        parallelism=parallelism,
        max_parallelism=128,
        key_groups=key_group_range(subtask, parallelism, 128),
    )


def test_stateless_operators_take_and_return_a_buffer() -> None:
    assert MapOperator("m", "M", lambda r: r * 2).process_batch([1, 2]) == [2, 4]
    assert FilterOperator("f", "F", lambda r: r > 1).process_batch([1, 2, 3]) == [2, 3]
    assert FlatMapOperator("fm", "FM", str.split).process_batch(["a b", "", "c"]) == ["a", "b", "c"]
    assert MapBatchOperator("mb", "MB", lambda b: b[::-1]).process_batch([1, 2]) == [2, 1]


def test_flat_map_and_map_batch_returning_none_are_errors_naming_the_operator() -> None:
    with pytest.raises(
        TypeError, match=r"flat_map 'Words' \(fm-2\) returned None for the record 'x'"
    ):
        FlatMapOperator("fm-2", "Words", lambda r: None).process_batch(["x"])
    assert FlatMapOperator("fm-2", "Words", lambda r: []).process_batch(["x"]) == []
    with pytest.raises(TypeError, match=r"map_batch 'All' \(mb-3\) returned None"):
        MapBatchOperator("mb-3", "All", lambda b: None).process_batch([1])


def test_reduce_emits_the_running_aggregate_per_key_and_restores_by_key_group() -> None:
    op = ReduceOperator("r", "R", lambda r: r[0], lambda a, b: (a[0], a[1] + b[1]))
    op.open(ctx())
    assert op.process_batch([("a", 1), ("b", 1), ("a", 2)]) == [("a", 1), ("b", 1), ("a", 3)]
    state = op.snapshot_state(1)
    parts = []
    for subtask in (0, 1):
        other = ReduceOperator("r", "R", lambda r: r[0], lambda a, b: (a[0], a[1] + b[1]))
        other.open(ctx(subtask, 2))
        other.restore_state([state])
        parts.append(other.process_batch([("a", 10), ("b", 10)]))
    # each key lives in exactly one subtask after the split by key group
    continued = {r[0]: r[1] for part in parts for r in part if r[1] > 10}
    assert continued == {"a": 13, "b": 11}


class Counting(KeyedProcessFunction):
    def open(self, ctx: RuntimeContext) -> None:
        self.count = ctx.get_state("count")

    def process_element(self, value: Any, ctx: RuntimeContext) -> Any:
        self.count.update((self.count.value() or 0) + 1)
        yield (ctx.get_current_key(), self.count.value())


def test_a_keyed_process_function_keeps_value_state_per_key() -> None:
    op = ProcessOperator("p", "P", lambda r: r, Counting())
    op.open(ctx())
    assert op.process_batch(["x", "y", "x"]) == [("x", 1), ("y", 1), ("x", 2)]
    assert op.keys_of(["x"]) == ["x"]


def test_sources_read_their_share_and_resume_after_their_position() -> None:
    reader = CollectionReader(list(range(10)), 1, 2)
    assert reader.read(3, 0) == [1, 3, 5]
    position = reader.position()
    again = CollectionReader(list(range(10)), 1, 2)
    again.seek(position)
    assert again.read(10, 0) == [7, 9] and again.read(10, 0) is None
    gen = GeneratorReader(lambda n: n * 10, 5, 0, 1, None)
    assert gen.read(2, 0) == [0, 10]
    source = SourceOperator(
        "s", "S", lambda c: CollectionReader([1, 2, 3], c.subtask, c.parallelism)
    )
    source.open(ctx())
    source.restore_state([{"position": {"offset": 2}}])
    assert source.reader is not None and source.reader.read(5, 0) == [3]


def test_a_rate_limited_generator_says_when_records_are_ready_again() -> None:
    gen = GeneratorReader(lambda n: n, 100, 0, 1, rate=1000)  # one record per ms
    assert gen.read(50, now=0) == [0]
    assert gen.read(50, now=0) == []
    assert gen.next_ready(0) == 1
    assert gen.read(50, now=10) == list(range(1, 11))


def test_a_restored_rate_limited_generator_goes_on_at_its_rate_without_waiting_for_the_past() -> (
    None
):
    """After a restore at 1,450 of 3,000 records (a rate of 1,000/s), the rest takes about
    1.55 s from the restart, not the 3 s of a fresh start: the reader does not wait again for
    the time its emitted records once took."""
    gen = GeneratorReader(lambda n: n, 3000, 0, 1, rate=1000)
    gen.seek({"index": 1450, "emitted": 1450})
    restart = 5_000  # virtual ms
    assert gen.read(50, now=restart) == [1450]
    assert gen.next_ready(restart) == restart + 1
    assert gen.read(5000, now=restart + 1549) == list(range(1451, 3000))
    assert gen.read(50, now=restart + 1549) is None


def test_a_source_cannot_take_several_positions() -> None:
    source = SourceOperator("s", "S", lambda c: CollectionReader([1], 0, 1))
    with pytest.raises(ValueError, match="cannot restore 2 positions"):
        source.restore_state([{"position": {"offset": 0}}, {"position": {"offset": 1}}])


class Reminding(KeyedProcessFunction):
    """A timer at each record's value; each timer before 30 registers another 10 later."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        ctx.timer_service().register_event_time_timer(value[1])
        yield from ()

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield (ctx.get_current_key(), timestamp)
        if timestamp < 30:
            ctx.timer_service().register_event_time_timer(timestamp + 10)


@pytest.mark.parametrize(
    ("rounds", "order"),
    [
        # Java Flink's InternalTimerService: a timer a due timer registers fires among them
        (False, [("a", 10), ("a", 20), ("b", 25), ("a", 30), ("b", 35)]),
        # PyFlink's Python operators: in rounds (the registrations arrive after the bundle)
        (True, [("a", 10), ("b", 25), ("a", 20), ("b", 35), ("a", 30)]),
    ],
)
def test_due_timers_that_timers_register_fire_in_time_order_or_in_pyflinks_rounds(
    rounds: bool, order: list[tuple[str, int]]
) -> None:
    op = ProcessOperator("p", "P", lambda r: r[0], Reminding())
    op.timers_in_rounds = rounds
    op.open(ctx())
    assert op.process_batch([("a", 10), ("b", 25)]) == []
    (fired, _), _ = op.process_watermark(100)
    assert fired == order
