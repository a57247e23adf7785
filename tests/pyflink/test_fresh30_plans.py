"""Plans of programs a new user wrote (issue fresh30), compared with what Flink 2.3's
``get_execution_plan()`` printed for them (captured with ``apache-flink==2.3.0``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ckptsim._cli import main
from ckptsim.pyflink.common import Duration, Encoder, Types, WatermarkStrategy
from ckptsim.pyflink.common.watermark_strategy import TimestampAssigner
from ckptsim.pyflink.datastream import StreamExecutionEnvironment
from ckptsim.pyflink.datastream.connectors.file_system import FileSink
from ckptsim.pyflink.datastream.connectors.number_seq import NumberSequenceSource
from ckptsim.pyflink.datastream.functions import KeyedProcessFunction
from runtime.graph import flink_operator_names
from runtime.partition import Partitioner


class _Ts(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[1])


def _nodes(env: StreamExecutionEnvironment) -> list[tuple[str, int, list[str]]]:
    nodes = json.loads(env.get_execution_plan())["nodes"]
    return [
        (
            node["contents"],
            node["parallelism"],
            [p["ship_strategy"] for p in node.get("predecessors", [])],
        )
        for node in nodes
    ]


def test_set_parallelism_after_a_python_timestamp_assigner_sets_only_remove_timestamp() -> None:
    """PyFlink's ``assign_timestamps_and_watermarks`` with a Python assigner is three operators;
    ``set_parallelism`` on its result sets the last one's (``Remove-Timestamp``): the other two
    keep the default parallelism, fed by rebalance, so two watermark generators run."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    stream = env.from_collection(
        [("a", 1), ("b", 2)], type_info=Types.TUPLE([Types.STRING(), Types.LONG()])
    )
    stream = stream.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_millis(5)
        ).with_timestamp_assigner(_Ts())
    ).set_parallelism(1)
    stream.key_by(lambda v: v[0]).map(lambda v: v[0]).print()
    # Flink 2.3 (node ids aside)
    assert _nodes(env) == [
        ("Source: Collection Source", 1, []),
        ("Extract-Timestamp", 2, ["REBALANCE"]),
        ("Timestamps/Watermarks", 2, ["FORWARD"]),
        ("Remove-Timestamp", 1, ["REBALANCE"]),
        ("_stream_key_by_map_operator", 1, ["FORWARD"]),
        ("Map, Map", 2, ["HASH"]),
        ("Sink: Print to Std. Out", 2, ["FORWARD"]),
    ]


class _Stamp(KeyedProcessFunction):
    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        yield f"{value[0]} {value[1]} ts={ctx.timestamp()}"


def test_a_python_timestamp_assigner_runs_at_the_default_parallelism_before_its_last_one() -> None:
    """The job that runs is Flink's: the assigner at the default parallelism (two watermark
    generators), rebalanced into ``Remove-Timestamp`` at the parallelism set, which passes
    each record on with its timestamp (Flink 2.3 printed the same lines)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    data = [("a", 10), ("b", 20), ("a", 30), ("b", 40), ("a", 50), ("c", 60)]
    stream = env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.LONG()]))
    stream = stream.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_millis(5)
        ).with_timestamp_assigner(_Ts())
    ).set_parallelism(1)
    out = stream.key_by(lambda v: v[0], key_type=Types.STRING()).process(_Stamp(), Types.STRING())
    job = env._env.build_job_graph()
    assert [(v.name, v.parallelism) for v in job.vertices] == [
        ("Collection Source", 1),
        ("Timestamps/Watermarks", 2),
        ("Remove-Timestamp", 1),
        ("KEYED PROCESS", 2),
    ]
    assert [e.partitioner for e in job.edges] == [
        Partitioner.REBALANCE,
        Partitioner.REBALANCE,
        Partitioner.HASH,
    ]
    assert sorted(out.execute_and_collect()) == [
        "a 10 ts=10",
        "a 30 ts=30",
        "a 50 ts=50",
        "b 20 ts=20",
        "b 40 ts=40",
        "c 60 ts=60",
    ]


def test_set_parallelism_on_from_source_sets_the_sources() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(3)
    env.from_source(
        NumberSequenceSource(0, 9), WatermarkStrategy.no_watermarks(), "numbers"
    ).set_parallelism(2).map(lambda x: x * 2).print()
    # Flink 2.3 (node ids aside)
    assert _nodes(env) == [
        ("Source: numbers", 2, []),
        ("Map, Map", 3, ["REBALANCE"]),
        ("Sink: Print to Std. Out", 3, ["FORWARD"]),
    ]


def test_a_file_sinks_plan_has_no_node_flink_does_not_have(tmp_path: Any) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection([1, 2, 3], type_info=Types.INT()).map(str, Types.STRING()).sink_to(
        FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder()).build()
    )
    # Flink 2.3: Source, Map, Sink: Writer, Sink: Committer (the last two are one node here,
    # as docs/pyflink-differences.md says)
    assert [name for name, _, _ in _nodes(env)] == [
        "Source: Collection Source",
        "Map",
        "Sink: File Sink",
    ]


def test_a_file_sinks_lines_are_made_at_the_sinks_parallelism(tmp_path: Any) -> None:
    """Flink's sink writer makes each record's line: here an operator chained to the sink,
    at its parallelism, which neither the plan nor the task's name shows."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection([1, 2, 3], type_info=Types.INT()).map(str, Types.STRING()).sink_to(
        FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder()).build()
    ).set_parallelism(1)
    assert _nodes(env) == [
        ("Source: Collection Source", 1, []),
        ("Map", 2, ["REBALANCE"]),
        ("Sink: File Sink", 1, ["REBALANCE"]),
    ]
    job = env._env.build_job_graph()
    assert [(flink_operator_names(v), v.parallelism) for v in job.vertices] == [
        (("Source: Collection Source",), 1),
        (("Map",), 2),
        (("Sink: File Sink",), 1),
    ]


SOURCE_WITH_UID = """\
from pyflink.common import WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.enable_checkpointing(10)
env.from_source(
    NumberSequenceSource(0, 999), WatermarkStrategy.no_watermarks(), "numbers"
).uid("numbers").map(lambda x: x).print()
env.execute("uid")
"""


def test_a_from_source_uid_names_the_sources_task(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The task a chain's first operator begins is named by that operator's uid (jobs.md,
    task names), and a uid matches the source's state on restore, as in Flink: a fault names
    the source's task by the uid the program gave it."""
    script = tmp_path / "job.py"
    script.write_text(SOURCE_WITH_UID)
    code = main(
        [
            "run",
            str(script),
            "--simulate",
            "-q",
            "-D",
            "ckptsim.faults=fail-task:task=numbers#0,at-record=500",
        ]
    )
    err = capsys.readouterr().err
    assert code == 0, err
