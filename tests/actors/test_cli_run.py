"""``ckptsim run``: topology scripts, their errors, the summary, --stats and --trace."""

from __future__ import annotations

import json
import re
import runpy
import textwrap
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from ckptsim import StreamExecutionEnvironment
from ckptsim import _report as report
from ckptsim._cli import main
from runtime.graph import GraphError
from runtime.rest import read_archive

ROOT = Path(__file__).resolve().parents[2]


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


GOOD = """
    def build(env):
        env.enable_checkpointing(10)
        env.from_generator(lambda i: (i % 5, 1), 20_000, rate=200_000).key_by(lambda r: r[0]) \\
           .reduce(lambda a, b: (a[0], a[1] + b[1])).collect("sums")
"""


def test_run_prints_the_checkpoint_summary_and_writes_stats_and_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stats, trace = tmp_path / "stats.json", tmp_path / "trace.jsonl"
    code = main(
        ["run", script(tmp_path, GOOD), "-p", "2", "--stats", str(stats), "--trace", str(trace)]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "Job 'job' FINISHED" in out
    assert "max align" in out and "COMPLETED" in out
    bodies = read_archive(json.loads(stats.read_text()))  # Flink's job-archive format
    overview = bodies["/jobs/overview"]
    assert isinstance(overview, dict)
    (job_id,) = [j["jid"] for j in overview["jobs"]]
    checkpoints = bodies[f"/jobs/{job_id}/checkpoints"]
    assert isinstance(checkpoints, dict)
    assert set(checkpoints) == {"counts", "summary", "latest", "history"}
    assert checkpoints["counts"]["completed"] >= 1
    cid = checkpoints["history"][0]["id"]
    details = bodies[f"/jobs/{job_id}/checkpoints/details/{cid}"]
    assert isinstance(details, dict)
    assert {"id", "status", "checkpoint_type", "tasks"} <= set(details)
    for vertex in details["tasks"]:
        assert f"/jobs/{job_id}/checkpoints/details/{cid}/subtasks/{vertex}" in bodies
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    names = {e["event"] for e in events}
    assert {
        "checkpoint_triggered",
        "barrier_received",
        "checkpoint_taken",
        "checkpoint_acknowledged",
        "checkpoint_completed",
    } <= names
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))


def test_dash_d_settings_override_the_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "run",
            script(tmp_path, GOOD),
            "-D",
            "execution.checkpointing.unaligned.enabled=true",
            "-p",
            "2",
        ]
    )
    assert code == 0
    assert "UNALIGNED_CHECKPOINT" in capsys.readouterr().out


def test_a_script_that_calls_execute_itself_runs_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = """
        from ckptsim import StreamExecutionEnvironment
        env = StreamExecutionEnvironment()
        env.from_collection([1, 2, 3]).map(lambda x: x * 10).collect()
        result = env.execute("own")
        assert sorted(result.collected()) == [10, 20, 30]
    """
    assert main(["run", script(tmp_path, body)]) == 0
    assert "Job 'own' FINISHED" in capsys.readouterr().out


BAD = {
    "syntax error": ("def build(env)\n    pass\n", "job.py:1: syntax error"),
    "no job": ("x = 1\n", "built no job: define build(env)"),
    "empty build": ("def build(env):\n    pass\n", "built no job"),
    "parallelism 0": (
        "def build(env):\n    env.from_collection([1]).map(str).set_parallelism(0).collect()\n",
        "parallelism 0; it must be at least 1",
    ),
    "unknown key": (
        "def build(env):\n    env.configure({'execution.checkpointing.intervall': '1 s'})\n",
        "Unknown configuration key 'execution.checkpointing.intervall'. Did you mean 'execution.checkpointing.interval'?",
    ),
    "cycle": (
        "def build(env):\n"
        "    a = env.from_collection([1]).map(str, name='A')\n"
        "    b = a.map(str, name='B')\n"
        "    env.graph.add_edge(b.nodes[0].node_id, a.nodes[0].node_id, a._partitioner)\n",
        "cycle through A, B",
    ),
    "error while building": (
        "def build(env):\n    raise RuntimeError('no input file')\n",
        "job.py:2: RuntimeError: no input file",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_scripts_exit_2_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    body, message = BAD[case]
    path = tmp_path / "job.py"
    path.write_text(body)
    assert main(["run", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_bad_command_line_settings_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["run", script(tmp_path, GOOD), "-D", "execution.checkpointing.timeout=5 parsecs"])
        == 2
    )
    assert "unknown time unit 'parsecs'" in capsys.readouterr().err
    assert main(["run", script(tmp_path, GOOD), "-D", "nonsense"]) == 2
    assert main(["run", str(tmp_path / "missing.py")]) == 2
    assert "no such script" in capsys.readouterr().err


def test_an_unusable_checkpoint_directory_is_named_with_its_errno_not_blamed_on_the_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 11: a storage error said ``job.py: NotADirectoryError: ...``, as if the script
    had raised it. It names the checkpoint storage and the errno instead (exit 2)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    job = script(tmp_path, GOOD)
    argv = ["run", job, "-q", "--simulate", "-D", f"execution.checkpointing.dir={blocker}/cp"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ckptsim run: checkpoint storage {blocker}/cp")
    assert "directory failed: Not a directory (errno 20, ENOTDIR)" in err
    assert job not in err and err.count("\n") == 1
    assert err.endswith(
        "; give execution.checkpointing.dir a directory that can be created and written\n"
    )


def test_a_failed_job_exits_1_with_the_failing_operator_and_the_users_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = "def build(env):\n    env.from_collection([1, 2, 0]).map(lambda x: 1 / x).collect()\n"
    assert main(["run", script(tmp_path, body), "--simulate"]) == 1
    captured = capsys.readouterr()
    assert "FAILED" in captured.out
    lines = [line for line in captured.err.splitlines() if not line.startswith("{")]
    start = lines.index(
        "ckptsim run: map 'Map' (map-2) (in source-1#0) raised ZeroDivisionError: division by zero"
    )
    assert lines[start + 1] == "Traceback (most recent call last):"
    assert lines[start + 2] == f'  File "{tmp_path / "job.py"}", line 2, in <lambda>'
    assert lines[start + 5] == "ZeroDivisionError: division by zero", "the user's frames only"


#: a progress line, whatever its figures, its back-pressured tasks and its final-checkpoint note
PROGRESS_LINE = re.compile(
    r"RUNNING( at [\d,]+ ms of virtual time)?: [\d,]+ records read, checkpoints \d+ completed / "
    r"\d+ failed / \d+ in progress, (no back-pressure|back-pressured: \S+(, \S+)*)(; .*)?"
)


def _progress_of_the_back_pressure_example(**options: Any) -> tuple[Any, list[dict[str, Any]]]:
    example = runpy.run_path(str(ROOT / "examples" / "slow_running_sum.py"))
    snapshots: list[dict[str, Any]] = []
    env = StreamExecutionEnvironment(parallelism=2)
    example["build"](env)
    result = env.execute("slow", progress=snapshots.append, **options)
    assert result.succeeded
    assert snapshots, "no progress reported"
    assert all(s["status"] == "RUNNING" for s in snapshots)
    records = [s["records"] for s in snapshots]
    assert records == sorted(records) and records[-1] <= example["RECORDS"]
    completed = [s["counts"]["completed"] for s in snapshots]
    assert completed == sorted(completed)
    for snapshot in snapshots:
        line = report.progress_line(snapshot)
        assert PROGRESS_LINE.fullmatch(line), line
    return result, snapshots


def test_progress_reports_records_and_checkpoints_while_the_job_runs_on_threads() -> None:
    """What the progress line shows, polled while the back-pressure example runs on threads:
    only what holds however the threads interleave (which tasks are back-pressured when the
    line is polled is the machine's doing: the simulated run below shows it)."""
    result, snapshots = _progress_of_the_back_pressure_example(timeout=600, progress_interval=0.002)
    assert result.status.value == "FINISHED", result.failure
    assert snapshots[-1]["records"] > 0


def test_progress_reports_the_back_pressured_tasks_the_sources_behind_the_slow_operator() -> None:
    """The same example on the simulation (a report every 512 steps of its seeded schedule):
    the sources are back-pressured (the slow operator consumes less than they produce) and no
    other task is."""
    _, snapshots = _progress_of_the_back_pressure_example(
        runtime="simulation", seed=1, progress_interval=0
    )
    pressured = {task for s in snapshots for task in s["backpressured"]}
    assert pressured and all(t.startswith("source") for t in pressured), pressured
    virtual = [s["virtual_ms"] for s in snapshots]
    assert virtual == sorted(virtual)
    line = report.progress_line(next(s for s in snapshots if s["backpressured"]))
    assert re.fullmatch(
        r"RUNNING at [\d,]+ ms of virtual time: [\d,]+ records read, checkpoints \d+ completed / "
        r"\d+ failed / \d+ in progress, back-pressured: source\S*(, source\S*)*",
        line,
    ), line


@pytest.mark.parametrize("where", ["before run", "after run"])
def test_json_logs_go_to_stderr_one_object_per_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """The logging options are taken before the command or after it."""
    logging_options = ["--log-format", "json", "--log-level", "info"]
    job = ["-q", script(tmp_path, GOOD)]
    if where == "before run":
        code = main([*logging_options, "run", *job])
    else:
        code = main(["run", *logging_options, *job])
    assert code == 0
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.err.splitlines() if line.strip()]
    assert {"job_submitted", "checkpoint_completed", "job_finished"} <= {e["event"] for e in lines}
    assert all({"event", "level", "timestamp"} <= set(e) for e in lines)
    assert captured.out == ""  # -q: no summary


SAVEPOINTED = """
    import json
    from ckptsim import StreamExecutionEnvironment

    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(10)
    env.configure({"execution.checkpointing.dir": CHECKPOINTS})
    if STOP:
        env.stop_with_savepoint(after_records=6_000)
    env.from_generator(lambda i: (i % 5, 1), 12_000, rate=400_000).key_by(lambda r: r[0]) \\
       .reduce(lambda a, b: (a[0], a[1] + b[1]), name="sum").collect("sums")
    result = env.execute("savepointed")
    sums = {}
    for key, value in result.collected("sums"):
        sums[key] = max(sums.get(key, 0), value)
    with open(OUT, "w") as out:
        json.dump(sums, out)
"""


def _savepointed_script(tmp_path: Path, *, stop: bool) -> str:
    name = "stop" if stop else "resume"
    header = (
        f"STOP = {stop}\nCHECKPOINTS = {str(tmp_path / 'ckpt')!r}\n"
        f"OUT = {str(tmp_path / (name + '.json'))!r}\n"
    )
    path = tmp_path / f"job_{name}.py"
    path.write_text(header + textwrap.dedent(SAVEPOINTED))
    return str(path)


def test_from_savepoint_resumes_where_stop_with_savepoint_left_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stop-with-savepoint, then ``--from-savepoint``: the two runs together count every
    record exactly once (the resumed sums start from the savepoint's state)."""
    code = main(["run", _savepointed_script(tmp_path, stop=True), "-p", "2", "--simulate"])
    out = capsys.readouterr().out
    assert code == 0, out
    (savepoint,) = re.findall(r"Savepoint: (\S+)", out)
    assert Path(savepoint, "_metadata").is_file()

    stats = tmp_path / "stats.json"
    code = main(
        [
            "run",
            _savepointed_script(tmp_path, stop=False),
            "-p",
            "2",
            "--simulate",
            "--from-savepoint",
            savepoint,
            "--stats",
            str(stats),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    bodies = read_archive(json.loads(stats.read_text()))
    (checkpoints,) = [b for path, b in bodies.items() if path.endswith("/checkpoints")]
    assert isinstance(checkpoints, dict)
    assert checkpoints["counts"]["restored"] == 1
    stopped = json.loads((tmp_path / "stop.json").read_text())
    resumed = json.loads((tmp_path / "resume.json").read_text())
    assert 0 < sum(stopped.values()) < 12_000  # the first run stopped part-way
    assert resumed == {str(key): 12_000 // 5 for key in range(5)}


@pytest.mark.parametrize("flag", ["--from-savepoint", "--from-checkpoint"])
def test_starting_from_a_path_that_is_not_a_checkpoint_is_a_usage_error(
    tmp_path: Path, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "not-a-savepoint"
    empty.mkdir()
    code = main(["run", script(tmp_path, GOOD), flag, str(empty)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{flag} {empty}: not a usable checkpoint or savepoint" in err
    assert "_metadata" in err


def test_from_savepoint_and_from_checkpoint_exclude_each_other(tmp_path: Path) -> None:
    code = main(["run", script(tmp_path, GOOD), "--from-savepoint", "a", "--from-checkpoint", "b"])
    assert code == 2


def test_run_names_the_job_id_first_and_every_retained_checkpoint_at_the_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As ``flink run`` prints ``Job has been submitted with JobID ...``; and at the end the
    path of each checkpoint the job left behind, which ``--from-checkpoint`` takes."""
    slow = """
        def build(env):
            env.enable_checkpointing(10)
            env.from_generator(lambda i: (i % 5, 1), 10_000_000, rate=10_000) \\
               .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).collect("s")
    """
    argv = ["run", script(tmp_path, slow), "--simulate", "--seed", "3", "--timeout", "0.2"]
    argv += ["-D", f"execution.checkpointing.dir={tmp_path / 'chk'}"]
    argv += [
        "-D",
        "execution.checkpointing.externalized-checkpoint-retention=RETAIN_ON_CANCELLATION",
    ]
    assert main(argv) == 1  # cancelled at the timeout
    out = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"Job has been submitted with JobID [0-9a-f]{32}", out[0])
    retained = [line.split(": ", 1)[1] for line in out if line.startswith("Retained checkpoint: ")]
    assert len(retained) == 1 and Path(retained[0], "_metadata").is_file()
    assert (
        main([*argv[:2], "--simulate", "--timeout", "0.1", "--from-checkpoint", retained[0]]) == 1
    )
    assert "restored 1" in capsys.readouterr().out


def test_version_names_the_installed_release(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"ckptsim {version('ckptsim')}\n"


TWO_PRINTS = """
    def build(env):
        env.set_parallelism(1)
        words = env.from_collection(["a", "b"])
        words.map(str.upper).print()
        words.map(lambda w: w * 2).print(identifier="twice")
        words.sink_to_file({files!r})
        words.map(str.upper).sink_to_file({files!r} + "-upper")
"""


def test_unnamed_print_and_file_sinks_are_named_apart_as_flink_allows_many(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = str(tmp_path / "out")
    code = main(["run", script(tmp_path, TWO_PRINTS.format(files=files)), "--simulate", "-q"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert sorted(out.splitlines()) == ["A", "B", "twice> aa", "twice> bb"]
    written = sorted(p.read_text() for p in tmp_path.glob("out*/*"))
    assert written == ["A\nB\n", "a\nb\n"]

    env = StreamExecutionEnvironment(parallelism=1)
    words = env.from_collection(["a"])
    words.print()
    words.print()
    words.sink_to_file(files)
    assert list(env.sinks) == ["print", "print (2)", "file"]
    words.print(name="mine")
    with pytest.raises(GraphError, match="a sink named 'mine' exists already"):
        words.print(name="mine")  # a name you give stays yours alone


def test_a_job_with_its_own_observer_is_still_announced_by_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A script that runs its job with an observer of its own (as ``run_topology`` and
    PyFlink's ``execute_and_collect(limit=...)`` do) keeps it, and the command line's observer
    hears the job too: ``Job has been submitted with JobID ...`` first (and ``--web``
    registers it), the script's observer before it at the start and at the end."""
    body = """
        from ckptsim import StreamExecutionEnvironment

        class Mine:
            def job_started(self, *, job_id, **_):
                print("mine: started", job_id)

            def job_ended(self, job_id, result):
                print("mine: ended", result.status.value)

        env = StreamExecutionEnvironment(parallelism=1)
        env.from_collection(range(10)).map(lambda n: n * 2).collect("doubled")
        result = env.execute("own observer", observer=Mine())
        print("doubled:", sorted(result.output["doubled"]))
    """
    assert main(["run", script(tmp_path, body), "--simulate", "--seed", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    started = [line for line in out if line.startswith("mine: started ")]
    assert len(started) == 1, out
    job_id = started[0].removeprefix("mine: started ")
    assert out.index(started[0]) < out.index(f"Job has been submitted with JobID {job_id}")
    assert "mine: ended FINISHED" in out
    assert "doubled: [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]" in out
