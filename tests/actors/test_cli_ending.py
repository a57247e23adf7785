"""``ckptsim run`` always comes back: a deterministic error restarts a bounded number of times
(the summary names each cause), and a script that never ends, a leftover thread, Ctrl-C or
SIGTERM end the run cleanly (issue #8, items 8, 9 and 13)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from actors.cli import main

#: a keyed job whose key selector raises at record 3,000: every replay meets it again
DETERMINISTIC_ERROR = """
    def key(record):
        if record[1] == 3_000:
            raise KeyError("no key for record 3000")
        return record[0]

    def build(env):
        env.enable_checkpointing("20 ms")
        env.from_generator(lambda i: (i % 7, i), 5_000, rate=50_000).key_by(key).reduce(
            lambda a, b: (a[0], a[1] + b[1])
        ).collect("sums")
"""


def script(tmp_path: Path, body: str, name: str = "job.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def run(*argv: str) -> int:
    # virtual seconds: without a bound, Flink's default would restart until this timeout
    return main(["run", *argv, "--simulate", "--seed", "1", "--timeout", "3600"])


def test_a_deterministic_error_restarts_three_times_then_fails_naming_each_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(script(tmp_path, DETERMINISTIC_ERROR)) == 1
    out, err = capsys.readouterr()
    assert "Job 'job' FAILED" in out and "Restarts: 3\n" in out
    for n in (1, 2, 3):
        assert f"  restart {n} after: task " in out
    assert out.count("KeyError: 'no key for record 3000'") >= 4
    assert "  not restarted after: task " in out
    assert "recovery is suppressed by fixed-delay, 3 attempt(s)" in out
    assert "restarted at most 3 times" in err
    assert "-D restart-strategy.type=exponential-delay" in err


def test_flinks_unlimited_default_comes_back_with_a_restart_strategy_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = script(tmp_path, DETERMINISTIC_ERROR)
    flink_default = ["-D", "restart-strategy.type=exponential-delay"]
    code = main(["run", job, "--simulate", "--seed", "1", "--timeout", "120", *flink_default])
    assert code == 1
    out, err = capsys.readouterr()
    assert "Job 'job' CANCELED" in out  # still restarting when the timeout cancelled it
    restarts = int(out.split("Restarts: ")[1].split("\n")[0])
    assert restarts > 3
    assert "restarted at most" not in err


def test_a_strategy_the_script_configures_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = DETERMINISTIC_ERROR + (
        "        env.configure({'restart-strategy.type': 'fixed-delay',\n"
        "                       'restart-strategy.fixed-delay.attempts': 5,\n"
        "                       'restart-strategy.fixed-delay.delay': '10 ms'})\n"
    )
    assert run(script(tmp_path, body)) == 1
    out, err = capsys.readouterr()
    assert "Restarts: 5\n" in out and "restarted at most" not in err
