"""``ckptsim run`` of PyFlink programs: the import hook, what stops a program, warnings,
parallelism, failures, and the environment's API."""

from __future__ import annotations

import importlib
import json
import os
import sys
import textwrap
import types
from pathlib import Path

import pytest

import ckptsim.pyflink.common
import ckptsim.pyflink.datastream.connectors.file_system
from ckptsim._cli import main
from ckptsim._errors import UnsupportedFeature
from ckptsim.pyflink._imports import pyflink_imports


def program(tmp_path: Path, body: str, name: str = "job.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["run", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- the import hook ---------------------------------------------------------------------------


def _import_outside() -> types.ModuleType | None:
    """``import pyflink`` outside the hook: a real PyFlink if one is installed, else None."""
    try:
        return importlib.import_module("pyflink")
    except ImportError:
        return None


def test_pyflink_resolves_to_ckptsim_only_inside_the_block() -> None:
    before = _import_outside()
    assert before is None or before.__name__ == "pyflink"  # nothing of ckptsim's
    with pyflink_imports() as finder:
        common = importlib.import_module("pyflink.common")
        connectors = importlib.import_module("pyflink.datastream.connectors.file_system")
        assert finder.used
        assert common is ckptsim.pyflink.common  # one implementation, two names
        assert connectors is ckptsim.pyflink.datastream.connectors.file_system
    left = {n: m for n, m in sys.modules.items() if n == "pyflink" or n.startswith("pyflink.")}
    assert not any(m.__name__.startswith("actors.") for m in left.values())
    assert ckptsim.pyflink.common.__spec__ is not None
    assert ckptsim.pyflink.common.__spec__.name == "ckptsim.pyflink.common"  # not renamed
    after = _import_outside()
    assert after is before  # no PyFlink (ImportError) again, or the same real one


def test_a_real_pyflink_is_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    real = types.ModuleType("pyflink")
    real_common = types.ModuleType("pyflink.common")
    monkeypatch.setitem(sys.modules, "pyflink", real)
    monkeypatch.setitem(sys.modules, "pyflink.common", real_common)
    with pyflink_imports():
        assert importlib.import_module("pyflink.common") is not real_common
    assert sys.modules["pyflink"] is real
    assert sys.modules["pyflink.common"] is real_common


def test_what_ckptsim_cannot_run_stops_the_import() -> None:
    with pyflink_imports():
        with pytest.raises(UnsupportedFeature, match="Table API"):
            importlib.import_module("pyflink.table")
        with pytest.raises(UnsupportedFeature, match="kafka connector"):
            importlib.import_module("pyflink.datastream.connectors.kafka")
        connectors = importlib.import_module("pyflink.datastream.connectors")
        with pytest.raises(UnsupportedFeature, match="FlinkKafkaConsumer"):
            connectors.FlinkKafkaConsumer  # noqa: B018


# --- whole programs ----------------------------------------------------------------------------

TABLE = """
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.table import StreamTableEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    print("never printed")
"""

KAFKA = """
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.connectors import FlinkKafkaConsumer
"""

ADD_SINK = """
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2]).add_sink(object())
    env.execute()
"""


@pytest.mark.parametrize(
    ("body", "names", "line"),
    [
        (TABLE, ("Table API", "DataStream API"), 3),
        (KAFKA, ("FlinkKafkaConsumer", "Kafka connector", "FileSource"), 3),
        (ADD_SINK, ("add_sink", "FileSink"), 5),
    ],
)
def test_unsupported_parts_stop_the_program_with_one_line(
    body: str,
    names: tuple[str, ...],
    line: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, program(tmp_path, body))
    assert code == 2
    assert out == ""
    (message,) = err.splitlines()
    assert message.startswith(f"ckptsim run: {tmp_path / 'job.py'}:{line}: ")
    assert "cannot run on ckptsim" in message
    for name in names:
        assert name in message


JVM_ONLY = """
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    config = Configuration()
    config.set_string("python.fn-execution.bundle.size", "1000")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.add_jars("file:///a.jar")
    env.add_jars("file:///b.jar")
    env.set_python_executable("python3")
    env.get_config().enable_object_reuse()
    env.from_collection(["x"]).print()
    env.execute()
"""


def test_jvm_only_calls_are_accepted_with_one_warning_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, program(tmp_path, JVM_ONLY), "--log-format", "json", "-q", "-p", "1"
    )
    assert code == 0, err
    assert out == "x\n"
    warned = [json.loads(line) for line in err.splitlines() if "pyflink_call_ignored" in line]
    assert sorted(w["call"] for w in warned) == [
        "ExecutionConfig.enable_object_reuse()",
        "add_jars()",
        "configuration key python.fn-execution.bundle.size",
        "set_python_executable()",
    ]
    assert all(w["level"] == "warning" and w["reason"] for w in warned)


PARALLELISM = """
    import sys
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    if sys.argv[1:] == ["one"]:
        env.set_parallelism(1)
    print("parallelism", env.get_parallelism(), file=sys.stderr)
    env.from_collection(list(range(8))).map(lambda x: x * 10).print()
    env.execute()
"""


def _prefixes(out: str) -> set[str]:
    return {line.split("> ")[0] if "> " in line else "" for line in out.splitlines()}


def test_parallelism_default_is_the_cpu_count_below_the_command_line_below_the_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = program(tmp_path, PARALLELISM)
    code, _, err = run(capsys, script, "--simulate", "-q")
    assert code == 0 and f"parallelism {os.cpu_count()}" in err
    code, out, err = run(capsys, script, "--simulate", "-q", "-p", "3")
    assert code == 0 and "parallelism 3" in err
    assert _prefixes(out) == {"1", "2", "3"}
    code, out, err = run(capsys, script, "--simulate", "-q", "-p", "3", "--", "one")
    assert code == 0 and "parallelism 1" in err
    assert _prefixes(out) == {""}  # the program's set_parallelism(1) wins, as in Flink


FAILING = """
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_collection([1, 0]).map(lambda x: 1 // x).print()
    env.execute("divides")
    print("after the failed job")
"""


def test_a_failed_job_ends_the_program_as_flinks_execute_raises(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, program(tmp_path, FAILING), "--simulate")
    assert code == 1
    assert "after the failed job" not in out
    assert "ZeroDivisionError" in err
    assert "Job 'divides' FAILED" in err


API = """
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.connectors import NumberSequenceSource
    from pyflink.common import WatermarkStrategy

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    numbers = env.from_source(NumberSequenceSource(1, 6), WatermarkStrategy.no_watermarks(), "n")
    print(sorted(numbers.map(lambda n: n * n).execute_and_collect()))
    print(numbers.map(lambda n: n, output_type=Types.DOUBLE()).execute_and_collect(limit=2))
    evens = numbers.filter(lambda n: n % 2 == 0).key_by(lambda n: n % 4).sum()
    evens.print("evens")
    client = env.execute_async("async job")
    print(client.get_job_status().result(), len(str(client.get_job_id())))
    print(client.get_job_execution_result().result().get_job_id() == client.get_job_id())
    try:
        env.execute()
    except RuntimeError as error:
        print(error)
"""


def test_execute_runs_what_was_built_since_the_last_execute(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, program(tmp_path, API), "--simulate", "-q")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "[1, 4, 9, 16, 25, 36]"
    assert lines[1] in ("[1.0, 2.0]", "[4.0, 5.0]")  # subtask 0 or 1 first
    evens = sorted(line for line in lines if line.startswith("evens:"))
    assert sorted(e.split("> ")[1] for e in evens) == ["2", "4", "8"]
    assert lines[-3:] == [
        "JobStatus.FINISHED 32",
        "True",
        "No operators defined in streaming topology. Cannot execute.",
    ]


EXITS = """
    import sys
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_collection(["done"]).print()
    env.execute()
    sys.exit(int(sys.argv[1]))
"""


@pytest.mark.parametrize(("status", "code"), [("0", 0), ("3", 2)])
def test_sys_exit_ends_the_program(
    status: str, code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    returned, out, err = run(capsys, program(tmp_path, EXITS), "--simulate", "-q", "--", status)
    assert returned == code
    assert out == "done\n"
    assert ("exited with status 3" in err) == (status == "3")


def test_global_job_parameters_reach_every_function(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``set_global_job_parameters`` (``pipeline.global-job-parameters``) is what a function's
    runtime context answers ``get_job_parameter`` with. A ``-D`` is what the program starts
    from: the program's own setting wins over it, as under ``flink run -D`` (checked on Flink
    2.3.0: ``blue/none``)."""
    script = program(
        tmp_path,
        """
        from pyflink.datastream import StreamExecutionEnvironment
        from pyflink.datastream.functions import MapFunction, RuntimeContext

        class Tag(MapFunction):
            def open(self, runtime_context: RuntimeContext):
                self.tag = runtime_context.get_job_parameter("tag", "none")
                self.other = runtime_context.get_job_parameter("other", "none")

            def map(self, value):
                return f"{self.tag}/{self.other}:{value}"

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        env.get_config().set_global_job_parameters({"tag": "blue"})
        assert env.get_config().get_global_job_parameters() == {"tag": "blue"}
        env.from_collection([1, 2]).map(Tag()).print()
        env.execute()
        """,
    )
    code, out, _ = run(capsys, script, "--simulate")
    assert (code, out) == (0, "blue/none:1\nblue/none:2\n")
    code, out, _ = run(capsys, script, "--simulate", "-D", "pipeline.global-job-parameters=other:x")
    assert (code, out) == (0, "blue/none:1\nblue/none:2\n")
    without = Path(script).with_name("without.py")
    without.write_text(
        Path(script)
        .read_text()
        .replace('env.get_config().set_global_job_parameters({"tag": "blue"})\n', "")
        .replace('assert env.get_config().get_global_job_parameters() == {"tag": "blue"}\n', "")
    )
    code, out, _ = run(
        capsys, str(without), "--simulate", "-D", "pipeline.global-job-parameters=other:x"
    )
    assert (code, out) == (0, "none/x:1\nnone/x:2\n")  # what the program did not set


def test_the_runtime_context_names_the_task_as_flink_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``get_task_name()`` is the task's chain name, as Flink 2.3 answers it (``Map``,
    ``KEYED PROCESS -> Sink: Print to Std. Out``), and ``get_task_name_with_subtasks()`` adds
    ``(i/n)#attempt``; the 2nd print sink of a program is Flink's ``Sink: Print to Std. Out``
    too. ckptsim said ``Map (1/3)``, ``Map (1/3) (1/3)`` and ``Print to Std. Out (2)``."""
    script = program(
        tmp_path,
        """
        from pyflink.common import Types
        from pyflink.datastream import StreamExecutionEnvironment
        from pyflink.datastream.functions import KeyedProcessFunction, MapFunction

        class M(MapFunction):
            def open(self, ctx):
                self.names = (ctx.get_task_name(), ctx.get_task_name_with_subtasks())

            def map(self, value):
                return str(self.names)

        class K(KeyedProcessFunction):
            def open(self, ctx):
                self.names = (ctx.get_task_name(), ctx.get_task_name_with_subtasks())

            def process_element(self, value, ctx):
                yield str(self.names)

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        ds = env.from_collection([1], type_info=Types.INT())
        ds.map(M(), output_type=Types.STRING()).set_parallelism(3).print("a")
        ds.key_by(lambda x: x).process(K(), output_type=Types.STRING()).print("b")
        env.execute()
        """,
    )
    code, out, _ = run(capsys, script, "--simulate")
    assert code == 0
    assert sorted(out.splitlines()) == [
        "a> ('Map', 'Map (1/3)#0')",
        "b> ('KEYED PROCESS -> Sink: Print to Std. Out', "
        "'KEYED PROCESS -> Sink: Print to Std. Out (1/1)#0')",
    ]


def test_a_typed_stream_prints_on_the_prefixes_of_the_subtasks_that_made_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Java's print sink writes a typed record's toString itself: chained to its input at the
    same parallelism, each line carries the prefix of the subtask that produced it, whatever
    the environment's default parallelism."""
    script = program(
        tmp_path,
        """
        from pyflink.common import Types
        from pyflink.datastream import StreamExecutionEnvironment
        from pyflink.datastream.functions import KeyedProcessFunction

        class Where(KeyedProcessFunction):
            def open(self, runtime_context):
                self.me = runtime_context.get_index_of_this_subtask()

            def process_element(self, value, ctx):
                yield value, self.me

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        env.from_collection(list(range(40)), type_info=Types.INT()) \\
            .key_by(lambda v: v, key_type=Types.INT()) \\
            .process(Where(), Types.TUPLE([Types.INT(), Types.INT()])).set_parallelism(2) \\
            .print().set_parallelism(2)
        env.execute()
        """,
    )
    code, out, _ = run(capsys, script, "--simulate")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 40
    for line in lines:
        prefix, record = line.split("> ")
        assert record.startswith("(") and record.endswith(f",{int(prefix) - 1})"), line


MANY_PRINTS = """
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    words = env.from_collection(["a", "b"])
    words.print()
    words.map(str.upper).print()
    words.print("same")
    words.map(lambda w: w * 2).print("same")
    env.execute()
"""


def test_a_program_may_print_many_streams_as_in_flink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, program(tmp_path, MANY_PRINTS), "--simulate", "-q")
    assert code == 0, err
    assert sorted(out.splitlines()) == [
        "A",
        "B",
        "a",
        "b",
        "same> a",
        "same> aa",
        "same> b",
        "same> bb",
    ]


_CHANGES_SETTINGS = """
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.get_config().set_global_job_parameters({"tag": "blue"})
    env.get_checkpoint_config().set_min_pause_between_checkpoints(10)
    env.from_collection([1, 2]).print()
    env.execute()
    """


def test_with_program_config_disabled_a_programs_changes_fail_its_execute_naming_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``execution.program-config.enabled: false`` (Flink's ``StreamContextEnvironment``
    check): each setting the program added or changed over what it started from is named in
    Flink's words (``was changed from 5 to 10 ms``, ``:1 not allowed``); the run exits 2 before
    the job starts. The deprecated key says the same."""
    script = program(tmp_path, _CHANGES_SETTINGS)
    for key in ("execution.program-config.enabled", "execution.allow-client-job-configurations"):
        code, out, err = run(
            capsys,
            script,
            "--simulate",
            "-D",
            f"{key}=false",
            "-D",
            "pipeline.global-job-parameters=other:x",
            "-D",
            "execution.checkpointing.min-pause=5",
        )
        assert (code, out) == (2, "")
        (line,) = [line for line in err.splitlines() if "Not allowed" in line]
        assert (
            "Configuration execution.checkpointing.min-pause was changed from 5 ms to 10 ms."
            in line
        )
        assert "Configuration parallelism.default:1 not allowed." in line
        assert (
            "Configuration pipeline.global-job-parameters was changed from {other: x} to "
            "{tag: blue}." in line
        )
        assert "execution.program-config.wildcards" in line
        assert "Job " not in err  # no job ran


def test_program_config_wildcards_let_a_program_change_those_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``execution.program-config.wildcards`` lists the keys a program may change although
    ``execution.program-config.enabled`` is false; a change to another key still fails, and
    a setting the program leaves as it started is no change."""
    script = program(tmp_path, _CHANGES_SETTINGS)
    disabled = ["--simulate", "-D", "execution.program-config.enabled=false", "-p", "1"]
    code, out, err = run(
        capsys,
        script,
        *disabled,
        "-D",
        "execution.program-config.wildcards=pipeline.global-job-parameters;"
        "execution.checkpointing.min-pause",
    )
    assert (code, out) == (0, "1\n2\n"), err
    code, out, err = run(
        capsys,
        script,
        *disabled,
        "-D",
        "execution.program-config.wildcards=pipeline.global-job-parameters",
    )
    assert code == 2
    (line,) = [line for line in err.splitlines() if "Not allowed" in line]
    assert "execution.checkpointing.min-pause:10 ms not allowed." in line
    assert "global-job-parameters" not in line and "parallelism" not in line
    # a wildcard allows the keys below it too, as Flink's removeKey takes them with it
    code, out, err = run(
        capsys,
        script,
        *disabled,
        "-D",
        "execution.program-config.wildcards=pipeline;execution.checkpointing",
    )
    assert (code, out) == (0, "1\n2\n"), err


# --- flat maps that return nothing -------------------------------------------------------------


def test_a_co_flat_map_may_return_none_or_nothing_as_pyflinks_adapter_allows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PyFlink runs ``ConnectedStreams.flat_map`` as a process function that emits a call's
    result only if it is truthy (``if result: yield from result``): a ``flat_map2`` that
    only updates state and returns None is a PyFlink program's own way of emitting nothing."""
    script = program(
        tmp_path,
        """
        from pyflink.common import Types
        from pyflink.datastream import StreamExecutionEnvironment
        from pyflink.datastream.functions import CoFlatMapFunction


        class Stock(CoFlatMapFunction):
            def __init__(self):
                self.level = 0

            def flat_map1(self, value):
                if value > 2:
                    return [f"order {value}"]
                return []

            def flat_map2(self, value):
                self.level += value  # returns None


        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        orders = env.from_collection([1, 2, 3, 4], type_info=Types.INT())
        restock = env.from_collection([10, 20], type_info=Types.INT())
        orders.connect(restock).flat_map(Stock(), Types.STRING()).print()
        env.execute("stock")
        """,
    )
    code, out, err = run(capsys, script, "--simulate", "-q")
    assert code == 0, err
    assert out.splitlines() == ["order 3", "order 4"]


def test_a_keyed_flat_map_that_returns_none_fails_the_job_as_in_pyflink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PyFlink's ``KeyedStream.flat_map`` does ``yield from`` the call's result: None fails
    the job, as a ``DataStream.flat_map`` returning None does."""
    script = program(
        tmp_path,
        """
        from pyflink.common import Types
        from pyflink.datastream import StreamExecutionEnvironment

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        (
            env.from_collection([1, 2], type_info=Types.INT())
            .key_by(lambda v: v % 2)
            .flat_map(lambda v: None, Types.INT())
            .print()
        )
        env.execute("nothing")
        """,
    )
    code, _, err = run(capsys, script, "--simulate", "-q")
    assert code == 1
    assert "returned None for the record 1" in err


def test_execute_and_collect_runs_only_what_the_collected_stream_reads_as_flink_2_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Flink 2.3's ``execute_and_collect`` job is the collected stream and the operators it
    reads from (checked on Flink: its job was ``Source: Collection Source -> Map -> Sink: Data
    stream collect sink``); the other sinks the program built before are dropped with it, so a
    later ``execute()`` has nothing to run."""
    script = program(
        tmp_path,
        """
        from pyflink.common import Types
        from pyflink.datastream import StreamExecutionEnvironment

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        ds = env.from_collection([1, 2, 3], type_info=Types.INT())
        ds.map(lambda v: v * 10, Types.INT()).print("printed")
        env.from_collection([7], type_info=Types.INT()).print("other")
        print("collected:", list(ds.map(lambda v: v + 1, Types.INT()).execute_and_collect()))
        print("limit:", ds.execute_and_collect(limit=2))
        try:
            env.execute("after")
        except Exception as error:
            print("after:", error)
        """,
    )
    code, out, err = run(capsys, script, "--simulate", "-q")
    assert code == 0, err
    assert out.splitlines() == [
        "collected: [2, 3, 4]",
        "limit: [1, 2]",
        "after: No operators defined in streaming topology. Cannot execute.",
    ]


@pytest.mark.parametrize("checkpointing", [[], ["-D", "execution.checkpointing.interval=10ms"]])
def test_execute_and_collect_with_a_limit_cancels_the_job_once_it_has_its_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], checkpointing: list[str]
) -> None:
    """Flink's client cancels the job of ``execute_and_collect(limit=n)`` once it has n
    records (checked on Flink 2.3: ``[2, 4, 6, 8, 10]`` from a sequence of 10**12 numbers, at
    once); the job no longer runs to the end of its input, which here is never: the run ends
    well inside ``--timeout``, and a job the program cancelled is no failure of the run."""
    script = program(
        tmp_path,
        """
        from pyflink.common import Types, WatermarkStrategy
        from pyflink.datastream import StreamExecutionEnvironment
        from pyflink.datastream.connectors.number_seq import NumberSequenceSource

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        numbers = NumberSequenceSource(1, 10**12)
        ds = env.from_source(numbers, WatermarkStrategy.no_watermarks(), "nums")
        print(ds.map(lambda v: v * 2, Types.LONG()).execute_and_collect(limit=5))
        """,
    )
    code, out, err = run(capsys, script, "--simulate", "--timeout", "30", *checkpointing)
    assert code == 0, err
    assert out.splitlines() == ["[2, 4, 6, 8, 10]"]
    assert "CANCELED" in err and "cancelled by execute_and_collect(limit=5)" in err


@pytest.mark.parametrize("limit", [0, -1])
def test_execute_and_collect_with_a_limit_below_1_is_refused_before_a_job_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], limit: int
) -> None:
    """Flink 2.3 checks ``Limit must be greater than 0`` before it builds a job; ckptsim
    returned [] for 0 and, for -1, all records but the last (a slice)."""
    script = program(
        tmp_path,
        f"""
        from pyflink.common import Types
        from pyflink.datastream import StreamExecutionEnvironment

        env = StreamExecutionEnvironment.get_execution_environment()
        ds = env.from_collection([1, 2, 3], type_info=Types.INT())
        try:
            ds.execute_and_collect(limit={limit})
        except ValueError as error:
            print("refused:", error)
        print(ds.execute_and_collect(limit=2))
        """,
    )
    code, out, err = run(capsys, script, "-q", "--simulate")
    assert code == 0, err
    assert out.splitlines() == ["refused: Limit must be greater than 0", "[1, 2]"]


def test_execute_and_collect_with_a_limit_on_taskmanager_processes_takes_the_first_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On TaskManager processes the collect sink runs in another process than the program:
    the limited collect runs the (bounded) job to its end and takes its first ``limit``
    records, as without a limit (it returned an empty list)."""
    script = program(
        tmp_path,
        """
        from pyflink.common import Types
        from pyflink.datastream import StreamExecutionEnvironment

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        ds = env.from_collection(list(range(1, 1001)), type_info=Types.LONG())
        print(ds.map(lambda v: v * 2, Types.LONG()).execute_and_collect(limit=5))
        """,
    )
    code, out, err = run(capsys, script, "-q", "-D", "ckptsim.runtime=processes")
    assert code == 0, err
    assert out.splitlines() == ["[2, 4, 6, 8, 10]"]


def test_execute_and_collect_with_a_limit_gets_its_records_once_through_a_restart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With checkpointing the limited collect takes a checkpoint's records when it completes:
    a task failure in between restores the checkpoint and the replay gives the same records,
    each once, in order; the restart before the cancel is no failure of the run."""
    script = program(
        tmp_path,
        """
        from pyflink.common import Types
        from pyflink.datastream import StreamExecutionEnvironment

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        env.enable_checkpointing(10)
        ds = env.from_collection(list(range(1, 50001)), type_info=Types.LONG())
        got = ds.map(lambda v: v * 2, Types.LONG()).execute_and_collect(limit=30000)
        print(got == [2 * i for i in range(1, 30001)])
        """,
    )
    fault = "ckptsim.faults=fail-task:task=source-1#0,at-record=20000"
    code, out, err = run(capsys, script, "--simulate", "-D", fault)
    assert code == 0, err
    assert out.splitlines() == ["True"]
    assert "Restarts: 1" in err and "restarted at most" not in err
