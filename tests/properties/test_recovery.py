"""Recovery properties on the deterministic simulation: random topologies, random schedules
and one or two task failures or actor crashes at random records or checkpoints, with a
fixed-delay restart strategy. The job fails over, restores every task from the latest
completed checkpoint (operator and keyed state, source positions, in-flight data of
unaligned checkpoints) and runs on.

With exactly-once checkpoints the collect sink is transactional (records are published on
checkpoint completion, or at the end of input), so the committed output must be exactly the
failure-free output, however often the job fails. With at-least-once checkpoints nothing may
be lost, but records replayed after a restore may arrive twice.

Every run's trace is also re-checked by the trace checker (restarts included). A failing
example prints the ``Simulation(...)`` and ``Topology(...)`` that replay it.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import event, given, note, settings, target
from hypothesis import strategies as st

from ckptsim.testing import Simulation, Topology, simulations, topologies
from runtime.job import JobResult
from runtime.status import JobStatus
from tests.conftest import system_examples

RESTARTS: dict[str, object] = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": 5,
    "restart-strategy.fixed-delay.delay": "5 ms",
    "execution.checkpointing.tolerable-failed-checkpoints": 1000,
    "execution.checkpointing.timeout": "60 ms",
}

MODES: dict[str, dict[str, object]] = {
    "aligned": {},
    "unaligned": {"execution.checkpointing.unaligned.enabled": True},
    "legacy_buffered": {"ckptsim.checkpointing.alignment": "LEGACY_BUFFERED"},
}


def run(
    sim: Simulation, topology: Topology, settings_: dict[str, object]
) -> tuple[JobResult, Counter[object]]:
    note(f"topology: {topology!r}")
    note(f"simulation: {sim!r}")
    result = sim.run(topology.build, {**RESTARTS, **settings_})
    assert result.status is JobStatus.FINISHED, (result.failure, result.failures)
    report = sim.report
    assert report is not None and report.ok
    struck = sum(1 for e in sim.events if e["event"] == "fault_injected")
    assert result.restarts == struck, "every task failure restarts the job once"
    event(f"restarts: {result.restarts}")
    target(float(result.restarts), label="restarts")
    event(f"completed checkpoints before the end: {'0' if not report.completed else '1+'}")
    return result, topology.observe(result)


@settings(max_examples=system_examples())
@given(
    topology=topologies(),
    sim=simulations(failures=2),
    mode=st.sampled_from(sorted(MODES)),
    interval=st.integers(10, 25),
)
def test_exactly_once_committed_output_after_failures_equals_the_failure_free_output(
    topology: Topology, sim: Simulation, mode: str, interval: int
) -> None:
    """Exactly-once, aligned and unaligned: whatever task fails or crashes, at whatever
    record or checkpoint, and however the actors interleave, the committed output of the
    recovered job is exactly the failure-free output (no record lost, none twice, keyed sums
    continue from the restored state)."""
    _, observed = run(
        sim, topology, {"execution.checkpointing.interval": f"{interval} ms", **MODES[mode]}
    )
    assert observed == topology.expected()


@settings(max_examples=system_examples())
@given(
    topology=topologies(reduce=False),
    sim=simulations(failures=2),
    interval=st.integers(10, 25),
)
def test_at_least_once_loses_no_record_across_failures(
    topology: Topology, sim: Simulation, interval: int
) -> None:
    """At-least-once: after failures and restores every record of the failure-free output
    is in the sink's output (records replayed from a restored source position may be there
    twice; that is the difference from exactly-once)."""
    result, observed = run(
        sim,
        topology,
        {
            "execution.checkpointing.interval": f"{interval} ms",
            "execution.checkpointing.mode": "AT_LEAST_ONCE",
        },
    )
    expected = topology.expected()
    assert not expected - observed, f"records lost: {expected - observed}"
    if not result.restarts:
        assert observed == expected
    event("duplicates after a restore" if observed != expected else "no duplicates")
