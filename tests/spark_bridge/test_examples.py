"""``examples/spark_clicks.py``, the Spark bridge's main job, run small on the shared session."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pytest

from ckptsim._logging import logging_restored

ROOT = Path(__file__).resolve().parents[2]


def test_spark_clicks_is_exactly_once_through_a_failure(
    spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    example = runpy.run_path(str(ROOT / "examples" / "spark_clicks.py"))
    with logging_restored():  # the example configures logging: put it back after
        code = example["main"](["--rows", "40000", "--users", "300", "--log-level", "critical"])
    assert code == 0
    out = capsys.readouterr().out
    assert "1 restart(s)" in out
    assert "exactly-once: 300 keys match Spark's batch result" in out
