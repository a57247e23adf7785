"""actors.testing: the README's example property works as written, and its pieces do what
they say (fault specs resolve for any job, a violation names the replay)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from actors import StreamExecutionEnvironment, testing
from actors.faults import DropAcknowledgement, StallChannel
from actors.testing import FaultSpec, Simulation, TraceViolation, simulations, topologies
from runtime.tracecheck import Violation, check_trace


def build(env: StreamExecutionEnvironment) -> None:
    env.enable_checkpointing("20 ms")
    env.from_generator(lambda i: (i % 10, 1), 5_000, rate=20_000).key_by(lambda r: r[0]).sum(
        1
    ).collect("sums")


@settings(max_examples=10)
@given(sim=simulations(faults=True, failures=1))
def test_every_key_sums_to_500(sim: Simulation) -> None:
    """The README's example, verbatim."""
    result = sim.run(
        build,
        {
            "execution.checkpointing.unaligned.enabled": True,
            "execution.checkpointing.timeout": "1 s",  # a lost acknowledgement expires soon
            "execution.checkpointing.tolerable-failed-checkpoints": 100,
            "restart-strategy.type": "fixed-delay",  # a failed task restarts the job
        },
    )
    finals: dict[int, int] = {}
    for key, total in result.collected("sums"):
        finals[key] = max(finals.get(key, 0), total)
    assert finals == {k: 500 for k in range(10)}


def test_fault_specs_resolve_against_the_jobs_own_tasks_and_channels() -> None:
    env = StreamExecutionEnvironment()
    build(env)
    env.set_parallelism(2)
    sim = Simulation(
        faults=(
            FaultSpec("drop_ack", target=5, checkpoint_id=2),
            FaultSpec("stall", target=1, at_ms=3, duration_ms=4),
        )
    )
    drop, stall = sim.resolve_faults(env, "x")
    assert drop == DropAcknowledgement(task="reduce-2#1", checkpoint_id=2)  # 5 % 4 tasks
    assert stall == StallChannel(producer="source-1#0", consumer="reduce-2#1", at_ms=3, for_ms=4)


def test_a_violation_fails_the_run_and_says_how_to_replay_it(monkeypatch: Any) -> None:
    def broken(events: Any) -> Any:
        report = check_trace(events)
        event = {"event": "checkpoint_completed", "checkpoint_id": 9, "seq": 1}
        report.violation = Violation("ends-once", "checkpoint 9 was never triggered", event)
        return report

    monkeypatch.setattr(testing, "check_trace", broken)
    with pytest.raises(TraceViolation, match=r"(?s)never triggered.*replay: Simulation\(seed=3"):
        Simulation(seed=3).run(build)
    result = Simulation(seed=3).run(build, check=False)  # or look at it yourself
    assert result.succeeded


@settings(max_examples=25)
@given(topology=topologies())
def test_a_topology_builds_and_its_expected_output_is_what_a_plain_run_gives(topology: Any) -> None:
    result = Simulation(seed=1).run(topology.build, {"execution.checkpointing.interval": "15 ms"})
    assert topology.observe(result) == topology.expected()
