"""Exactly-once with side outputs, on the deterministic simulation: a process function splits a
stream into its main output and two side outputs (one read after a rebalance, one keyed and
summed); random schedules, checkpoint faults and one or two task failures or actor crashes,
aligned and unaligned checkpoints. A side output is an edge like any other: its records are
replayed from the restored source position, or restored as in-flight data of an unaligned
checkpoint, so each committed output is exactly the failure-free one.

A failing example prints the ``Simulation(...)`` that replays it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from ckptsim import OutputTag, ProcessFunction, StreamExecutionEnvironment
from ckptsim.testing import Simulation, simulations
from runtime.status import JobStatus
from tests.conftest import system_examples
from tests.properties.test_recovery import MODES, RESTARTS

RECORDS = 600
ODD = OutputTag("odd")
SEVENS = OutputTag("sevens")


class Split(ProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        if value % 2:
            yield ODD, value
        else:
            yield value
        if value % 7 == 0:
            yield SEVENS, (value % 3, 1)


def build(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(2)
    split = env.from_generator(lambda n: n, RECORDS, rate=20_000).process(Split())
    split.map(lambda v: v * 10).collect("even")
    split.get_side_output(ODD).rebalance().map(lambda v: -v).collect("odd")
    split.get_side_output(SEVENS).key_by(lambda r: r[0]).reduce(
        lambda a, b: (a[0], a[1] + b[1])
    ).collect("sevens")


def expected() -> dict[str, Counter[Any]]:
    sevens: Counter[Any] = Counter()
    counts: dict[int, int] = {}
    for n in range(0, RECORDS, 7):
        counts[n % 3] = counts.get(n % 3, 0) + 1
        sevens[(n % 3, counts[n % 3])] += 1
    return {
        "even": Counter(n * 10 for n in range(0, RECORDS, 2)),
        "odd": Counter(-n for n in range(1, RECORDS, 2)),
        "sevens": sevens,
    }


@settings(max_examples=system_examples())
@given(
    sim=simulations(failures=2, faults=True),
    mode=st.sampled_from(sorted(MODES)),
    interval=st.integers(10, 25),
)
def test_side_outputs_are_exactly_once_across_failures(
    sim: Simulation, mode: str, interval: int
) -> None:
    note(f"simulation: {sim!r}")
    result = sim.run(
        build, {**RESTARTS, "execution.checkpointing.interval": f"{interval} ms", **MODES[mode]}
    )
    assert result.status is JobStatus.FINISHED, (result.failure, result.failures)
    report = sim.report
    assert report is not None and report.ok
    event(f"restarts: {result.restarts}")
    observed = {name: Counter(result.output[name]) for name in ("even", "odd", "sevens")}
    assert observed == expected()
