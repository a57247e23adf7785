"""Nothing hangs: durations a timer cannot wait for are refused up front, a dying timer thread
fails the job instead of leaving it waiting, cancelled timers leave the heap at once, and the
command line refuses timeouts that are no timeouts (issue #8, items 7, 11 and 12)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

import pytest

from actors.simulation import SimulationRuntime
from actors.timers import TimerService, wait_seconds
from ckptsim import StreamExecutionEnvironment
from ckptsim._cli import main
from runtime.clock import ManualClock
from runtime.config import MAX_DURATION_MS, ConfigError, Configuration
from runtime.status import JobStatus

ROOT = Path(__file__).resolve().parents[2]
WORD_COUNT = str(ROOT / "examples" / "word_count.py")

# --- durations ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("execution.checkpointing.timeout", "200000 d"),
        ("execution.checkpointing.interval", "106752 d"),
        ("execution.checkpointing.min-pause", "P200000D"),
        ("restart-strategy.fixed-delay.delay", MAX_DURATION_MS + 1),
        ("execution.checkpointing.aligned-checkpoint-timeout", "9" * 40 + " d"),
    ],
)
def test_a_duration_no_timer_can_wait_for_is_refused_naming_key_value_and_maximum(
    key: str, value: object
) -> None:
    with pytest.raises(ConfigError) as caught:
        Configuration({key: value})
    message = str(caught.value)
    assert f"'{key}'" in message and repr(value) in message
    assert "at most 106751 d 23 h 47 min 16 s" in message
    assert MAX_DURATION_MS / 1000 <= threading.TIMEOUT_MAX  # a timer can wait that long


def test_the_longest_duration_is_accepted() -> None:
    conf = Configuration({"execution.checkpointing.timeout": MAX_DURATION_MS})
    assert conf["execution.checkpointing.timeout"] == MAX_DURATION_MS


def test_the_command_line_refuses_a_too_long_duration_with_exit_2_and_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["run", WORD_COUNT, "-q", "-D", "execution.checkpointing.timeout=200000 d"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "'execution.checkpointing.timeout'" in err
    assert "at most 106751 d" in err and out == ""


@pytest.mark.parametrize("value", ["inf", "-1", "0", "nan", "-inf", "1e300", "soon"])
def test_a_timeout_that_is_no_timeout_is_refused_with_exit_2_and_one_line(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    assert main(["run", WORD_COUNT, "-q", f"--timeout={value}"]) == 2
    out, err = capsys.readouterr()
    assert err == (
        f"ckptsim run: --timeout takes a number of seconds > 0 and at most "
        f"{threading.TIMEOUT_MAX:.0f}, got {value!r}\n"
    )
    assert out == ""


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 0, -1.0])
def test_execute_refuses_a_timeout_that_is_no_timeout(value: float) -> None:
    env = StreamExecutionEnvironment()
    env.from_collection([1]).collect()
    with pytest.raises(ValueError, match="timeout must be a number of seconds > 0"):
        env.execute("x", timeout=value)


# --- the timer thread ------------------------------------------------------------------------


class _Ref:
    """Enough of an ActorRef for the timer service."""

    _urns = itertools.count()

    def __init__(self) -> None:
        self.actor_urn = f"urn:test:{next(self._urns)}"
        self.told: list[Any] = []

    def tell(self, message: Any) -> None:
        self.told.append(message)


def test_a_timer_far_away_waits_at_most_what_a_condition_accepts() -> None:
    assert wait_seconds(MAX_DURATION_MS, 0) <= threading.TIMEOUT_MAX
    assert wait_seconds(10**18, 0) == threading.TIMEOUT_MAX
    assert wait_seconds(1500, 1000) == 0.5


def test_cancelled_and_rescheduled_timers_leave_the_heap_at_once() -> None:
    service = TimerService(ManualClock())
    try:
        ref = _Ref()
        for cid in range(3_000):  # a checkpoint's timeout, cancelled as the checkpoint ends
            service.schedule(ref, ("timeout", cid), 600_000 + cid)  # type: ignore[arg-type]
            service.cancel(ref, ("timeout", cid))  # type: ignore[arg-type]
        for due in range(100):
            service.schedule(ref, "trigger", 10 + due)  # type: ignore[arg-type]
        assert len(service) == 1
        others = _Ref()
        keys: list[Hashable] = [f"k{i}" for i in range(5)]
        for key in keys:
            service.schedule(others, key, 10**9)  # type: ignore[arg-type]
        assert len(service) == 6
        for key in keys:
            service.cancel(others, key)  # type: ignore[arg-type]
        assert len(service) == 1
    finally:
        service.stop()


class _BrokenClock(ManualClock):
    def now(self) -> int:
        raise RuntimeError("the clock broke")


def test_a_dying_timer_thread_reports_its_cause() -> None:
    died = threading.Event()
    causes: list[str] = []

    def on_death(cause: str) -> None:
        causes.append(cause)
        died.set()

    service = TimerService(_BrokenClock(), on_death=on_death)
    service.schedule(_Ref(), "k", 5)  # type: ignore[arg-type]
    assert died.wait(60), "the timer thread's death was never reported"
    assert causes == ["the timer thread died: RuntimeError: the clock broke"]
    assert service.death == causes[0] and not service.alive


def test_a_job_whose_timer_thread_dies_fails_with_the_cause_instead_of_hanging(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(self: TimerService, ref: Any, key: Hashable) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(TimerService, "_fire", broken)
    env = StreamExecutionEnvironment(parallelism=1)
    env.enable_checkpointing("10 ms")  # the first trigger kills the timer thread
    env.from_generator(lambda i: i, 10**9, rate=1_000).collect()  # would run for 11 days
    result = env.execute("timers die")
    assert result.status is JobStatus.FAILED
    assert result.failure == "the timer thread died: RuntimeError: boom"


# --- the simulation's timer heap ---------------------------------------------------------------


def test_the_simulation_timer_heap_stays_small_over_many_checkpoints() -> None:
    """10 virtual seconds of checkpoints every 50 ms with the default 10-minute timeout: each
    checkpoint's timeout timer is cancelled when it completes, and leaves the heap (a timer
    left behind would grow it by one a checkpoint, to about 200)."""
    runtime = SimulationRuntime(seed=1)
    sizes: list[int] = []

    def observe(batch: Sequence[int]) -> Sequence[int]:
        sizes.append(len(runtime._timers))
        return batch

    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing("50 ms")
    env.from_generator(lambda i: i, 10_000, rate=1_000).map_batch(observe).collect()
    result = env.execute("heap", runtime=runtime)
    assert result.succeeded, result.failure
    assert result.checkpoints["counts"]["completed"] >= 175
    assert max(sizes) <= 10, max(sizes)
