"""The ckptsim command line: exit codes and the commands of the protocol core."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ckptsim._cli import main
from runtime.config import format_duration


def test_demo_walks_through_an_aligned_and_an_unaligned_checkpoint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "checkpoint 1 COMPLETED" in out
    assert "checkpoint_type=CHECKPOINT " in out
    assert "checkpoint_type=UNALIGNED_CHECKPOINT" in out
    assert "in-flight data persisted as channel state: ['a', 'b', 'c', 'd', 'e']" in out


def test_config_lists_flink_keys_with_defaults_as_flink_writes_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert "execution.checkpointing.timeout = 10 min\n" in out
    assert "execution.checkpointing.min-pause = 0 ms\n" in out
    assert (
        "execution.checkpointing.num-retained = 1  [also read from the deprecated key "
        "state.checkpoints.num-retained]" in out
    )
    assert (
        "execution.checkpointing.incremental = false  [also read from the deprecated key "
        "state.backend.incremental]  [no effect in ckptsim: snapshots are always full]" in out
    )
    assert "execution.checkpointing.interval = (none)\n" in out  # effective keys carry no note
    assert "taskmanager.memory.segment-size = 32 kb\n" in out  # a MemorySize, as Flink's list
    assert "task.checkpoint.alignment.max-size = -1\n" in out
    assert "without-channel-state.checkpoint-id = -1  [also read from the deprecated key " in out


def test_durations_are_written_in_the_largest_unit_that_divides_them() -> None:
    assert [format_duration(ms) for ms in (0, 1, 1500, 60_000, 90_000, 7_200_000, 86_400_000)] == [
        "0 ms",
        "1 ms",
        "1500 ms",
        "1 min",
        "90 s",
        "2 h",
        "1 d",
    ]


@pytest.mark.parametrize(
    "argv", [[], ["no-such-command"], ["conformance"], ["--log-level", "loud", "demo"]]
)
def test_usage_errors_exit_with_2(argv: list[str]) -> None:
    assert main(argv) == 2


def test_console_script_is_installed() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ckptsim", "config"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert "execution.checkpointing.interval" in done.stdout
