"""fresh41b: a new user's properties of their own topologies (ckptsim.testing), as strict
xfail tests for the defects they found."""

from __future__ import annotations

import logging

import pytest

from actors.faults import CrashTask
from ckptsim import StreamExecutionEnvironment
from ckptsim.testing import FaultSpec, Simulation, ThreadedRun

PAIRS = [(f"w{i % 7}", i) for i in range(600)]


def _filtered_sum(env: StreamExecutionEnvironment) -> None:
    env.enable_checkpointing("10 ms")
    env.configure({"ckptsim.buffer.records": 10})
    (
        env.from_collection(PAIRS)
        .filter(lambda p: p[1] % 3 != 0)
        .key_by(lambda p: p[0])
        .sum(1)
        .collect("c")
    )


def test_crashed_consumer_leaves_no_unhandled_channel_exception(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sim = Simulation(seed=0, faults=(CrashTask(task="reduce-3#0", at_record=1),))
    with caplog.at_level(logging.ERROR, logger="pykka"):
        result = sim.run(_filtered_sum, {"restart-strategy.type": "fixed-delay"})
    assert result.succeeded and result.restarts == 1
    unhandled = [r.getMessage() for r in caplog.records if "Unhandled exception" in r.getMessage()]
    assert unhandled == []


def test_crashed_consumer_leaves_no_unhandled_exception_on_threads(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """On threads the channel runs on the producer's thread: it met the dead consumer, died,
    and then the producer met the dead channel (two tracebacks). The crash comes at the 50th
    record, when the producer still holds credits for the channel."""
    run = ThreadedRun(faults=(CrashTask(task="reduce-3#0", at_record=50),))
    with caplog.at_level(logging.ERROR, logger="pykka"):
        result = run.run(_filtered_sum, {"restart-strategy.type": "fixed-delay"})
    assert result.succeeded and result.restarts == 1
    unhandled = [r.getMessage() for r in caplog.records if "Unhandled exception" in r.getMessage()]
    assert unhandled == []


def test_unknown_fault_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="kind"):
        FaultSpec(kind="crash").resolve(["source-1#0"], [])
