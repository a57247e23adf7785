"""PyFlink programs run unchanged under ``ckptsim run`` and print what Apache Flink 2.3 prints.

Flink's own examples (``flink_examples/``, unchanged) and jobs written the way PyFlink users
write them (``programs/``) run on the deterministic simulation with Flink's default
parallelism on the machine the expected outputs were captured on (2); their standard output
must be exactly the program's, per print prefix as Flink's (``compare.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ckptsim._cli import main
from runtime.rest import read_archive
from tests.pyflink.compare import (
    EXAMPLES,
    EXPECTED,
    HERE,
    PROGRAMS,
    assert_same_output,
    by_prefix,
    expected_output,
)

#: Flink's default parallelism where the expected outputs were captured (2 cores)
PINNED = ["-D", "parallelism.default=2"]

EXAMPLE_CASES = [
    pytest.param("basic_operations", id="basic_operations"),
    pytest.param("state_access", id="state_access"),
    pytest.param("event_time_timer", id="event_time_timer"),
    pytest.param("word_count", id="word_count"),
    pytest.param("tumbling_time_window", id="tumbling_time_window"),
    pytest.param("sliding_time_window", id="sliding_time_window"),
    pytest.param("session_with_gap_window", id="session_with_gap_window"),
    pytest.param("session_with_dynamic_gap_window", id="session_with_dynamic_gap_window"),
    pytest.param("tumbling_count_window", id="tumbling_count_window"),
]


def run(capsys: pytest.CaptureFixture[str], script: Path, *options: str) -> tuple[int, str, str]:
    code = main(["run", str(script), "--simulate", *PINNED, *options])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("name", EXAMPLE_CASES)
def test_flink_example_prints_what_flink_prints(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, EXAMPLES / f"{name}.py")
    assert code == 0, err
    assert_same_output(out, expected_output(name))
    # ckptsim's own lines are on stderr: stdout is the program's alone
    assert "Job has been submitted with JobID" in err and "FINISHED" in err


@pytest.mark.parametrize(
    "name",
    [
        "java_formats",
        "key_routing",
        "checkpointed_running_totals",
        "connected_orders",
        "fusion",
        "collected_floats",
    ],
)
def test_pyflink_program_prints_what_flink_prints(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, PROGRAMS / f"{name}.py")
    assert code == 0, err
    assert_same_output(out, expected_output(name))


def test_checkpoint_config_of_the_program_reaches_the_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PyFlink's checkpoint config setters configure the job ckptsim runs (Flink's REST body
    of the job's checkpoint config, from its archive). A -D is where the program starts
    from: the program's own setter wins over it, as under ``flink run -D`` (Flink's
    context environment starts from the cluster's configuration)."""
    stats = tmp_path / "stats.json"
    code, _, err = run(
        capsys,
        PROGRAMS / "checkpointed_running_totals.py",
        "--stats",
        str(stats),
        "-D",
        "execution.checkpointing.min-pause=5",
    )
    assert code == 0, err
    bodies = read_archive(json.loads(stats.read_text()))
    (config,) = [body for path, body in bodies.items() if path.endswith("/checkpoints/config")]
    assert isinstance(config, dict)
    assert config["interval"] == 50
    assert config["mode"] == "exactly_once"
    assert config["timeout"] == 60_000
    assert config["min_pause"] == 10  # the program's, not the -D's 5
    assert config["max_concurrent"] == 1
    assert config["tolerable_failed_checkpoints"] == 3
    assert config["unaligned_checkpoints"] is True
    assert config["aligned_checkpoint_timeout"] == 20
    assert config["externalization"] == {"enabled": True, "delete_on_cancellation": True}
    assert "Checkpoints: 0 completed" not in err


@pytest.mark.parametrize("faults", [None, "fail-task:task=reduce-10#0,at-record=200"])
def test_file_sink_commits_every_record_once(
    faults: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """FileSource -> union with NumberSequenceSource -> key_by/sum -> FileSink, checkpointed:
    the committed part files hold the lines Flink's FileSink committed, also when a task
    fails and the job restarts."""
    output = tmp_path / "out"
    options = ["-D", "ckptsim.buffer.records=16"]
    if faults is not None:
        options += ["-D", f"ckptsim.faults={faults}"]
    arguments = ["--input", str(HERE / "data" / "words.txt"), "--output", str(output)]
    code, out, err = run(capsys, PROGRAMS / "files_and_numbers.py", *options, "--", *arguments)
    assert code == 0, err
    assert out == ""
    if faults is not None:
        assert "Restarts: 1" in err
    parts = [p for p in output.rglob("*") if p.is_file() and ".staging" not in p.parts]
    assert parts and all(p.name.startswith("out-") and p.suffix == ".txt" for p in parts)
    lines = sorted(line for p in parts for line in p.read_text().splitlines())
    assert lines == (EXPECTED / "files_and_numbers.lines").read_text().splitlines()


def test_word_count_reads_and_writes_files_as_flink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Flink's word_count.py with --input (FileSource) and --output (FileSink), BATCH mode:
    the part file holds Flink's lines, in Flink's order (keys by their serialized bytes)."""
    output = tmp_path / "out"
    arguments = ["--input", str(HERE / "data" / "words.txt"), "--output", str(output)]
    code, out, err = run(capsys, EXAMPLES / "word_count.py", "--", *arguments)
    assert code == 0, err
    assert out == expected_output("word_count_files")
    (part,) = [p for p in output.rglob("*") if p.is_file() and ".staging" not in p.parts]
    assert part.read_text() == (EXPECTED / "word_count_files.lines").read_text()
    # OutputFileConfig: Flink's prefix-<uuid>-0.ext; ckptsim's prefix-<vertex>-<subtask>...ext
    assert part.name.startswith("prefix-") and part.suffix == ".ext"


def test_the_pyflink_example_prints_what_flink_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/pyflink_word_count.py: its lines go to the subtasks Flink sends them to (the
    order within a subtask is not Flink's to keep: its source feeds two flat_map subtasks
    round-robin from a random start)."""
    code, out, err = run(capsys, HERE.parents[1] / "examples" / "pyflink_word_count.py")
    assert code == 0, err
    ours, flinks = by_prefix(out), by_prefix(expected_output("pyflink_word_count"))
    assert {p: sorted(lines) for p, lines in ours.items()} == {
        p: sorted(lines) for p, lines in flinks.items()
    }
    assert "COMPLETED" in err  # checkpointed, its summary on stderr


def test_comparison_is_per_prefix() -> None:
    """The comparison itself: order matters within a prefix, not across prefixes."""
    assert by_prefix("1> a\n2> b\n1> c\nplain\n") == {
        "1": ["1> a", "1> c"],
        "2": ["2> b"],
        "": ["plain"],
    }
    assert_same_output("2> b\n1> a\n1> c\n", "1> a\n2> b\n1> c\n")
    with pytest.raises(AssertionError):
        assert_same_output("1> c\n1> a\n", "1> a\n1> c\n")
