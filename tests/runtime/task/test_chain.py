"""``OperatorChain``: one call per buffer through typed operators; user code wrapped, naming
the operator as the user knows it; each subtask its own process function."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.descriptors import ProcessDescriptor
from runtime.failure import UserCodeError, describe_user_error
from runtime.functions import KeyedProcessFunction, RuntimeContext
from runtime.operators import OperatorContext
from runtime.state import key_group_range
from runtime.task.chain import OperatorChain
from tests.runtime.task.helpers import mapper, node, reducer, source


def ctx() -> OperatorContext:
    return OperatorContext(
        subtask=0, parallelism=1, max_parallelism=128, key_groups=key_group_range(0, 1, 128)
    )


def test_a_buffer_runs_through_every_operator_in_one_call_each() -> None:
    calls: list[int] = []

    def double(r: int) -> int:
        calls.append(r)
        return r * 2

    chain = OperatorChain([mapper(double, 1), reducer(lambda r: r % 2, lambda a, b: a + b, 2)])
    chain.open(ctx(), None)
    assert chain.process([1, 2, 3]) == [2, 6, 12]  # doubled, then summed (one key)
    assert calls == [1, 2, 3]


def test_shipped_keys_spare_the_key_selector() -> None:
    def no_key(record: Any) -> Any:
        raise AssertionError("the keys came with the buffer")

    chain = OperatorChain([reducer(no_key, lambda a, b: a + b)])
    chain.open(ctx(), None)
    assert chain.process([1, 2, 3], keys=["k", "k", "j"]) == [1, 3, 3]


@pytest.mark.parametrize(
    ("build", "operator"),
    [
        (lambda: [mapper(lambda r: r["missing"], 2, "Lookup")], "map 'Lookup' (map-2)"),
        (
            lambda: [reducer(lambda r: r["missing"], lambda a, b: a, 3)],
            "key_by selector of reduce-3",
        ),
        (lambda: [reducer(lambda r: r["a"], lambda a, b: a["x"], 3)], "reduce 'Reduce' (reduce-3)"),
    ],
)
def test_an_exception_in_user_code_names_its_operator(build: Any, operator: str) -> None:
    chain = OperatorChain(build())
    chain.open(ctx(), None)
    with pytest.raises(UserCodeError) as raised:
        chain.process([{"a": 1}, {"a": 1}])
    assert raised.value.operator == operator
    failure = describe_user_error(raised.value.__cause__, operator=operator, task="t#0")  # type: ignore[arg-type]
    assert failure.exception in ("KeyError", "TypeError")
    assert "test_chain.py" in failure.traceback


def test_a_failing_source_reader_is_named() -> None:
    chain = OperatorChain([source([1, 2])])
    chain.open(ctx(), None)
    assert chain.source is not None and chain.source.reader is not None

    def broken(max_records: int, now: int) -> Any:
        raise OSError("disk gone")

    chain.source.reader.read = broken  # type: ignore[method-assign]
    with pytest.raises(UserCodeError) as raised:
        chain.read_source(10, 0)
    assert raised.value.operator == "source 'Source' (source-1)"


class Stateful(KeyedProcessFunction):
    def __init__(self) -> None:
        self.seen: list[Any] = []

    def open(self, ctx: RuntimeContext) -> None:
        self.seen = []

    def process_element(self, value: Any, ctx: RuntimeContext) -> Any:
        self.seen.append(value)
        return [len(self.seen)]


def test_each_subtask_gets_its_own_copy_of_a_process_function() -> None:
    function = Stateful()
    declared = node(3, ProcessDescriptor(key_selector=lambda r: r, function=function), "P")
    chains = [OperatorChain([declared]) for _ in range(2)]
    for chain in chains:
        chain.open(ctx(), None)
    assert chains[0].process(["a", "b"]) == [1, 2]
    assert chains[1].process(["c"]) == [1]
    assert function.seen == []


def test_declared_cost_is_counted_per_buffer_and_per_record() -> None:
    slow = mapper(lambda r: r, 2)
    slow.cost = (2.0, 0.5)
    chain = OperatorChain([slow])
    chain.open(ctx(), None)
    chain.process([1, 2, 3, 4])
    assert chain.take_cost() == 4.0 and chain.take_cost() == 0.0


def test_end_input_runs_what_an_operator_emits_through_the_rest() -> None:
    chain = OperatorChain([mapper(lambda r: r, 1), mapper(lambda r: r + 1, 2)])
    chain.open(ctx(), None)
    chain.operators[0].end_input = lambda: [10]  # type: ignore[method-assign]
    assert chain.end_input() == [11]


# --- a generator source's read runs the map chained after it ------------------------------------


def generator(fn: Any, count: int, node_id: int = 1) -> Any:
    from runtime.descriptors import SourceDescriptor  # noqa: PLC0415
    from runtime.operators import GeneratorReader  # noqa: PLC0415

    def reader(ctx: OperatorContext) -> GeneratorReader:
        return GeneratorReader(fn, count, ctx.subtask, ctx.parallelism, None)

    return node(node_id, SourceDescriptor(reader=reader), "Gen")


def test_a_generator_reads_through_the_map_after_it_and_counts_as_if_apart() -> None:
    calls: list[tuple[str, int]] = []

    def gen(n: int) -> int:
        calls.append(("gen", n))
        return n

    def double(r: int) -> int:
        calls.append(("map", r))
        return r * 2

    chain = OperatorChain([generator(gen, 5), mapper(double, 2), mapper(lambda r: r + 1, 3)])
    chain.open(ctx(), None)
    batch = chain.read_source(3, 0)
    assert batch == [0, 2, 4]
    assert calls == [("gen", 0), ("map", 0), ("gen", 1), ("map", 1), ("gen", 2), ("map", 2)]
    assert chain.read_through == 2  # on after the map, not through it again
    assert chain.run(batch, None, chain.read_through) == ([1, 3, 5], None)
    assert chain.read_source(3, 0) == [6, 8]
    assert chain.read_source(3, 0) is None
    assert chain.records_out[:2] == [5, 5] and chain.records_in[1:] == [5, 3]
    assert chain.source_position() == {"source-1": {"index": 5, "emitted": 5}}


def test_the_map_read_with_its_generator_counts_record_by_record() -> None:
    """In the middle of the pass the map's counts are as of its record (``live_counts``)."""
    seen: list[tuple[int, int]] = []

    def look(r: int) -> int:
        seen.append(chain.live_counts(1))
        return r

    chain = OperatorChain([generator(lambda n: n, 10), mapper(look, 2)])
    chain.open(ctx(), None)
    chain.read_source(3, 0)
    chain.read_source(3, 0)
    assert seen == [(1, 0), (2, 1), (3, 2), (4, 3), (5, 4), (6, 5)]
    assert chain.live_counts(1) == (6, 6) and chain.live_counts(0) == (0, 6)


class Raising:
    def __call__(self, value: Any) -> Any:
        raise KeyError(value)


def raising(value: Any) -> Any:
    raise ValueError(value)


def calls_raising(value: Any) -> Any:
    return raising(value)


SOURCE, MAP = "source 'Gen' (source-1)", "map 'Map' (map-2)"


@pytest.mark.parametrize(
    ("gen", "fn", "operator"),
    [
        (raising, str, SOURCE),
        ({}.__getitem__, str, SOURCE),  # a builtin: no frame of its own
        (Raising(), str, SOURCE),
        (calls_raising, str, SOURCE),
        (str, raising, MAP),
        (str, {}.__getitem__, MAP),
        (str, Raising(), MAP),
        (str, calls_raising, MAP),
        (raising, raising, SOURCE),  # the same function: the one that ran first
    ],
)
def test_an_exception_in_a_generator_read_through_a_map_names_its_operator(
    gen: Any, fn: Any, operator: str
) -> None:
    """Which function raised is told apart; the counts are as if the two had run apart."""
    chain = OperatorChain([generator(gen, 5), mapper(fn, 2)])
    chain.open(ctx(), None)
    with pytest.raises(UserCodeError) as raised:
        chain.read_source(5, 0)
    assert raised.value.operator == operator
    assert isinstance(raised.value.__cause__, (KeyError, ValueError))
    assert chain.source_position() == {"source-1": {"index": 0, "emitted": 0}}
    if operator == SOURCE:
        assert chain.live_counts(0) == (0, 0) and chain.live_counts(1) == (0, 0)
    else:  # the source emitted its batch; the map took its first record and emitted none
        assert chain.live_counts(0) == (0, 5) and chain.live_counts(1) == (1, 0)


def test_a_generator_read_through_a_map_costs_what_both_declared() -> None:
    gen, slow = generator(lambda n: n, 4), mapper(lambda r: r, 2)
    gen.cost, slow.cost = (1.0, 0.0), (2.0, 0.5)
    chain = OperatorChain([gen, slow])
    chain.open(ctx(), None)
    chain.read_source(4, 0)
    assert chain.take_cost() == 5.0
