"""File-system checkpoint storage: layout, checksums, clear errors for damaged checkpoints,
and cleanup that never touches what the job did not write."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from runtime.checkpoint import (
    CheckpointProperties,
    CompletedCheckpoint,
    ExternalizedCheckpointRetention,
    TaskId,
)
from runtime.effects import TaskSnapshot
from runtime.network import Buffer
from runtime.storage import (
    METADATA,
    CheckpointStorageError,
    CorruptCheckpointError,
    FileSystemCheckpointStorage,
    load_checkpoint,
)

PROPS = CheckpointProperties.for_checkpoint(
    ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
)
A, B = TaskId("source-1", 0), TaskId("reduce-2", 1)


def write_checkpoint(storage: FileSystemCheckpointStorage, cid: int) -> CompletedCheckpoint:
    location = storage.initialize_location(cid, PROPS, None)
    states = {
        A: storage.write_task_state(
            location,
            TaskSnapshot(
                checkpoint_id=cid,
                task=A,
                operator_states={"source-1": {"position": 41}},
                input_channels={},
                output_channels={0: [Buffer([("k", 1)], 16)]},
            ),
        ),
        B: storage.write_task_state(
            location,
            TaskSnapshot(
                checkpoint_id=cid,
                task=B,
                operator_states={"reduce-2": {"keys": ["a", "b"], "values": [(1, 2), {3}]}},
                input_channels={1: [Buffer([b"raw", None], 8)]},
                output_channels={},
            ),
        ),
    }
    checkpoint = CompletedCheckpoint(
        checkpoint_id=cid, timestamp=5, completion_timestamp=9, props=PROPS, task_states=states
    )
    assert storage.finalize(checkpoint) == location
    return dataclasses.replace(checkpoint, external_path=location)


def path_of(checkpoint: CompletedCheckpoint) -> Path:
    assert checkpoint.external_path is not None
    return Path(checkpoint.external_path)


def test_a_checkpoint_round_trips_with_its_state_and_channel_state(tmp_path: Path) -> None:
    storage = FileSystemCheckpointStorage(str(tmp_path), "job1", job_name="demo")
    path = path_of(write_checkpoint(storage, 3))
    assert path == tmp_path / "job1" / "chk-3"
    assert sorted(p.name for p in path.iterdir()) == [
        METADATA,
        "reduce-2-1.state.json",
        "source-1-0.state.json",
    ]
    loaded = load_checkpoint(str(path / METADATA))  # the _metadata file or its directory
    assert (loaded.checkpoint_id, loaded.timestamp, loaded.job_name) == (3, 5, "demo")
    assert loaded.operator_uids == ["reduce-2", "source-1"]
    assert loaded.tasks[A].operator_states == {"source-1": {"position": 41}}
    assert loaded.tasks[B].operator_states["reduce-2"]["values"] == [(1, 2), {3}]
    assert loaded.tasks[A].output_channels[0][0].records == [("k", 1)]
    assert loaded.tasks[B].input_channels[1][0].records == [b"raw", None]
    assert not [p for p in path.iterdir() if p.name.endswith(".tmp")]


def relabel(metadata: Path, **changes: object) -> None:
    """Change fields of a metadata file but not its checksum (as a careless edit would)."""
    document = json.loads(metadata.read_text())
    document["metadata"].update(changes)
    metadata.write_text(json.dumps(document))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (
            lambda p: (p / "reduce-2-1.state.json").write_text("{}"),
            "reduce-2-1.state.json of task reduce-2#1 fails its checksum",
        ),
        (
            lambda p: (p / "source-1-0.state.json").unlink(),
            "source-1-0.state.json of task source-1#0 is missing",
        ),
        (lambda p: relabel(p / METADATA, checkpoint_id=4), "_metadata fails its checksum"),
        (
            lambda p: (p / METADATA).write_text("not json"),
            "is not a ckptsim checkpoint metadata file",
        ),
        (lambda p: (p / METADATA).unlink(), "is not a checkpoint: it has no _metadata file"),
    ],
)
def test_a_damaged_checkpoint_is_refused_naming_the_file(
    tmp_path: Path, damage: Callable[[Path], object], message: str
) -> None:
    path = path_of(write_checkpoint(FileSystemCheckpointStorage(str(tmp_path), "job1"), 3))
    damage(path)
    with pytest.raises(CorruptCheckpointError, match=message):
        load_checkpoint(str(path))


def test_a_missing_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CorruptCheckpointError, match="does not exist"):
        load_checkpoint(str(tmp_path / "nowhere"))


def test_writing_into_a_discarded_checkpoint_fails_clearly(tmp_path: Path) -> None:
    storage = FileSystemCheckpointStorage(str(tmp_path), "job1")
    location = storage.initialize_location(1, PROPS, None)
    storage.discard_location(1)
    snapshot = TaskSnapshot(
        checkpoint_id=1, task=A, operator_states={}, input_channels={}, output_channels={}
    )
    with pytest.raises(CheckpointStorageError, match="checkpoint 1 was discarded"):
        storage.write_task_state(location, snapshot)


def test_discarding_a_subsumed_checkpoint_removes_its_directory(tmp_path: Path) -> None:
    storage = FileSystemCheckpointStorage(str(tmp_path), "job1")
    checkpoint = write_checkpoint(storage, 1)
    assert len(checkpoint.handles()) == 2
    storage.discard(1, checkpoint.handles())
    assert not path_of(checkpoint).exists()
    assert (tmp_path / "job1").is_dir()


def test_a_directory_holding_checkpoints_is_refused_without_per_job_subdirectories(
    tmp_path: Path,
) -> None:
    earlier = tmp_path / "chk-1"  # an earlier run's retained checkpoint
    earlier.mkdir()
    (earlier / METADATA).write_text("{}")
    with pytest.raises(CheckpointStorageError, match=r"already holds checkpoints \(chk-1\)"):
        FileSystemCheckpointStorage(str(tmp_path), "job1", create_subdir=False)
    assert (earlier / METADATA).read_text() == "{}"
    FileSystemCheckpointStorage(str(tmp_path), "job2")  # its own sub-directory is fine


def test_cleanup_after_the_job_removes_only_unretained_directories_it_made(
    tmp_path: Path,
) -> None:
    storage = FileSystemCheckpointStorage(str(tmp_path), "job1", create_subdir=False)
    (tmp_path / "notes").mkdir()  # something else in the directory
    kept = path_of(write_checkpoint(storage, 1))
    storage.initialize_location(2, PROPS, None)  # aborted while a task wrote into it
    storage.remove_unretained([str(kept)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chk-1", "notes"]
    storage.remove_unretained([])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes"]
    with pytest.raises(CheckpointStorageError, match="never reused"):
        (tmp_path / "chk-3").mkdir()
        storage.initialize_location(3, PROPS, None)
