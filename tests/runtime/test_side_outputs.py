"""Side outputs (``OutputTag``, ``yield tag, value``, ``get_side_output``,
``side_output_late_data``): edges of the job graph, routed by the record writer, taken from the
chain after every call, checkpointed and in an unaligned checkpoint's channel state like any
other output."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import pytest

from actors.faults import FailTask
from ckptsim import (
    CoProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessAllWindowFunction,
    ProcessFunction,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
    TumblingEventTimeWindows,
    WatermarkStrategy,
)
from runtime.barrier.mode import GateMode
from runtime.checkpoint import TaskId
from runtime.datastream import StreamEnvironment
from runtime.descriptors import NonKeyedProcessDescriptor
from runtime.effects import SendToOutput, WriteSnapshot
from runtime.graph import GraphError
from runtime.job import plan_execution
from runtime.messages import InputItem, StartTask
from runtime.network import Buffer, Watermark
from runtime.operators import (
    FlatMapOperator,
    KeyedCoProcessOperator,
    MapOperator,
    NonKeyedProcessOperator,
    OperatorContext,
    ProcessOperator,
    SideOutputs,
)
from runtime.partition import ChannelSelector, Partitioner
from runtime.state import key_group_range
from runtime.task import NetworkSettings, OutputEdge
from runtime.task.chain import OperatorChain
from runtime.task.result_partition import RecordWriter, ResultPartition
from runtime.windows import WindowOperator
from tests.runtime.task.helpers import UNALIGNED, Driver, barrier, mapper, node, only, spec

ODD = OutputTag("odd")
TENS = OutputTag("tens")


def ctx() -> OperatorContext:
    return OperatorContext(
        subtask=0, parallelism=1, max_parallelism=128, key_groups=key_group_range(0, 1, 128)
    )


class Split(ProcessFunction):
    """Even numbers out, odd ones to ODD, multiples of ten also to TENS."""

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        if value % 2:
            yield ODD, f"odd {value}"
        else:
            yield value
        if value % 10 == 0:
            yield TENS, value


# --- the graph -----------------------------------------------------------------------------------


def split_job(env: StreamEnvironment) -> Any:
    split = env.from_collection(range(30)).process(Split())
    split.collect("even")
    split.get_side_output(ODD).map(str.upper).collect("odd")
    return split


def test_a_side_output_is_an_edge_and_its_operator_ends_its_chain() -> None:
    env = StreamEnvironment(parallelism=2)
    split_job(env)
    job = env.build_job_graph()
    assert [v.name for v in job.vertices] == [
        "Collection Source -> Process",
        "even",
        "Map -> odd",
    ]
    assert [(e.target.name, e.side_output) for e in job.edges] == [
        ("even", None),
        ("Map -> odd", "odd"),
    ]
    plan = plan_execution(job, env.configuration)
    outputs = plan.tasks[TaskId("source-1", 0)].outputs
    assert [(o.partitioner, o.side_output) for o in outputs] == [
        (Partitioner.FORWARD, None),
        (Partitioner.FORWARD, "odd"),
    ]


def test_a_side_output_read_alone_is_not_chained_to_its_operator() -> None:
    env = StreamEnvironment(parallelism=1)
    env.from_collection([1]).process(Split()).get_side_output(ODD).collect("odd")
    job = env.build_job_graph()
    assert [v.name for v in job.vertices] == ["Collection Source -> Process", "odd"]


def test_side_outputs_are_read_from_one_operator_with_one_type_per_name() -> None:
    env = StreamEnvironment(parallelism=1)
    split = env.from_collection([1]).process(Split())
    for stream in (split.union(split), split.rebalance(), split.get_side_output(ODD)):
        with pytest.raises(GraphError, match="get_side_output"):
            stream.get_side_output(ODD)
    with pytest.raises(GraphError, match="needs an OutputTag"):
        split.get_side_output("odd")  # type: ignore[arg-type]
    split.get_side_output(OutputTag("typed", int))
    with pytest.raises(GraphError, match="side output ids need to be unique"):
        split.get_side_output(OutputTag("typed", str))
    with pytest.raises(GraphError, match="not to a side output"):
        split.get_side_output(ODD).set_parallelism(2)


def test_an_output_tag_needs_a_name_and_is_equal_by_it() -> None:
    with pytest.raises(ValueError, match="cannot be None or empty"):
        OutputTag("")
    assert OutputTag("a", int) == OutputTag("a") and OutputTag("a") != OutputTag("b")


# --- operators -----------------------------------------------------------------------------------


def process_op(side: frozenset[str] | None) -> NonKeyedProcessOperator:
    op = NonKeyedProcessOperator("process-2", "P", Split())
    if side is not None:
        op.side = SideOutputs(side)
    op.open(ctx())
    return op


def test_a_process_function_yields_pairs_to_the_side_outputs_that_are_read() -> None:
    op = process_op(frozenset({"odd"}))
    out, stamps = op.process_timestamped([1, 2, 10], [5, 6, 7])
    assert (out, stamps) == ([2, 10], [6, 7])
    assert op.side is not None
    # the record's timestamp goes with it; TENS is read by nobody: dropped (as PyFlink)
    assert op.side.take() == [("odd", ["odd 1"], [5])]
    assert op.side.take() == []


def test_without_a_side_output_read_the_pairs_are_records_as_in_pyflink() -> None:
    op = process_op(None)
    assert op.process_batch([1, 2]) == [(ODD, "odd 1"), 2]


def test_a_map_and_a_flat_map_emit_side_outputs_too_as_pyflink_s() -> None:
    mapper_op = MapOperator("map-2", "M", lambda v: (ODD, v) if v % 2 else v)
    flat = FlatMapOperator("flat_map-3", "F", lambda v: [(ODD, v), v * 10])
    for op in (mapper_op, flat):
        op.side = SideOutputs(frozenset({"odd"}))
        op.open(ctx())
    assert mapper_op.process_batch([1, 2, 3]) == [2]
    assert flat.process_timestamped([1, 2], [8, 9]) == ([10, 20], [8, 9])
    assert mapper_op.side is not None and flat.side is not None
    assert mapper_op.side.take() == [("odd", [1, 3], [None, None])]
    assert flat.side.take() == [("odd", [1, 2], [8, 9])]


class Remind(KeyedProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        ctx.timer_service().register_event_time_timer(value[1] + 10)
        yield value

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        yield ODD, (ctx.get_current_key(), timestamp)


def test_a_keyed_process_function_s_timers_emit_side_outputs_with_the_timer_s_time() -> None:
    op = ProcessOperator("process-2", "P", lambda r: r[0], Remind())
    op.side = SideOutputs(frozenset({"odd"}))
    op.open(ctx())
    assert op.process_timestamped([("a", 1)], [1]) == ([("a", 1)], [1])
    (fired, _), _ = op.process_watermark(20)
    assert fired == []
    assert op.side.take() == [("odd", [("a", 11)], [11])]


class Pair(KeyedCoProcessFunction):
    def process_element1(self, value: Any, ctx: Any) -> Iterable[Any]:
        ctx.timer_service().register_event_time_timer(5)
        yield ODD, ("one", value)

    def process_element2(self, value: Any, ctx: Any) -> Iterable[Any]:
        yield value

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any]:
        yield TENS, (ctx.get_current_key(), timestamp)


def test_a_keyed_co_process_function_emits_side_outputs_from_both_inputs_and_timers() -> None:
    op = KeyedCoProcessOperator("co-process-3", "C", (lambda r: r, lambda r: r), Pair())
    op.side = SideOutputs(frozenset({"odd", "tens"}))
    op.open(ctx())
    assert op.process_input(0, ["a"], [1]) == ([], [])
    assert op.process_input(1, ["b"], [2]) == (["b"], [2])
    assert op.input_watermark(0, 9) is None and op.input_watermark(1, 9) == 9
    (fired, _), _ = op.process_watermark(9)
    assert fired == []
    assert op.side.take() == [("odd", [("one", "a")], [1]), ("tens", [("a", 5)], [5])]


class Late(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        values = [v for _, v in elements]
        yield key, sum(values)
        yield TENS, (key, len(values))


def test_late_records_go_to_the_late_data_side_output_with_their_own_timestamp() -> None:
    def window(tags: frozenset[str] | None) -> WindowOperator:
        op = WindowOperator(
            "window-2",
            "W",
            lambda r: r[0],
            assigner=TumblingEventTimeWindows.of(10),
            trigger=TumblingEventTimeWindows.of(10).get_default_trigger(),
            allowed_lateness=5,
            function=Late(),
            function_kind="process",
            late_data_tag="late",
        )
        if tags is not None:
            op.side = SideOutputs(tags)
        op.open(ctx())
        return op

    op = window(frozenset({"late", "tens"}))
    op.process_timestamped([("a", 1), ("a", 2)], [1, 2])
    (fired, stamps), _ = op.process_watermark(12)
    assert (fired, stamps) == ([("a", 3)], [9])
    # within the allowed lateness: the window fires again; past it: the late side output
    assert op.process_timestamped([("a", 3)], [3]) == ([("a", 6)], [9])
    op.process_watermark(15)
    assert op.process_timestamped([("a", 4), ("b", 30)], [4, 30]) == ([], [])
    assert op.side is not None
    assert op.side.take() == [("tens", [("a", 2), ("a", 3)], [9, 9]), ("late", [("a", 4)], [4])]
    assert op.num_late_records_dropped == 0

    unread = window(frozenset({"tens"}))  # late data not read: dropped, and counted
    unread.process_watermark(15)
    unread.process_timestamped([("a", 4)], [4])
    assert unread.num_late_records_dropped == 1 and unread.side is not None
    assert unread.side.take() == []


# --- the record writer and the chain ------------------------------------------------------------


def test_the_record_writer_routes_main_and_side_records_to_their_own_edges() -> None:
    partition = ResultPartition(
        4, pool_size=10, max_buffers_per_channel=10, initial_credits=5, segment_size=1 << 20,
        max_records=100,
    )  # fmt: skip
    writer = RecordWriter(
        [
            (ChannelSelector(Partitioner.FORWARD, 1), "sink-main"),
            (ChannelSelector(Partitioner.REBALANCE, 2), "map-4"),
            (ChannelSelector(Partitioner.FORWARD, 1), "sink-tens"),
        ],
        partition,
        [None, "odd", "tens"],
    )
    assert writer.side_outputs == {"odd", "tens"}
    writer.emit([2, 4])
    writer.emit_side("odd", [1, 3, 5], [7, 8, 9])
    writer.emit_side("unread", [0])
    assert partition.emitted() == {0: 2, 1: 2, 2: 1, 3: 0}
    assert writer.records_out == 5
    partition.flush()
    sent = {c: item for c, item in partition.poll_sendable()}
    assert isinstance(sent[1], Buffer) and sent[1].timestamps == [7, 9]


def test_the_chain_collects_the_side_outputs_of_its_last_operator() -> None:
    chain = OperatorChain(
        [mapper(lambda v: v + 1, 1), node(2, NonKeyedProcessDescriptor(function=Split()))],
        side_outputs=frozenset({"odd"}),
    )
    chain.open(ctx(), None)
    assert chain.process([0, 1, 2]) == [2]
    assert chain.take_side_outputs() == [("odd", ["odd 1", "odd 3"], [None, None])]
    assert chain.take_side_outputs() == []


# --- the task -------------------------------------------------------------------------------------


def split_task(*, pool: int = 10) -> Driver:
    """A task: a process function with its main output (channel 0) and side output ``odd``
    (channel 1), one input channel."""
    task_spec = spec(
        [node(2, NonKeyedProcessDescriptor(function=Split()))],
        inputs=1,
        mode=GateMode.ALIGNED_WITH_TIMEOUT,
        network=NetworkSettings(pool_size=pool, initial_credits=0),
    )
    task_spec = dataclasses.replace(
        task_spec,
        outputs=(
            OutputEdge(partitioner=Partitioner.FORWARD, num_channels=1, target="sink-even"),
            OutputEdge(
                partitioner=Partitioner.FORWARD, num_channels=1, target="map-4", side_output="odd"
            ),
        ),
    )
    driver = Driver(task_spec)
    driver.send(StartTask())
    return driver


def test_an_unaligned_barrier_overtakes_side_output_buffers_and_persists_them() -> None:
    """No credit downstream: the task's main and side output buffers queue; an unaligned
    barrier overtakes both, and both are that checkpoint's output channel state."""
    task = split_task()
    task.send(InputItem(channel=0, item=Buffer([1, 2, 3, 4], 32)))
    task.send(InputItem(channel=0, item=barrier(1, UNALIGNED)), run=False)
    effects = task.step() + task.run()
    (write,) = only(effects, WriteSnapshot)
    persisted = {
        c: [r for b in bs for r in b.records] for c, bs in write.snapshot.output_channels.items()
    }
    assert persisted == {0: [2, 4], 1: ["odd 1", "odd 3"]}
    assert [e.item for e in only(effects, SendToOutput)] == [barrier(1, UNALIGNED)] * 2


def test_side_output_records_of_a_timer_leave_before_the_watermark_that_fired_it() -> None:
    env = StreamEnvironment(parallelism=1)
    keyed = env.from_collection([("a", 1)]).key_by(lambda r: r[0]).process(Remind())
    keyed.collect("main")
    keyed.get_side_output(ODD).collect("reminders")
    plan = plan_execution(env.build_job_graph(), env.configuration)
    (task_spec,) = [s for s in plan.tasks.values() if s.operators[0].name == "KeyedProcess"]
    assert [o.side_output for o in task_spec.outputs] == [None, "odd"]
    task = Driver(task_spec)
    task.send(StartTask())
    task.send(InputItem(channel=0, item=Buffer([("a", 1)], 16, keys=["a"], timestamps=[1])))
    effects = task.send(InputItem(channel=0, item=Watermark(timestamp=20)))
    side = [e.item for e in only(effects, SendToOutput) if e.channel == 1]
    assert len(side) == 2 and isinstance(side[0], Buffer)
    assert list(side[0].records) == [("a", 11)] and side[0].timestamps == [11]
    assert side[1] == Watermark(timestamp=20)


# --- jobs ----------------------------------------------------------------------------------------


class Route(CoProcessFunction):
    def process_element1(self, value: Any, ctx: Any) -> Iterable[Any]:
        yield value
        yield TENS, ("one", value)

    def process_element2(self, value: Any, ctx: Any) -> Iterable[Any]:
        yield TENS, ("two", value)


@pytest.mark.parametrize("unaligned", [False, True])
def test_a_job_with_side_outputs_runs_checkpointed_to_the_same_output(unaligned: bool) -> None:
    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(10)
    env.configure({"execution.checkpointing.unaligned.enabled": unaligned})
    split = env.from_generator(lambda n: n, 2000, rate=200_000).process(Split())
    split.collect("even")
    odd = split.get_side_output(ODD)
    odd.rebalance().map(str.upper).collect("odd")
    routed = split.connect(odd).process(Route())
    routed.get_side_output(TENS).key_by(lambda r: r[0]).map(lambda r: r[1]).collect("tens")
    result = env.execute("split", runtime="simulation", seed=7)
    assert result.succeeded, result.failure
    assert result.checkpoints["counts"]["completed"] > 0
    assert sorted(result.output["even"]) == list(range(0, 2000, 2))
    assert sorted(result.output["odd"]) == sorted(f"ODD {n}" for n in range(1, 2000, 2))
    tens = result.output["tens"]
    assert sorted(v for v in tens if isinstance(v, int)) == list(range(0, 2000, 2))
    assert sorted(v for v in tens if isinstance(v, str)) == sorted(
        f"odd {n}" for n in range(1, 2000, 2)
    )


def test_late_records_of_an_event_time_window_reach_their_side_output() -> None:
    env = StreamExecutionEnvironment(parallelism=2)
    env.configure({"pipeline.auto-watermark-interval": 1})
    late = OutputTag("late")
    clicks = [("p", n * 1000) for n in range(5000)] + [("late", 1), ("late", 2)]
    windowed = (
        env.from_collection(clicks, parallelism=1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda r, _: r[1])
        )
        .key_by(lambda r: r[0])
        .window(TumblingEventTimeWindows.of(1_000_000))
        .side_output_late_data(late)
        .reduce(lambda a, b: (a[0], max(a[1], b[1])))
    )
    windowed.collect("windows")
    windowed.get_side_output(late).collect("late")
    result = env.execute("late", runtime="simulation", seed=1)
    assert result.succeeded, result.failure
    assert sorted(result.output["late"]) == [("late", 1), ("late", 2)]
    assert sorted(result.output["windows"]) == [("p", 999_000 + 1_000_000 * n) for n in range(5)]


def test_a_restore_from_an_unaligned_checkpoint_replays_the_side_outputs_channel_state() -> None:
    """The side output is the job's only network edge, its reader slow: unaligned barriers
    overtake its queued buffers, which the checkpoint persists; the reader fails, the job
    restores from such a checkpoint, and the side output's records arrive exactly once."""
    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(20)
    env.configure(
        {
            "execution.checkpointing.unaligned.enabled": True,
            "ckptsim.buffer.records": 50,
            "web.checkpoints.history": 100,
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": 3,
            "restart-strategy.fixed-delay.delay": "10 ms",
        }
    )
    split = env.from_generator(lambda n: n, 20_000, name="numbers").process(Split())
    split.collect("even")
    (
        split.get_side_output(ODD)
        .map_batch(lambda batch: batch, name="SlowOdd")
        .processing_cost(per_buffer_ms=2)
        .collect("odd")
    )
    fault = FailTask(task="map_batch-4#1", at_record=2_000)
    result = env.execute("split", runtime="simulation", seed=7, faults=[fault])
    assert result.succeeded, result.failure
    assert result.restarts == 1
    restored = result.checkpoints["latest"]["restored"]["id"]
    (taken,) = [h for h in result.checkpoints["history"] if h["id"] == restored]
    assert taken["checkpoint_type"] == "UNALIGNED_CHECKPOINT" and taken["persisted_data"] > 0
    assert sorted(result.output["even"]) == list(range(0, 20_000, 2))
    assert sorted(result.output["odd"]) == sorted(f"odd {n}" for n in range(1, 20_000, 2))


class EveryTen(ProcessAllWindowFunction):
    def process(self, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        values = list(elements)
        yield sum(values)
        yield TENS, len(values)


def test_a_process_all_window_function_yields_to_a_side_output() -> None:
    env = StreamExecutionEnvironment(parallelism=2)
    env.configure({"pipeline.auto-watermark-interval": 1})
    sums = (
        env.from_collection(list(range(100)), parallelism=1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda r, _: r)
        )
        .window_all(TumblingEventTimeWindows.of(10))
        .process(EveryTen())
    )
    sums.collect("sums")
    sums.get_side_output(TENS).collect("sizes")
    result = env.execute("all", runtime="simulation", seed=1)
    assert result.succeeded, result.failure
    assert sorted(result.output["sums"]) == sorted(sum(range(n, n + 10)) for n in range(0, 100, 10))
    assert result.output["sizes"] == [10] * 10
