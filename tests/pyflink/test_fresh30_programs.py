"""PyFlink programs a new user wrote without reading ckptsim's tests (issue fresh30), run on
Flink 2.3 first (``apache-flink==2.3.0``, MiniCluster, Java 17; its stdout is
``expected/fresh30_*.out``), then unchanged under ``ckptsim run --simulate``: the same lines,
in any order (Flink's subtasks interleave, and two sinks print with one prefix)."""

from __future__ import annotations

import pytest

from ckptsim._cli import main
from tests.pyflink.compare import PROGRAMS, assert_same_lines, expected_output

NAMES = ["fresh30_windows", "fresh30_joins", "fresh30_rules"]


@pytest.mark.parametrize("name", NAMES)
def test_a_new_users_program_prints_what_flink_printed(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", str(PROGRAMS / f"{name}.py"), "--simulate", "-q"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert_same_lines(captured.out, expected_output(name))
