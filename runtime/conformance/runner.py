"""Runs a scenario's text against the protocol core and reports PASS or FAIL with the line.

The runner is pure (text in, result out); reading files and printing is the CLI's job
(``ckptsim conformance PATH...``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from runtime.conformance.coordinator_harness import CoordinatorHarness
from runtime.conformance.gate_harness import GateHarness
from runtime.conformance.scenario import Mismatch, Scenario, ScenarioError, Step, parse
from runtime.conformance.task_harness import TaskHarness


class Harness(Protocol):
    def act(self, step: Step) -> None: ...

    def check(self, step: Step) -> None: ...


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    name: str
    source: str
    passed: bool
    line: int | None = None
    message: str = ""
    facts_checked: int = 0

    def report(self) -> str:
        if self.passed:
            return f"PASS {self.name}"
        where = f"line {self.line}: " if self.line is not None else ""
        return f"FAIL {self.name}: {where}{self.message}"


def run_scenario(
    text: str, source: str = "<scenario>", *, through_task: bool = False
) -> ScenarioResult:
    """Run one scenario. ``through_task``: a gate scenario runs through a running task's input
    path (``TaskHarness``) instead of the bare gate."""
    fallback_name = source.rsplit("/", 1)[-1].removesuffix(".scn")
    try:
        scenario = parse(text, source)
    except ScenarioError as error:
        return ScenarioResult(fallback_name, source, False, error.line, error.message)
    name = scenario.headers.get("name", fallback_name)
    checked = 0
    line: int | None = None
    try:
        harness = _harness(scenario, through_task)
        for step in scenario.steps:
            line = step.line
            if step.is_fact:
                harness.check(step)
                checked += 1
            else:
                harness.act(step)
    except Mismatch as mismatch:
        return ScenarioResult(name, source, False, line, str(mismatch), checked)
    except ScenarioError as error:
        return ScenarioResult(name, source, False, error.line, error.message, checked)
    except Exception as error:  # the implementation raised: report it as this scenario's failure
        message = f"{type(error).__name__}: {error}"
        return ScenarioResult(name, source, False, line, message, checked)
    if checked == 0:
        return ScenarioResult(
            name, source, False, None, "the scenario checks no fact (add ? lines)"
        )
    return ScenarioResult(name, source, True, None, "", checked)


def _harness(scenario: Scenario, through_task: bool) -> Harness:
    if scenario.kind == "gate":
        return TaskHarness(scenario) if through_task else GateHarness(scenario)
    return CoordinatorHarness(scenario)


def summary(results: list[ScenarioResult]) -> str:
    passed = sum(r.passed for r in results)
    return f"{passed} passed, {len(results) - passed} failed"
