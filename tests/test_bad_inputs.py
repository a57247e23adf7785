"""Bad input as users give it: one line on stderr saying what is wrong and how to fix it,
exit 2, nothing already written lost; and the valid spellings next to them work."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from ckptsim._cli import main

ROOT = Path(__file__).resolve().parents[1]

JOB = 'def build(env):\n    env.from_collection([1, 2, 3]).map(str).collect("out")\n'


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["run", *argv, "--simulate", "-q"])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "encoded",
    [
        b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + JOB.encode(),  # PEP 263, as Python reads it
        b"\xef\xbb\xbf" + JOB.encode(),  # a UTF-8 byte order mark (Windows editors write one)
    ],
    ids=["coding declaration", "byte order mark"],
)
def test_a_script_python_would_run_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], encoded: bytes
) -> None:
    path = tmp_path / "job.py"
    path.write_bytes(encoded)
    assert run(capsys, str(path)) == (0, "")


def test_a_script_that_is_not_utf8_names_the_line_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.py"
    path.write_bytes(JOB.encode() + b"# caf\xe9\n")
    code, err = run(capsys, str(path))
    assert code == 2
    assert err == (
        f"ckptsim run: {path}:3: byte 0xe9 is not utf-8: save the script as UTF-8, or declare "
        "its encoding on its first or second line, e.g. '# -*- coding: latin-1 -*-' (PEP 263)\n"
    )


def test_a_directory_given_as_the_script_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, str(tmp_path)) == (
        2,
        f"ckptsim run: {tmp_path} is a directory: give the job's Python file\n",
    )


def test_sys_exit_with_a_message_shows_the_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.py"
    path.write_text('import sys\nsys.exit("usage: job.py --input FILE")\n')
    code, err = run(capsys, str(path))
    assert code == 2
    assert (
        err
        == f"ckptsim run: {path}:2: the script exited with the message: usage: job.py --input FILE\n"
    )


def test_a_flink_conf_dir_that_cannot_be_read_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    job = tmp_path / "job.py"
    job.write_text(JOB)
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "config.yaml").write_bytes(b"execution.checkpointing.interval: 10 ms\n# caf\xe9\n")
    monkeypatch.setenv("FLINK_CONF_DIR", str(conf))
    assert run(capsys, str(job)) == (
        2,
        f"ckptsim run: {conf}/config.yaml, line 2: byte 0xe9 is not UTF-8: save the file as "
        "UTF-8, as Flink reads it\n",
    )
    monkeypatch.setenv("FLINK_CONF_DIR", str(conf / "config.yaml"))
    assert run(capsys, str(job)) == (
        2,
        f"ckptsim run: FLINK_CONF_DIR={conf}/config.yaml is a file: set it to the directory "
        "that holds config.yaml\n",
    )


@pytest.mark.parametrize("flag", ["--stats", "--timeline"])
def test_an_output_file_that_cannot_be_written_says_why_before_the_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    job = tmp_path / "job.py"
    job.write_text(JOB)
    what = flag.removeprefix("--")
    missing = tmp_path / "no" / "out.png"
    assert run(capsys, str(job), flag, str(missing)) == (
        2,
        f"ckptsim run: cannot write the {what} file {missing}: its folder {missing.parent} does "
        "not exist: create it first\n",
    )
    folder = tmp_path / "out.png"
    folder.mkdir()
    if flag == "--timeline":  # (--stats takes a directory: Flink's archive layout)
        assert run(capsys, str(job), flag, str(folder)) == (
            2,
            f"ckptsim run: cannot write the timeline file {folder}: it is a directory: give a "
            "file name\n",
        )
    under_a_file = job / "out.png"
    assert run(capsys, str(job), flag, str(under_a_file)) == (
        2,
        f"ckptsim run: cannot write the {what} file {under_a_file}: {job} is not a folder\n",
    )


def test_a_timeline_of_a_job_the_archives_do_not_hold_names_those_they_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job, archive = tmp_path / "job.py", tmp_path / "a.json"
    job.write_text(JOB)
    assert run(capsys, str(job), "--stats", str(archive)) == (0, "")
    argv = ["timeline", str(archive), "-o", str(tmp_path / "t.png")]
    assert main([*argv, "--job", "ffff"]) == 2
    assert capsys.readouterr().err == (
        "ckptsim timeline: --job ffff: no job's id starts with it; the archives hold "
        "00000000000000000000000000000001\n"
    )
    assert main([*argv, "--job", "0000"]) == 0


def test_words_run_does_not_take_say_where_they_belong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = str(tmp_path / "job.py")
    assert main(["run", job, "--input", "in.txt"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "ckptsim run: error: unrecognized arguments: --input in.txt (a program's own arguments "
        f"go after --: ckptsim run {job} [options] -- --input in.txt)"
    )
    assert main(["run", job, "--from-savepiont", "sp"]) == 2
    assert capsys.readouterr().err.endswith(
        "--from-savepiont sp (did you mean --from-savepoint?)\n"
    )


def test_a_log_level_in_capitals_is_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.py"
    job.write_text(JOB)
    assert run(capsys, str(job), "--log-level", "ERROR", "--log-format", "JSON") == (0, "")


SINK = 'def build(env):\n    env.from_collection([1, 2, 3]).sink_to_file({folder!r}, name="out")\n'


def test_a_file_sink_folder_that_is_a_file_or_empty_is_named_so_and_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file where the folder should be was called 'not an empty folder ... an earlier run's
    output'."""
    job = tmp_path / "job.py"
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    job.write_text(SINK.format(folder=str(a_file)))
    assert run(capsys, str(job)) == (
        2,
        f"ckptsim run: {job}: FileExistsError: sink 'out': {a_file} is a file, not a folder: "
        "give sink_to_file a new or empty folder\n",
    )
    assert a_file.read_text() == "mine\n"
    job.write_text(SINK.format(folder=""))  # was '. exists and is not an empty folder'
    assert run(capsys, str(job)) == (
        2,
        f"ckptsim run: {job}: ValueError: sink 'out': its folder is empty: give sink_to_file one\n",
    )


def test_a_sink_folder_that_cannot_be_created_is_refused_before_the_job_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder under a file failed the job at deployment (exit 1, a NotADirectoryError
    logged by the JobMaster); now one line names the folder and why, exit 2."""
    job = tmp_path / "job.py"
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    job.write_text(SINK.format(folder=str(a_file / "out")))
    checkpoints = tmp_path / "checkpoints"
    code, err = run(capsys, str(job), "-D", f"execution.checkpointing.dir={checkpoints}")
    assert (code, err) == (
        2,
        f"ckptsim run: {job}: NotADirectoryError: sink 'out': its folder {a_file}/out cannot be "
        f"created: {a_file} is a file, not a folder; give sink_to_file another folder\n",
    )
    assert a_file.read_text() == "mine\n"
    assert not checkpoints.exists()  # refused before the job made anything


def test_a_parquet_sink_folder_that_cannot_be_created_is_refused_before_the_job_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyarrow")
    job = tmp_path / "job.py"
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    job.write_text(
        "from ckptsim import ParquetSink\n"
        "def build(env):\n"
        f"    env.from_collection([(1,), (2,)]).sink_to(ParquetSink({str(a_file / 'pq')!r}), "
        "name='pq')\n"
    )
    code, err = run(capsys, str(job))
    assert code == 2
    assert err == (
        f"ckptsim run: {job}: NotADirectoryError: sink 'pq': its folder {a_file}/pq cannot be "
        f"created: {a_file} is a file, not a folder; give the sink another folder\n"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write in any folder")
def test_a_sink_folder_in_a_folder_without_write_permission_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.py"
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        job.write_text(SINK.format(folder=str(locked / "out")))
        assert run(capsys, str(job)) == (
            2,
            f"ckptsim run: {job}: PermissionError: sink 'out': its folder {locked}/out cannot be "
            f"created: no permission to write in {locked}; give sink_to_file a folder you may "
            "write in\n",
        )
    finally:
        locked.chmod(0o755)


@pytest.mark.parametrize(
    ("line", "named", "what"),
    [
        ("from pyflink.ml.feature.standardscaler import StandardScaler", "pyflink.ml", "module"),
        ("import pyflink.gelly", "pyflink.gelly", "module"),
        (
            "from pyflink.datastream import StreamExecutionEnvironment, NoSuchThing",
            "pyflink.datastream.NoSuchThing",
            "name",
        ),
    ],
)
def test_a_pyflink_module_ckptsim_does_not_provide_is_named_in_one_line(
    line: str, named: str, what: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was Python's ImportError, with the path of ckptsim's own module for a name."""
    program = tmp_path / "prog.py"
    program.write_text(f"import sys\n{line}\n")
    code, err = run(capsys, str(program))
    assert code == 2
    assert err == (
        f"ckptsim run: {program}:2: {named} is not a {what} of ckptsim's PyFlink API (nor of "
        "PyFlink 2.3.0): it has pyflink.common, pyflink.datastream (with the connectors "
        "file_system and number_seq) and pyflink.metrics; docs/pyflink.md ('What ckptsim "
        "implements') lists what ckptsim's PyFlink API has\n"
    )


def test_a_program_that_catches_the_import_error_of_a_missing_pyflink_module_runs_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "prog.py"
    program.write_text(
        "try:\n"
        "    import pyflink.ml\n"
        "except ImportError:\n"
        "    pass\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "env.from_collection([1, 2]).print()\n"
        "env.execute()\n"
    )
    assert run(capsys, str(program)) == (0, "")


def test_the_spark_example_without_java_says_so_and_nothing_else(tmp_path: Path) -> None:
    """Its second line said 'the topology's output does not match Spark's batch result'."""
    example = ROOT / "examples" / "spark_clicks.py"
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-jdk")}
    done = subprocess.run(
        [sys.executable, "-m", "ckptsim", "run", str(example), "--simulate", "-q"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0] == (
        "spark_clicks: the Spark bridge starts Spark, which needs Java 17: "
        f"JAVA_HOME={tmp_path / 'no-jdk'} has no bin/java."
    )
    assert re.fullmatch(rf"ckptsim run: {example}:\d+: the script exited with status 2", lines[-1])
    assert "does not match" not in done.stderr


@pytest.mark.parametrize("flag", ["-s", "--from-savepoint", "--from-checkpoint"])
def test_an_empty_start_path_is_refused_not_a_fresh_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    """``-s "$SAVEPOINT"`` with the variable unset ran the job from scratch, exit 0."""
    job = tmp_path / "job.py"
    job.write_text(JOB)
    named = "--from-checkpoint" if flag == "--from-checkpoint" else "--from-savepoint"
    assert run(capsys, str(job), flag, "") == (
        2,
        f"ckptsim run: {named} is empty: give the chk-N or savepoint-... directory a previous "
        "run printed (was the shell variable set?)\n",
    )


@pytest.mark.parametrize("options", [[], ["--stats", "-"], ["--trace", "trace.jsonl"]])
def test_a_run_with_standard_output_closed_ends_as_python_would(
    tmp_path: Path, options: list[str]
) -> None:
    """``ckptsim run job.py >&-`` (a cron line) ended in an AttributeError traceback, exit 1."""
    job = tmp_path / "job.py"
    job.write_text(JOB)
    closed = ["sh", "-c", 'exec "$0" "$@" >&-']  # the shell closes standard output, then runs
    argv = [*closed, sys.executable, "-m", "ckptsim", "run", str(job), "--simulate", *options]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    if options[:1] == ["--trace"]:
        lines = (tmp_path / "trace.jsonl").read_text().splitlines()
        assert lines and all(line.startswith("{") for line in lines)


def test_a_job_behind_a_main_guard_is_named_as_the_reason_no_job_was_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.py"
    path.write_text(
        "from ckptsim import StreamExecutionEnvironment\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    env = StreamExecutionEnvironment()\n"
        "    env.from_collection([1]).collect('out')\n"
        "    env.execute('guarded')\n"
    )
    assert run(capsys, str(path)) == (
        2,
        f"ckptsim run: {path} built no job: define build(env), or create a "
        'StreamExecutionEnvironment and call env.execute() (its `if __name__ == "__main__":` '
        'block, line 3, does not run under ckptsim run, where a script\'s __name__ is "__ckptsim__")\n',
    )


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (
            ["-D", "execution.checkpointing.interval\nx=10 ms"],
            "'execution.checkpointing.interval\\nx'",
        ),
        (["-D", "execution.checkpointing.mode=\x1b[31mRED"], "'\\x1b[31mRED'"),
        (["-s", "a\nb"], "--from-savepoint a\\nb: not a usable checkpoint"),
    ],
    ids=["newline in a key", "terminal escape in a value", "newline in a path"],
)
def test_control_characters_in_what_the_user_gave_stay_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], shown: str
) -> None:
    job = tmp_path / "job.py"
    job.write_text(JOB)
    code, err = run(capsys, str(job), *argv)
    assert code == 2
    assert err.count("\n") == 1 and "\x1b" not in err, err
    assert shown in err


def _archive_with(tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any) -> Path:
    job, archive = tmp_path / "job.py", tmp_path / "a.json"
    job.write_text(JOB)
    assert run(capsys, str(job), "--stats", str(archive)) == (0, "")
    document = json.loads(archive.read_text())
    for entry in document["archive"]:
        body = edit(entry["path"], json.loads(entry["json"]))
        entry["json"] = json.dumps(body)
    archive.write_text(json.dumps(document))
    return archive


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda path, body: {"jobs": [5]} if path == "/jobs/overview" else body,
            "/jobs/overview names its job in another shape than Flink's",
        ),
        (
            lambda path, body: 1.5 if path.endswith("/exceptions") else body,
            "a body of another shape than Flink's (AttributeError: 'float' object has no "
            "attribute 'get'); give archives ckptsim run --stats or Flink's "
            "jobmanager.archive.fs.dir wrote, unchanged",
        ),
    ],
    ids=["overview", "exceptions"],
)
def test_a_timeline_of_an_archive_of_another_shape_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any, message: str
) -> None:
    """Each was a TypeError / AttributeError traceback, exit 1."""
    archive = _archive_with(tmp_path, capsys, edit)
    assert main(["timeline", str(archive), "-o", str(tmp_path / "t.svg")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ckptsim timeline: {archive}") and err.count("\n") == 1, err
    assert message in err
    assert not (tmp_path / "t.svg").exists()


def test_a_parallelism_above_the_max_parallelism_says_how_to_fix_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.py"
    job.write_text(JOB)
    assert run(capsys, str(job), "-p", "200", "-D", "pipeline.max-parallelism=128") == (
        2,
        f"ckptsim run: {job}: operator 'Collection Source' has parallelism 200 above the max "
        "parallelism 128: lower the parallelism, or raise the max parallelism "
        "with env.set_max_parallelism(n) or -D pipeline.max-parallelism=n\n",
    )
    # as it says: Flink's key raises it, or leaving it unset derives it from the parallelism
    # (512 for 200, as Flink), and a key group count below 1 is refused
    assert run(capsys, str(job), "-p", "200", "-D", "pipeline.max-parallelism=256")[0] == 0
    assert run(capsys, str(job), "-p", "200")[0] == 0
    code, err = run(capsys, str(job), "-D", "pipeline.max-parallelism=0")
    assert (code, err.count("\n")) == (2, 1) and "must be at least 1 (or -1)" in err


INTERRUPTED_IMPORT = """
import importlib.abc, sys

class Block(importlib.abc.MetaPathFinder):
    # halfway through importing ckptsim: says so, then waits for a line that never comes
    def find_spec(self, name, path, target=None):
        if name == "runtime.job":
            sys.meta_path.remove(self)
            print("importing", flush=True)
            sys.stdin.readline()
        return None

sys.meta_path.insert(0, Block())
sys.argv = ["ckptsim", "config"]
import ckptsim_console
ckptsim_console.console()
"""


def test_ctrl_c_while_the_program_imports_ckptsim_is_one_line_and_status_130() -> None:
    """Ctrl-C in the second the program spends importing ckptsim printed a KeyboardInterrupt
    traceback. The child stops halfway through the import, waiting on its standard input;
    SIGINT is sent once it has said so: no timing involved."""
    child = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_IMPORT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "importing\n"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate()
    assert (child.returncode, out, err) == (130, "", "ckptsim: interrupted (Ctrl-C)\n")


def test_the_ckptsim_program_enters_through_the_guarded_import() -> None:
    (program,) = [e for e in entry_points(group="console_scripts") if e.name == "ckptsim"]
    assert program.value == "ckptsim_console:console"


def test_an_unknown_fault_given_with_d_is_refused_before_the_script_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was said as the script's own error ('job.py: ValueError: unknown fault ...'), after
    the script's top-level code ran."""
    job = tmp_path / "job.py"
    ran = tmp_path / "ran"
    job.write_text(f"open({str(ran)!r}, 'w').close()\n" + JOB)
    assert run(capsys, str(job), "-D", "ckptsim.faults=Bogus") == (
        2,
        "ckptsim run: unknown fault 'Bogus' in ckptsim.faults; known: crash-task, delay-ack, "
        "drop-ack, fail-snapshot, fail-task, stall-channel\n",
    )
    assert not ran.exists()


def test_a_trace_or_timeline_file_that_cannot_be_written_is_named_with_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The trace's line named its temporary file ('x.inprogress.jsonl') and Python's errno
    text; the timeline's said 'Not a directory' after drawing the picture."""
    job = tmp_path / "job.py"
    job.write_text(JOB)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    assert run(capsys, str(job), "--trace", str(a_file / "x.jsonl")) == (
        2,
        f"ckptsim: cannot write the trace file {a_file}/x.jsonl: {a_file} is not a folder\n",
    )
    assert run(capsys, str(job), "--trace", str(tmp_path / "no" / "x.jsonl")) == (
        2,
        f"ckptsim: cannot write the trace file {tmp_path}/no/x.jsonl: its folder "
        f"{tmp_path}/no does not exist: create it first\n",
    )
    archive = tmp_path / "archive.json"
    assert main(["run", str(job), "--simulate", "-q", "--stats", str(archive)]) == 0
    capsys.readouterr()
    assert main(["timeline", str(archive), "-o", str(a_file / "t.png")]) == 2
    assert capsys.readouterr().err == (
        f"ckptsim timeline: cannot write {a_file}/t.png: {a_file} is not a folder\n"
    )
    assert a_file.read_text() == "mine\n"


def test_a_checkpoint_directory_holding_that_jobs_checkpoints_says_what_to_give_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The line ended '... or remove that one; give execution.checkpointing.dir a directory
    that can be created and written': two hints, the second wrong (it could be written)."""
    job = tmp_path / "job.py"
    job.write_text(JOB)
    earlier = tmp_path / "ck" / f"{1:032x}" / "chk-1"  # the simulation's job id of seed 0
    earlier.mkdir(parents=True)
    code, err = run(
        capsys, str(job), "--seed", "0", "-D", f"execution.checkpointing.dir={tmp_path}/ck"
    )
    assert code == 2 and err.count("\n") == 1, err
    assert err.endswith(
        "give the job another directory (execution.checkpointing.dir), or remove that one\n"
    ), err
    assert earlier.is_dir() and not any(earlier.iterdir())
