"""Every scenario under tests/conformance passes, against the bare gate and through a running
task's input path (``--through-task``); and the runner can fail, both ways.

Three proofs that the runner observes instead of echoing the script:
1. hand-written scenarios with a deliberately wrong fact (tests/negative_scenarios) FAIL on
   exactly the line their header names;
2. every fact of every passing scenario, corrupted, makes that scenario FAIL on that line;
3. the CLI exits 1 on failures and 2 on a missing path.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ckptsim._cli import main
from runtime.conformance.runner import run_scenario
from runtime.conformance.scenario import _COMMENT, parse

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
SCENARIOS = sorted(HERE.rglob("*.scn"))
NEGATIVE = sorted((TESTS / "negative_scenarios").glob("*.scn"))


def _id(path: Path) -> str:
    return str(path.relative_to(TESTS))


def test_there_are_enough_scenarios() -> None:
    """The ten shared scenarios plus at least 30 taken from Flink's unit tests."""
    shared = list((HERE / "shared").glob("*.scn"))
    own = [p for p in SCENARIOS if "shared" not in p.parts]
    assert len(shared) == 10
    assert len(own) >= 30
    for path in own:
        origin = parse(path.read_text(), str(path)).headers.get("origin", "")
        assert origin.startswith("Flink "), f"{path.name}: @origin must name a Flink test"


WAYS = [False, True]


def _way(through_task: bool) -> str:
    return "through-task" if through_task else "gate"


@pytest.mark.parametrize("through_task", WAYS, ids=_way)
@pytest.mark.parametrize("path", SCENARIOS, ids=_id)
def test_scenario_passes(path: Path, through_task: bool) -> None:
    result = run_scenario(path.read_text(), str(path), through_task=through_task)
    assert result.passed, result.report()
    assert result.facts_checked > 0


@pytest.mark.parametrize("through_task", WAYS, ids=_way)
@pytest.mark.parametrize("path", NEGATIVE, ids=_id)
def test_wrong_scenario_fails_on_its_line(path: Path, through_task: bool) -> None:
    text = path.read_text()
    expectation = re.search(r"# expect: FAIL(?: line (\d+))?", text)
    assert expectation, f"{path.name} must say which line fails"
    result = run_scenario(text, str(path), through_task=through_task)
    assert not result.passed, f"{path.name} passed but states a wrong fact"
    if expectation.group(1):
        assert result.line == int(expectation.group(1)), result.report()
    assert result.report().startswith(f"FAIL {path.stem}:")


_SENTINELS = {
    "triggered": "999",
    "aborted": "999:CHECKPOINT_DECLINED",
    "out": "9999",
    "blocked": "99",
    "pending": "999",
    "sent": "trigger:999@NOBODY",
    "store": "999",
    "discarded": "no-such-handle",
}
_SCALARS = {"latest", "alignment_ms", "buffered_bytes", "failjob", "queued", "timers"}


def _corrupt(line: str) -> str:
    """The same fact with a value it cannot have had."""
    words = _COMMENT.split(line, 1)[0].split()
    name, args = words[1], words[2:]
    if name in _SCALARS:
        args = [str(int(args[0]) + 1000)]
    elif name == "inflight":
        args = [args[0], *[a for a in args[1:] if a != "-"], "9999"]
    elif name == "result":
        status = args[1:]
        args = [args[0], *(["waiting"] if status != ["waiting"] else ["ok", "1000"])]
    else:
        args = [*[a for a in args if a != "-"], _SENTINELS[name]]
    return " ".join(["?", name, *args])


def _facts(path: Path) -> list[tuple[Path, int]]:
    lines = path.read_text().splitlines()
    return [(path, n) for n, line in enumerate(lines, 1) if line.lstrip().startswith("?")]


ALL_FACTS = [fact for path in SCENARIOS for fact in _facts(path)]


@pytest.mark.parametrize("through_task", WAYS, ids=_way)
def test_every_fact_of_every_scenario_is_checked(through_task: bool) -> None:
    """Corrupting any single fact makes its scenario fail on that very line."""
    survivors = []
    for path, number in ALL_FACTS:
        lines = path.read_text().splitlines()
        lines[number - 1] = _corrupt(lines[number - 1])
        result = run_scenario("\n".join(lines), str(path), through_task=through_task)
        if result.passed or result.line != number:
            survivors.append(f"{path.name}:{number} {lines[number - 1]!r} -> {result.report()}")
    assert len(ALL_FACTS) > 300
    assert survivors == []


def test_cli_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "-q", str(HERE / "shared")]) == 0
    assert "10 passed, 0 failed" in capsys.readouterr().out
    assert main(["conformance", str(TESTS / "negative_scenarios")]) == 1
    out = capsys.readouterr().out
    assert f"0 passed, {len(NEGATIVE)} failed" in out
    assert "FAIL gate-wrong-trigger: line 11: expected 2, got 1" in out
    assert main(["conformance", str(TESTS / "no-such-dir")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    assert main(["conformance", "-q", "--through-task", str(HERE)]) == 0
    assert f"{len(SCENARIOS)} passed, 0 failed" in capsys.readouterr().out
    assert main(["conformance", "--through-task", str(TESTS / "negative_scenarios")]) == 1
    assert "FAIL gate-wrong-trigger: line 11: expected 2, got 1" in capsys.readouterr().out
