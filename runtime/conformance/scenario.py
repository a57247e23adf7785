"""Parsing of conformance scenarios (``.scn``, see ``tests/conformance/FORMAT.md``), and what
every kind of scenario shares: reading a header's value, a step's arguments, comparing a fact.

A scenario is a header (``@key value`` lines) followed by script lines: actions, and facts
(lines starting with ``?``). Parsing validates every key, action and fact name and the shape of
their arguments, so a typo is reported with its line instead of silently passing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


class ScenarioError(Exception):
    """A scenario that cannot be parsed or run; names the line."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


class Mismatch(Exception):
    """A fact that does not hold: what the scenario expected, what the implementation did."""

    def __init__(self, expected: str, got: str) -> None:
        super().__init__(f"expected {expected}, got {got}")


@dataclass(frozen=True, slots=True)
class Step:
    line: int
    is_fact: bool
    words: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.words[0]

    @property
    def args(self) -> tuple[str, ...]:
        return self.words[1:]


@dataclass(slots=True)
class Scenario:
    source: str
    headers: dict[str, str] = field(default_factory=dict)
    header_lines: dict[str, int] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.headers.get("name", self.source)

    @property
    def kind(self) -> str:
        return self.headers["kind"]


GATE_HEADERS = {
    "name",
    "origin",
    "kind",
    "channels",
    "mode",
    "max_buffered_bytes",
    "eop_counts_as_aligned",
    "local_channels",
}
COORDINATOR_HEADERS = {
    "name",
    "origin",
    "kind",
    "tasks",
    "trigger",
    "ack",
    "commit",
    "interval_ms",
    "timeout_ms",
    "min_pause_ms",
    "max_concurrent",
    "tolerable_failures",
    "retained",
    "unaligned",
    "initial_delay_ms",
}
GATE_ACTIONS = {"hold", "drain", "poll", "advance", "advance!"}
GATE_FACTS = {
    "triggered",
    "aborted",
    "out",
    "blocked",
    "inflight",
    "latest",
    "pending",
    "alignment_ms",
    "buffered_bytes",
}
COORDINATOR_ACTIONS = {
    "request",
    "savepoint",
    "tick",
    "advance",
    "ack",
    "decline",
    "expire",
    "task",
    "job",
    "shutdown",
}
COORDINATOR_FACTS = {
    "sent",
    "pending",
    "store",
    "result",
    "discarded",
    "failjob",
    "queued",
    "timers",
}

_CHANNEL = re.compile(r"^ch(\d+)$")
#: a comment starts with a lone '#' (so '#3' in '? result #3 ok 3' and 'Test#method' are words)
_COMMENT = re.compile(r"(?:^|\s)#(?:\s|$)")


def parse(text: str, source: str = "<scenario>") -> Scenario:
    scenario = Scenario(source=source)
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _COMMENT.split(raw, 1)[0].strip()
        if not line:
            continue
        if line.startswith("@"):
            if scenario.steps:
                raise ScenarioError(number, f"header {line.split()[0]} after the first script line")
            key, _, value = line[1:].partition(" ")
            value = value.strip()
            if not key or not value:
                raise ScenarioError(number, f"header needs a key and a value: {line!r}")
            if key in scenario.headers:
                raise ScenarioError(number, f"header @{key} given twice")
            scenario.headers[key] = value
            scenario.header_lines[key] = number
            continue
        if line.startswith("?"):
            words = tuple(line[1:].split())
            if not words:
                raise ScenarioError(number, "a fact line needs a fact name")
            scenario.steps.append(Step(number, True, words))
        else:
            scenario.steps.append(Step(number, False, tuple(line.split())))
    _validate(scenario)
    return scenario


def _validate(scenario: Scenario) -> None:
    kind = scenario.headers.get("kind")
    if kind is None:
        raise ScenarioError(1, "missing header @kind (gate or coordinator)")
    if kind == "gate":
        allowed_headers, actions, facts = GATE_HEADERS, GATE_ACTIONS, GATE_FACTS
    elif kind == "coordinator":
        allowed_headers, actions, facts = (
            COORDINATOR_HEADERS,
            COORDINATOR_ACTIONS,
            COORDINATOR_FACTS,
        )
    else:
        raise ScenarioError(
            scenario.header_lines["kind"], f"unknown @kind {kind!r} (gate or coordinator)"
        )
    for key, line in scenario.header_lines.items():
        if key not in allowed_headers:
            raise ScenarioError(line, f"unknown header @{key} for a {kind} scenario")
    for step in scenario.steps:
        if step.is_fact:
            if step.name not in facts:
                raise ScenarioError(
                    step.line, f"unknown fact {step.name!r}; one of: {', '.join(sorted(facts))}"
                )
        elif kind == "gate" and _CHANNEL.match(step.name):
            if len(step.args) != 1:
                raise ScenarioError(step.line, f"{step.name} takes exactly one token")
        elif step.name not in actions:
            raise ScenarioError(step.line, f"unknown action {step.name!r}")


def channel_index(word: str) -> int | None:
    match = _CHANNEL.match(word)
    return int(match.group(1)) if match else None


def parse_int(step: Step, word: str, what: str) -> int:
    try:
        return int(word)
    except ValueError:
        raise ScenarioError(step.line, f"{what} must be an integer, got {word!r}") from None


def parse_ints(step: Step, words: tuple[str, ...], what: str) -> list[int]:
    if words == ("-",):
        return []
    return [parse_int(step, w, what) for w in words]


def one_value(step: Step) -> str:
    """The single argument of an action or a fact."""
    if len(step.args) != 1:
        what = f"? {step.name}" if step.is_fact else step.name
        raise ScenarioError(step.line, f"{what} takes one value")
    return step.args[0]


def bool_header(scenario: Scenario, key: str, default: bool) -> bool:
    value = scenario.headers.get(key)
    if value is None:
        return default
    if value not in ("true", "false"):
        raise ScenarioError(
            scenario.header_lines[key], f"@{key} must be true or false, got {value!r}"
        )
    return value == "true"


def int_header(scenario: Scenario, key: str, default: int | None = None) -> int:
    value = scenario.headers.get(key)
    if value is None:
        if default is None:
            raise ScenarioError(1, f"missing header @{key}")
        return default
    try:
        return int(value)
    except ValueError:
        raise ScenarioError(
            scenario.header_lines[key], f"@{key} must be an integer, got {value!r}"
        ) from None


def _render(values: list[int] | list[str], prefix: str = "") -> str:
    return prefix + (" ".join(str(v) for v in values) if values else "-")


def compare(expected: list[int] | list[str], got: list[int] | list[str], prefix: str = "") -> None:
    """Raise ``Mismatch`` unless the fact's values are the ones observed."""
    if expected != got:
        raise Mismatch(_render(expected, prefix), _render(got, prefix))
