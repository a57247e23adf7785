"""Broadcast state: ``broadcast(MapStateDescriptor)``, ``connect`` with a (keyed) stream,
``BroadcastProcessFunction`` / ``KeyedBroadcastProcessFunction`` with read-only and read-write
contexts, ``apply_to_keyed_state``; each subtask snapshots its copy, a restore (at any
parallelism) gives every subtask a copy."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from ckptsim import (
    MapStateDescriptor,
    OutputTag,
    StreamExecutionEnvironment,
    ValueStateDescriptor,
)
from runtime import serde
from runtime.checkpoint import TaskId
from runtime.datastream import BroadcastStream, StreamEnvironment
from runtime.functions import BroadcastProcessFunction, KeyedBroadcastProcessFunction
from runtime.graph import GraphError
from runtime.job import plan_execution, restore_plan
from runtime.operators import (
    BroadcastProcessOperator,
    KeyedBroadcastProcessOperator,
    OperatorContext,
    SideOutputs,
)
from runtime.snapshot import LoadedCheckpoint, LoadedTaskState
from runtime.state import (
    BroadcastState,
    BroadcastStateBackend,
    ReadOnlyBroadcastState,
    key_group_range,
)

RULES = MapStateDescriptor("rules")
LIMITS = MapStateDescriptor("limits")
TOTAL = ValueStateDescriptor("total")
ALERTS = OutputTag("alerts")


def ctx(subtask: int = 0, parallelism: int = 1) -> OperatorContext:
    return OperatorContext(
        subtask=subtask,
        parallelism=parallelism,
        max_parallelism=128,
        key_groups=key_group_range(subtask, parallelism, 128),
    )


# --- the state ----------------------------------------------------------------------------------


def test_broadcast_state_is_read_write_on_the_broadcast_side_and_read_only_on_the_other() -> None:
    backend = BroadcastStateBackend([RULES, LIMITS])
    writable = backend.state(RULES, writable=True)
    assert isinstance(writable, BroadcastState)
    writable.put("a", 1)
    writable["b"] = 2
    writable.put_all({"c": 3})
    del writable["c"]
    read_only = backend.state(RULES, writable=False)
    assert type(read_only) is ReadOnlyBroadcastState
    assert not hasattr(read_only, "put") and not hasattr(read_only, "remove")
    assert read_only.get("a") == 1 and "b" in read_only and read_only.contains("b")
    assert sorted(read_only.items()) == [("a", 1), ("b", 2)]
    assert sorted(read_only) == ["a", "b"] and not read_only.is_empty()
    assert backend.state(LIMITS, writable=False).is_empty()
    # as PyFlink's, a state not given to broadcast(...) is made when the function names it
    backend.state(MapStateDescriptor("other"), writable=True).put("x", 1)
    assert backend.snapshot()["other"] == {"x": 1}
    with pytest.raises(TypeError, match="MapStateDescriptor"):
        backend.state(TOTAL, writable=True)  # type: ignore[call-overload]


def test_each_subtask_snapshots_its_copy_and_a_restore_takes_the_copy_of_its_index() -> None:
    backend = BroadcastStateBackend([RULES])
    backend.state(RULES, writable=True).put(("k", 1), [1, 2])
    snapshot = backend.snapshot()
    backend.state(RULES, writable=True).put("later", 0)
    assert snapshot == {"rules": {("k", 1): [1, 2]}}, "a copy, not the live map"
    assert serde.decode(json.loads(json.dumps(serde.encode(snapshot)))) == snapshot
    copies = [{"rules": {"from": n}} for n in range(2)]
    for subtask, expected in [(0, 0), (1, 1), (2, 0), (3, 1)]:
        restored = BroadcastStateBackend([RULES])
        restored.restore(copies, subtask)
        assert restored.state(RULES, writable=False).get("from") == expected


# --- the operators --------------------------------------------------------------------------------


class Tagging(BroadcastProcessFunction):
    """Tags each word with the rules it matches; rules are ``(prefix, tag)``."""

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        rules = ctx.get_broadcast_state(RULES)
        tags = sorted(tag for prefix, tag in rules.items() if value.startswith(prefix))
        yield value, tags
        if not tags:
            yield ALERTS, value

    def process_broadcast_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        prefix, tag = value
        state = ctx.get_broadcast_state(RULES)
        if tag is None:
            state.remove(prefix)
        else:
            state.put(prefix, tag)
        return ()


def test_a_broadcast_process_function_reads_what_broadcast_elements_wrote() -> None:
    op = BroadcastProcessOperator("broadcast-process-3", "B", Tagging(), (RULES,))
    op.side = SideOutputs(frozenset({"alerts"}))
    op.open(ctx())
    assert op.process_input(0, ["apple"], None) == ([("apple", [])], [None])
    op.process_input(1, [("a", "fruit"), ("ap", "tech")], [5, 6])
    out, stamps = op.process_input(0, ["apple", "banana"], [7, 8])
    assert out == [("apple", ["fruit", "tech"]), ("banana", [])] and stamps == [7, 8]
    assert op.side.take() == [("alerts", ["apple", "banana"], [None, 8])]
    assert op.snapshot_state(1) == {"broadcast": {"rules": {"a": "fruit", "ap": "tech"}}}


class WritesOnTheWrongSide(BroadcastProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        ctx.get_broadcast_state(RULES).put(value, 1)
        return ()

    def process_broadcast_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        return ()


def test_process_element_cannot_write_the_broadcast_state() -> None:
    op = BroadcastProcessOperator("broadcast-process-3", "B", WritesOnTheWrongSide(), (RULES,))
    op.open(ctx())
    with pytest.raises(AttributeError, match="put"):
        op.process_input(0, ["x"], None)


class Spending(KeyedBroadcastProcessFunction):
    """Sums each card's spending; alerts when a sum passes the broadcast limit, and once more
    when the key's timer fires; a broadcast ``reset`` halves every card's sum."""

    def open(self, runtime_context: Any) -> None:
        self.total = runtime_context.get_state(TOTAL)

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        _card, amount = value
        total = (self.total.value() or 0) + amount
        self.total.update(total)
        limit = ctx.get_broadcast_state(LIMITS).get("limit")
        if limit is not None and total > limit:
            ctx.timer_service().register_event_time_timer(100)
            yield ctx.get_current_key(), total

    def process_broadcast_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        name, amount = value
        if name == "reset":
            ctx.apply_to_keyed_state(TOTAL, lambda key, state: state.update(state.value() // 2))
        else:
            ctx.get_broadcast_state(LIMITS).put(name, amount)
        yield f"rule {name}"

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        limit = ctx.get_broadcast_state(LIMITS).get("limit")
        yield ALERTS, (ctx.get_current_key(), timestamp, limit, ctx.time_domain().name)


def keyed_op() -> KeyedBroadcastProcessOperator:
    op = KeyedBroadcastProcessOperator(
        "broadcast-process-3", "K", lambda r: r[0], Spending(), (LIMITS,)
    )
    op.side = SideOutputs(frozenset({"alerts"}))
    op.open(ctx())
    return op


def test_a_keyed_broadcast_function_has_keyed_state_timers_and_apply_to_keyed_state() -> None:
    op = keyed_op()
    assert op.process_input(0, [("c1", 40), ("c2", 10)], None)[0] == []
    assert op.process_input(1, [("limit", 50)], None)[0] == ["rule limit"]
    assert op.process_input(0, [("c1", 20), ("c2", 20)], None)[0] == [("c1", 60)]
    assert op.process_input(1, [("reset", 0)], None)[0] == ["rule reset"]
    assert op.process_input(0, [("c1", 30), ("c2", 30)], None)[0] == [("c1", 60)]
    (fired, _), _ = op.process_watermark(100)
    assert fired == [] and op.side is not None
    assert op.side.take() == [("alerts", [("c1", 100, 50, "EVENT_TIME")], [100])]
    snapshot = op.snapshot_state(1)
    assert snapshot["broadcast"] == {"limits": {"limit": 50}}
    assert len(op.backend) == 2


class KeyedStateOnTheBroadcastSide(KeyedBroadcastProcessFunction):
    def open(self, runtime_context: Any) -> None:
        self.total = runtime_context.get_state(TOTAL)

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        return ()

    def process_broadcast_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        self.total.update(1)
        return ()


def test_keyed_state_has_no_key_on_the_broadcast_side() -> None:
    op = KeyedBroadcastProcessOperator(
        "broadcast-process-3", "K", lambda r: r, KeyedStateOnTheBroadcastSide(), (LIMITS,)
    )
    op.open(ctx())
    op.process_input(0, ["a"], None)
    with pytest.raises(RuntimeError, match="apply_to_keyed_state"):
        op.process_input(1, ["rule"], None)


def test_a_keyed_broadcast_operator_restores_its_key_groups_and_a_broadcast_copy() -> None:
    op = keyed_op()
    op.process_input(1, [("limit", 50)], None)
    op.process_input(0, [(f"card{n}", n) for n in range(40)], None)
    snapshot = json.loads(json.dumps(serde.encode(op.snapshot_state(1))))
    restored = []
    for subtask in range(3):
        part = KeyedBroadcastProcessOperator(
            "broadcast-process-3", "K", lambda r: r[0], Spending(), (LIMITS,)
        )
        part.open(ctx(subtask, 3))
        part.restore_state([serde.decode(snapshot)])
        assert part.broadcast.snapshot() == {"limits": {"limit": 50}}
        restored.append(len(part.backend))
    assert sum(restored) == 40 and all(restored)


# --- the API and the job graph ------------------------------------------------------------------


def test_broadcast_with_descriptors_makes_a_broadcast_stream_to_connect_to() -> None:
    env = StreamEnvironment(parallelism=2)
    rules = env.from_collection([("a", 1)]).broadcast(RULES, LIMITS)
    assert isinstance(rules, BroadcastStream)
    assert rules.broadcast_state_descriptors == [RULES, LIMITS]
    words = env.from_collection(["x"])
    words.connect(rules).process(Tagging()).collect("tagged")
    words.key_by(lambda w: w).connect(rules).process(Spending()).collect("spent")
    job = env.build_job_graph()
    names = [v.name for v in job.vertices]
    assert names[2:] == ["Co-Process-Broadcast -> tagged", "Keyed-Co-Process-Broadcast -> spent"]
    broadcast_edges = [e for e in job.edges if e.input_index == 1]
    assert {e.partitioner.name for e in broadcast_edges} == {"BROADCAST"}
    with pytest.raises(GraphError, match="MapStateDescriptors"):
        words.broadcast(TOTAL)  # type: ignore[call-overload]
    with pytest.raises(GraphError, match="names of their own"):
        words.broadcast(RULES, MapStateDescriptor("rules"))
    with pytest.raises(GraphError, match="needs a keyed stream"):
        words.connect(rules).process(Spending())
    with pytest.raises(GraphError, match="needs a non-keyed stream"):
        words.key_by(lambda w: w).connect(rules).process(Tagging())


def test_a_restore_at_another_parallelism_gives_every_subtask_a_broadcast_copy() -> None:
    env = StreamEnvironment(parallelism=3)
    rules = env.from_collection([("a", 1)]).broadcast(RULES)
    env.from_collection(["x"]).connect(rules).process(Tagging()).uid("tagging").collect("out")
    plan = plan_execution(env.build_job_graph("j"), env.configuration)
    old = {n: {"broadcast": {"rules": {"a": "fruit", "copy": n}}} for n in range(2)}
    checkpoint = LoadedCheckpoint(
        path="/chk-1",
        checkpoint_id=1,
        timestamp=0,
        is_savepoint=False,
        job_name="j",
        operator_uids=["tagging"],
        tasks={
            TaskId("tagging", n): LoadedTaskState(
                operator_states={"tagging": state}, input_channels={}, output_channels={}
            )
            for n, state in old.items()
        },
    )
    restores = restore_plan(plan, checkpoint)
    copies = []
    for n in range(3):
        states = restores[TaskId("tagging", n)].operator_states["tagging"]
        assert states == [old[0], old[1]], "every new subtask sees every former copy"
        op = BroadcastProcessOperator("tagging", "B", Tagging(), (RULES,))
        op.open(ctx(n, 3))
        op.restore_state(states)
        copies.append(op.broadcast.snapshot()["rules"]["copy"])
    assert copies == [0, 1, 0]


# --- a job, stopped with a savepoint and resumed at another parallelism ------------------------


def rules_job(env: StreamExecutionEnvironment, parallelism: int) -> None:
    rules = env.from_collection([("a", "fruit"), ("b", "bakery")], parallelism=1).uid("rules")
    words = env.from_generator(lambda n: f"{'ab'[n % 2]}{n}", 4000, rate=40_000, parallelism=1).uid(
        "words"
    )
    tagged = (
        words.rebalance()
        .connect(rules.broadcast(RULES))
        .process(Tagging())
        .uid("tagging")
        .set_parallelism(parallelism)
    )
    tagged.map(lambda r: (r[0], tuple(r[1]))).collect("tagged").set_parallelism(1)
    tagged.get_side_output(ALERTS).collect("untagged").set_parallelism(1)


def test_broadcast_state_survives_stop_with_savepoint_and_a_rescale(tmp_path: Path) -> None:
    first = StreamExecutionEnvironment(parallelism=2)
    first.configure({"execution.checkpointing.savepoint-dir": str(tmp_path / "savepoints")})
    rules_job(first, 2)
    first.stop_with_savepoint(at_ms=50)
    stopped = first.execute("rules", runtime="simulation", seed=5)
    assert stopped.succeeded and stopped.savepoints, stopped.failures
    before = {word for word, _ in stopped.output["tagged"]}
    assert 0 < len(before) < 4000
    late = [w for w, tags in stopped.output["tagged"] if tags]
    assert late, "the rules reached the subtasks before the savepoint"

    second = StreamExecutionEnvironment(parallelism=3)
    second.configure({"execution.state-recovery.path": stopped.savepoints[0]})
    rules_job(second, 3)
    resumed = second.execute("rules", runtime="simulation", seed=6)
    assert resumed.succeeded, resumed.failure
    after = dict(resumed.output["tagged"])
    assert before.isdisjoint(after) and len(before) + len(after) == 4000
    expected = {"a": ("fruit",), "b": ("bakery",)}
    assert all(tags == expected[word[0]] for word, tags in after.items()), (
        "every subtask of the rescaled operator restored the rules (the rule source, restored "
        "at its end, sends them no more)"
    )
    assert resumed.output["untagged"] == []


class Sees(BroadcastProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        yield value, sorted(ctx.get_broadcast_state(RULES).keys())

    def process_broadcast_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        ctx.get_broadcast_state(RULES).put(value, True)
        return ()


class KeyedSees(KeyedBroadcastProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        yield value, sorted(ctx.get_broadcast_state(RULES).keys())

    def process_broadcast_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        ctx.get_broadcast_state(RULES).put(value, True)
        return ()


def test_in_batch_mode_the_broadcast_input_comes_first() -> None:
    """Flink's BATCH mode reads the broadcast input to its end before the other input: every
    record sees every rule (the rules come from a slow source here)."""
    env = StreamExecutionEnvironment(parallelism=2)
    env.set_runtime_mode("BATCH")
    rules = env.from_generator(lambda n: f"r{n}", 3, rate=10).broadcast(RULES)
    words = env.from_collection([f"w{n}" for n in range(20)])
    words.connect(rules).process(Sees()).collect("plain")
    words.key_by(lambda w: w).connect(rules).process(KeyedSees()).collect("keyed")
    result = env.execute("batch", runtime="simulation", seed=2)
    assert result.succeeded, result.failure
    for name in ("plain", "keyed"):
        assert sorted(result.output[name]) == [
            (f"w{n}", ["r0", "r1", "r2"]) for n in sorted(range(20), key=str)
        ]
