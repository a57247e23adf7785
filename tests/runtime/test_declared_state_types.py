"""A keyed or broadcast state declared with a type a checkpoint cannot hold is refused before
the job runs (at submission, naming the operator and the state) where the declaration is
visible then; one declared in ``open()`` is refused when ``open()`` asks for it, before any
value is written. ``PICKLED_BYTE_ARRAY`` (any Python value) and every other PyFlink type are
accepted: their values are checked when written."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
from collections.abc import Iterable
from typing import Any

import pytest

from ckptsim import StreamExecutionEnvironment
from ckptsim.pyflink.common import Types
from ckptsim.testing import Simulation
from runtime.functions import KeyedProcessFunction
from runtime.graph import GraphError
from runtime.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
    declared_type_problem,
)


@dataclasses.dataclass
class Point:
    x: int


class Money(decimal.Decimal):
    pass


class Declares(KeyedProcessFunction):
    """Holds its descriptor from construction (as PyFlink programs often do at module level)."""

    def __init__(self, descriptor: StateDescriptor) -> None:
        self.descriptor = descriptor
        self.calls = 0

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        self.calls += 1
        yield value


@pytest.mark.parametrize(
    ("descriptor", "shown"),
    [
        (ValueStateDescriptor("last", Point), "state 'last' is declared as Point"),
        (ListStateDescriptor("seen", list[Point]), "state 'seen' is declared as list[Point]"),
        (MapStateDescriptor("by", Point, int), "state 'by' is declared as Point"),
        (MapStateDescriptor("by", str, dict[str, Point]), "declared as dict[str, Point]"),
        (ValueStateDescriptor("sum", Money), "a Money is a subclass of Decimal"),
        (ValueStateDescriptor("maybe", tuple[int, Point | None]), "declared as tuple"),
    ],
)
def test_a_declared_type_a_checkpoint_cannot_hold_is_refused_at_submission(
    descriptor: StateDescriptor, shown: str
) -> None:
    function = Declares(descriptor)

    def build(env: StreamExecutionEnvironment) -> None:
        env.from_collection([(1, 2)]).key_by(lambda r: r[0]).process(function).name(
            "Keep latest"
        ).collect("out")

    with pytest.raises(GraphError) as caught:
        Simulation(seed=1).run(build)
    message = str(caught.value)
    assert message.startswith("operator 'Keep latest': "), message
    assert shown in message and "\n" not in message
    assert function.calls == 0  # the job never ran


@pytest.mark.parametrize(
    "declared",
    [
        None,
        Any,
        object,
        int,
        decimal.Decimal,
        dt.datetime,
        list[tuple[int, decimal.Decimal]],
        dict[str, set[dt.date]],
        int | None,
        tuple[int, ...],
        Types.PICKLED_BYTE_ARRAY(),  # any Python value: checked when written
        Types.ROW_NAMED(["a"], [Types.BIG_DEC()]),
        Types.LIST(Types.SQL_TIMESTAMP()),
    ],
    ids=repr,
)
def test_writable_or_unchecked_declarations_are_accepted(declared: Any) -> None:
    assert declared_type_problem(ValueStateDescriptor("v", declared)) is None
    assert declared_type_problem(MapStateDescriptor("m", declared, declared)) is None


def test_a_broadcast_state_declared_with_an_unwritable_type_is_refused_at_submission() -> None:
    from runtime.functions import BroadcastProcessFunction  # noqa: PLC0415

    rules = MapStateDescriptor("rules", Types.STRING(), Point)

    class Apply(BroadcastProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
            yield value

        def process_broadcast_element(self, value: Any, ctx: Any) -> Iterable[Any]:
            return ()

    def build(env: StreamExecutionEnvironment) -> None:
        control = env.from_collection(["r"]).broadcast(rules)
        env.from_collection([1]).connect(control).process(Apply()).name("Apply rules").collect(
            "out"
        )

    with pytest.raises(GraphError, match="operator 'Apply rules': state 'rules' is declared"):
        Simulation(seed=1).run(build)


def test_a_state_declared_in_open_is_refused_when_open_asks_for_it() -> None:
    class InOpen(KeyedProcessFunction):
        def open(self, runtime_context: Any) -> None:
            self.last = runtime_context.get_state(ValueStateDescriptor("last", Point))

        def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
            yield value

    def build(env: StreamExecutionEnvironment) -> None:
        env.enable_checkpointing(10)
        env.from_collection([(1, 2)]).key_by(lambda r: r[0]).process(InOpen()).collect("out")

    result = Simulation(seed=1).run(build, {"restart-strategy.type": "none"})
    assert result.status.name == "FAILED"
    assert "state 'last' is declared as Point" in str(result.failure)
    assert not result.completed_checkpoint_ids
