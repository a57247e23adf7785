"""Injected faults: each strikes where it says, shows in the trace, and the protocol copes."""

from __future__ import annotations

from typing import Any

import pytest

from actors.faults import (
    DelayAcknowledgement,
    DropAcknowledgement,
    FailSnapshot,
    Fault,
    StallChannel,
)
from ckptsim import StreamExecutionEnvironment
from ckptsim.testing import Simulation
from runtime.job import JobResult
from runtime.reasons import CheckpointFailureReason
from runtime.status import JobStatus


def build(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(2)
    env.enable_checkpointing(20)
    env.configure(
        {
            "execution.checkpointing.timeout": "50 ms",
            "execution.checkpointing.tolerable-failed-checkpoints": 100,
            "ckptsim.buffer.records": 50,
            "web.checkpoints.history": 100,
        }
    )
    env.from_generator(lambda i: (i % 10, 1), 4_000, rate=20_000).key_by(lambda r: r[0]).sum(
        1
    ).collect("sums")


def run(*faults: Fault) -> tuple[JobResult, Simulation]:
    sim = Simulation(seed=4, faults=faults)
    result = sim.run(build)
    assert result.status is JobStatus.FINISHED, result.failure
    assert {k: max(v for kk, v in result.collected("sums") if kk == k) for k in range(10)} == {
        k: 400 for k in range(10)
    }
    return result, sim


def status(result: JobResult, cid: int) -> dict[str, Any]:
    (entry,) = [h for h in result.checkpoints["history"] if h["id"] == cid]
    return entry


def injected(sim: Simulation) -> list[str]:
    return [e["fault"] for e in sim.events if e["event"] == "fault_injected"]


def test_a_lost_acknowledgement_makes_its_checkpoint_expire() -> None:
    result, sim = run(DropAcknowledgement(task="reduce-2#1", checkpoint_id=3))
    assert status(result, 3)["status"] == "FAILED"
    assert (
        status(result, 3)["failure_message"] == CheckpointFailureReason.CHECKPOINT_EXPIRED.message
    )
    assert status(result, 4)["status"] == "COMPLETED"  # the next one is fine
    assert injected(sim) == ["DropAcknowledgement(task='reduce-2#1', checkpoint_id=3)"]


def test_a_late_acknowledgement_delays_completion_by_its_delay() -> None:
    baseline, _ = run()
    result, sim = run(DelayAcknowledgement(task="source-1#0", checkpoint_id=2, delay_ms=15))
    late, usual = status(result, 2), status(baseline, 2)
    assert late["status"] == "COMPLETED"
    assert late["end_to_end_duration"] >= 15 > usual["end_to_end_duration"]
    assert len(injected(sim)) == 1


def test_a_late_acknowledgement_past_the_timeout_is_too_late() -> None:
    result, _ = run(DelayAcknowledgement(task="source-1#0", checkpoint_id=2, delay_ms=80))
    assert (
        status(result, 2)["failure_message"] == CheckpointFailureReason.CHECKPOINT_EXPIRED.message
    )


def test_a_failed_snapshot_declines_with_async_exception() -> None:
    result, sim = run(FailSnapshot(task="source-1#1", checkpoint_id=2))
    assert status(result, 2)["failure_message"] == (
        f"{CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION.message} Cause: injected fault: "
        "snapshot 2 fails"
    )
    assert injected(sim) == ["FailSnapshot(2)"]


def test_a_stalled_channel_holds_back_the_barriers_behind_it() -> None:
    result, sim = run(
        StallChannel(producer="source-1#0", consumer="reduce-2#1", at_ms=30, for_ms=60)
    )
    during = [
        h
        for h in result.checkpoints["history"]
        if h["status"] == "COMPLETED" and 30 <= h["trigger_timestamp"] < 90
    ]
    assert during, "no checkpoint was triggered during the stall"
    for h in during:  # an aligned checkpoint cannot complete before its barrier gets through
        assert h["trigger_timestamp"] + h["end_to_end_duration"] >= 90
    assert len(injected(sim)) == 1


@pytest.mark.parametrize(
    "fault",
    [DelayAcknowledgement(task="a#0", checkpoint_id=1, delay_ms=-1), "DropAcknowledgement"],
)
def test_a_malformed_fault_is_a_clear_error(fault: Any) -> None:
    env = StreamExecutionEnvironment()
    build(env)
    with pytest.raises((ValueError, TypeError), match=r"delay_ms must be|not a fault"):
        env.execute("x", runtime="simulation", faults=[fault])
