"""Bad input as users give it: one line on stderr saying what is wrong and how to fix it,
exit 2, nothing already written lost; and the valid spellings next to them work."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckptsim._cli import main

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
