"""How a program's output is compared with what Apache Flink printed (``expected/README.md``)."""

from __future__ import annotations

import re
from functools import partial
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


def assert_same_lines(actual: str, expected: str) -> None:
    """The same lines, in any order: for programs where the order within one print prefix
    differs between Flink's own runs (two sinks printing with one prefix, a subtask reading
    from several upstream subtasks)."""
    assert sorted(actual.splitlines()) == sorted(expected.splitlines())


_SUBTASK = re.compile(r"^(?:(\S*?):)?\d+> ")


def without_subtasks(text: str) -> list[str]:
    """The lines, sorted, with the subtask numbers of their print prefixes left out
    (``one:2> x`` as ``one> x``, ``2> x`` as ``> x``): for a program whose records Flink
    deals to subtasks differently from run to run (rebalance starts at a random subtask)."""
    return sorted(
        _SUBTASK.sub(lambda m: f"{m.group(1) or ''}> ", line) for line in text.splitlines()
    )


_PLAN_ID = re.compile(r'"id" : (\d+)')


def plan_ids_renumbered(text: str) -> str:
    """Each ``get_execution_plan()`` JSON of ``text`` with its node ids numbered 1, 2, ... in
    their order: Flink's ids go on across a program's environments and count transformations
    that are no node (``docs/pyflink-differences.md``); what a plan says does not depend on them.
    A plan is the text from one ``{`` at the start of a line to the next ``}`` there."""
    out: list[str] = []
    plan: list[str] = []
    for line in text.splitlines(True):
        if plan or line.startswith("{"):
            plan.append(line)
            if line.startswith("}"):
                block = "".join(plan)
                ids = sorted({int(i) for i in _PLAN_ID.findall(block)})
                rank = {old: new for new, old in enumerate(ids, 1)}
                out.append(_PLAN_ID.sub(partial(_renumbered, rank), block))
                plan = []
        else:
            out.append(line)
    return "".join(out + plan)


def _renumbered(rank: dict[int, int], match: re.Match[str]) -> str:
    return f'"id" : {rank[int(match.group(1))]}'
