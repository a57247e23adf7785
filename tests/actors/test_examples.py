"""Every ``ckptsim run`` example runs with no options (on the simulation, so the checkpoint
counts do not depend on the machine's load), finishes, and fails no checkpoint but those its
injected faults abort."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ckptsim._cli import main

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ["word_count", "slow_running_sum", "at_least_once", "failure_recovery"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_an_example_runs_with_no_options_and_no_failed_checkpoint(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(ROOT / "examples" / f"{name}.py"), "--simulate"]) == 0
    out = capsys.readouterr().out
    assert f"Job '{name}' FINISHED" in out
    counts = re.search(r"Checkpoints: (\d+) completed, (\d+) failed", out)
    assert counts is not None and int(counts.group(1)) > 0
    assert counts.group(2) == "0", out


def test_every_example_is_covered() -> None:
    scripts = {p.stem for p in (ROOT / "examples").glob("*.py")}
    # spark_clicks: tests/spark_bridge; PyFlink programs (pyflink_*): tests/pyflink
    assert scripts - {s for s in scripts if s.startswith("pyflink_")} == {*SCRIPTS, "spark_clicks"}
