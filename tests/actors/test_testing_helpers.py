"""ckptsim.testing: the README's example property works as written, and its pieces do what
they say (fault specs resolve for any job, a violation names the replay)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings

from actors.faults import CrashTask, DropAcknowledgement, StallChannel
from ckptsim import StreamExecutionEnvironment, testing
from ckptsim.testing import FaultSpec, Simulation, TraceViolation, simulations, topologies
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


# --- a failing property: quiet output, bounded shrinking --------------------------------------


def test_an_injected_crash_puts_no_pykka_traceback_in_the_output(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crash = CrashTask(task="source-1#0", at_record=1_000)
    sim = Simulation(seed=2, faults=(crash,))
    result = sim.run(build, {"restart-strategy.type": "fixed-delay"})
    assert result.succeeded and result.restarts == 1
    assert "InjectedCrash" in result.failures[0]
    assert not [r for r in caplog.records if "Unhandled exception" in r.getMessage()]


def tiny(env: StreamExecutionEnvironment) -> None:
    env.enable_checkpointing("10 ms")
    env.from_collection(range(20)).map(lambda i: i + 1).collect()


def _failing_property(shrink_seconds: float, runs: list[Simulation]) -> Any:
    @settings(max_examples=100, derandomize=True, database=None)
    @given(sim=simulations(max_choices=30))
    def schedules_are_short(sim: Simulation) -> None:
        sim.run(tiny, shrink_seconds=shrink_seconds)
        runs.append(sim)
        assert len(sim.schedule) < 3

    return schedules_are_short


def test_a_failing_property_stops_shrinking_once_its_budget_is_spent() -> None:
    """With no time left after the first failure, new candidates are rejected and the report
    replays the first failing example; without the bound, Hypothesis shrinks it."""
    runs: list[Simulation] = []
    with pytest.raises(AssertionError):
        _failing_property(0, runs)()
    first = next(i for i, sim in enumerate(runs) if len(sim.schedule) >= 3)
    assert runs[first + 1 :] and all(sim == runs[first] for sim in runs[first + 1 :])

    unbounded: list[Simulation] = []
    with pytest.raises(AssertionError):
        _failing_property(math.inf, unbounded)()
    assert len(unbounded) > len(runs)
    assert unbounded[-1].schedule == (0, 0, 0)  # shrunk to the smallest failure


def test_hypothesis_prints_a_falsifying_simulation_as_the_repr_that_replays_it() -> None:
    """Hypothesis's pretty-printer shows every dataclass field; a Simulation after a run holds
    its whole trace. What a failing property prints is the Simulation's own repr: its seed,
    schedule and faults, nothing of the last run (fresh41b)."""
    from hypothesis.vendor.pretty import pretty  # noqa: PLC0415

    sim = Simulation(seed=3, faults=(FaultSpec(kind="drop_ack", checkpoint_id=1),))

    def build(env: StreamExecutionEnvironment) -> None:
        env.set_parallelism(1)
        env.enable_checkpointing(20)
        env.from_generator(lambda i: (i % 3, 1), 300, rate=10_000).key_by(lambda r: r[0]).sum(
            1
        ).collect()

    sim.run(build)
    assert sim.events
    assert pretty(sim) == repr(sim)
    assert "events" not in pretty(sim) and "seed=3" in pretty(sim)
