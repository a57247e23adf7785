"""Checkpoint storage failing under a running job, on the deterministic simulation: the
coordinator's storage work (making a checkpoint's location, writing its metadata) runs as
effects whose completions come back through its mailbox, and a failure says which storage
failed and why (the errno's text), in the job's failures, the checkpoint statistics and the
trace. Also the CLI's answer to a checkpoint directory that cannot be made."""

from __future__ import annotations

import errno
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

import runtime.storage as storage_module
from ckptsim import StreamExecutionEnvironment
from ckptsim._cli import main
from ckptsim.testing import Simulation
from runtime.checkpoint import CheckpointProperties, CompletedCheckpoint
from runtime.status import JobStatus
from runtime.storage import FileSystemCheckpointStorage

N = 3000
FULL = "No space left on device (errno 28, ENOSPC)"


def build(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(2)
    env.enable_checkpointing(10)
    env.configure({"ckptsim.buffer.records": 50})
    (
        env.from_generator(lambda i: (i % 5, 1), N, rate=50_000)
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .collect("sums")
    )


def final_sums(result: Any) -> dict[int, int]:
    sums: dict[int, int] = {}
    for key, total in result.collected("sums"):
        sums[key] = max(sums.get(key, 0), total)
    return sums


EXPECTED = {k: N // 5 for k in range(5)}


@pytest.fixture
def full_disk_at_checkpoint_2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writing checkpoint 2's metadata fails: the disk is full."""
    finalize = FileSystemCheckpointStorage.finalize

    def failing(self: FileSystemCheckpointStorage, checkpoint: CompletedCheckpoint) -> str | None:
        if checkpoint.checkpoint_id == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return finalize(self, checkpoint)

    monkeypatch.setattr(FileSystemCheckpointStorage, "finalize", failing)


@pytest.fixture
def full_disk_for_location_2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Making checkpoint 2's directory fails: the disk is full."""
    initialize = FileSystemCheckpointStorage.initialize_location

    def failing(
        self: FileSystemCheckpointStorage,
        checkpoint_id: int,
        props: CheckpointProperties,
        target: str | None,
    ) -> str | None:
        if checkpoint_id == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.root / "chk-2"))
        return initialize(self, checkpoint_id, props, target)

    monkeypatch.setattr(FileSystemCheckpointStorage, "initialize_location", failing)


@pytest.mark.usefixtures("full_disk_at_checkpoint_2")
def test_a_failed_finalize_says_why_and_past_the_tolerable_count_fails_the_job_over(
    tmp_path: Path,
) -> None:
    sim = Simulation(seed=3, storage="filesystem")
    settings = {
        "execution.checkpointing.dir": str(tmp_path),
        "execution.checkpointing.tolerable-failed-checkpoints": 0,
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.delay": "5 ms",
    }
    result = sim.run(build, settings)
    assert result.status is JobStatus.FINISHED and result.restarts == 1
    (cause,) = result.failures
    assert cause.startswith(
        "Exceeded checkpoint tolerable failure threshold. (last failure: "
        "FINALIZE_CHECKPOINT_FAILURE: checkpoint storage "
    )
    assert cause.endswith(f": writing the metadata of checkpoint 2 failed: {FULL})")
    (second,) = [h for h in result.checkpoints["history"] if h["id"] == 2]
    assert second["status"] == "FAILED"
    assert second["failure_message"].startswith("Failure to finalize checkpoint. Cause: ")
    assert FULL in second["failure_message"]
    (aborted,) = [
        e for e in sim.events if e["event"] == "checkpoint_aborted" and e["checkpoint_id"] == 2
    ]
    assert aborted["reason"] == "FINALIZE_CHECKPOINT_FAILURE" and FULL in aborted["cause"]
    assert final_sums(result) == EXPECTED
    assert not list(tmp_path.rglob("chk-2")), "the failed checkpoint's directory is gone"


@pytest.mark.usefixtures("full_disk_for_location_2")
def test_a_location_that_cannot_be_made_is_an_io_exception_naming_the_storage() -> None:
    sim = Simulation(seed=3, storage="filesystem")
    settings = {
        "execution.checkpointing.tolerable-failed-checkpoints": 0,
        "restart-strategy.type": "none",
    }
    result = sim.run(build, settings)
    assert result.status is JobStatus.FAILED
    assert result.failure is not None
    assert "(last failure: IO_EXCEPTION: checkpoint storage " in result.failure
    assert f"creating the location of checkpoint 2 failed: {FULL}: " in result.failure
    assert result.failure.endswith("recovery is suppressed by restart-strategy.type: disable")
    assert 2 not in result.completed_checkpoint_ids


@pytest.fixture
def full_disk_for_task_state_2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writing a task's state file for checkpoint 2 fails: the disk is full."""
    write = storage_module._atomic_write

    def failing(path: Path, data: bytes, **kwargs: Any) -> None:
        if path.parent.name == "chk-2" and path.name.endswith(".state.msgpack"):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        write(path, data, **kwargs)

    monkeypatch.setattr(storage_module, "_atomic_write", failing)


@pytest.mark.usefixtures("full_disk_for_task_state_2")
def test_a_task_state_file_that_cannot_be_written_names_the_storage_and_the_errno() -> None:
    """The task's asynchronous part declines with CHECKPOINT_ASYNC_EXCEPTION, and what made it
    fail reaches the statistics and the job's failure."""
    sim = Simulation(seed=3, storage="filesystem")
    settings = {
        "execution.checkpointing.tolerable-failed-checkpoints": 0,
        "restart-strategy.type": "none",
    }
    result = sim.run(build, settings)
    assert result.status is JobStatus.FAILED
    assert result.failure is not None
    assert "(last failure: CHECKPOINT_ASYNC_EXCEPTION: checkpoint storage " in result.failure
    assert "for checkpoint 2 failed: " + FULL in result.failure
    assert re.search(r"writing the state of \S+#\d for checkpoint 2", result.failure)
    (second,) = [h for h in result.checkpoints["history"] if h["id"] == 2]
    assert second["failure_message"].startswith("Asynchronous task checkpoint failed. Cause: ")
    assert FULL in second["failure_message"]


@pytest.mark.usefixtures("full_disk_at_checkpoint_2")
def test_storage_completions_replay_by_seed() -> None:
    """They come back through the coordinator's mailbox: one seed, one schedule."""
    runs = []
    for _ in range(2):
        sim = Simulation(seed=5, storage="filesystem")
        sim.run(build, {"execution.checkpointing.tolerable-failed-checkpoints": 5})
        runs.append([(e["event"], e.get("checkpoint_id"), e.get("time_ms")) for e in sim.events])
    assert runs[0] == runs[1]
    assert ("checkpoint_aborted", 2) in {(event, cid) for event, cid, _ in runs[0]}


def test_the_cli_names_a_checkpoint_directory_that_cannot_be_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    script = tmp_path / "job.py"
    script.write_text(
        textwrap.dedent(
            """
            def build(env):
                env.enable_checkpointing(10)
                env.from_collection(range(10)).collect()
            """
        )
    )
    code = main(["run", str(script), "--simulate", "-D", f"execution.checkpointing.dir={blocker}"])
    err = capsys.readouterr().err
    assert code == 2
    # the storage and the errno, not the script's line and an exception's name
    assert err.startswith(f"ckptsim run: checkpoint storage {blocker}/")
    assert (
        "creating the job's checkpoint directory failed: Not a directory (errno 20, ENOTDIR)" in err
    )
    assert "NotADirectoryError" not in err
