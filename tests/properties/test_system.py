"""Whole-system properties on the deterministic simulation: random topologies, random
schedules and random faults (lost, late acknowledgements; stalled channels; failed snapshots).

Every run's trace is re-checked by the trace checker (``Simulation.run`` raises on the first
violation), so each property below also asserts the protocol invariants: every completed
checkpoint is a consistent cut, checkpoint ids increase, at most max-concurrent checkpoints
are pending, every pending checkpoint ends exactly once, aligned tasks read nothing from a
blocked channel and trigger only after all barriers. A failing example prints the
``Simulation(seed=..., schedule=..., faults=...)`` and the ``Topology`` that replay it.

Faults here make checkpoints fail (absorbed by ``tolerable-failed-checkpoints``) but no task;
task failures and restarts are ``test_recovery.py``'s.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import event, given, note, settings, target
from hypothesis import strategies as st

from ckptsim.testing import Simulation, Topology, simulations, topologies
from runtime.status import JobStatus
from tests.conftest import system_examples

FAULT_TOLERANT = {
    "execution.checkpointing.tolerable-failed-checkpoints": 1000,
    "execution.checkpointing.timeout": "60 ms",
}

MODES: dict[str, dict[str, object]] = {
    "aligned": {},
    "unaligned": {"execution.checkpointing.unaligned.enabled": True},
    "aligned_with_timeout": {
        "execution.checkpointing.unaligned.enabled": True,
        "execution.checkpointing.aligned-checkpoint-timeout": "2 ms",
    },
    # Flink 1.10's buffered alignment, in the same tasks as the others
    "legacy_buffered": {"ckptsim.checkpointing.alignment": "LEGACY_BUFFERED"},
}


def checkpointing(interval: int, max_concurrent: int = 1) -> dict[str, object]:
    return {
        "execution.checkpointing.interval": f"{interval} ms",
        "execution.checkpointing.max-concurrent-checkpoints": max_concurrent,
        **FAULT_TOLERANT,
    }


def run(sim: Simulation, topology: Topology, settings_: dict[str, object]) -> Counter[object]:
    note(f"topology: {topology!r}")
    note(f"simulation: {sim!r}")
    result = sim.run(topology.build, settings_)
    assert result.status is JobStatus.FINISHED, result.failure
    report = sim.report
    assert report is not None and report.ok
    completed = report.completed
    event(f"completed checkpoints: {'0' if not completed else '1-3' if completed < 4 else '4+'}")
    for reason in report.aborted:
        event(f"aborted: {reason}")
    if any(e["event"] == "fault_injected" for e in sim.events):
        event("a fault struck")
    return topology.observe(result)


@settings(max_examples=system_examples())
@given(
    topology=topologies(),
    sim=simulations(faults=True),
    mode=st.sampled_from(sorted(MODES)),
    interval=st.integers(10, 30),
)
def test_exactly_once_output_equals_the_failure_free_output_and_every_cut_is_consistent(
    topology: Topology, sim: Simulation, mode: str, interval: int
) -> None:
    """Exactly-once (aligned, unaligned, aligned with timeout): whatever the schedule and the
    checkpoint faults, the sink sees exactly the failure-free output, and the trace keeps
    every protocol invariant (consistent cuts included)."""
    observed = run(sim, topology, {**checkpointing(interval), **MODES[mode]})
    assert observed == topology.expected()


@settings(max_examples=system_examples())
@given(
    topology=topologies(),
    sim=simulations(faults=True),
    interval=st.integers(10, 30),
    max_concurrent=st.integers(1, 3),
)
def test_at_least_once_loses_no_record(
    topology: Topology, sim: Simulation, interval: int, max_concurrent: int
) -> None:
    """At-least-once (the barrier tracker, several checkpoints at once): every record of the
    failure-free output arrives (without failures, none twice either)."""
    settings_ = {
        **checkpointing(interval, max_concurrent),
        "execution.checkpointing.mode": "AT_LEAST_ONCE",
    }
    observed = run(sim, topology, settings_)
    expected = topology.expected()
    assert not expected - observed, "records lost"
    assert observed == expected


@settings(max_examples=system_examples())
@given(
    topology=topologies(),
    sim=simulations(),
    interval=st.integers(10, 30),
    max_concurrent=st.integers(2, 4),
)
def test_concurrent_aligned_checkpoints_stay_consistent_cuts_within_the_limit(
    topology: Topology, sim: Simulation, interval: int, max_concurrent: int
) -> None:
    """Aligned with several checkpoints in flight: never more than max-concurrent pending,
    ids increasing, each a consistent cut (checked on the trace), output exact."""
    observed = run(sim, topology, checkpointing(interval, max_concurrent))
    assert sim.report is not None
    target(float(sim.report.max_pending), label="checkpoints pending at once")
    event(f"max pending: {sim.report.max_pending}")
    assert observed == topology.expected()
