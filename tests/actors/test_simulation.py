"""The deterministic simulation runtime: same actors, one thread, seeded schedule, virtual time."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pykka
import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.launcher import make_runtime
from actors.simulation import SimulationRuntime, SimulationStalled, _ReadySet
from ckptsim import StreamExecutionEnvironment
from ckptsim._cli import main
from ckptsim.testing import Simulation
from runtime.reasons import CheckpointFailureReason
from runtime.status import JobStatus
from tests.actors.test_jobs import MODES, expected_sums, final, running_sum_job
from tests.conftest import protocol_events

ROOT = Path(__file__).resolve().parents[2]


class Echo(pykka.ThreadingActor):
    def __init__(self, log: list[Any]) -> None:
        super().__init__()
        self.log = log

    def on_start(self) -> None:
        self.log.append("started")

    def on_receive(self, message: Any) -> Any:
        if message == "wait-inside":
            pykka.ActorRegistry.get_by_class_name("SimulatedEcho")[0].ask("x")
        self.log.append(message)
        return message


def test_the_pykka_seam_runs_actors_without_threads_in_fifo_order() -> None:
    sim, log = SimulationRuntime(seed=1), list[Any]()
    threads = set(threading.enumerate())  # a thread of an earlier test may still be ending
    ref = sim.spawn(Echo, log)
    assert log == ["started"]  # on_start at spawn
    for i in range(5):
        ref.tell(i)
    assert log == ["started"]  # nothing runs until the simulation does
    assert ref.ask("answer") == "answer"  # waiting runs the scheduler
    assert log == ["started", 0, 1, 2, 3, 4, "answer"]
    assert not set(threading.enumerate()) - threads, "threads left behind"
    sim.shutdown()
    assert not ref.is_alive() and pykka.ActorRegistry.get_all() == []


def test_an_actor_waiting_on_another_inside_the_simulation_is_refused() -> None:
    sim = SimulationRuntime()
    ref = sim.spawn(Echo, [])
    with pytest.raises(RuntimeError, match="actors must only tell"):
        ref.ask("wait-inside")
    sim.shutdown()


def test_a_wait_that_nothing_can_end_is_a_stall_with_a_description() -> None:
    sim = SimulationRuntime()
    sim.spawn(Echo, [])
    with pytest.raises(SimulationStalled, match="no actor has mail, no timer is due"):
        sim.wait(sim.future(), timeout=None)
    sim.shutdown()


def test_the_same_seed_writes_the_same_trace_byte_for_byte(tmp_path: Path) -> None:
    script = str(ROOT / "examples" / "slow_running_sum.py")
    traces = []
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        trace = tmp_path / f"{name}.jsonl"
        argv = ["run", script, "-p", "2", "--simulate", "--seed", str(seed), "-q"]
        assert main([*argv, "--trace", str(trace)]) == 0
        traces.append(trace.read_bytes())
    assert traces[0] == traces[1]
    assert b'"time_ms"' in traces[0] and b'"timestamp"' not in traces[0]
    body = [t.split(b"\n", 1)[1] for t in traces]  # the first line names the job (by seed)
    assert body[0] != body[2], "another seed, another schedule"


@pytest.mark.parametrize("mode", list(MODES))
def test_a_simulated_job_gives_the_threaded_result_in_every_mode(mode: str) -> None:
    threads = set(threading.enumerate())  # a thread of an earlier test may still be ending
    result = running_sum_job(MODES[mode], rate=None).execute(
        mode, runtime="simulation", seed=11, timeout=60
    )
    assert result.status is JobStatus.FINISHED, result.failure
    assert final(result) == expected_sums()
    assert result.completed_checkpoint_ids
    assert not set(threading.enumerate()) - threads, "threads left behind"
    assert pykka.ActorRegistry.get_all() == []


def test_schedules_differ_by_seed_and_a_fixed_prefix_replays() -> None:
    def trace_of(seed: int, schedule: list[int]) -> list[Any]:
        with protocol_events() as logs:
            running_sum_job(MODES["unaligned"], rate=None).execute(
                "s", runtime="simulation", seed=seed, schedule=schedule
            )
        return [(e["event"], e.get("task"), e.get("checkpoint_id"), e.get("channel")) for e in logs]

    assert trace_of(1, []) == trace_of(1, [])
    assert trace_of(1, []) != trace_of(2, [])
    prefix = [3, 1, 4, 1, 5, 9, 2, 6] * 50  # the first 400 choices, as Hypothesis gives them
    assert trace_of(5, prefix) == trace_of(5, prefix)
    assert trace_of(5, prefix) != trace_of(5, [])


def test_timeouts_and_rates_pass_in_virtual_time() -> None:
    """An endless rate-limited source, cancelled after 2 virtual seconds: no wall time spent."""
    env = StreamExecutionEnvironment(parallelism=1)
    env.enable_checkpointing(100)
    env.from_generator(lambda i: (i % 3, 1), 10**12, rate=1_000).key_by(lambda r: r[0]).sum(
        1
    ).collect()
    result = env.execute("endless", runtime="simulation", seed=1, timeout=2)
    assert result.status is JobStatus.CANCELED
    assert 2_000 <= result.duration_ms <= 2_100
    assert 15 <= len(result.completed_checkpoint_ids) <= 20  # one per 100 ms
    assert 1_900 <= len(result.collected()) <= 2_100  # 1000 records a second


def test_unaligned_checkpoints_finish_faster_than_aligned_under_backpressure() -> None:
    """The back-pressure example, in virtual time: barriers wait behind queued buffers only
    when aligned (no sleeping: the slow operator's cost passes in virtual time)."""
    example = runpy.run_path(str(ROOT / "examples" / "slow_running_sum.py"))
    averages = {}
    for unaligned in (False, True):
        env = StreamExecutionEnvironment(parallelism=2)
        example["build"](env)
        env.configure({"execution.checkpointing.unaligned.enabled": unaligned})
        result = env.execute("slow", runtime="simulation", seed=3)
        assert result.succeeded
        averages[unaligned] = result.checkpoints["summary"]["end_to_end_duration"]["avg"]
        persisted = result.checkpoints["summary"]["persisted_data"]["max"]
        assert (persisted > 0) is unaligned
    assert averages[True] * 3 < averages[False], averages


def test_a_bad_seed_or_runtime_is_a_clear_error() -> None:
    env = running_sum_job({}, rate=None)
    with pytest.raises(ValueError, match="unknown runtime 'fast'"):
        env.execute("x", runtime="fast")
    with pytest.raises(ValueError, match="seed must be a whole number"):
        env.execute("x", runtime="simulation", seed=-1)
    assert main(["run", str(ROOT / "examples" / "word_count.py"), "--seed", "x"]) == 2


def test_traces_are_identical_across_processes_and_hash_seeds_with_aborted_checkpoints(
    tmp_path: Path,
) -> None:
    """Two processes, two PYTHONHASHSEEDs, a short interval and timeout (checkpoints expire
    while their snapshots are written): still the same trace, byte for byte."""
    script = str(ROOT / "examples" / "slow_running_sum.py")
    traces = []
    for hash_seed in ("0", "1"):
        trace = tmp_path / f"{hash_seed}.jsonl"
        argv = [sys.executable, "-m", "ckptsim._cli", "run", script, "-p", "3", "--simulate"]
        argv += ["--seed", "0", "-q", "--trace", str(trace)]
        argv += ["-D", "execution.checkpointing.interval=10ms"]
        argv += ["-D", "execution.checkpointing.timeout=20ms"]
        argv += ["-D", "execution.checkpointing.tolerable-failed-checkpoints=1000"]
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        traces.append(trace.read_bytes())
    assert traces[0] == traces[1]
    assert b'"checkpoint_aborted"' in traces[0]


@pytest.mark.parametrize("seed", ["0", "1"])
def test_a_bounded_job_ends_with_its_final_checkpoint_and_nothing_declined_after_it(
    tmp_path: Path, seed: str
) -> None:
    """FLIP-147 as Flink 2.3 runs it: every task ends its data, acknowledges a checkpoint it
    took after that (its final one; a source that ended early may finish with an earlier one
    than the rest), and finishes once that checkpoint completed. A periodic trigger queued
    behind the last one used to reach tasks that were closing: declined (TASK_NOT_READY) and
    aborted as the job finished (seed 0 with these settings)."""
    trace = tmp_path / "t.jsonl"
    argv = ["run", str(ROOT / "examples" / "slow_running_sum.py"), "-p", "3", "--simulate"]
    argv += ["--seed", seed, "-q", "--trace", str(trace)]
    assert main([*argv, "-D", "execution.checkpointing.interval=10ms"]) == 0
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    names = [e["event"] for e in events]
    assert "checkpoint_completed" in names
    assert "checkpoint_declined" not in names and "checkpoint_aborted" not in names
    completed = {
        e["checkpoint_id"]: i for i, e in enumerate(events) if e["event"] == "checkpoint_completed"
    }
    finished = {e["task"]: i for i, e in enumerate(events) if e["event"] == "task_finished"}
    assert len(finished) == 9
    for task, end in finished.items():
        (ended,) = [
            i
            for i, e in enumerate(events)
            if e["event"] == "waiting_for_final_checkpoint" and e["task"] == task
        ]
        taken = [
            e["checkpoint_id"]
            for e in events[ended:]
            if e["event"] == "checkpoint_taken" and e["task"] == task
        ]
        acknowledged = {
            e["checkpoint_id"]
            for e in events
            if e["event"] == "checkpoint_acknowledged" and e["task"] == task
        }
        assert any(c in acknowledged and completed.get(c, end) < end for c in taken), (
            f"{task} finished before a checkpoint it took after its end of data completed"
        )


def test_a_virtual_timeout_ends_the_job_at_its_deadline_not_at_the_next_event() -> None:
    env = StreamExecutionEnvironment(parallelism=1)
    env.from_generator(lambda i: i, 3, rate=0.1).collect()  # one record every 10 s
    result = env.execute("slow", runtime="simulation", seed=1, timeout=1)
    assert result.status is JobStatus.CANCELED
    assert 1_000 <= result.duration_ms <= 1_001


def test_a_second_run_of_a_seed_does_not_overwrite_the_first_ones_checkpoints(
    tmp_path: Path,
) -> None:
    settings: dict[str, object] = {
        "execution.checkpointing.dir": str(tmp_path),
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    }
    first = running_sum_job(settings, rate=1_000).execute(
        "kept", runtime="simulation", seed=5, timeout=0.2
    )
    assert first.retained_checkpoints
    with pytest.raises(OSError, match="already holds checkpoints"):
        running_sum_job(settings, rate=1_000).execute("again", runtime="simulation", seed=5)
    assert all(Path(p).is_dir() for p in first.retained_checkpoints)


def test_asynchronous_parts_take_virtual_time_and_can_outlast_the_checkpoint_timeout() -> None:
    settings = {
        "ckptsim.simulation.async-cost-us": 80_000,  # writing a snapshot takes 80 ms
        "execution.checkpointing.timeout": "50 ms",
        "execution.checkpointing.tolerable-failed-checkpoints": 100,
    }
    # every checkpoint expires, so the final checkpoint (FLIP-147) never completes and the
    # job cannot finish: it runs for 0.2 s of virtual time and is cancelled
    result = running_sum_job(settings, rate=100_000).execute(
        "slow writes", runtime="simulation", seed=2, timeout=0.2
    )
    assert result.status is JobStatus.CANCELED, result.failure
    assert not result.completed_checkpoint_ids
    reasons = {h.get("failure_message") for h in result.checkpoints["history"]}
    assert any(r == CheckpointFailureReason.CHECKPOINT_EXPIRED.message for r in reasons), reasons


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 300)), max_size=200))
def test_the_ready_set_draws_the_kth_smallest_index_as_sorting_would(
    operations: list[tuple[bool, int]],
) -> None:
    """The scheduler's set of runnable mailboxes answers "the k-th in index order" as sorting
    them every step did (so schedules are the same), through adds, discards and growth."""
    ready, model = _ReadySet(), set[int]()
    for add, index in operations:
        if add:
            ready.add(index)
            model.add(index)
        else:
            ready.discard(index)
            model.discard(index)
        assert ready.count == len(model)
        assert [ready.kth(k) for k in range(len(model))] == sorted(model)
        assert all((i in ready) == (i in model) for i in (index, index + 1))


@pytest.mark.parametrize(("parallelism", "seed"), [(1, 3), (2, 3), (2, 8)])
def test_a_rate_limited_sources_checkpoint_covers_every_record_ready_by_its_trigger(
    parallelism: int, seed: int
) -> None:
    """A rate-limited source wakes once a buffer's worth is ready (or before the output
    flusher's tick), not every millisecond; a checkpoint's trigger that comes meanwhile has it
    read what became ready first, so every cut holds each record ready by the trigger's
    millisecond: ``rate`` per second per subtask from its start at 0 ms, the first at once."""
    share, rate = 3000 // parallelism, 20_000 // parallelism

    def build(env: StreamExecutionEnvironment) -> None:
        env.set_parallelism(parallelism)
        env.enable_checkpointing(13)
        env.from_generator(lambda i: (i % 5, 1), 3000, rate=20_000.0).key_by(lambda r: r[0]).reduce(
            lambda a, b: (a[0], a[1] + b[1])
        ).collect("out")

    sim = Simulation(seed=seed)
    result = sim.run(build, {"execution.checkpointing.storage": "jobmanager"})
    assert result.succeeded
    cuts = [
        (e["task"], e["time_ms"], sum(e["emitted"].values()))
        for e in sim.events
        if e["event"] == "checkpoint_taken" and e["task"].startswith("source")
    ]
    assert len(cuts) >= 10 * parallelism
    for task, at, emitted in cuts:
        assert emitted == min(share, int(at) * rate // 1000 + 1), (task, at)


def test_a_rate_limited_source_reads_a_buffer_per_wake_up_not_every_millisecond() -> None:
    """2,000 records at 10 per virtual ms in buffers of 100: the source reads about 20 times,
    so the whole job takes fewer scheduler steps than the 200 ms it lasts (it took 320 when
    the source woke every millisecond)."""
    env = StreamExecutionEnvironment(parallelism=1)
    env.configure({"ckptsim.buffer.records": 100})
    env.from_generator(lambda i: (i % 5, 1), 2000, rate=10_000.0).key_by(lambda r: r[0]).sum(
        1
    ).collect()
    runtime = make_runtime("simulation", env.configuration, seed=1)
    assert isinstance(runtime, SimulationRuntime)
    result = env.execute("paced", runtime=runtime)
    assert result.succeeded and 199 <= result.duration_ms <= 210
    assert sorted(result.collected())[-1] == (4, 400)
    assert runtime.steps < 200
