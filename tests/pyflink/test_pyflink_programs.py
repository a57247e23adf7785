"""PyFlink programs of issue 23 (as users write them) print under ``ckptsim run`` what Apache
Flink 2.3 printed for them (``expected/``, captured with ``apache-flink==2.3.0``, see
``expected/README.md``): collected results in Flink's order, ``KeyedStream.print``,
execution plans, ``window_all``, BATCH mode's parallelism, state backends and checkpoint
storages, ``cache()``, ``add_sink``, ``partition_custom``, ``rescale``, watermark alignment,
side outputs, broadcast state and metrics.

Each runs on the deterministic simulation at Flink's default parallelism where the outputs
were captured (2). Most compare per print prefix, in order; where Flink's own runs order the
lines of one prefix differently (two sinks printing with one prefix, a subtask reading from
several upstream subtasks, timers of equal time whose order depends on which record came
first) the lines compare in any order; execution plans compare with their
node ids renumbered (``compare.plan_ids_renumbered``).
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from ckptsim._cli import main
from tests.pyflink.compare import (
    PROGRAMS,
    assert_same_lines,
    assert_same_output,
    by_prefix,
    expected_output,
    plan_ids_renumbered,
    without_subtasks,
)

PINNED = ["-D", "parallelism.default=2"]


def run(capsys: pytest.CaptureFixture[str], script: Path, *options: str) -> tuple[int, str, str]:
    code = main(["run", str(script), "--simulate", *PINNED, *options])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _plans(actual: str, expected: str) -> None:
    """The plans line for line (node ids renumbered); the job's output after them with the
    subtask numbers left out (its records reach a parallelism-2 operator through rebalance,
    which starts at a random subtask in Flink)."""
    plans, output = _split_plans(plan_ids_renumbered(actual))
    flink_plans, flink_output = _split_plans(plan_ids_renumbered(expected))
    assert plans == flink_plans
    assert without_subtasks(output) == without_subtasks(flink_output)


def _split_plans(text: str) -> tuple[str, str]:
    """The plans (and the lines naming them) and what the program printed after them."""
    end = text.rindex("\n}\n") + 3
    return text[:end], text[end:]


def _priced(actual: str, expected: str) -> None:
    """The keyed totals per print prefix, in order; the priced orders without their subtask
    numbers (they reach the parallelism-2 operator through rebalance, which starts at a random
    subtask in Flink)."""
    totals, flink_totals = (
        {p: lines for p, lines in by_prefix(text).items() if p.startswith("totals")}
        for text in (actual, expected)
    )
    assert totals == flink_totals
    priced, flink_priced = (
        [line for line in without_subtasks(text) if line.startswith("priced")]
        for text in (actual, expected)
    )
    assert priced == flink_priced


def _same_without_subtasks(actual: str, expected: str) -> None:
    """The same lines with the subtask numbers of their prefixes left out: the program's
    records reach parallelism-2 operators through rebalance, which starts at a random subtask
    in Flink (two Flink runs of it differ so)."""
    assert without_subtasks(actual) == without_subtasks(expected)


PROGRAM_CASES: list[tuple[str, Callable[[str, str], None]]] = [
    ("collected_in_order", assert_same_output),
    ("keyed_print", assert_same_lines),
    ("execution_plans", _plans),
    ("window_all_clicks", assert_same_output),
    ("batch_parallelism", assert_same_output),
    ("state_backends", assert_same_output),
    ("cached_orders", assert_same_lines),
    ("sink_function", assert_same_lines),
    ("log_routing", assert_same_lines),
    ("aligned_watermarks", assert_same_output),
    ("late_clicks", assert_same_lines),
    ("fraud_rules", assert_same_output),
    ("order_timeouts", assert_same_lines),
    ("log_levels", assert_same_output),
    ("batch_price_list", _priced),
    ("rejected_orders", assert_same_output),
    # written by a tester who had not seen ckptsim's metrics code, run on Flink 2.3 first
    ("metrics_late_clicks", assert_same_lines),
    ("metrics_log_routing", _same_without_subtasks),
    ("metrics_sensor_batch", assert_same_lines),
]


@pytest.mark.parametrize(("name", "compare"), PROGRAM_CASES, ids=[c[0] for c in PROGRAM_CASES])
def test_program_prints_what_flink_prints(
    name: str, compare: Callable[[str, str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, PROGRAMS / f"{name}.py")
    assert code == 0, err
    compare(out, expected_output(name))


def test_timers_registered_by_due_timers_fire_in_pyflinks_rounds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``programs/timer_rounds.py``: per print prefix, in order, as Flink 2.3 printed it."""
    code, out, err = run(capsys, PROGRAMS / "timer_rounds.py")
    assert code == 0, err
    assert_same_output(out, expected_output("timer_rounds"))


def test_the_comparisons_can_fail() -> None:
    with pytest.raises(AssertionError):
        assert_same_lines("a\nb\n", "a\nc\n")
    plan = '{\n  "id" : 7,\n  "x" : [ {\n    "id" : 9\n  } ]\n}\n'
    assert plan_ids_renumbered(plan) == '{\n  "id" : 1,\n  "x" : [ {\n    "id" : 2\n  } ]\n}\n'
    with pytest.raises(AssertionError):
        _plans(plan, plan.replace('"x"', '"y"'))
    assert without_subtasks("one:2> b\n1> a\nc\n") == ["> a", "c", "one> b"]
    _plans(plan + "one:2> b\n", plan + "one:1> b\n")
    with pytest.raises(AssertionError):
        _plans(plan + "one:2> b\n", plan + "one:1> c\n")
    _priced("priced:1> a\ntotals:2> t\n", "priced:2> a\ntotals:2> t\n")
    for wrong in ("priced:1> b\ntotals:2> t\n", "priced:1> a\ntotals:1> t\n"):
        with pytest.raises(AssertionError):
            _priced(wrong, "priced:2> a\ntotals:2> t\n")


def _program(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_state_backend_settings_are_accepted_and_named_once_as_changing_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-D state.backend.type=rocksdb``, the most common line of a production Flink
    configuration, runs; each state backend setting is named once in the log."""
    script = _program(
        tmp_path,
        """
        from pyflink.common import Configuration
        from pyflink.datastream import StreamExecutionEnvironment

        config = Configuration()
        config.set_string("state.backend.rocksdb.writebuffer.size", "128 mb")
        config.set_string("state.backend.rocksdb.some-newer-option", "x")
        env = StreamExecutionEnvironment.get_execution_environment(config)
        env.set_parallelism(1)
        env.from_collection([1, 2]).key_by(lambda x: x).sum().print()
        env.execute()
        """,
    )
    code, out, err = run(
        capsys,
        script,
        "--log-format",
        "json",
        "-D",
        "state.backend.type=rocksdb",
        "-D",
        "state.backend.incremental=true",
        "-D",
        "execution.checkpointing.storage=jobmanager",
    )
    assert code == 0, err
    assert sorted(out.splitlines()) == ["1", "2"]
    events = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    inert = [e["key"] for e in events if e["event"] == "setting_has_no_effect"]
    assert sorted(inert) == [  # the JobManager's memory is a checkpoint storage of ckptsim's
        "state.backend.incremental",
        "state.backend.rocksdb.writebuffer.size",
        "state.backend.type",
    ]
    ignored = [e["call"] for e in events if e["event"] == "pyflink_call_ignored"]
    assert ignored == ["configuration key state.backend.rocksdb.some-newer-option"]


def test_a_wrong_state_backend_is_a_configuration_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _program(tmp_path, "print('never')\n")
    code, out, err = run(capsys, script, "-D", "state.backend.type=leveldb")
    assert code == 2
    assert out == ""
    assert "state.backend.type" in err and "HASHMAP, ROCKSDB, FORST" in err


@pytest.mark.parametrize(
    ("body", "names"),
    [
        (
            """
            from pyflink.datastream.functions import SinkFunction
            SinkFunction("org.apache.flink.connector.jdbc.JdbcSink")
            """,
            ("SinkFunction('org.apache.flink.connector.jdbc.JdbcSink')", "PrintSinkFunction"),
        ),
        (
            """
            from pyflink.datastream.state_backend import CustomStateBackend
            """,
            ("CustomStateBackend", "HashMapStateBackend"),
        ),
        (
            """
            from pyflink.datastream import StreamExecutionEnvironment
            env = StreamExecutionEnvironment.get_execution_environment()
            env.from_collection([1]).union(env.from_collection([2])).cache()
            """,
            ("cache() of a union",),
        ),
    ],
)
def test_what_cannot_run_is_refused_naming_the_line(
    body: str, names: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _program(tmp_path, body)
    code, out, err = run(capsys, script)
    assert code == 2 and out == ""
    (message,) = err.splitlines()
    assert message.startswith(f"ckptsim run: {script}:")
    assert "cannot run on ckptsim" in message
    for name in names:
        assert name in message


def test_a_custom_partition_out_of_range_fails_the_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _program(
        tmp_path,
        """
        from pyflink.datastream import StreamExecutionEnvironment

        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection(["a"]).partition_custom(lambda k, n: n, lambda r: r).print()
        env.execute()
        """,
    )
    code, _, err = run(capsys, script)
    assert code == 1
    assert "the custom partitioner returned 2" in err


def test_a_cached_stream_is_computed_once_in_batch_mode_and_again_after_invalidate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _program(
        tmp_path,
        """
        from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

        computed = []

        def parse(line):
            computed.append(line)
            return line.upper()

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
        cached = env.from_collection(["a", "b", "c"]).map(parse).cache()
        cached.print("first")
        env.execute()
        cached.filter(lambda s: s != "B").print("second")
        env.execute()
        print("computed", len(computed))
        cached.invalidate()
        cached.print("third")
        env.execute()
        print("computed", len(computed))
        """,
    )
    code, out, err = run(capsys, script)
    assert code == 0, err
    lines = out.splitlines()
    assert sorted(line for line in lines if line.startswith("second")) == [
        "second> A",
        "second> C",
    ]
    assert [line for line in lines if line.startswith("computed")] == [
        "computed 3",
        "computed 6",
    ]


def test_watermark_alignment_is_recorded_and_named_only_where_it_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _program(
        tmp_path,
        """
        from pyflink.common import Duration, WatermarkStrategy
        from pyflink.datastream import StreamExecutionEnvironment
        from pyflink.datastream.connectors.number_seq import NumberSequenceSource

        strategy = (
            WatermarkStrategy.for_monotonous_timestamps()
            .with_watermark_alignment("feeds", Duration.of_seconds(5))
            .with_idleness(Duration.of_seconds(1))
        )
        print(strategy.alignment)
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        a = env.from_source(NumberSequenceSource(1, 2), strategy, "a")
        b = env.from_source(NumberSequenceSource(3, 3), strategy, "b")
        # only a source pauses for its group: a strategy assigned later is not aligned
        a.union(b).assign_timestamps_and_watermarks(strategy).print()
        env.execute()
        """,
    )
    code, out, err = run(capsys, script, "--log-format", "json")
    assert code == 0, err
    first, *numbers = out.splitlines()
    assert first == "('feeds', 5000, 1000)"
    assert sorted(numbers) == ["1", "2", "3"]
    warned = [json.loads(line) for line in err.splitlines() if "pyflink_call_ignored" in line]
    assert [w["call"] for w in warned] == [
        "assign_timestamps_and_watermarks(...with_watermark_alignment())"
    ]
