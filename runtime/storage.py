"""Checkpoint storage as the coordinator sees it: where a checkpoint goes and how it is finalized.

The only module of ``runtime`` allowed to do file I/O (the file-system storage lives here too
once the actor runtime writes real checkpoints). ``InMemoryCheckpointStorage`` keeps nothing on
disk and is what the pure protocol tests use.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from runtime import serde
from runtime.checkpoint import (
    CheckpointProperties,
    CompletedCheckpoint,
    StateHandle,
    TaskId,
    TaskStateSnapshot,
)
from runtime.effects import TaskSnapshot
from runtime.network import Buffer


class CheckpointStorageError(OSError):
    """Storage failed (an ``IOException`` in Flink): ``IO_EXCEPTION`` or ``FINALIZE_CHECKPOINT_FAILURE``."""


class CheckpointDiscarded(CheckpointStorageError):
    """A task wrote its state for a checkpoint that was aborted and deleted meanwhile."""


class CheckpointStorage(Protocol):
    def initialize_location(
        self, checkpoint_id: int, props: CheckpointProperties, target: str | None
    ) -> str | None:
        """Prepare the checkpoint's location; returns its reference (None: default)."""

    def finalize(self, checkpoint: CompletedCheckpoint) -> str | None:
        """Write the checkpoint's metadata; returns its external path (None: not externalized)."""


class InMemoryCheckpointStorage:
    """No files: locations and external paths are ``None``."""

    def initialize_location(
        self, checkpoint_id: int, props: CheckpointProperties, target: str | None
    ) -> str | None:
        return target

    def finalize(self, checkpoint: CompletedCheckpoint) -> str | None:
        return None


# --- file-system checkpoint storage -----------------------------------------------------------

METADATA = "_metadata"
FORMAT_VERSION = 1


class CorruptCheckpointError(CheckpointStorageError):
    """A checkpoint on disk is missing a file or fails its checksum; names the file."""


def _atomic_write(path: Path, data: bytes, *, sync: bool = False) -> None:
    """Write to a temporary name in the same directory, then rename: readers never see half.

    State files are not fsynced (a damaged one fails its checksum and recovery falls back to
    an older checkpoint); the ``_metadata`` file, written last, is.
    """
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        if sync:
            handle.flush()
            os.fsync(handle.fileno())
    os.replace(tmp, path)


def _encode_buffers(channels: dict[int, list[Buffer]]) -> dict[str, Any]:
    return {
        str(channel): [
            {"size": b.size, "records": serde.encode(list(b.records), where="in-flight records")}
            for b in buffers
        ]
        for channel, buffers in channels.items()
    }


def _decode_buffers(data: dict[str, Any]) -> dict[int, list[Buffer]]:
    return {
        int(channel): [Buffer(serde.decode(b["records"]), int(b["size"])) for b in buffers]
        for channel, buffers in data.items()
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedTaskState:
    operator_states: dict[str, Any]
    input_channels: dict[int, list[Buffer]]
    output_channels: dict[int, list[Buffer]]
    ended_input: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedCheckpoint:
    """A checkpoint read back from disk, every file verified."""

    path: str
    checkpoint_id: int
    timestamp: int
    is_savepoint: bool
    job_name: str
    operator_uids: list[str]
    tasks: dict[TaskId, LoadedTaskState]
    finished_tasks: frozenset[TaskId] = frozenset()


class FileSystemCheckpointStorage:
    """Checkpoints under ``<dir>/<job id>/chk-<n>/``: one state file per subtask and a
    ``_metadata`` JSON file with checksums, each written under a temporary name then renamed.
    A checkpoint is data, not code: everything is JSON, nothing is pickled."""

    def __init__(
        self,
        base_dir: str,
        job_id: str,
        *,
        job_name: str = "",
        create_subdir: bool = True,
        savepoint_dir: str | None = None,
    ) -> None:
        self.base_dir = Path(base_dir)
        self.root = self.base_dir / job_id if create_subdir else self.base_dir
        self.job_id = job_id
        self.job_name = job_name
        self.savepoint_dir = Path(savepoint_dir) if savepoint_dir else None
        self._locations: dict[int, Path] = {}
        #: checkpoint and savepoint directories this job made (a dict keeps their order)
        self._created: dict[Path, None] = {}
        self.root.mkdir(parents=True, exist_ok=True)
        taken = sorted(p.name for p in self.root.glob("chk-*"))
        if taken:
            listed = ", ".join(taken[:3]) + (", ..." if len(taken) > 3 else "")
            how = (
                "execution.checkpointing.create-subdir is false"
                if not create_subdir
                else f"the job id {job_id} was used before (a simulation names its job by its seed)"
            )
            raise CheckpointStorageError(
                f"{self.root} already holds checkpoints ({listed}) and {how}, so this job's "
                "checkpoints would overwrite them: give the job another directory "
                "(execution.checkpointing.dir), or remove that one"
            )

    def initialize_location(
        self, checkpoint_id: int, props: CheckpointProperties, target: str | None
    ) -> str | None:
        if props.is_savepoint:
            base = Path(target) if target else (self.savepoint_dir or self.root)
            location = base / f"savepoint-{self.job_id[:6]}-{checkpoint_id}"
        else:
            location = self.root / f"chk-{checkpoint_id}"
        try:
            location.mkdir(parents=True)
        except FileExistsError:
            if not props.is_savepoint:
                raise CheckpointStorageError(
                    f"{location} exists already: a checkpoint directory is never reused"
                ) from None
        else:
            self._created[location] = None
        self._locations[checkpoint_id] = location
        return str(location)

    def location(self, checkpoint_id: int) -> Path:
        return self._locations.get(checkpoint_id, self.root / f"chk-{checkpoint_id}")

    def write_task_state(self, location: str | None, snapshot: TaskSnapshot) -> TaskStateSnapshot:
        """The task's asynchronous part: one JSON file for operator and channel state."""
        directory = Path(location) if location else self.location(snapshot.checkpoint_id)
        if not directory.is_dir():
            raise CheckpointDiscarded(
                f"checkpoint {snapshot.checkpoint_id} was discarded ({directory} is gone)"
            )
        body = {
            "task": {"vertex": snapshot.task.vertex, "subtask": snapshot.task.subtask},
            "checkpoint_id": snapshot.checkpoint_id,
            "operator_states": {
                uid: serde.encode(state, where=f"state of operator {uid!r}")
                for uid, state in snapshot.operator_states.items()
            },
            "input_channels": _encode_buffers(snapshot.input_channels),
            "output_channels": _encode_buffers(snapshot.output_channels),
            "ended_input": snapshot.ended_input,
        }
        data = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
        path = directory / f"{_safe(snapshot.task.vertex)}-{snapshot.task.subtask}.state.json"
        try:
            _atomic_write(path, data)
        except FileNotFoundError:
            raise CheckpointDiscarded(
                f"checkpoint {snapshot.checkpoint_id} was discarded ({directory} is gone)"
            ) from None
        handle = StateHandle(key=str(path), size=len(data), checksum=serde.checksum(data))
        return TaskStateSnapshot(handles=(handle,), checkpointed_size=len(data))

    def finalize(self, checkpoint: CompletedCheckpoint) -> str | None:
        directory = self.location(checkpoint.checkpoint_id)
        tasks = []
        for task, state in sorted(
            checkpoint.task_states.items(), key=lambda kv: (kv[0].vertex, kv[0].subtask)
        ):
            files = []
            for handle in state.handles:
                path = Path(handle.key)
                digest = handle.checksum  # computed by the task as it wrote the file
                if digest is None:
                    try:
                        digest = serde.checksum(path.read_bytes())
                    except OSError as error:
                        raise CheckpointStorageError(
                            f"state file {path} of task {task} is missing: {error}"
                        ) from error
                files.append(
                    {
                        "file": os.path.relpath(path, directory),
                        "size": handle.size,
                        "checksum": digest,
                    }
                )
            tasks.append({"vertex": task.vertex, "subtask": task.subtask, "files": files})
        body = {
            "format": "ckptsim-checkpoint",
            "version": FORMAT_VERSION,
            "job_id": self.job_id,
            "job_name": self.job_name,
            "checkpoint_id": checkpoint.checkpoint_id,
            "timestamp": checkpoint.timestamp,
            "completion_timestamp": checkpoint.completion_timestamp,
            "is_savepoint": checkpoint.is_savepoint,
            "snapshot_type": checkpoint.props.snapshot_type.value,
            "tasks": tasks,
            "finished_tasks": sorted([t.vertex, t.subtask] for t in checkpoint.finished_tasks),
        }
        canonical = json.dumps(body, separators=(",", ":"), sort_keys=True)
        document = {"checksum": serde.checksum(canonical.encode()), "metadata": body}
        # compact (json's C encoder; indenting would use the slow pure-Python one)
        data = json.dumps(document, separators=(",", ":"), sort_keys=True).encode()
        _atomic_write(directory / METADATA, data, sync=True)
        return str(directory)

    def discard(self, checkpoint_id: int, handles: tuple[StateHandle, ...]) -> None:
        """Delete state files; the checkpoint's directory goes once nothing else is in it."""
        directories = set()
        for handle in handles:
            path = Path(handle.key)
            directories.add(path.parent)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        directories.add(self.location(checkpoint_id))
        for directory in directories:
            self._remove_if_only_metadata(directory)

    def discard_location(self, checkpoint_id: int) -> None:
        """An aborted checkpoint: its whole directory goes (Flink's ``disposeOnFailure``), if
        this job made it."""
        location = self._locations.pop(checkpoint_id, None)
        if location is not None and location in self._created:
            shutil.rmtree(location, ignore_errors=True)

    def remove_unretained(self, retained: list[str]) -> None:
        """After the job: delete every checkpoint directory this job made that is not retained
        (a task may have written into a checkpoint that was aborted while it wrote). Nothing
        else under the directory is touched."""
        keep = {Path(p).resolve() for p in retained}
        for directory in self._created:
            if directory.name.startswith("chk-") and directory.resolve() not in keep:
                shutil.rmtree(directory, ignore_errors=True)

    @staticmethod
    def _remove_if_only_metadata(directory: Path) -> None:
        if not directory.is_dir():
            return
        left = [p for p in directory.iterdir() if p.name != METADATA]
        if not left:
            shutil.rmtree(directory, ignore_errors=True)


def load_checkpoint(path: str) -> LoadedCheckpoint:
    """Read and verify a checkpoint or savepoint directory (or its ``_metadata`` file)."""
    location = Path(path)
    if location.name == METADATA:
        location = location.parent
    metadata_path = location / METADATA
    if not location.exists():
        raise CorruptCheckpointError(f"{location} does not exist")
    if not metadata_path.is_file():
        raise CorruptCheckpointError(
            f"{location} is not a checkpoint: it has no {METADATA} file "
            "(a checkpoint directory looks like <dir>/<job id>/chk-<n>/)"
        )
    try:
        document = json.loads(metadata_path.read_text())
        body = document["metadata"]
        expected = document["checksum"]
    except (ValueError, KeyError, TypeError) as error:
        raise CorruptCheckpointError(
            f"{metadata_path} is not a ckptsim checkpoint metadata file: {error}"
        ) from error
    canonical = json.dumps(body, separators=(",", ":"), sort_keys=True)
    if serde.checksum(canonical.encode()) != expected:
        raise CorruptCheckpointError(
            f"{metadata_path} fails its checksum: the file was changed or damaged"
        )
    tasks: dict[TaskId, LoadedTaskState] = {}
    uids: set[str] = set()
    for entry in body["tasks"]:
        task = TaskId(entry["vertex"], int(entry["subtask"]))
        operator_states: dict[str, Any] = {}
        inputs: dict[int, list[Buffer]] = {}
        outputs: dict[int, list[Buffer]] = {}
        ended = False
        for file in entry["files"]:
            file_path = location / file["file"]
            try:
                data = file_path.read_bytes()
            except OSError as error:
                raise CorruptCheckpointError(
                    f"state file {file_path} of task {task} is missing: {error}"
                ) from error
            if serde.checksum(data) != file["checksum"]:
                raise CorruptCheckpointError(
                    f"state file {file_path} of task {task} fails its checksum"
                )
            state = json.loads(data)
            operator_states.update(
                {uid: serde.decode(s) for uid, s in state["operator_states"].items()}
            )
            inputs.update(_decode_buffers(state["input_channels"]))
            outputs.update(_decode_buffers(state["output_channels"]))
            ended = ended or bool(state.get("ended_input", False))
        uids.update(operator_states)
        tasks[task] = LoadedTaskState(
            operator_states=operator_states,
            input_channels=inputs,
            output_channels=outputs,
            ended_input=ended,
        )
    return LoadedCheckpoint(
        path=str(location),
        checkpoint_id=int(body["checkpoint_id"]),
        timestamp=int(body["timestamp"]),
        is_savepoint=bool(body["is_savepoint"]),
        job_name=str(body.get("job_name", "")),
        operator_uids=sorted(uids),
        tasks=tasks,
        finished_tasks=frozenset(TaskId(str(v), int(i)) for v, i in body.get("finished_tasks", [])),
    )


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def make_temp_dir(prefix: str = "ckptsim-") -> str:
    return tempfile.mkdtemp(prefix=prefix)
