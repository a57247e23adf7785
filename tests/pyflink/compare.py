"""How a program's output is compared with what Apache Flink printed (``expected/README.md``)."""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE / "flink_examples"
PROGRAMS = HERE / "programs"
EXPECTED = HERE / "expected"

#: log lines of Beam and PyFlink that Flink's examples send to stdout (not program output)
NOISE = (
    "Using Any for unsupported type:",
    "No module named google.cloud.bigquery_storage_v1.",
    "PYFLINK_CYTHON_ENABLED:",
)
#: Flink's print prefix: ``3> ``, ``totals:1> ``, ``int> ``
_PREFIX = re.compile(r"^(\S*?)> ")


def expected_output(name: str) -> str:
    """What Flink printed for ``name`` (its log noise dropped)."""
    text = (EXPECTED / f"{name}.out").read_text(encoding="utf-8")
    return "".join(line for line in text.splitlines(True) if not line.startswith(NOISE))


def by_prefix(text: str) -> dict[str, list[str]]:
    """The lines of each print prefix (``""``: lines without one), in order."""
    groups: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = _PREFIX.match(line)
        groups.setdefault(match.group(1) if match else "", []).append(line)
    return groups


def assert_same_output(actual: str, expected: str) -> None:
    """Per print prefix, the same lines in the same order (subtasks interleave freely)."""
    assert by_prefix(actual) == by_prefix(expected)
