"""Failure and recovery, job by job, on the deterministic simulation (each run replayable by
its seed; faults, delays and timeouts pass in virtual time).

The job counts records per key: ``(key, index, 1)`` records, a keyed reduce emitting
``(key, index of the latest record, count so far)``. Whatever the schedule, a failure-free run
emits every index once and, per key, the counts 1..n (the *observation* below). A restore from
the wrong position or with the wrong state shows as a missing or repeated index, or a count
that is missing, repeated or out of range.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import runpy
import subprocess
import sys
import textwrap
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pykka
import pytest

from actors.faults import (
    CrashTask,
    DelayAcknowledgement,
    DropAcknowledgement,
    FailSnapshot,
    FailTask,
    Fault,
    FaultPlan,
    StallChannel,
    parse_faults,
)
from ckptsim import StreamExecutionEnvironment
from ckptsim._cli import main
from ckptsim.testing import Simulation
from runtime.job import JobResult, RestoreError
from runtime.reasons import CheckpointFailureReason
from runtime.status import JobStatus
from runtime.storage import CorruptCheckpointError, load_checkpoint
from runtime.task import StreamTaskCore
from tests.conftest import protocol_events
from tests.crafted_checkpoints import (
    DAMAGE,
    completed_checkpoints,
    delete_a_state_file,
    flip_a_byte_of_a_state_file,
)

N = 2_000
KEYS = 10
#: the tasks of the counting job: two source subtasks, two reduce subtasks (sink chained)
SOURCES = ("numbers#0", "numbers#1")
REDUCERS = ("counts#0", "counts#1")

#: every run restarts quickly unless a test says otherwise
RESTARTS: dict[str, object] = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": 3,
    "restart-strategy.fixed-delay.delay": "5 ms",
}

MODES: dict[str, dict[str, object]] = {
    "aligned": {},
    "unaligned": {"execution.checkpointing.unaligned.enabled": True},
    "aligned_with_timeout": {
        "execution.checkpointing.unaligned.enabled": True,
        "execution.checkpointing.aligned-checkpoint-timeout": "1 ms",
    },
}
AT_LEAST_ONCE = {"execution.checkpointing.mode": "AT_LEAST_ONCE"}

Record = tuple[int, int, int]


def record(i: int) -> Record:
    return (i % KEYS, i, 1)


def key(r: Record) -> int:
    return r[0]


def count(a: Record, b: Record) -> Record:
    return (a[0], b[1], a[2] + b[2])


def counting(
    env: StreamExecutionEnvironment,
    *,
    n: int = N,
    out: Path | None = None,
    reducer_uid: str = "counts",
    source_parallelism: int | None = None,
    before_keying: Callable[[Record], Record] | None = None,
    checkpointing: bool = True,
    restarts: bool = True,
) -> None:
    """The counting job (parallelism 2; a reduce that costs 1 virtual ms per buffer: with the
    default buffer timeout its 50-record buffers keep up and unaligned checkpoints persist a
    little in-flight data; a test that needs its channels full sets
    ``execution.buffer-timeout.interval: 0``, whose small buffers back-pressure it); into a
    collect sink, or part files under ``out``; ``restarts``: with the quick fixed-delay
    strategy, else the default strategy."""
    env.set_parallelism(2)
    if checkpointing:
        env.enable_checkpointing(10)
    env.configure({"ckptsim.buffer.records": 50, **(RESTARTS if restarts else {})})
    stream = env.from_generator(record, n, rate=50_000).uid("numbers")
    if source_parallelism is not None:
        stream = stream.set_parallelism(source_parallelism)
    if before_keying is not None:
        stream = stream.map(before_keying).uid("sabotage")
    counts = stream.key_by(key).reduce(count).uid(reducer_uid).processing_cost(per_buffer_ms=1)
    if out is None:
        counts.collect("counts")
    else:
        counts.sink_to_file(str(out), name="files", fmt="json")


Observation = tuple[Counter[int], dict[int, list[int]]]


def observe(records: Iterable[Sequence[int]]) -> Observation:
    """Which indices were emitted (how often), and per key the counts emitted (sorted)."""
    indices: Counter[int] = Counter()
    counts: dict[int, list[int]] = {}
    for k, i, c in records:
        indices[i] += 1
        counts.setdefault(k, []).append(c)
    return indices, {k: sorted(v) for k, v in sorted(counts.items())}


def failure_free(n: int = N) -> Observation:
    return Counter(range(n)), {k: list(range(1, len(range(k, n, KEYS)) + 1)) for k in range(KEYS)}


def simulate(
    *faults: Fault,
    settings: Mapping[str, object] | None = None,
    seed: int = 1,
    build: Callable[[StreamExecutionEnvironment], None] = counting,
) -> tuple[JobResult, Simulation]:
    """Run on the simulation; the trace is checked against the protocol's invariants."""
    sim = Simulation(seed=seed, faults=faults)
    return sim.run(build, settings), sim


def events(sim: Simulation, name: str) -> list[MutableMapping[str, Any]]:
    return [e for e in sim.events if e["event"] == name]


def injected(sim: Simulation) -> list[str]:
    return [e["fault"] for e in events(sim, "fault_injected")]


def restored_from(sim: Simulation) -> list[int | None]:
    return [e["checkpoint_id"] for e in events(sim, "job_restarting")]


def completed_before_failover(sim: Simulation) -> int | None:
    """The latest checkpoint completed before the (first) failover, from the trace."""
    latest = None
    for e in sim.events:
        if e["event"] == "job_failover":
            return latest
        if e["event"] == "checkpoint_completed":
            latest = e["checkpoint_id"]
    raise AssertionError("no failover in the trace")


def statuses(result: JobResult) -> list[str]:
    return [status for status, _ in result.status_history]


def restart_gaps(result: JobResult) -> list[int]:
    """Virtual ms from each RESTARTING to the RUNNING after it."""
    history = result.status_history
    return [
        later[1] - now[1]
        for now, later in itertools.pairwise(history)
        if now[0] == "RESTARTING" and later[0] == "RUNNING"
    ]


# --- a failing task: restart from the latest completed checkpoint, exactly once ------------------


def test_the_observation_of_a_failure_free_run_is_the_plain_python_one() -> None:
    result, sim = simulate()
    assert result.status is JobStatus.FINISHED
    assert observe(result.collected("counts")) == failure_free()
    assert result.restarts == 0 and not injected(sim) and not events(sim, "job_failover")


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("task", [SOURCES[1], REDUCERS[1]])
def test_a_task_failing_at_a_record_restarts_once_from_the_latest_checkpoint_exactly_once(
    mode: str, task: str
) -> None:
    fault = FailTask(task=task, at_record=700)
    result, sim = simulate(fault, settings=MODES[mode])
    assert result.status is JobStatus.FINISHED, result.failure
    assert result.restarts == 1
    assert injected(sim) == [repr(fault)]
    assert result.failures == [f"task {task} failed: injected fault: {fault!r}"]
    latest = completed_before_failover(sim)
    assert latest is not None, "the fault should strike after a checkpoint completed"
    assert restored_from(sim) == [latest]
    restored = events(sim, "task_restored")
    assert len(restored) == 4 and {e["checkpoint_id"] for e in restored} == {latest}
    assert result.checkpoints["latest"]["restored"]["id"] == latest
    assert statuses(result) == ["CREATED", "RUNNING", "RESTARTING", "RUNNING", "FINISHED"]
    assert observe(result.collected("counts")) == failure_free()


def test_unaligned_recovery_puts_the_persisted_in_flight_data_back_before_new_input() -> None:
    """The restored unaligned checkpoint holds records that were in flight (in no operator's
    state and past the sources' positions), both in the consumers' input channels and in the
    producers' output queues, which the barrier overtook: the output is exact only if both are
    delivered again. The sources flush after every write (buffer timeout 0): small buffers
    outrun the reduce (1 ms each), so its input channels and the sources' output queues fill;
    with the default 100 ms timeout only full buffers leave the sources, which the reduce keeps
    up with, and the checkpoint held no output queue."""
    settings = {**MODES["unaligned"], "execution.buffer-timeout.interval": 0}
    result, sim = simulate(FailTask(task=REDUCERS[0], at_record=500), settings=settings, seed=3)
    assert result.restarts == 1
    restored = events(sim, "task_restored")
    inputs = sum(sum(e["input"].values()) for e in restored)
    outputs = sum(sum(e["output"].values()) for e in restored)
    assert inputs > 0 and outputs > 0, "choose a fault whose checkpoint holds both kinds"
    assert {e["task"] for e in restored if sum(e["output"].values())} <= set(SOURCES)
    assert observe(result.collected("counts")) == failure_free()


def test_at_least_once_recovery_loses_no_record() -> None:
    result, _ = simulate(FailTask(task=SOURCES[0], at_record=600), settings=AT_LEAST_ONCE)
    assert result.status is JobStatus.FINISHED and result.restarts == 1
    indices, counts = observe(result.collected("counts"))
    assert set(indices) == set(range(N))  # some may come twice
    finals = {k: max(c) for k, c in counts.items()}
    assert all(finals[k] >= n[-1] for k, n in failure_free()[1].items())


def test_failing_in_the_synchronous_part_of_a_checkpoint_fails_it_and_recovers_from_the_one_before() -> (
    None
):
    fault = FailTask(task=SOURCES[0], during_checkpoint=3)
    result, sim = simulate(fault)
    assert result.status is JobStatus.FINISHED and result.restarts == 1
    assert injected(sim) == [repr(fault)]
    (third,) = [h for h in result.checkpoints["history"] if h["id"] == 3]
    assert third["status"] == "FAILED"
    assert 3 not in result.completed_checkpoint_ids
    assert restored_from(sim) == [completed_before_failover(sim)]
    assert restored_from(sim)[0] in (1, 2)
    assert observe(result.collected("counts")) == failure_free()


def test_a_task_failing_several_times_recovers_every_time() -> None:
    faults: list[Fault] = [
        FailTask(task=SOURCES[0], at_record=300),
        CrashTask(task=REDUCERS[1], at_record=500),
        FailTask(task=REDUCERS[0], during_checkpoint=7),
    ]
    result, sim = simulate(*faults, settings=MODES["unaligned"])
    assert result.status is JobStatus.FINISHED, result.failure
    assert result.restarts == 3 and len(injected(sim)) == 3
    assert observe(result.collected("counts")) == failure_free()


# --- a crashing task actor: the JobMaster notices -------------------------------------------------


@pytest.mark.parametrize("mode", ["aligned", "unaligned"])
def test_a_crashed_task_actor_is_noticed_by_the_job_master_and_the_job_recovers(mode: str) -> None:
    fault = CrashTask(task=SOURCES[1], at_record=600)
    result, sim = simulate(fault, settings=MODES[mode])
    assert result.status is JobStatus.FINISHED, result.failure
    assert result.restarts == 1
    (cause,) = result.failures
    assert cause.startswith(f"task {SOURCES[1]} failed: task actor crashed: InjectedCrash")
    assert injected(sim) == [repr(fault)]
    assert restored_from(sim) == [completed_before_failover(sim)]
    assert observe(result.collected("counts")) == failure_free()


def test_a_crashed_task_actor_on_threads_recovers_and_leaves_no_actor_or_thread() -> None:
    """The threaded runtime: the actor really dies on its thread (Pykka's on_failure)."""
    threads = set(threading.enumerate())  # a thread of an earlier test may still be ending
    env = StreamExecutionEnvironment()
    counting(env, n=6_000)
    result = env.execute(
        "crash on threads", timeout=60, faults=[CrashTask(task=REDUCERS[0], at_record=1_500)]
    )
    assert result.status is JobStatus.FINISHED, result.failure
    assert result.restarts == 1
    assert "task actor crashed" in result.failures[0]
    assert observe(result.collected("counts")) == failure_free(6_000)
    assert pykka.ActorRegistry.get_all() == []
    assert not set(threading.enumerate()) - threads, "threads left behind"


def test_a_bug_in_a_task_core_fails_the_job_at_once_naming_it_with_its_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An exception out of the task core that no user function raised is a bug of ckptsim: a
    restart would meet it again, so the job fails without one, its cause names the bug, and the
    traceback is in the trace (an injected crash, above, fails over instead)."""
    handle = StreamTaskCore.handle
    calls = itertools.count()

    def buggy(core: StreamTaskCore, message: Any, now: int) -> Any:
        if str(core.spec.task) == REDUCERS[0] and next(calls) == 40:
            raise AssertionError("planted invariant break")
        return handle(core, message, now)

    monkeypatch.setattr(StreamTaskCore, "handle", buggy)
    result, sim = simulate()
    assert result.status is JobStatus.FAILED
    assert result.restarts == 0 and result.failures == []
    assert result.failure is not None
    assert result.failure.startswith(
        f"a bug in ckptsim: task {REDUCERS[0]} crashed: AssertionError: planted invariant break"
    )
    (crash,) = events(sim, "task_crashed")
    assert crash["task"] == REDUCERS[0]
    assert crash["error"] == "AssertionError: planted invariant break"
    assert crash["traceback"].startswith("Traceback") and "in buggy" in crash["traceback"]


# --- restart strategies ---------------------------------------------------------------------------

TWO_FAILURES = (
    FailTask(task=REDUCERS[1], at_record=300),
    FailTask(task=REDUCERS[1], at_record=900),
)


def test_fixed_delay_exhausted_fails_the_job_naming_the_root_cause() -> None:
    result, _ = simulate(*TWO_FAILURES, settings={"restart-strategy.fixed-delay.attempts": 1})
    assert result.status is JobStatus.FAILED
    assert result.restarts == 1
    assert len(result.failures) == 2
    assert result.failure is not None
    assert result.failure.startswith(
        f"task {REDUCERS[1]} failed: injected fault: {TWO_FAILURES[1]!r}"
    )
    assert result.failure.endswith("recovery is suppressed by fixed-delay, 1 attempt(s)")
    assert statuses(result)[-2:] == ["FAILING", "FAILED"]


def test_fixed_delay_with_attempts_left_restarts_after_its_delay_in_virtual_time() -> None:
    settings = {
        "restart-strategy.fixed-delay.attempts": 2,
        "restart-strategy.fixed-delay.delay": "50 ms",
    }
    result, sim = simulate(*TWO_FAILURES, settings=settings)
    assert result.status is JobStatus.FINISHED and result.restarts == 2
    assert [e["delay_ms"] for e in events(sim, "job_failover")] == [50, 50]
    # RESTARTING: tasks are cancelled (a few ms), then the delay
    gaps = restart_gaps(result)
    assert len(gaps) == 2 and all(50 <= gap <= 55 for gap in gaps), gaps
    assert observe(result.collected("counts")) == failure_free()


def test_restart_strategy_none_fails_the_job_at_the_first_failure() -> None:
    result, sim = simulate(*TWO_FAILURES, settings={"restart-strategy.type": "none"})
    assert result.status is JobStatus.FAILED
    assert result.restarts == 0
    assert "RESTARTING" not in statuses(result)
    assert result.failure == (
        f"task {REDUCERS[1]} failed: injected fault: {TWO_FAILURES[0]!r}; "
        "recovery is suppressed by restart-strategy.type: disable"
    )
    assert injected(sim) == [repr(TWO_FAILURES[0])]


def test_without_checkpointing_a_job_does_not_restart_by_default() -> None:
    result, _ = simulate(
        FailTask(REDUCERS[1], at_record=300),
        build=lambda env: counting(env, checkpointing=False, restarts=False),
    )
    assert result.status is JobStatus.FAILED and result.restarts == 0
    assert result.failure is not None and result.failure.endswith("restart-strategy.type: disable")


def test_without_checkpoints_a_restart_starts_over_and_loses_nothing() -> None:
    """With a restart strategy but no checkpoint, a restart is a fresh start; the sink is not
    transactional, so what the failed attempt emitted stays (at least once)."""
    result, sim = simulate(
        FailTask(REDUCERS[1], at_record=300), build=lambda env: counting(env, checkpointing=False)
    )
    assert result.status is JobStatus.FINISHED and result.restarts == 1
    assert restored_from(sim) == [None] and not events(sim, "task_restored")
    indices, _ = observe(result.collected("counts"))
    assert set(indices) == set(range(N)) and len(result.collected("counts")) > N


def test_a_job_cancelled_while_it_waits_to_restart_is_canceled_without_restarting() -> None:
    env = StreamExecutionEnvironment()
    counting(env)
    env.configure({"restart-strategy.fixed-delay.delay": "10 s"})
    result = env.execute(
        "cancelled", runtime="simulation", seed=1, timeout=1, faults=[FailTask(REDUCERS[1], 300)]
    )
    assert result.status is JobStatus.CANCELED and result.restarts == 0
    assert statuses(result) == ["CREATED", "RUNNING", "RESTARTING", "CANCELLING", "CANCELED"]
    assert result.duration_ms == 1_000  # the virtual timeout, not the restart delay
    assert pykka.ActorRegistry.get_all() == []


@pytest.mark.parametrize(("allowed", "status"), [(2, JobStatus.FINISHED), (1, JobStatus.FAILED)])
def test_failure_rate_restarts_within_its_rate_and_fails_beyond_it(
    allowed: int, status: JobStatus
) -> None:
    settings = {
        "restart-strategy.type": "failure-rate",
        "restart-strategy.failure-rate.max-failures-per-interval": allowed,
        "restart-strategy.failure-rate.failure-rate-interval": "1 s",
        "restart-strategy.failure-rate.delay": "20 ms",
    }
    result, sim = simulate(*TWO_FAILURES, settings=settings)
    assert result.status is status
    assert [e["delay_ms"] for e in events(sim, "job_failover")] == [20] * min(allowed, 2)
    gaps = restart_gaps(result)
    assert len(gaps) == min(allowed, 2) and all(20 <= gap <= 25 for gap in gaps), gaps
    if status is JobStatus.FAILED:
        assert result.failure is not None
        assert result.failure.endswith("failure-rate, at most 1 failure(s) per 1000 ms")
    else:
        assert observe(result.collected("counts")) == failure_free()


def test_exponential_delay_grows_by_its_multiplier_between_restarts() -> None:
    settings = {
        "restart-strategy.type": "exponential-delay",
        "restart-strategy.exponential-delay.initial-backoff": "10 ms",
        "restart-strategy.exponential-delay.backoff-multiplier": 3,
        "restart-strategy.exponential-delay.jitter-factor": 0,
    }
    result, sim = simulate(*TWO_FAILURES, settings=settings)
    assert result.status is JobStatus.FINISHED and result.restarts == 2
    assert [e["delay_ms"] for e in events(sim, "job_failover")] == [10, 30]
    first, second = restart_gaps(result)
    assert 10 <= first <= 15 and 30 <= second <= 35
    assert observe(result.collected("counts")) == failure_free()


def test_exponential_delay_out_of_attempts_fails_the_job() -> None:
    settings = {
        "restart-strategy.type": "exponential-delay",
        "restart-strategy.exponential-delay.initial-backoff": "10 ms",
        "restart-strategy.exponential-delay.attempts-before-reset-backoff": 1,
    }
    result, _ = simulate(*TWO_FAILURES, settings=settings)
    assert result.status is JobStatus.FAILED and result.restarts == 1
    assert result.failure is not None
    assert result.failure.endswith("exponential-delay, 1 attempt(s) before the delay resets")


def test_the_default_restart_strategy_with_checkpointing_restarts_after_about_a_second() -> None:
    """exponential-delay, initial backoff 1 s, 10% jitter, never below the initial backoff."""
    result, sim = simulate(
        FailTask(task=REDUCERS[1], at_record=300), build=lambda env: counting(env, restarts=False)
    )
    assert result.status is JobStatus.FINISHED and result.restarts == 1
    (delay,) = [e["delay_ms"] for e in events(sim, "job_failover")]
    assert 1_000 <= delay <= 1_100
    assert observe(result.collected("counts")) == failure_free()


FAILING_SCRIPT = """
    def build(env):
        env.set_parallelism(2)
        env.enable_checkpointing(10)
        env.configure({"restart-strategy.type": "fixed-delay",
                       "restart-strategy.fixed-delay.attempts": 1,
                       "restart-strategy.fixed-delay.delay": "5 ms"})
        env.from_generator(lambda i: (i % 10, 1), 2_000, rate=50_000).uid("numbers") \\
           .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("counts") \\
           .collect("sums")
"""


def test_ckptsim_run_of_a_job_whose_restarts_are_exhausted_exits_1_with_the_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "failing.py"
    script.write_text(textwrap.dedent(FAILING_SCRIPT))
    faults = "fail-task:task=counts#1,at-record=100; fail-task:task=counts#0,at-record=600"
    argv = ["run", str(script), "--simulate", "--seed", "1", "-D", f"ckptsim.faults={faults}"]
    code = main(argv)
    out = capsys.readouterr().out
    assert code == 1
    assert "Job 'failing' FAILED" in out
    assert "injected fault: FailTask(task='counts#0', at_record=600" in out
    assert "recovery is suppressed by fixed-delay, 1 attempt(s)" in out
    # one fault alone is recovered: exit 0
    code = main([*argv[:-1], "ckptsim.faults=fail-task:task=counts#1,at-record=100"])
    assert code == 0, capsys.readouterr().out
    # a fault for a task the job does not have: the script cannot run as meant, exit 2
    code = main([*argv[:-1], "ckptsim.faults=fail-task:task=reduce-2#1,at-record=100"])
    assert code == 2
    assert "the job has no task 'reduce-2#1'; its tasks: counts#0" in capsys.readouterr().err


# --- tolerable failed checkpoints -----------------------------------------------------------------

#: the fault, its failure reason and the cause the failure names (a task's failed asynchronous
#: part says why; an expiry is its reason alone)
CHECKPOINT_FAULTS: dict[str, tuple[Fault, str, str | None]] = {
    "expired": (
        DropAcknowledgement(task=REDUCERS[0], checkpoint_id=2),
        "CHECKPOINT_EXPIRED",
        None,
    ),
    "declined": (
        FailSnapshot(task=SOURCES[1], checkpoint_id=2),
        "CHECKPOINT_ASYNC_EXCEPTION",
        "injected fault: snapshot 2 fails",
    ),
}
SHORT_TIMEOUT = {"execution.checkpointing.timeout": "30 ms"}


@pytest.mark.parametrize("kind", list(CHECKPOINT_FAULTS))
def test_a_failed_checkpoint_beyond_the_tolerable_count_fails_the_job_over(kind: str) -> None:
    fault, reason, cause = CHECKPOINT_FAULTS[kind]
    settings = {**SHORT_TIMEOUT, "execution.checkpointing.tolerable-failed-checkpoints": 0}
    result, sim = simulate(fault, settings=settings)
    assert result.status is JobStatus.FINISHED and result.restarts == 1
    last = reason if cause is None else f"{reason}: {cause}"
    assert result.failures == [
        f"Exceeded checkpoint tolerable failure threshold. (last failure: {last})"
    ]
    assert len(injected(sim)) == 1
    assert observe(result.collected("counts")) == failure_free()


@pytest.mark.parametrize("kind", list(CHECKPOINT_FAULTS))
def test_a_failed_checkpoint_within_the_tolerable_count_is_no_failover(kind: str) -> None:
    fault, reason, cause = CHECKPOINT_FAULTS[kind]
    settings = {**SHORT_TIMEOUT, "execution.checkpointing.tolerable-failed-checkpoints": 1}
    result, sim = simulate(fault, settings=settings)
    assert result.status is JobStatus.FINISHED
    assert result.restarts == 0 and result.failures == []
    (second,) = [h for h in result.checkpoints["history"] if h["id"] == 2]
    message = CheckpointFailureReason[reason].message
    assert second["status"] == "FAILED" and second["failure_message"] == (
        message if cause is None else f"{message} Cause: {cause}"
    )
    assert len(injected(sim)) == 1 and not events(sim, "job_failover")


def test_consecutive_failed_checkpoints_beyond_the_tolerable_count_fail_the_job_over() -> None:
    faults = [FailSnapshot(task=SOURCES[1], checkpoint_id=2), FailSnapshot(SOURCES[1], 3)]
    settings = {"execution.checkpointing.tolerable-failed-checkpoints": 1}
    result, _ = simulate(*faults, settings=settings)
    assert result.restarts == 1
    assert observe(result.collected("counts")) == failure_free()


def test_exceeding_the_tolerable_count_without_restarts_fails_the_job_with_that_cause() -> None:
    fault, _, _ = CHECKPOINT_FAULTS["expired"]
    settings = {**SHORT_TIMEOUT, "restart-strategy.type": "none"}
    result, _ = simulate(fault, settings=settings)
    assert result.status is JobStatus.FAILED
    assert result.failure is not None
    assert result.failure.startswith(
        "Exceeded checkpoint tolerable failure threshold. (last failure: CHECKPOINT_EXPIRED)"
    )


# --- damaged checkpoints: fall back to an older one, or fail naming the file ----------------------


def damaging_job(
    root: Path, damage: Callable[[Path], Path], *, newest: int, damaged: list[Path]
) -> Callable[[StreamExecutionEnvironment], None]:
    """The counting job; at its 1700th record it damages the ``newest`` newest completed
    checkpoints, then its user function fails (so the JobMaster restores right after)."""
    seen = [0]

    def sabotage(r: Record) -> Record:
        seen[0] += 1
        if seen[0] == 1_700:
            damaged.extend(damage(chk) for chk in completed_checkpoints(root)[-newest:])
            raise RuntimeError("user code fails right after the checkpoints were damaged")
        return r

    def build(env: StreamExecutionEnvironment) -> None:
        counting(env, before_keying=sabotage)
        env.configure(
            {
                "execution.checkpointing.dir": str(root),
                "execution.checkpointing.num-retained": 2,
            }
        )

    return build


@pytest.mark.parametrize("how", list(DAMAGE))
def test_a_damaged_newest_checkpoint_is_skipped_and_recovery_uses_the_one_before(
    tmp_path: Path, how: str
) -> None:
    """Flink would repeat the committed output of the skipped checkpoint; ckptsim retracts
    what the collect sink committed for checkpoints after the one it restores, so the output
    is exactly the failure-free output."""
    damage, complaint = DAMAGE[how]
    damaged: list[Path] = []
    result, sim = simulate(build=damaging_job(tmp_path, damage, newest=1, damaged=damaged))
    assert result.status is JobStatus.FINISHED, result.failure
    assert result.restarts == 1
    (path,) = damaged
    newest = int(path.parent.name.removeprefix("chk-"))
    (unusable,) = events(sim, "checkpoint_unusable")
    assert unusable["checkpoint_id"] == newest
    assert str(path) in unusable["error"] and complaint in unusable["error"]
    assert restored_from(sim) == [newest - 1]
    (retracted,) = events(sim, "collected_output_retracted")
    assert retracted["after_checkpoint"] == newest - 1 and retracted["transactions"] >= 1
    assert observe(result.collected("counts")) == failure_free()


def test_when_every_retained_checkpoint_is_damaged_the_job_fails_naming_each_file(
    tmp_path: Path,
) -> None:
    damaged: list[Path] = []
    build = damaging_job(tmp_path, flip_a_byte_of_a_state_file, newest=2, damaged=damaged)
    result, sim = simulate(build=build)
    assert result.status is JobStatus.FAILED
    assert len(damaged) == 2 and len(events(sim, "checkpoint_unusable")) == 2
    assert result.failure is not None
    assert "no usable checkpoint to restore from" in result.failure
    for path in damaged:
        assert f"state file {path} of task" in result.failure


def test_resuming_from_a_path_that_is_not_a_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment()
    counting(env)
    (tmp_path / "empty").mkdir()
    cases = {
        tmp_path / "empty": "is not a checkpoint: it has no _metadata file",
        tmp_path / "nowhere": "does not exist",
    }
    for path, message in cases.items():
        env.configure({"execution.state-recovery.path": str(path)})
        with pytest.raises(CorruptCheckpointError, match=message) as caught:
            env.execute("resume", runtime="simulation", seed=1)
        assert str(path) in str(caught.value)
    assert pykka.ActorRegistry.get_all() == []


# --- savepoints -----------------------------------------------------------------------------------


def with_checkpoint_dir(
    root: Path, *, stop_after: int | None = None, savepoint_at: int | None = None, **job: Any
) -> Callable[[StreamExecutionEnvironment], None]:
    def build(env: StreamExecutionEnvironment) -> None:
        counting(env, **job)
        env.configure({"execution.checkpointing.dir": str(root)})
        if stop_after is not None:
            env.stop_with_savepoint(after_records=stop_after)
        if savepoint_at is not None:
            env.trigger_savepoint(at_ms=savepoint_at)

    return build


def test_a_savepoint_triggered_from_a_script_is_taken_and_the_job_runs_on(tmp_path: Path) -> None:
    result, sim = simulate(build=with_checkpoint_dir(tmp_path, savepoint_at=15))
    assert result.status is JobStatus.FINISHED
    (path,) = result.savepoints
    savepoint = load_checkpoint(path)  # every file verified
    assert savepoint.is_savepoint and Path(path).parent.parent == tmp_path
    assert [e["path"] for e in events(sim, "savepoint_completed")] == [path]
    assert result.checkpoints["latest"]["savepoint"]["id"] == savepoint.checkpoint_id
    assert observe(result.collected("counts")) == failure_free()
    assert Path(path, "_metadata").is_file(), "a savepoint outlives its job"


def stop_with_savepoint(root: Path) -> tuple[JobResult, str]:
    result, _ = simulate(build=with_checkpoint_dir(root, stop_after=800))
    assert result.status is JobStatus.FINISHED, result.failure
    assert "FAILED" not in statuses(result) and "CANCELED" not in statuses(result)
    (path,) = result.savepoints
    return result, path


def test_stop_with_savepoint_finishes_the_job_early_with_a_consistent_prefix(
    tmp_path: Path,
) -> None:
    result, path = stop_with_savepoint(tmp_path)
    assert load_checkpoint(path).is_savepoint
    indices, counts = observe(result.collected("counts"))
    assert 800 <= len(indices) < N
    assert set(indices.values()) == {1}
    assert all(c == list(range(1, len(c) + 1)) for c in counts.values())


def pending_transactions(path: str) -> list[tuple[str, int]]:
    """The collect sink's pre-committed transactions in a snapshot: (writer, checkpoint id)."""
    snapshot = load_checkpoint(path)
    return [
        (state["writer"], txn)
        for task in snapshot.tasks.values()
        if (state := task.operator_states.get("sink-counts"))
        for txn in state["pending"]
    ]


def across_runs(first: JobResult, second: JobResult, path: str) -> list[Record]:
    """What two runs committed, the second resumed from ``path``. A checkpoint's completion is
    the commit point of its transactions: the first run's result holds every transaction
    pre-committed up to its last completed checkpoint (those ``path`` names as pending
    among them), and the second run's restore commits them without publishing them again."""
    assert pending_transactions(path), "the snapshot holds the last transactions before it"
    return [*first.collected("counts"), *second.collected("counts")]


def test_resuming_from_a_stop_with_savepoint_continues_exactly_where_it_stopped(
    tmp_path: Path,
) -> None:
    first, path = stop_with_savepoint(tmp_path)
    settings = {"execution.state-recovery.path": path}
    second, sim = simulate(build=with_checkpoint_dir(tmp_path / "again"), settings=settings)
    assert second.status is JobStatus.FINISHED, second.failure
    savepoint_id = load_checkpoint(path).checkpoint_id
    assert second.checkpoints["latest"]["restored"] == {
        "id": savepoint_id,
        "restore_timestamp": 0,
        "is_savepoint": True,
        "external_path": path,
    }
    assert {e["checkpoint_id"] for e in events(sim, "task_restored")} == {savepoint_id}
    assert min(second.completed_checkpoint_ids) > savepoint_id  # ids continue
    assert observe(across_runs(first, second, path)) == failure_free()


def test_a_resumed_job_failing_before_its_first_checkpoint_restores_the_savepoint_again(
    tmp_path: Path,
) -> None:
    """As in Flink, where the savepoint a job starts from joins its checkpoint store."""
    first, path = stop_with_savepoint(tmp_path)
    savepoint_id = load_checkpoint(path).checkpoint_id
    fault = FailTask(task=REDUCERS[1], during_checkpoint=savepoint_id + 1)
    settings = {"execution.state-recovery.path": path}
    second, sim = simulate(fault, build=with_checkpoint_dir(tmp_path / "again"), settings=settings)
    assert second.status is JobStatus.FINISHED and second.restarts == 1
    assert completed_before_failover(sim) is None
    assert restored_from(sim) == [savepoint_id]
    assert observe(across_runs(first, second, path)) == failure_free()


def test_resuming_from_the_retained_checkpoint_of_a_failed_job_continues_exactly(
    tmp_path: Path,
) -> None:
    settings: dict[str, object] = {
        "restart-strategy.type": "none",
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    }
    first, _ = simulate(
        FailTask(task=REDUCERS[1], at_record=700),
        build=with_checkpoint_dir(tmp_path),
        settings=settings,
    )
    assert first.status is JobStatus.FAILED
    (path,) = first.retained_checkpoints  # the latest (num-retained 1)
    checkpoint = load_checkpoint(path)
    assert not checkpoint.is_savepoint
    second, sim = simulate(
        build=with_checkpoint_dir(tmp_path / "again"),
        settings={"execution.state-recovery.path": path},
    )
    assert second.status is JobStatus.FINISHED
    assert second.checkpoints["latest"]["restored"]["is_savepoint"] is False
    assert {e["checkpoint_id"] for e in events(sim, "task_restored")} == {checkpoint.checkpoint_id}
    assert observe(across_runs(first, second, path)) == failure_free()


def test_file_output_of_a_stop_with_savepoint_and_its_resumed_run_is_exactly_the_failure_free_output(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    first, _ = simulate(build=with_checkpoint_dir(tmp_path, stop_after=800, out=out))
    (path,) = first.savepoints
    assert read_part_files(out), "the first run committed part files"
    settings = {"execution.state-recovery.path": path}
    second, _ = simulate(build=with_checkpoint_dir(tmp_path / "again", out=out), settings=settings)
    assert second.status is JobStatus.FINISHED
    assert observe(read_part_files(out)) == failure_free()


def savepoint_history(result: JobResult) -> dict[str, Any]:
    (entry,) = [h for h in result.checkpoints["history"] if "SAVEPOINT" in h["checkpoint_type"]]
    return entry


def test_a_savepoint_never_goes_into_the_directory_of_another_savepoint(tmp_path: Path) -> None:
    """Two jobs share a savepoint directory and each takes a savepoint with the same
    checkpoint id (simulated jobs' ids share their first six digits, which savepoint names
    carry): the second gets a directory of its own instead of writing into the first's."""
    shared = {"execution.checkpointing.savepoint-dir": str(tmp_path / "savepoints")}
    first, _ = simulate(build=with_checkpoint_dir(tmp_path / "a", savepoint_at=15), settings=shared)
    (a,) = first.savepoints
    before = {p: p.read_bytes() for p in Path(a).iterdir()}
    second, _ = simulate(
        build=with_checkpoint_dir(tmp_path / "b", savepoint_at=15), settings=shared, seed=2
    )
    (b,) = second.savepoints
    assert load_checkpoint(a).checkpoint_id == load_checkpoint(b).checkpoint_id
    assert a != b and Path(b).parent == Path(a).parent
    assert {p: p.read_bytes() for p in Path(a).iterdir()} == before
    assert load_checkpoint(b).checkpoint_id == load_checkpoint(a).checkpoint_id


def test_a_stop_with_savepoint_whose_savepoint_expires_leaves_the_job_running_to_its_end(
    tmp_path: Path,
) -> None:
    """As Flink: the savepoint fails (expiry is no task failure, so no failover, whatever
    the tolerable count), the stop fails with it, the job runs on."""
    settings = {**SHORT_TIMEOUT, "execution.checkpointing.tolerable-failed-checkpoints": 0}
    result, sim = simulate(
        DropAcknowledgement(task=REDUCERS[0], checkpoint_id=3),
        build=with_checkpoint_dir(tmp_path, stop_after=800),
        settings=settings,
    )
    assert savepoint_history(result)["id"] == 3, "the fault is meant for the savepoint"
    assert savepoint_history(result)["status"] == "FAILED"
    assert result.status is JobStatus.FINISHED and result.restarts == 0
    assert result.savepoints == [] and result.failures == ["savepoint failed: CHECKPOINT_EXPIRED"]
    assert [e["event"] for e in sim.events if "savepoint" in e["event"]] == [
        "savepoint_requested",
        "savepoint_failed",
    ]
    assert observe(result.collected("counts")) == failure_free()  # it ran to the end


def test_a_synchronous_savepoint_declined_by_a_task_fails_the_job_over_whatever_is_tolerated(
    tmp_path: Path,
) -> None:
    settings = {"execution.checkpointing.tolerable-failed-checkpoints": 10}
    result, _ = simulate(
        FailSnapshot(task=REDUCERS[0], checkpoint_id=3),
        build=with_checkpoint_dir(tmp_path, stop_after=800),
        settings=settings,
    )
    entry = savepoint_history(result)
    assert (entry["id"], entry["checkpoint_type"]) == (3, "SYNC_SAVEPOINT")
    assert result.restarts == 1 and result.savepoints == []
    assert result.failures == [
        "savepoint failed: CHECKPOINT_ASYNC_EXCEPTION: injected fault: snapshot 3 fails",
        "Asynchronous task checkpoint failed. (last failure: CHECKPOINT_ASYNC_EXCEPTION: "
        "injected fault: snapshot 3 fails)",
    ]
    assert result.status is JobStatus.FINISHED
    assert observe(result.collected("counts")) == failure_free()


def test_a_savepoint_due_while_the_job_restarts_fails_and_is_reported(tmp_path: Path) -> None:
    """Flink refuses to trigger a savepoint while the job is not RUNNING."""
    result, sim = simulate(
        FailTask(task=REDUCERS[1], at_record=300),
        build=with_checkpoint_dir(tmp_path, savepoint_at=30),
        settings={"restart-strategy.fixed-delay.delay": "50 ms"},
    )
    (restarting,) = [t for s, t in result.status_history if s == "RESTARTING"]
    assert restarting < 30 < restarting + 50, "the savepoint is due while restarting"
    assert result.status is JobStatus.FINISHED and result.savepoints == []
    assert result.failures[-1] == "savepoint failed: the job was RESTARTING, not RUNNING"
    (failed,) = events(sim, "savepoint_failed")
    assert failed["reason"] == "the job was RESTARTING, not RUNNING"


def test_resuming_without_an_operator_the_savepoint_has_state_for_is_a_restore_error(
    tmp_path: Path,
) -> None:
    _, path = stop_with_savepoint(tmp_path)
    settings = {"execution.state-recovery.path": path}
    renamed = with_checkpoint_dir(tmp_path / "again", reducer_uid="totals")
    with pytest.raises(RestoreError) as caught:
        simulate(build=renamed, settings=settings)
    message = str(caught.value)
    assert path in message and "operator(s) 'counts'" in message
    assert "execution.state-recovery.ignore-unclaimed-state" in message
    assert "(ckptsim run: -n, --allow-non-restored-state)" in message
    assert pykka.ActorRegistry.get_all() == []


def test_ignore_unclaimed_state_resumes_without_the_missing_operators_state(
    tmp_path: Path,
) -> None:
    first, path = stop_with_savepoint(tmp_path)
    settings = {
        "execution.state-recovery.path": path,
        "execution.state-recovery.ignore-unclaimed-state": True,
    }
    renamed = with_checkpoint_dir(tmp_path / "again", reducer_uid="totals")
    second, _ = simulate(build=renamed, settings=settings)
    assert second.status is JobStatus.FINISHED
    before = set(observe(first.collected("counts"))[0])
    resumed = second.collected("counts")
    # the source resumed after the savepoint: what it read before comes only as the
    # savepoint's pending transactions, committed again (the first run's very records)
    assert {r for r in resumed if r[1] in before} <= set(first.collected("counts"))
    indices, counts = observe(r for r in resumed if r[1] not in before)
    assert set(indices) == set(range(N)) - before and set(indices.values()) == {1}
    # the renamed reduce started without state: it counts the new records from 1
    new_per_key = Counter(i % KEYS for i in indices)
    assert counts == {k: list(range(1, n + 1)) for k, n in sorted(new_per_key.items())}


def test_resuming_a_stateful_source_with_another_parallelism_is_a_restore_error(
    tmp_path: Path,
) -> None:
    _, path = stop_with_savepoint(tmp_path)
    settings = {"execution.state-recovery.path": path}
    wider = with_checkpoint_dir(tmp_path / "again", source_parallelism=3)
    with pytest.raises(RestoreError, match=r"operator 'numbers' ran 2 subtasks .* has 3 now"):
        simulate(build=wider, settings=settings)


def test_resuming_a_file_sink_with_fewer_subtasks_commits_every_subtasks_part_files(
    tmp_path: Path,
) -> None:
    """A file sink's pending transactions are its committables, which Flink redistributes on
    a rescale: resumed with fewer subtasks (and a vertex of its own now), the one subtask
    restores both former subtasks' states, and the output is every record exactly once
    (before, the shrink was refused: "operator 'sink-files' ran 2 subtasks ... has 1 now")."""
    out = tmp_path / "out"

    def build(
        sink_parallelism: int, *, stop: bool = True
    ) -> Callable[[StreamExecutionEnvironment], None]:
        def job(env: StreamExecutionEnvironment) -> None:
            env.set_parallelism(2)
            env.enable_checkpointing(10)
            env.configure({"execution.checkpointing.dir": str(tmp_path / "chk")})
            counts = env.from_generator(record, N, rate=50_000).uid("numbers").key_by(key)
            sink = (
                counts.reduce(count).uid("counts").sink_to_file(str(out), name="files", fmt="json")
            )
            sink.set_parallelism(sink_parallelism)
            if stop:
                env.stop_with_savepoint(after_records=800)

        return job

    first, _ = simulate(build=build(2))
    (path,) = first.savepoints
    assert 0 < len(read_part_files(out)) < N
    settings = {"execution.state-recovery.path": path}
    second, _ = simulate(build=build(1, stop=False), settings=settings, seed=2)
    assert second.status is JobStatus.FINISHED, second.failure
    assert observe(read_part_files(out)) == failure_free()


# --- the transactional file sink ------------------------------------------------------------------


def read_part_files(out: Path) -> list[list[int]]:
    return [
        json.loads(line)
        for part in sorted(out.glob("part-*"))
        for line in part.read_text().splitlines()
    ]


#: ``part-<sink uid>-<subtask>-<writer>-<checkpoint>.jsonl``, the writer a UUID (Flink's FileSink)
PART = re.compile(
    r"part-sink-files-(?P<subtask>\d)-(?P<writer>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}"
    r"-[0-9a-f]{12})-(?P<txn>\d+|end)\.jsonl"
)


def part_names(out: Path) -> list[re.Match[str]]:
    names = [PART.fullmatch(p.name) for p in out.glob("part-*")]
    assert names and all(names), sorted(p.name for p in out.glob("part-*"))
    return [m for m in names if m]


def part_checkpoints(out: Path) -> set[int]:
    """The checkpoints whose transactions the visible part files are."""
    return {int(m["txn"]) for m in part_names(out)}


def test_after_a_failure_the_committed_part_files_hold_exactly_the_failure_free_output(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    result, _ = simulate(
        FailTask(task=REDUCERS[1], at_record=700),
        build=lambda env: counting(env, out=out),
        settings=MODES["unaligned"],
    )
    assert result.status is JobStatus.FINISHED and result.restarts == 1
    assert observe(read_part_files(out)) == failure_free()
    assert part_checkpoints(out) <= set(result.completed_checkpoint_ids)
    assert list((out / ".staging").iterdir()) == []


def test_staged_data_of_a_checkpoint_that_never_completed_is_discarded_on_restore(
    tmp_path: Path,
) -> None:
    """Checkpoint 3 is pre-committed by the sinks (a pending file each) but expires: the
    restore from checkpoint 2 deletes those pending files; the replay writes their records
    again, into later transactions."""
    out = tmp_path / "out"
    settings = {**SHORT_TIMEOUT, "execution.checkpointing.tolerable-failed-checkpoints": 0}
    result, sim = simulate(
        DropAcknowledgement(task=REDUCERS[0], checkpoint_id=3),
        build=lambda env: counting(env, out=out),
        settings=settings,
    )
    assert result.restarts == 1 and restored_from(sim) == [2]
    assert 3 not in part_checkpoints(out) and 3 not in result.completed_checkpoint_ids
    assert observe(read_part_files(out)) == failure_free()
    assert list((out / ".staging").iterdir()) == []


def test_resuming_into_a_cleaned_sink_folder_is_refused_naming_the_missing_file(
    tmp_path: Path,
) -> None:
    """The savepoint's pending transaction must be committed on restore, but the folder was
    emptied: the restore is refused before the job starts, naming the transaction, the sink
    and the folder (issue 11, item 8: it restarted forever; then each of 3 restarts failed the
    same way; issue 22: refused at once)."""
    out = tmp_path / "out"
    first, _ = simulate(build=with_checkpoint_dir(tmp_path, stop_after=800, out=out))
    (path,) = first.savepoints
    for part in out.rglob("*"):
        if part.is_file():
            part.unlink()
    settings = {"execution.state-recovery.path": path}
    with pytest.raises(RestoreError) as refused:
        simulate(build=with_checkpoint_dir(tmp_path / "again", out=out), settings=settings)
    message = str(refused.value)
    assert "leaves pending transaction" in message and "of sink 'files'" in message, message
    assert f"but {out} holds no part file of it" in message, message


def test_resuming_into_another_folder_commits_the_pending_file_where_it_was_staged(
    tmp_path: Path,
) -> None:
    """A savepoint's sink state names its folder: a job resumed with another output folder
    finds the savepoint's pending part file in the folder that staged it (committed there, as
    Flink's FileSink commits its committables at their paths) and writes on in its own; the
    two folders together hold every record once. With that folder emptied, the resume is
    refused naming it, not the new one. (A resume of a killed run into other folders, whose
    pending files are still staged: tests/actors/test_lineage.py.)"""
    out, other = tmp_path / "out", tmp_path / "other"
    first, _ = simulate(build=with_checkpoint_dir(tmp_path, stop_after=800, out=out))
    (path,) = first.savepoints
    settings = {"execution.state-recovery.path": path}
    resumed, _ = simulate(
        build=with_checkpoint_dir(tmp_path / "again", out=other), settings=settings
    )
    assert resumed.status is JobStatus.FINISHED
    assert observe(read_part_files(out) + read_part_files(other)) == failure_free()
    for part in out.rglob("*"):
        if part.is_file():
            part.unlink()
    with pytest.raises(RestoreError) as refused:
        simulate(
            build=with_checkpoint_dir(tmp_path / "third", out=tmp_path / "x"), settings=settings
        )
    message = str(refused.value)
    assert f"but {out} holds no part file of it" in message, message


def test_a_job_that_fails_for_good_shows_readers_only_what_checkpoints_committed(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    # record 800 comes between two checkpoints (700 came in the first buffer after checkpoint
    # 3, before the sink had written anything after it)
    result, _ = simulate(
        FailTask(task=REDUCERS[1], at_record=800),
        build=lambda env: counting(env, out=out),
        settings={"restart-strategy.type": "none"},
    )
    assert result.status is JobStatus.FAILED
    assert part_checkpoints(out) <= set(result.completed_checkpoint_ids)
    indices, counts = observe(read_part_files(out))
    assert indices and set(indices.values()) == {1}
    assert all(c == list(range(1, len(c) + 1)) for c in counts.values())  # a clean prefix
    staged = [p for p in (out / ".staging").iterdir() if p.stat().st_size]
    assert staged, "the failed run had written records after its last checkpoint"
    unseen = {json.loads(line)[1] for p in staged for line in p.read_text().splitlines()}
    assert not unseen & set(indices), "staged records are not visible"


# --- fault specifications -------------------------------------------------------------------------


def test_parse_faults_reads_every_kind_of_fault() -> None:
    spec = (
        " fail-task:task=counts#1,at-record=700; fail-task:task=numbers#0,checkpoint=3;"
        "crash-task: task = numbers#1 , at-record = 600 ;"
        "drop-ack:task=counts#0,checkpoint=2; delay-ack:task=counts#0,checkpoint=4,delay-ms=15;"
        "fail-snapshot:task=numbers#1,checkpoint=5;"
        "stall-channel:producer=numbers#0,consumer=counts#1,at-ms=30,for-ms=60;"
    )
    assert parse_faults(spec) == [
        FailTask(task="counts#1", at_record=700),
        FailTask(task="numbers#0", during_checkpoint=3),
        CrashTask(task="numbers#1", at_record=600),
        DropAcknowledgement(task="counts#0", checkpoint_id=2),
        DelayAcknowledgement(task="counts#0", checkpoint_id=4, delay_ms=15),
        FailSnapshot(task="numbers#1", checkpoint_id=5),
        StallChannel(producer="numbers#0", consumer="counts#1", at_ms=30, for_ms=60),
    ]
    assert parse_faults("") == [] and parse_faults(" ; ") == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("explode:task=a#0", "unknown fault 'explode' in ckptsim.faults; known: crash-task,"),
        ("fail-task:task=a#0,at-record", "fault 'fail-task': expected key=value with a key among"),
        ("drop-ack:task=a#0,when=3", "got 'when=3'"),
        (
            "drop-ack:task=a#0,checkpoint=two",
            "fault 'drop-ack': checkpoint must be a number, got 'two'",
        ),
        ("delay-ack:task=a#0,checkpoint=2", "fault 'delay-ack': missing delay-ms"),
        ("stall-channel:producer=a#0", "fault 'stall-channel': missing consumer, at-ms, for-ms"),
        ("fail-task:at-record=3", "fault 'fail-task': missing task"),
    ],
)
def test_a_malformed_fault_spec_is_a_clear_error(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_faults(spec)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("fail-task:task=a#0", "give at_record or during_checkpoint, one of them"),
        ("fail-task:task=a#0,at-record=5,checkpoint=2", "give at_record or during_checkpoint"),
        ("crash-task:task=a#0,at-record=-1", "at_record must be a whole number >= 0"),
        ("delay-ack:task=a#0,checkpoint=1,delay-ms=-5", "delay_ms must be a whole number >= 0"),
    ],
)
def test_a_fault_that_parses_but_cannot_strike_is_refused_by_the_plan(
    spec: str, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        FaultPlan(parse_faults(spec))


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (FailTask(task="reduce-2#0", at_record=5), "the job has no task 'reduce-2#0'; its tasks: "),
        (CrashTask(task="counts#2", at_record=5), "the job has no task 'counts#2'"),
        (DropAcknowledgement(task="numbers", checkpoint_id=1), "no task 'numbers'"),
        (
            StallChannel(producer="counts#0", consumer="numbers#0", at_ms=0, for_ms=5),
            "no channel from 'counts#0' to 'numbers#0'; its channels: numbers#0 -> counts#0",
        ),
    ],
)
def test_a_fault_naming_a_task_or_channel_the_job_does_not_have_is_refused(
    fault: Fault, message: str
) -> None:
    """Otherwise it would never strike, and a test of a failure would pass without one."""
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        simulate(fault)
    if not isinstance(fault, StallChannel):
        assert "counts#0, counts#1, numbers#0, numbers#1" in str(caught.value)
    assert pykka.ActorRegistry.get_all() == []


def test_faults_from_the_ckptsim_faults_setting_strike_as_faults_given_to_execute() -> None:
    settings = {"ckptsim.faults": "fail-task:task=counts#1,at-record=700"}
    result, sim = simulate(settings=settings)
    assert result.restarts == 1
    assert injected(sim) == [repr(FailTask(task="counts#1", at_record=700))]
    assert observe(result.collected("counts")) == failure_free()


def test_every_injected_fault_appears_in_the_trace_once_when_it_strikes() -> None:
    faults: list[Fault] = [
        StallChannel(producer=SOURCES[0], consumer=REDUCERS[1], at_ms=5, for_ms=10),
        DelayAcknowledgement(task=REDUCERS[1], checkpoint_id=1, delay_ms=3),
        DropAcknowledgement(task=REDUCERS[0], checkpoint_id=2),
        FailSnapshot(task=SOURCES[1], checkpoint_id=3),
        FailTask(task=REDUCERS[0], at_record=600),
        CrashTask(task=SOURCES[0], at_record=700),
        FailTask(task=SOURCES[1], during_checkpoint=7),  # without it the job ends after 7
    ]
    settings = {**SHORT_TIMEOUT, "execution.checkpointing.tolerable-failed-checkpoints": 10}
    result, sim = simulate(*faults, settings=settings)
    assert result.status is JobStatus.FINISHED and result.restarts == 3
    expected = [repr(f) if not isinstance(f, FailSnapshot) else "FailSnapshot(3)" for f in faults]
    assert sorted(injected(sim)) == sorted(expected)
    assert observe(result.collected("counts")) == failure_free()


def test_a_fault_strikes_in_threaded_runs_too_and_is_traced() -> None:
    env = StreamExecutionEnvironment()
    counting(env, n=4_000)
    with protocol_events() as logs:
        result = env.execute(
            "threads", timeout=60, faults=[FailTask(task=REDUCERS[1], at_record=900)]
        )
    assert result.restarts == 1
    assert [e["fault"] for e in logs if e["event"] == "fault_injected"] == [
        repr(FailTask(task=REDUCERS[1], at_record=900))
    ]
    assert observe(result.collected("counts")) == failure_free(4_000)


# --- collect sinks: each record once, whatever checkpoint a restore goes back to --------------


def _tagged(name: str, i: int) -> tuple[str, int]:
    return (name, i)


def _two_pipelines(fault: FailTask | None) -> JobResult:
    """Pipeline a (3,000 records) finishes first; b (6,000) runs on. Without checkpoints after
    tasks finish, every checkpoint fails once a has finished, so a failure of b restores a
    checkpoint taken before a finished: a runs again."""
    env = StreamExecutionEnvironment(parallelism=1)
    env.enable_checkpointing(10)
    env.configure(
        {
            "execution.checkpointing.checkpoints-after-tasks-finish": False,
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.delay": "10 ms",
            "ckptsim.buffer.records": 50,
        }
    )
    for name, n in (("a", 3_000), ("b", 6_000)):
        (
            env.from_generator(functools.partial(_tagged, name), n, rate=20_000)
            .key_by(lambda r: r[0])
            .reduce(lambda x, y: (x[0], x[1] + y[1]))
            .collect(name)
        )
    faults = [fault] if fault is not None else []
    return env.execute("two pipelines", runtime="simulation", seed=1, faults=faults)


def test_a_finished_pipeline_that_runs_again_after_a_restore_commits_each_record_once() -> None:
    """a committed everything (its last records at its end, with no final checkpoint); the
    restore goes back before that, so what a committed after the restored checkpoint is
    retracted and its replay committed instead (it was committed twice, 141 records here,
    and a's last batch then dropped as a repeated commit)."""
    expected = _two_pipelines(None)
    result = _two_pipelines(FailTask(task="reduce-5#0", at_record=5_000))
    assert result.succeeded and result.restarts == 1
    assert result.checkpoints["counts"]["failed"] > 0, "checkpoints failed once a finished"
    for name in ("a", "b"):
        assert Counter(result.collected(name)) == Counter(expected.collected(name)), name
        assert len(result.collected(name)) == len(set(result.collected(name)))


def test_falling_back_past_a_damaged_checkpoint_retracts_the_part_files_committed_after(
    tmp_path: Path,
) -> None:
    """The file sink committed part files for the newest checkpoint; that checkpoint is
    damaged, so the restore takes the one before, and each subtask deletes its part files of
    later checkpoints before the replay writes their records again: the folder holds exactly
    the failure-free output (it held them twice)."""
    out, root = tmp_path / "out", tmp_path / "chk"
    seen = [0]

    def sabotage(r: Record) -> Record:
        seen[0] += 1
        if seen[0] == 1_700:
            delete_a_state_file(completed_checkpoints(root)[-1])
            raise RuntimeError("user code fails right after the checkpoint was damaged")
        return r

    def build(env: StreamExecutionEnvironment) -> None:
        counting(env, out=out, before_keying=sabotage)
        env.configure(
            {"execution.checkpointing.dir": str(root), "execution.checkpointing.num-retained": 2}
        )

    result, sim = simulate(build=build)
    assert result.status is JobStatus.FINISHED and result.restarts == 1
    (unusable,) = events(sim, "checkpoint_unusable")
    assert restored_from(sim) == [unusable["checkpoint_id"] - 1]
    retracted = events(sim, "sink_output_retracted")
    assert retracted and all(
        e["after_checkpoint"] == unusable["checkpoint_id"] - 1 for e in retracted
    )
    assert observe(read_part_files(out)) == failure_free()


def test_resuming_from_an_older_retained_checkpoint_rewrites_the_later_part_files(
    tmp_path: Path,
) -> None:
    """A cancelled run kept its checkpoints; resuming from one that is not the latest, each
    sink subtask retracts the part files committed after it (the resumed run's new
    checkpoint ids start right after it, and overwrote them: 1,185 duplicates in one run), so
    the folder ends with exactly the failure-free output."""
    out, root = tmp_path / "out", tmp_path / "chk"
    retain = {
        "execution.checkpointing.dir": str(root),
        "execution.checkpointing.num-retained": 3,
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    }
    env = StreamExecutionEnvironment()
    counting(env, out=out)
    env.configure(retain)
    first = env.execute("first", runtime="simulation", seed=1, timeout=0.03)
    assert first.status is JobStatus.CANCELED and len(first.retained_checkpoints) >= 2
    oldest = sorted(first.retained_checkpoints, key=lambda p: int(p.rsplit("-", 1)[1]))[0]
    env = StreamExecutionEnvironment()
    counting(env, out=out)
    env.configure({**retain, "execution.state-recovery.path": oldest})
    second = env.execute("resumed", runtime="simulation", seed=2)
    assert second.status is JobStatus.FINISHED
    assert observe(read_part_files(out)) == failure_free()


def _retained_then_resumed_from_the_oldest(
    tmp_path: Path,
    *,
    seeds: tuple[int, int],
    second_root: Path | None = None,
    second_timeout: float = 600.0,
    between: Callable[[JobResult], None] = lambda first: None,
) -> tuple[Path, JobResult, JobResult, int, dict[str, bytes]]:
    """A run cancelled with retained checkpoints, then a run resumed from the oldest of them
    into the same output folder (and checkpoint directory, unless ``second_root``): (out,
    first, second, oldest id, the part files before the second)."""
    out, root = tmp_path / "out", tmp_path / "chk"
    retain: dict[str, object] = {
        "execution.checkpointing.dir": str(root),
        "execution.checkpointing.num-retained": 3,
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    }
    env = StreamExecutionEnvironment()
    counting(env, out=out)
    env.configure(retain)
    first = env.execute("first", runtime="simulation", seed=seeds[0], timeout=0.03)
    assert first.status is JobStatus.CANCELED and len(first.retained_checkpoints) >= 2
    oldest = sorted(first.retained_checkpoints, key=lambda p: int(p.rsplit("-", 1)[1]))[0]
    before = {p.name: p.read_bytes() for p in out.glob("part-*")}
    between(first)
    env = StreamExecutionEnvironment()
    counting(env, out=out)
    env.configure({**retain, "execution.state-recovery.path": oldest})
    if second_root is not None:
        env.configure({"execution.checkpointing.dir": str(second_root)})
    second = env.execute("resumed", runtime="simulation", seed=seeds[1], timeout=second_timeout)
    return out, first, second, load_checkpoint(oldest).checkpoint_id, before


@pytest.mark.parametrize(
    "seeds", [(1, 2), (1, 1)], ids=["another seed", "the same seed (the same job id)"]
)
def test_part_files_are_named_by_a_unique_writer_and_none_replaces_another(
    tmp_path: Path, seeds: tuple[int, int]
) -> None:
    """Flink's FileSink names part files ``<prefix>-<uuid>-<counter>``, the UUID per writer.
    Here ``part-<vertex>-<subtask>-<writer>-<checkpoint>.<ext>``: the resumed run's checkpoint
    ids repeat the first run's after the oldest retained one, yet it writes under writer ids
    of its own (also when a simulated run of the same seed derives the same ones: they are
    taken), so it never replaces a committed file; the files it retracts are the first run's
    after the restored checkpoint, and the first run's files up to it stay as they were."""
    out, _, second, oldest, before = _retained_then_resumed_from_the_oldest(
        tmp_path, seeds=seeds, second_root=tmp_path / "chk2" if seeds[0] == seeds[1] else None
    )
    assert second.status is JobStatus.FINISHED
    assert observe(read_part_files(out)) == failure_free()
    first_writers = {PART.fullmatch(name)["writer"] for name in before}  # type: ignore[index]
    kept = {m.string: m for m in part_names(out) if m["writer"] in first_writers}
    assert kept and all(m["txn"] != "end" and int(m["txn"]) <= oldest for m in kept.values())
    assert {name: (out / name).read_bytes() for name in kept} == {n: before[n] for n in kept}
    first_txns = {int(PART.fullmatch(name)["txn"]) for name in before}  # type: ignore[index]
    assert set(second.completed_checkpoint_ids) & first_txns, "the ids repeat"
    new = [m for m in part_names(out) if m["writer"] not in first_writers]
    # one writer per subtask and attempt
    writers = {(m["subtask"], m["writer"]) for m in new}
    assert len({w for _, w in writers}) == len(writers)
    assert second.restarts == 0 and len(writers) == 2


def test_checkpoint_ids_never_name_two_checkpoints_in_one_directory(tmp_path: Path) -> None:
    """The resumed run's checkpoint ids start again right after the restored checkpoint, so
    they repeat the first run's; both runs keep their checkpoints in one checkpoint directory,
    yet each checkpoint has a directory of its own (``<dir>/<job id>/chk-<n>``): the first
    run's retained checkpoints are byte for byte what they were, and every retained one loads
    (checksums verified) as the checkpoint its run took."""
    root = tmp_path / "chk"

    def files() -> dict[Path, bytes]:
        return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}

    seen: dict[Path, bytes] = {}

    def before_second(first: JobResult) -> None:
        seen.update(files())

    _, first, second, oldest, _ = _retained_then_resumed_from_the_oldest(
        tmp_path, seeds=(1, 2), second_timeout=0.03, between=before_second
    )
    assert second.status is JobStatus.CANCELED
    first_ids = {load_checkpoint(p).checkpoint_id for p in first.retained_checkpoints}
    second_ids = {load_checkpoint(p).checkpoint_id for p in second.retained_checkpoints}
    assert first_ids & second_ids, "the resumed run's ids repeat the first run's"
    assert min(second.completed_checkpoint_ids) == oldest + 1
    assert not set(first.retained_checkpoints) & set(second.retained_checkpoints)
    assert {p: b for p, b in files().items() if p in seen} == seen, "nothing was rewritten"
    for result in (first, second):
        for path in result.retained_checkpoints:
            assert Path(path).name == f"chk-{load_checkpoint(path).checkpoint_id}"


# --- a restart before the first completed checkpoint: nothing staged is left behind ---------------


def staged_files(out: Path) -> list[str]:
    return (
        sorted(p.name for p in (out / ".staging").iterdir()) if (out / ".staging").is_dir() else []
    )


@pytest.mark.parametrize("mode", ["aligned", "unaligned"])
def test_a_restart_before_the_first_checkpoint_leaves_no_pending_or_in_progress_file(
    tmp_path: Path, mode: str
) -> None:
    """The first attempt wrote an in-progress file (and pre-committed checkpoint 1, which
    never completed) and failed; the second starts from scratch, with no checkpoint to restore
    its sink from. It deletes what the first attempt staged (an orphan with 3,297 records
    was left in one run), and the folder holds exactly the failure-free output."""
    out = tmp_path / "out"
    fault = FailTask(task=REDUCERS[1], during_checkpoint=1)
    result, sim = simulate(fault, build=lambda env: counting(env, out=out), settings=MODES[mode])
    assert result.status is JobStatus.FINISHED and result.restarts == 1
    assert completed_before_failover(sim) is None and restored_from(sim) == [None]
    assert staged_files(out) == []
    assert observe(read_part_files(out)) == failure_free()


def _two_pipelines_into_files(out: Path, fault: FailTask | None) -> JobResult:
    """Pipeline a (100 records) ends before the first checkpoint completes and, with no
    checkpoints after tasks finish, commits its records at its end; b (6,000) fails later,
    with no completed checkpoint either (every checkpoint fails once a has finished): the
    restart runs a again from scratch."""
    env = StreamExecutionEnvironment(parallelism=1)
    env.enable_checkpointing(10)
    env.configure(
        {
            "execution.checkpointing.checkpoints-after-tasks-finish": False,
            **RESTARTS,
            "ckptsim.buffer.records": 50,
        }
    )
    for name, n, rate in (("a", 100, 100_000), ("b", 6_000, 20_000)):
        env.from_generator(functools.partial(_tagged, name), n, rate=rate).sink_to_file(
            str(out / name), name=name, fmt="json"
        )
    faults = [fault] if fault is not None else []
    return env.execute("two pipelines", runtime="simulation", seed=1, faults=faults)


def test_a_pipeline_that_ended_before_a_restart_from_scratch_commits_its_records_once(
    tmp_path: Path,
) -> None:
    """a's part file committed at its end is retracted by the restart from scratch, which
    writes a's records again (they were in the folder twice)."""
    expected = _two_pipelines_into_files(tmp_path / "expected", None)
    assert expected.succeeded and not expected.completed_checkpoint_ids
    result = _two_pipelines_into_files(
        tmp_path / "out", FailTask(task="source-3#0", at_record=3_000)
    )
    assert result.succeeded and result.restarts == 1, result.failures
    assert not result.completed_checkpoint_ids
    for name in ("a", "b"):
        records = Counter(tuple(r) for r in read_part_files(tmp_path / "out" / name))
        assert records == Counter(tuple(r) for r in read_part_files(tmp_path / "expected" / name))
        assert staged_files(tmp_path / "out" / name) == []


# --- kill -9, then --from-checkpoint ------------------------------------------------------------

#: the counting job into part files; with KILL set, the process kills itself (SIGKILL: no
#: cleanup of any kind) at a record after its second checkpoint completed
KILLED_JOB = """
    import os, signal
    from pathlib import Path

    ROOT, OUT = Path(os.environ["JOB_ROOT"]), os.environ["JOB_OUT"]
    KILL = "JOB_KILL" in os.environ
    seen = [0]

    def record(i):
        return (i % 10, i, 1)

    def kill_after_two_checkpoints(r):
        seen[0] += 1
        if KILL and seen[0] % 50 == 0:
            if len([p for p in ROOT.rglob("chk-*") if (p / "_metadata").is_file()]) >= 2:
                os.kill(os.getpid(), signal.SIGKILL)
        return r

    def build(env):
        env.set_parallelism(2)
        env.enable_checkpointing(10)
        # buffer timeout 0: records reach the sinks after every write, and the kill strikes
        # before they committed checkpoint 2 (with the default 100 ms timeout, after it, with
        # nothing staged)
        env.configure({"execution.checkpointing.dir": str(ROOT),
                       "execution.checkpointing.num-retained": 2,
                       "ckptsim.buffer.records": 50,
                       "execution.buffer-timeout.interval": 0})
        (env.from_generator(record, 2_000, rate=50_000).uid("numbers")
            .map(kill_after_two_checkpoints).uid("sabotage")
            .key_by(lambda r: r[0])
            .reduce(lambda a, b: (a[0], b[1], a[2] + b[2])).uid("counts")
            .processing_cost(per_buffer_ms=1)
            .sink_to_file(OUT, name="files", fmt="json"))
"""


def test_kill_9_then_from_checkpoint_leaves_exactly_the_failure_free_output(
    tmp_path: Path,
) -> None:
    """The process dies at once (nothing cleaned up: in-progress and pending files, every
    checkpoint directory stay); the run resumed from its latest completed checkpoint commits
    what that checkpoint pre-committed, deletes the rest of what the first run staged, and
    the folder ends with exactly the failure-free output."""
    job, root, out = tmp_path / "job.py", tmp_path / "chk", tmp_path / "out"
    job.write_text(textwrap.dedent(KILLED_JOB))

    def ckptsim(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "ckptsim._cli", "run", "-q", "--simulate", *argv]
        env = {**os.environ, "JOB_ROOT": str(root), "JOB_OUT": str(out), **env}
        # a guard against a hang, not a measure
        return subprocess.run(
            command, capture_output=True, text=True, timeout=240, check=False, env=env
        )

    killed = ckptsim("--seed", "1", str(job), JOB_KILL="1")
    assert killed.returncode == -9, killed.stderr
    assert list((out / ".staging").iterdir()), "the first run left staged files"
    assert list((out / ".staging").glob("*.pending")), "and files its checkpoint pre-committed"
    latest = completed_checkpoints(root)[-1]
    resumed = ckptsim("--seed", "2", "--from-checkpoint", str(latest), str(job))
    assert resumed.returncode == 0, resumed.stderr
    assert observe(read_part_files(out)) == failure_free()
    assert list((out / ".staging").iterdir()) == []


# --- at-least-once: skewed barriers count records twice ------------------------------------------


def test_at_least_once_counts_twice_what_passed_a_skewed_barrier_and_exactly_once_does_not(
    tmp_path: Path,
) -> None:
    """The barrier tracker does not align: a channel stalled over checkpoint 3 holds its barrier
    back while the other channel's records after theirs reach the running total, so they are in
    checkpoint 3's state; a failure in checkpoint 4 restores 3 and the source replays them.
    At-least-once: nothing lost, some totals over-counted. Exactly-once on the same faults: the
    aligned barriers keep them out, and the output is exact."""
    example = SimpleNamespace(
        **runpy.run_path(
            str(Path(__file__).resolve().parents[2] / "examples" / "failure_recovery.py")
        )
    )
    faults = [
        "fail-task:task=reduce-2#1,checkpoint=4",
        "stall-channel:producer=source-1#1,consumer=reduce-2#0,at-ms=45,for-ms=10",
    ]
    outcome = {}
    for mode in ("AT_LEAST_ONCE", "EXACTLY_ONCE"):
        output = tmp_path / mode
        sim = Simulation(seed=7)

        def build(env: StreamExecutionEnvironment, output: Path = output) -> None:
            env.set_parallelism(2)
            example.pipeline(env, str(output))

        result = sim.run(
            build, {"execution.checkpointing.mode": mode, "ckptsim.faults": "; ".join(faults)}
        )
        assert result.status is JobStatus.FINISHED and restored_from(sim) == [3]
        outcome[mode] = example.committed_totals(output)
    expected = example.expected_totals()
    totals, lines = outcome["AT_LEAST_ONCE"]
    assert lines > example.RECORDS and set(totals) == set(expected)
    assert all(totals[u] >= expected[u] for u in expected)
    assert any(totals[u] > expected[u] for u in expected)
    assert outcome["EXACTLY_ONCE"] == (expected, example.RECORDS)
