"""The ckptsim command line: exit codes and the commands of the protocol core."""

from __future__ import annotations

import subprocess
import sys

import pytest

from actors.cli import main


def test_demo_walks_through_an_aligned_and_an_unaligned_checkpoint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "checkpoint 1 COMPLETED" in out
    assert "checkpoint_type=CHECKPOINT " in out
    assert "checkpoint_type=UNALIGNED_CHECKPOINT" in out
    assert "in-flight data persisted as channel state: ['a', 'b', 'c', 'd', 'e']" in out


def test_config_lists_flink_keys_with_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert "execution.checkpointing.timeout = 600000" in out
    assert (
        "execution.checkpointing.num-retained = 1  [deprecated: state.checkpoints.num-retained]"
        in out
    )
    assert (
        "execution.checkpointing.incremental = False  [deprecated: state.backend.incremental]"
        "  [no effect in ckptsim: snapshots are always full]" in out
    )
    assert "execution.checkpointing.interval = (none)\n" in out  # effective keys carry no note


@pytest.mark.parametrize(
    "argv", [[], ["no-such-command"], ["conformance"], ["--log-level", "loud", "demo"]]
)
def test_usage_errors_exit_with_2(argv: list[str]) -> None:
    assert main(argv) == 2


def test_console_script_is_installed() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "actors.cli", "config"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    assert "execution.checkpointing.interval" in done.stdout
