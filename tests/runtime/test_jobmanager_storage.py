"""Checkpoints in the JobManager's memory (Flink's ``JobManagerCheckpointStorage``): the same
documents as file checkpoints, read back through the same checks, no file; savepoints still go
to files; nothing outlives the job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runtime.checkpoint import CheckpointProperties, CompletedCheckpoint
from runtime.snapshot import TaskSnapshot
from runtime.storage import (
    METADATA,
    CheckpointStorageError,
    CorruptCheckpointError,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
    load_checkpoint,
)
from tests.runtime.test_storage import PROPS, A, B, write_checkpoint


def test_a_checkpoint_in_memory_round_trips_as_a_file_checkpoint_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    memory = JobManagerCheckpointStorage("job1", job_name="demo")
    files = FileSystemCheckpointStorage(str(tmp_path / "files"), "job1", job_name="demo")
    in_memory = write_checkpoint(memory, 3)
    on_disk = write_checkpoint(files, 3)
    assert in_memory.external_path == "jobmanager:job1/chk-3"
    assert list(tmp_path.iterdir()) == [tmp_path / "files"]  # no file written
    # the same state documents, byte for byte: the same sizes and checksums
    assert [(h.size, h.checksum) for h in in_memory.handles()] == [
        (h.size, h.checksum) for h in on_disk.handles()
    ]
    loaded = memory.load(str(in_memory.external_path))
    expected = load_checkpoint(str(on_disk.external_path))
    assert loaded.path == "jobmanager:job1/chk-3"
    assert (loaded.checkpoint_id, loaded.job_name, loaded.operator_uids) == (
        expected.checkpoint_id,
        expected.job_name,
        expected.operator_uids,
    )
    for task in (A, B):
        mine, theirs = loaded.tasks[task], expected.tasks[task]
        assert mine.operator_states == theirs.operator_states
        assert mine.input_channels == theirs.input_channels
        assert mine.output_channels == theirs.output_channels
        assert mine.operators == theirs.operators
    # a restore gets its own copy: changing what it loaded changes no later restore
    loaded.tasks[A].operator_states["source-1"]["position"] = 0
    again = memory.load(str(in_memory.external_path))
    assert again.tasks[A].operator_states == {"source-1": {"position": 41}}


def test_a_damaged_or_discarded_checkpoint_in_memory_is_refused() -> None:
    memory = JobManagerCheckpointStorage("job1")
    checkpoint = write_checkpoint(memory, 1)
    path = str(checkpoint.external_path)
    documents = memory._memory[path]
    name = next(n for n in documents if n.startswith("reduce-2"))
    documents[name] = documents[name].replace(b"\x92\x01\x02", b"\x92\x01\x03")  # (1, 2)
    with pytest.raises(
        CorruptCheckpointError, match=r"reduce-2-1\.state\.msgpack .* fails its checksum"
    ):
        memory.load(path)
    memory.discard(1, checkpoint.handles())
    assert memory._memory == {}
    with pytest.raises(CorruptCheckpointError, match="lives only as long as the job"):
        memory.load(path)


def test_writing_into_a_discarded_location_in_memory_fails_clearly() -> None:
    memory = JobManagerCheckpointStorage("job1")
    location = memory.initialize_location(2, PROPS, None)
    memory.discard_location(2)
    snapshot = TaskSnapshot(
        checkpoint_id=2, task=A, operator_states={}, input_channels={}, output_channels={}
    )
    with pytest.raises(CheckpointStorageError, match="checkpoint 2 was discarded"):
        memory.write_task_state(location, snapshot)


def test_nothing_outlives_the_job() -> None:
    memory = JobManagerCheckpointStorage("job1")
    path = str(write_checkpoint(memory, 1).external_path)
    memory.remove_unretained([path])
    with pytest.raises(CorruptCheckpointError, match="does not exist"):
        memory.load(path)


def test_savepoints_still_go_to_files(tmp_path: Path) -> None:
    savepoint = CheckpointProperties.for_savepoint(forced=False)
    without = JobManagerCheckpointStorage("job1")
    with pytest.raises(CheckpointStorageError, match="no savepoint directory configured"):
        without.initialize_location(1, savepoint, None)
    memory = JobManagerCheckpointStorage("job1", savepoint_dir=str(tmp_path))
    location = memory.initialize_location(1, savepoint, None)
    assert location is not None and Path(location).parent == tmp_path
    state = memory.write_task_state(
        location,
        TaskSnapshot(
            checkpoint_id=1,
            task=A,
            operator_states={"source-1": {"position": 7}},
            input_channels={},
            output_channels={},
        ),
    )
    path = memory.finalize(
        CompletedCheckpoint(
            checkpoint_id=1,
            timestamp=1,
            completion_timestamp=2,
            props=savepoint,
            task_states={A: state},
        )
    )
    assert path == location and (Path(location) / METADATA).is_file()
    assert json.loads((Path(location) / METADATA).read_text())["metadata"]["is_savepoint"]
    loaded = memory.load(path)  # a file: read as any savepoint
    assert loaded.tasks[A].operator_states == {"source-1": {"position": 7}}
