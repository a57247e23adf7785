"""Bad input as a new user gave it (issue fresh30): exit 2, one line, nothing already
written lost; and what a sink writes keeps what the records held."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ckptsim import StreamExecutionEnvironment
from ckptsim._cli import main

JOB = 'def build(env):\n    env.from_collection([1, 2, 3]).map(str).collect("out")\n'


@pytest.mark.parametrize(
    "argv",
    [
        ["-D", "execution.checkpointing.intervall=100ms"],  # a typo in a key
        ["-D", "parallelism.default=two"],  # a bad value
    ],
    ids=["unknown key", "bad value"],
)
def test_a_refused_run_leaves_an_existing_trace_file_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    script = tmp_path / "job.py"
    script.write_text(JOB)
    trace = tmp_path / "run.jsonl"
    trace.write_text('{"precious": true}\n')
    code = main(["run", str(script), "--simulate", "-q", "--trace", str(trace), *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.splitlines()) == 1
    assert trace.read_text() == '{"precious": true}\n'


def test_the_json_file_sink_keeps_infinite_and_nan_floats_apart_from_none(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    env = StreamExecutionEnvironment(parallelism=1)
    records = [(1, math.inf), (2, -math.inf), (3, math.nan), (4, None)]
    env.from_collection(records).sink_to_file(str(out), fmt="json")
    assert env.execute("floats", runtime="simulation").succeeded
    lines = [line for part in sorted(out.glob("part-*")) for line in part.read_text().splitlines()]
    values = {json.loads(line)[0]: json.loads(line)[1] for line in lines}
    assert values[4] is None
    assert all(values[i] is not None for i in (1, 2, 3)), values


def test_a_typo_of_a_known_key_in_config_yaml_names_the_key_meant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "job.py"
    script.write_text(JOB)
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "config.yaml").write_text("execution.checkpointing.intervall: 100 ms\n")
    monkeypatch.setenv("FLINK_CONF_DIR", str(conf))
    main(["run", str(script), "--simulate", "-q"])
    err = capsys.readouterr().err
    assert "Did you mean 'execution.checkpointing.interval'?" in err, err


def test_serving_a_file_that_is_no_archive_shows_the_archive_shape_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "notsp.json"
    path.write_text("{}")
    assert main(["serve", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert 'expected {"archive": [{"path": ..., "json": ...}, ...]} (' in err, err


def test_flinks_detached_flag_says_how_to_run_a_job_in_the_background(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``flink run -d`` is a habit: ckptsim run refuses it with what to do instead (was told
    to pass -d to the program after --)."""
    script = tmp_path / "job.py"
    script.write_text(JOB)
    assert main(["run", "-d", str(script)]) == 2
    err = capsys.readouterr().err
    assert "no detached mode" in err and f"ckptsim run {script} --web &" in err, err
    assert "after --" not in err
