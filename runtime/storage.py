"""Checkpoint storage: where a checkpoint goes, how it is finalized, read back and discarded.

The only module of ``runtime`` allowed to do file I/O. ``FileSystemCheckpointStorage`` writes
what jobs checkpoint (``<dir>/<job id>/chk-<n>/``); ``InMemoryCheckpointStorage`` keeps nothing
on disk and is what the pure protocol tests use.

The checkpoint coordinator never calls a storage itself: it asks for storage work with effects
(``InitializeLocation``, ``FinalizeCheckpoint``), which a runtime carries out with
``carry_out`` (the coordinator's actor on a background thread, a test or the conformance
harness at once) and answers with the completion message it returns. A failure's text names the
storage, what it was doing and the errno (``storage_error``).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import stat
import tempfile
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import msgspec

from runtime import serde
from runtime.checkpoint import (
    CheckpointProperties,
    CompletedCheckpoint,
    StateHandle,
    TaskId,
    TaskStateSnapshot,
)
from runtime.effects import (
    CoordinatorEffect,
    FinalizeCheckpoint,
    InitializeLocation,
    StorageEffect,
)
from runtime.messages import (
    CheckpointFinalizationFailed,
    CheckpointFinalized,
    CoordinatorMessage,
    LocationInitializationFailed,
    LocationInitialized,
    StorageCompletion,
)
from runtime.network import Buffer
from runtime.snapshot import LoadedCheckpoint, LoadedTaskState, TaskSnapshot


class CheckpointStorageError(OSError):
    """Storage failed (an ``IOException`` in Flink): ``IO_EXCEPTION`` or ``FINALIZE_CHECKPOINT_FAILURE``."""


class CheckpointDiscarded(CheckpointStorageError):
    """A task wrote its state for a checkpoint that was aborted and deleted meanwhile."""


class CheckpointStorage(Protocol):
    @property
    def name(self) -> str:
        """What errors call the storage (its directory)."""
        ...

    def initialize_location(
        self, checkpoint_id: int, props: CheckpointProperties, target: str | None
    ) -> str | None:
        """Prepare the checkpoint's location; returns its reference (None: default)."""

    def finalize(self, checkpoint: CompletedCheckpoint) -> str | None:
        """Write the checkpoint's metadata; returns its external path (None: not externalized)."""


class InMemoryCheckpointStorage:
    """No files: locations and external paths are ``None``."""

    name = "in-memory"

    def initialize_location(
        self, checkpoint_id: int, props: CheckpointProperties, target: str | None
    ) -> str | None:
        return target

    def finalize(self, checkpoint: CompletedCheckpoint) -> str | None:
        return None


# --- file-system checkpoint storage -----------------------------------------------------------

METADATA = "_metadata"
#: 3: state files are msgpack documents (``<vertex>-<subtask>.state.msgpack``) whose state and
#: in-flight records are ``runtime.serde``'s encoding version 3 (msgpack with extension types),
#: and the metadata records the final source position of each finished subtask that ran a
#: source (field ``final_positions``), which a restore checks; 2: JSON state files
#: (``.state.json``) with state in encoding version 2 (Decimal, datetime, rows, NumPy scalars
#: ...); 1: the same with encoding version 1. All three still read (1 and 2 recorded no final
#: positions: one that lists a source subtask as finished is refused).
FORMAT_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
#: the versions whose state files are JSON (version 3's are msgpack)
JSON_VERSIONS = (1, 2)


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


def _encode_buffer(buffer: Buffer, where: str) -> dict[str, Any]:
    encoded = {"size": buffer.size, "records": serde.pack(list(buffer.records), where=where)}
    if buffer.timestamps is not None:
        encoded["timestamps"] = list(buffer.timestamps)
    return encoded


def _encode_buffers(channels: dict[int, list[Buffer]], task: TaskId, side: str) -> dict[str, Any]:
    return {
        str(channel): [
            _encode_buffer(b, f"in-flight records of {task}, {side} channel {channel}")
            for b in buffers
        ]
        for channel, buffers in channels.items()
    }


def _state_file_name(snapshot: TaskSnapshot) -> str:
    return f"{_safe(snapshot.task.vertex)}-{snapshot.task.subtask}.state.msgpack"


def _task_state_document(snapshot: TaskSnapshot, names: Mapping[str, str]) -> bytes:
    """A task's state file: operator and channel state, as a msgpack document whose state
    and records are each ``serde.pack``'s bytes (format version 3). ``names``: each
    operator's name as declared, by uid (for errors)."""
    body = {
        "task": {"vertex": snapshot.task.vertex, "subtask": snapshot.task.subtask},
        "checkpoint_id": snapshot.checkpoint_id,
        "operator_states": {
            uid: serde.pack(
                state,
                where=f"state of operator {names[uid]!r} ({uid})"
                if uid in names
                else f"state of operator {uid!r}",
            )
            for uid, state in snapshot.operator_states.items()
        },
        "input_channels": _encode_buffers(snapshot.input_channels, snapshot.task, "input"),
        "output_channels": _encode_buffers(snapshot.output_channels, snapshot.task, "output"),
        "ended_input": snapshot.ended_input,
    }
    if names:  # every operator the task runs, stateless ones too (a restore checks them)
        body["operators"] = sorted(names)
    return msgspec.msgpack.encode(body)


def _metadata_document(
    job_id: str,
    job_name: str,
    checkpoint: CompletedCheckpoint,
    directory: str,
    digest_of: Callable[[str, TaskId], str],
) -> bytes:
    """A checkpoint's ``_metadata``: its tasks' state files (relative to ``directory``) with
    sizes and checksums (``digest_of(key, task)`` for a handle that has none), and a checksum
    of it all."""
    # each vertex's parallelism: its subtasks, running or finished (a restore checks that
    # the checkpoint lists them all)
    subtasks: dict[str, set[int]] = {}
    for listed in (*checkpoint.task_states, *checkpoint.finished_tasks):
        subtasks.setdefault(listed.vertex, set()).add(listed.subtask)
    tasks = []
    for task, state in sorted(
        checkpoint.task_states.items(), key=lambda kv: (kv[0].vertex, kv[0].subtask)
    ):
        files = []
        for handle in state.handles:
            # computed by the task as it wrote the file
            digest = handle.checksum if handle.checksum is not None else digest_of(handle.key, task)
            files.append(
                {
                    "file": os.path.relpath(handle.key, directory),
                    "size": handle.size,
                    "checksum": digest,
                }
            )
        tasks.append(
            {
                "vertex": task.vertex,
                "subtask": task.subtask,
                "parallelism": len(subtasks[task.vertex]),
                "files": files,
            }
        )
    body = {
        "format": "ckptsim-checkpoint",
        "version": FORMAT_VERSION,
        "job_id": job_id,
        "job_name": job_name,
        "checkpoint_id": checkpoint.checkpoint_id,
        "timestamp": checkpoint.timestamp,
        "completion_timestamp": checkpoint.completion_timestamp,
        "is_savepoint": checkpoint.is_savepoint,
        "snapshot_type": checkpoint.props.snapshot_type.value,
        "tasks": tasks,
        "finished_tasks": sorted([t.vertex, t.subtask] for t in checkpoint.finished_tasks),
        "final_positions": [
            [task.vertex, task.subtask, serde.encode(positions, where=f"final position of {task}")]
            for task, positions in sorted(
                checkpoint.final_positions.items(), key=lambda kv: (kv[0].vertex, kv[0].subtask)
            )
            if task in checkpoint.finished_tasks
        ],
    }
    canonical = json.dumps(body, separators=(",", ":"), sort_keys=True)
    document = {"checksum": serde.checksum(canonical.encode()), "metadata": body}
    # compact (json's C encoder; indenting would use the slow pure-Python one)
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode()


def _absolute(directory: str) -> Path:
    """A savepoint directory as Flink qualifies it (``Path.makeQualified``): a relative one
    under the working directory, ``.`` and ``..`` resolved, so the savepoint's path in REST
    answers and printed lines is absolute (``file:/home/me/sp/savepoint-...``)."""
    return Path(os.path.abspath(directory))


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
        self.savepoint_dir = _absolute(savepoint_dir) if savepoint_dir else None
        self._locations: dict[int, Path] = {}
        #: checkpoint and savepoint directories this job made (a dict keeps their order)
        self._created: dict[Path, None] = {}
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CheckpointStorageError(
                storage_error(self.name, "creating the job's checkpoint directory", error)
            ) from error
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

    @property
    def name(self) -> str:
        return str(self.root)

    def initialize_location(
        self, checkpoint_id: int, props: CheckpointProperties, target: str | None
    ) -> str | None:
        if props.is_savepoint:
            base = _absolute(target) if target else (self.savepoint_dir or self.root)
            location = base / f"savepoint-{self.job_id[:6]}-{checkpoint_id}"
        else:
            location = self.root / f"chk-{checkpoint_id}"
        taken = 0
        while True:  # a directory is never reused: a savepoint whose name is taken gets -1, -2...
            try:
                location.mkdir(parents=True)
                break
            except FileExistsError:
                if not props.is_savepoint:
                    raise CheckpointStorageError(
                        f"{location} exists already: a checkpoint directory is never reused"
                    ) from None
                taken += 1
                location = location.with_name(
                    f"savepoint-{self.job_id[:6]}-{checkpoint_id}-{taken}"
                )
        self._created[location] = None
        self._locations[checkpoint_id] = location
        return str(location)

    def location(self, checkpoint_id: int) -> Path:
        return self._locations.get(checkpoint_id, self.root / f"chk-{checkpoint_id}")

    def write_task_state(
        self,
        location: str | None,
        snapshot: TaskSnapshot,
        names: Mapping[str, str] | None = None,
    ) -> TaskStateSnapshot:
        """The task's asynchronous part: one JSON file for operator and channel state.
        ``names``: each operator's name as declared, by uid (for errors)."""
        directory = Path(location) if location else self.location(snapshot.checkpoint_id)
        if not directory.is_dir():
            raise CheckpointDiscarded(
                f"checkpoint {snapshot.checkpoint_id} was discarded ({directory} is gone)"
            )
        data = _task_state_document(snapshot, names or {})
        path = directory / _state_file_name(snapshot)
        try:
            _atomic_write(path, data)
        except FileNotFoundError:
            raise CheckpointDiscarded(
                f"checkpoint {snapshot.checkpoint_id} was discarded ({directory} is gone)"
            ) from None
        except OSError as error:  # a full disk, a read-only directory: the storage's fault
            raise CheckpointStorageError(
                storage_error(
                    str(self.root),
                    f"writing the state of {snapshot.task} for checkpoint {snapshot.checkpoint_id}",
                    error,
                )
            ) from None
        handle = StateHandle(key=str(path), size=len(data), checksum=serde.checksum(data))
        return TaskStateSnapshot(handles=(handle,), checkpointed_size=len(data))

    def finalize(self, checkpoint: CompletedCheckpoint) -> str | None:
        directory = self.location(checkpoint.checkpoint_id)

        def digest_of(path: str, task: TaskId) -> str:
            try:
                return serde.checksum(Path(path).read_bytes())
            except OSError as error:
                raise CheckpointStorageError(
                    f"state file {path} of task {task} is missing: {error}"
                ) from error

        data = _metadata_document(self.job_id, self.job_name, checkpoint, str(directory), digest_of)
        _atomic_write(directory / METADATA, data, sync=True)
        return str(directory)

    def discard(self, checkpoint_id: int, handles: tuple[StateHandle, ...]) -> None:
        """Delete the metadata first (as Flink does: a checkpoint whose discarding was cut short,
        by a ``kill -9`` say, is then no checkpoint at all rather than one that lacks state
        files), then the state files; the directory goes once nothing else is in it."""
        with contextlib.suppress(FileNotFoundError):
            (self.location(checkpoint_id) / METADATA).unlink()
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

    def load(self, path: str) -> LoadedCheckpoint:
        """Read and verify the checkpoint or savepoint at ``path`` (``load_checkpoint``)."""
        return load_checkpoint(path)

    @staticmethod
    def _remove_if_only_metadata(directory: Path) -> None:
        if not directory.is_dir():
            return
        left = [p for p in directory.iterdir() if p.name != METADATA]
        if not left:
            shutil.rmtree(directory, ignore_errors=True)


#: how a checkpoint kept in the JobManager's memory is named: ``jobmanager:<job id>/chk-<n>``
#: (not a file system path: it means something only to the job that took it)
MEMORY_SCHEME = "jobmanager:"


class JobManagerCheckpointStorage(FileSystemCheckpointStorage):
    """Flink's ``JobManagerCheckpointStorage`` (``execution.checkpointing.storage:
    jobmanager``): checkpoints in the JobManager's memory, no file and no fsync.

    A task's asynchronous part encodes its state exactly as into a state file (the same JSON,
    size and checksum: a state that cannot be encoded fails the snapshot as it would on files)
    and hands the bytes over; finalizing writes the ``_metadata`` document next to them. A
    restore of this job (a failover to its latest checkpoint) reads them back through the
    checks a file checkpoint passes (``load``). Each checkpoint is named
    ``jobmanager:<job id>/chk-<n>``.

    What it cannot do, as Flink's cannot: a checkpoint does not outlive the job (retained or
    externalized checkpoints are gone when the job ends, and ``ckptsim run -s`` cannot start
    from one); savepoints are still written as files, to the target given or
    ``execution.checkpointing.savepoint-dir`` (with neither, a savepoint fails, as Flink's
    "no savepoint directory" does). Flink's limit on a state's size (``max-state-size``, 5 MiB
    by default) is not enforced."""

    def __init__(
        self, job_id: str, *, job_name: str = "", savepoint_dir: str | None = None
    ) -> None:
        # no directory of its own: ``root`` only names the job's checkpoints
        self.job_id = job_id
        self.job_name = job_name
        self.savepoint_dir = _absolute(savepoint_dir) if savepoint_dir else None
        self.root = self.base_dir = Path(f"{MEMORY_SCHEME}{job_id}")
        self._locations = {}
        self._created = {}
        #: location -> its documents by name (state files, ``_metadata``)
        self._memory: dict[str, dict[str, bytes]] = {}

    @property
    def name(self) -> str:
        return f"{self.root} (in the JobManager's memory)"

    def _in_memory(self, location: str) -> dict[str, bytes] | None:
        return self._memory.get(location) if location.startswith(MEMORY_SCHEME) else None

    def initialize_location(
        self, checkpoint_id: int, props: CheckpointProperties, target: str | None
    ) -> str | None:
        if props.is_savepoint:
            if not target and self.savepoint_dir is None:
                raise CheckpointStorageError(
                    "no savepoint directory configured: a savepoint is written to files even "
                    "with checkpoints in the JobManager's memory; give a target directory or "
                    "set execution.checkpointing.savepoint-dir"
                )
            return super().initialize_location(checkpoint_id, props, target)
        location = f"{self.root}/chk-{checkpoint_id}"
        if location in self._memory:
            raise CheckpointStorageError(
                f"{location} exists already: a checkpoint location is never reused"
            )
        self._memory[location] = {}
        self._locations[checkpoint_id] = Path(location)
        return location

    def write_task_state(
        self,
        location: str | None,
        snapshot: TaskSnapshot,
        names: Mapping[str, str] | None = None,
    ) -> TaskStateSnapshot:
        where = location or str(self.location(snapshot.checkpoint_id))
        if not where.startswith(MEMORY_SCHEME):  # a savepoint: files
            return super().write_task_state(location, snapshot, names)
        data = _task_state_document(snapshot, names or {})
        documents = self._memory.get(where)
        if documents is None:
            raise CheckpointDiscarded(
                f"checkpoint {snapshot.checkpoint_id} was discarded ({where} is gone)"
            )
        key = f"{where}/{_state_file_name(snapshot)}"
        documents[key.rpartition("/")[2]] = data
        handle = StateHandle(key=key, size=len(data), checksum=serde.checksum(data))
        return TaskStateSnapshot(handles=(handle,), checkpointed_size=len(data))

    def finalize(self, checkpoint: CompletedCheckpoint) -> str | None:
        location = str(self.location(checkpoint.checkpoint_id))
        documents = self._in_memory(location)
        if documents is None:
            if location.startswith(MEMORY_SCHEME):
                raise CheckpointStorageError(f"{location} is gone: it was discarded")
            return super().finalize(checkpoint)

        def digest_of(key: str, task: TaskId) -> str:
            data = documents.get(key.rpartition("/")[2])
            if data is None:
                raise CheckpointStorageError(f"state file {key} of task {task} is missing")
            return serde.checksum(data)

        documents[METADATA] = _metadata_document(
            self.job_id, self.job_name, checkpoint, location, digest_of
        )
        return location

    def discard(self, checkpoint_id: int, handles: tuple[StateHandle, ...]) -> None:
        files = [h for h in handles if not h.key.startswith(MEMORY_SCHEME)]
        if files or not str(self.location(checkpoint_id)).startswith(MEMORY_SCHEME):
            super().discard(checkpoint_id, tuple(files))
        for handle in handles:
            location, _, name = handle.key.rpartition("/")
            documents = self._in_memory(location)
            if documents is not None:
                documents.pop(name, None)
        location = str(self.location(checkpoint_id))
        documents = self._in_memory(location)
        if documents is not None and set(documents) <= {METADATA}:
            del self._memory[location]

    def discard_location(self, checkpoint_id: int) -> None:
        location = str(self.location(checkpoint_id))
        if location in self._memory:
            self._locations.pop(checkpoint_id, None)
            del self._memory[location]
        else:
            super().discard_location(checkpoint_id)

    def remove_unretained(self, retained: list[str]) -> None:
        """After the job: its checkpoints go with it (the JobManager's memory), retained or not."""
        self._memory.clear()

    def load(self, path: str) -> LoadedCheckpoint:
        """A checkpoint of this job kept in memory, verified as a file checkpoint is (any other
        path: ``load_checkpoint``, e.g. a savepoint)."""
        location = path.removesuffix(f"/{METADATA}")
        if not location.startswith(MEMORY_SCHEME):
            return load_checkpoint(path)
        documents = self._memory.get(location)
        if documents is None or METADATA not in documents:
            raise CorruptCheckpointError(
                f"{location} does not exist: a checkpoint in the JobManager's memory lives "
                "only as long as the job that took it"
            )

        def read_state(name: str, at: str, task: TaskId, size: int, checksum: str) -> bytes:
            data = documents.get(name)
            if data is None:
                raise CorruptCheckpointError(
                    f"state file {location}/{name} of task {task} is missing"
                )
            if len(data) != size:
                raise CorruptCheckpointError(
                    f"state file {location}/{name} of task {task} is {len(data)} bytes, but "
                    f"field '{at}.size' of {location}/{METADATA} records {size}"
                )
            return data

        return _parse_checkpoint(Path(location), documents[METADATA], read_state)


# --- storage work asked for with effects ---------------------------------------------------------


def carry_out(storage: CheckpointStorage, effect: StorageEffect) -> StorageCompletion:
    """Do the storage work of ``effect`` and return the message that tells the coordinator how
    it ended. An ``OSError`` is a failure message naming the storage and the errno; anything
    else is a bug and propagates."""
    match effect:
        case InitializeLocation(checkpoint_id=cid, props=props, target=target):
            what = "savepoint" if props.is_savepoint else "checkpoint"
            try:
                location = storage.initialize_location(cid, props, target)
            except OSError as error:
                # a savepoint names the directory it was to go to (a target given with the
                # request, or execution.checkpointing.savepoint-dir), not the checkpoints'
                savepoints = getattr(storage, "savepoint_dir", None)
                where = (target or savepoints) if props.is_savepoint else None
                return LocationInitializationFailed(
                    checkpoint_id=cid,
                    error=storage_error(
                        str(where) if where else storage.name,
                        f"creating the location of {what} {cid}",
                        error,
                        kind="savepoint directory" if where else "checkpoint storage",
                    ),
                )
            return LocationInitialized(checkpoint_id=cid, location=location)
        case FinalizeCheckpoint(checkpoint=checkpoint):
            cid = checkpoint.checkpoint_id
            what = "savepoint" if checkpoint.is_savepoint else "checkpoint"
            try:
                path = storage.finalize(checkpoint)
            except OSError as error:
                return CheckpointFinalizationFailed(
                    checkpoint_id=cid,
                    error=storage_error(
                        storage.name, f"writing the metadata of {what} {cid}", error
                    ),
                )
            return CheckpointFinalized(checkpoint_id=cid, external_path=path)


class _Core(Protocol):
    def handle(self, msg: CoordinatorMessage, now: int) -> list[CoordinatorEffect]: ...


def handle_with_storage(
    core: _Core, msg: CoordinatorMessage, now: int, storage: CheckpointStorage | None = None
) -> list[CoordinatorEffect]:
    """``core.handle(msg, now)`` with the storage work done at once, as a synchronous storage
    would: each ``InitializeLocation`` / ``FinalizeCheckpoint`` is carried out by ``storage``
    (default: in memory) and its completion handled after the effects before it. Returns every
    effect, in order. For harnesses and tests; the coordinator's actor does the work in the
    background."""
    store = storage if storage is not None else InMemoryCheckpointStorage()
    out: list[CoordinatorEffect] = []
    queue: deque[CoordinatorMessage] = deque([msg])
    while queue:
        for effect in core.handle(queue.popleft(), now):
            out.append(effect)
            if isinstance(effect, InitializeLocation | FinalizeCheckpoint):
                queue.append(carry_out(store, effect))
    return out


def storage_error(
    storage: str, action: str, error: OSError, *, kind: str = "checkpoint storage"
) -> str:
    """``checkpoint storage /ckpt/job: creating the location of checkpoint 3 failed: No space
    left on device (errno 28, ENOSPC): /ckpt/job/chk-3``: the storage, what it did, the errno's
    text and name, and the file (an error without an errno: its own text)."""
    if error.errno is None:
        why = str(error) or type(error).__name__
    else:
        code = errno.errorcode.get(error.errno)
        text = error.strerror or os.strerror(error.errno)
        why = f"{text} (errno {error.errno}{', ' + code if code else ''})"
        if error.filename is not None:
            why += f": {os.fsdecode(error.filename)}"
    return f"{kind} {storage}: {action} failed: {why}"


def load_checkpoint(path: str) -> LoadedCheckpoint:
    """Read and verify a checkpoint or savepoint directory (or its ``_metadata`` file).

    A checkpoint is untrusted input: its checksums are plain SHA-256, which anyone can
    recompute. Every file it names is read only if it is a regular file inside the checkpoint
    directory (resolved: no absolute path, no ``..`` and no symbolic link leading out), and the
    metadata and state files must have the shape ckptsim writes. Anything else is a
    ``CorruptCheckpointError`` naming the file and the field."""
    location = Path(path)
    if location.name == METADATA:
        location = location.parent
    metadata_path = location / METADATA
    if not location.exists():
        if location.is_symlink():
            raise CorruptCheckpointError(
                f"{location} is a symbolic link to nothing (its target is missing, or the "
                "links lead in a loop)"
            )
        raise CorruptCheckpointError(f"{location} does not exist")
    if not location.is_dir():
        raise CorruptCheckpointError(f"{location} is not a directory")
    if not metadata_path.is_file() and not metadata_path.is_symlink():
        raise CorruptCheckpointError(
            f"{location} is not a checkpoint: it has no {METADATA} file "
            f"(a checkpoint directory looks like <dir>/<job id>/chk-<n>/){_inside(location)}"
        )
    root = location.resolve()

    def read_state(name: str, at: str, task: TaskId, size: int, checksum: str) -> bytes:
        return _read_inside(
            root,
            location,
            name,
            f"{at}.file",
            task=task,
            size=size,
            size_field=f"{at}.size",
            checksum=checksum,
        )

    return _parse_checkpoint(location, _read_inside(root, location, METADATA, None), read_state)


def _inside(location: Path) -> str:
    """What a folder that is no checkpoint holds that is one: ``; it holds chk-3, chk-4`` (a
    job's checkpoint directory given for one of its checkpoints), or nothing."""
    try:
        found = [
            entry
            for entry in location.iterdir()
            if entry.name.startswith(("chk-", "savepoint-")) and (entry / METADATA).is_file()
        ]
    except OSError:
        return ""
    if not found:
        return ""
    found.sort(key=lambda e: (not e.name.startswith("chk-"), _number(e.name), e.name))
    names = ", ".join(e.name for e in found[:5]) + (", ..." if len(found) > 5 else "")
    return f"; it holds {names}: give one of those"


def _number(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _parse_checkpoint(
    location: Path,
    metadata: bytes,
    read_state: Callable[[str, str, TaskId, int, str], bytes],
) -> LoadedCheckpoint:
    """The checkpoint at ``location`` from its ``_metadata`` bytes, each state file it names
    read with ``read_state(name, metadata field, task, recorded size, recorded checksum)`` and
    verified."""
    metadata_path = location / METADATA
    document = _json_document(metadata, metadata_path)
    if (
        not isinstance(document, dict)
        or not isinstance(document.get("metadata"), dict)
        or not isinstance(document.get("checksum"), str)
    ):
        raise CorruptCheckpointError(
            f"{metadata_path} is not a ckptsim checkpoint metadata file: it needs the fields "
            "'metadata' (an object) and 'checksum'"
        )
    body: dict[str, Any] = document["metadata"]
    canonical = json.dumps(body, separators=(",", ":"), sort_keys=True)
    if serde.checksum(canonical.encode()) != document["checksum"]:
        raise CorruptCheckpointError(
            f"{metadata_path} fails its checksum: the file was changed or damaged"
        )
    fields = _Fields(metadata_path, body)
    version = fields.integer("version", body, "version")
    if body.get("format") != "ckptsim-checkpoint" or version not in READABLE_VERSIONS:
        raise CorruptCheckpointError(
            f"{metadata_path}: field 'format'/'version' is {body.get('format')!r} version "
            f"{version}: this ckptsim reads ckptsim-checkpoint versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}"
        )
    checkpoint_id = fields.integer("checkpoint_id", body, "checkpoint_id")
    tasks: dict[TaskId, LoadedTaskState] = {}
    uids: set[str] = set()
    listed = fields.items("tasks", body, "tasks", list)
    if not listed:
        raise CorruptCheckpointError(
            f"{metadata_path}: field 'tasks' lists no task: a checkpoint holds the state of "
            "every task of its job that had not finished"
        )
    parallelism: dict[str, tuple[TaskId, int]] = {}
    for i, raw_entry in enumerate(listed):
        here = f"tasks[{i}]"
        entry = fields.mapping(here, raw_entry)
        task = TaskId(
            fields.text(f"{here}.vertex", entry, "vertex"),
            fields.integer(f"{here}.subtask", entry, "subtask"),
        )
        if task in tasks:
            raise CorruptCheckpointError(f"{metadata_path}: field '{here}' repeats task {task}")
        if "parallelism" in entry:
            parallelism[here] = (task, fields.integer(f"{here}.parallelism", entry, "parallelism"))
        operator_states: dict[str, Any] = {}
        inputs: dict[int, list[Buffer]] = {}
        outputs: dict[int, list[Buffer]] = {}
        ended = False
        files: list[str] = []
        operators: set[str] | None = set()
        listed_files = fields.items(f"{here}.files", entry, "files", list)
        if not listed_files:
            raise CorruptCheckpointError(
                f"{metadata_path}: field '{here}.files' lists no file: the state of task "
                f"{task} is in a state file"
            )
        for j, raw_file in enumerate(listed_files):
            at = f"{here}.files[{j}]"
            file = fields.mapping(at, raw_file)
            name = fields.text(f"{at}.file", file, "file")
            expected = fields.text(f"{at}.checksum", file, "checksum")
            size = fields.integer(f"{at}.size", file, "size")
            file_path = location / name
            data = read_state(name, at, task, size, expected)
            if serde.checksum(data) != expected:  # (a file: it changed between the two reads)
                raise CorruptCheckpointError(
                    f"state file {file_path} of task {task} fails its checksum"
                )
            state = _TaskStateFile(
                file_path,
                _json_document(data, file_path)
                if version in JSON_VERSIONS
                else _msgpack_document(data, file_path),
                packed=version not in JSON_VERSIONS,
            )
            state.check_owner(task, checkpoint_id)
            files.append(str(file_path))
            chained = state.operators()
            operators = None if operators is None or chained is None else operators | chained
            operator_states.update(state.operator_states())
            inputs.update(state.buffers("input_channels"))
            outputs.update(state.buffers("output_channels"))
            ended = ended or state.ended_input()
        uids.update(operator_states)
        tasks[task] = LoadedTaskState(
            operator_states=operator_states,
            input_channels=inputs,
            output_channels=outputs,
            ended_input=ended,
            files=tuple(files),
            operators=None if operators is None else frozenset(operators | set(operator_states)),
        )
    finished: set[TaskId] = set()
    for i, pair in enumerate(fields.items("finished_tasks", body, "finished_tasks", list, [])):
        listed = _listed_task(metadata_path, f"finished_tasks[{i}]", pair, "[vertex, subtask]")
        if listed in finished:
            raise CorruptCheckpointError(
                f"{metadata_path}: field 'finished_tasks[{i}]' repeats task {listed}"
            )
        finished.add(listed)
    both = sorted(finished & set(tasks), key=str)
    if both:
        raise CorruptCheckpointError(
            f"{metadata_path}: field 'finished_tasks' lists {both[0]}, which field 'tasks' "
            "lists as running with state: a subtask of a checkpoint either ran or had finished"
        )
    _check_parallelism(metadata_path, parallelism, set(tasks) | finished)
    final_positions = _final_positions(metadata_path, fields, body, finished)
    return LoadedCheckpoint(
        path=str(location),
        checkpoint_id=checkpoint_id,
        timestamp=fields.integer("timestamp", body, "timestamp"),
        is_savepoint=fields.boolean("is_savepoint", body, "is_savepoint"),
        job_name=fields.text("job_name", body, "job_name", ""),
        operator_uids=sorted(uids),
        tasks=tasks,
        finished_tasks=frozenset(finished),
        final_positions=final_positions,
        format_version=version,
    )


def _listed_task(metadata_path: Path, here: str, entry: object, shape: str) -> TaskId:
    """The task of metadata entry ``here``: a list ``shape`` long (its first two items the
    vertex and the subtask)."""
    if (
        not isinstance(entry, list)
        or len(entry) != shape.count(",") + 1
        or not isinstance(entry[0], str)
        or type(entry[1]) is not int
    ):
        raise CorruptCheckpointError(
            f"{metadata_path}: field '{here}' must be {shape}, got {_brief(entry)}"
        )
    return TaskId(entry[0], entry[1])


def _final_positions(
    metadata_path: Path, fields: _Fields, body: dict[str, Any], finished: set[TaskId]
) -> dict[TaskId, dict[str, Any]]:
    """Field ``final_positions``: ``[vertex, subtask, {source uid: position}]`` for finished
    subtasks only, each at most once."""
    found: dict[TaskId, dict[str, Any]] = {}
    for i, entry in enumerate(fields.items("final_positions", body, "final_positions", list, [])):
        here = f"final_positions[{i}]"
        task = _listed_task(metadata_path, here, entry, "[vertex, subtask, positions]")
        if task not in finished:
            raise CorruptCheckpointError(
                f"{metadata_path}: field '{here}' gives a final position of {task}, which field "
                "'finished_tasks' does not list: only a finished subtask has one"
            )
        if task in found:
            raise CorruptCheckpointError(f"{metadata_path}: field '{here}' repeats task {task}")
        try:
            positions = serde.decode(entry[2], where=f"{metadata_path}: field '{here}'")
        except serde.StateFormatError as error:
            raise CorruptCheckpointError(str(error)) from None
        if not isinstance(positions, dict) or not all(isinstance(k, str) for k in positions):
            raise CorruptCheckpointError(
                f"{metadata_path}: field '{here}' must map source uids to positions, got "
                f"{_brief(entry[2])}"
            )
        found[task] = positions
    return found


def _check_parallelism(
    metadata_path: Path, recorded: dict[str, tuple[TaskId, int]], listed: set[TaskId]
) -> None:
    """Each task's recorded parallelism is the number of subtasks of its vertex the checkpoint
    lists, running or finished: a checkpoint holds every subtask of its job."""
    counts: dict[str, int] = {}
    for task in listed:
        counts[task.vertex] = counts.get(task.vertex, 0) + 1
    for field, (task, parallelism) in recorded.items():
        if counts[task.vertex] != parallelism:
            raise CorruptCheckpointError(
                f"{metadata_path}: field '{field}.parallelism' is {parallelism}, but the "
                f"checkpoint lists {counts[task.vertex]} subtask(s) of {task.vertex}, running "
                "or finished: a checkpoint holds every subtask of its job"
            )


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_MISSING = object()


class _Fields:
    """Typed reads of a checkpoint file's fields: a wrong one is an error naming the file and
    the field."""

    def __init__(self, path: Path, body: dict[str, Any]) -> None:
        self.path = path
        self.body = body

    def _get(self, name: str, where: dict[str, Any], key: str, default: object) -> Any:
        value = where.get(key, default)
        if value is _MISSING:
            raise CorruptCheckpointError(f"{self.path}: field '{name}' is missing")
        return value

    def _wrong(self, name: str, value: object, expected: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(
            f"{self.path}: field '{name}' must be {expected}, got {_brief(value)}"
        )

    def integer(
        self, name: str, where: dict[str, Any], key: str, default: object = _MISSING
    ) -> int:
        value = self._get(name, where, key, default)
        if type(value) is not int or value < 0:
            raise self._wrong(name, value, "a whole number >= 0")
        return value

    def text(self, name: str, where: dict[str, Any], key: str, default: object = _MISSING) -> str:
        value = self._get(name, where, key, default)
        if not isinstance(value, str):
            raise self._wrong(name, value, "a string")
        return value

    def boolean(self, name: str, where: dict[str, Any], key: str) -> bool:
        value = self._get(name, where, key, _MISSING)
        if not isinstance(value, bool):
            raise self._wrong(name, value, "true or false")
        return value

    def items(
        self,
        name: str,
        where: dict[str, Any],
        key: str,
        kind: type | tuple[type, ...],
        default: object = _MISSING,
    ) -> Any:
        value = self._get(name, where, key, default)
        if not isinstance(value, kind):
            expected = {dict: "an object", bytes: "msgpack bin (packed values)"}
            raise self._wrong(name, value, expected.get(kind, "a list"))  # type: ignore[call-overload]
        return value

    def mapping(self, name: str, value: object) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self._wrong(name, value, "an object")
        return value


class _TaskStateFile:
    """One task's state file, read field by field."""

    def __init__(self, path: Path, document: object, *, packed: bool = False) -> None:
        self.path = path
        #: format version 3: each state and each buffer's records are ``serde.pack`` bytes
        self.packed = packed
        if not isinstance(document, dict):
            kind = "a msgpack map" if packed else "a JSON object"
            raise CorruptCheckpointError(f"{path}: a state file must hold {kind}")
        self.body: dict[str, Any] = document
        self.fields = _Fields(path, document)

    def check_owner(self, task: TaskId, checkpoint_id: int) -> None:
        owner = self.fields.mapping("task", self.body.get("task"))
        vertex = self.fields.text("task.vertex", owner, "vertex")
        subtask = self.fields.integer("task.subtask", owner, "subtask")
        cid = self.fields.integer("checkpoint_id", self.body, "checkpoint_id")
        if (vertex, subtask, cid) != (task.vertex, task.subtask, checkpoint_id):
            raise CorruptCheckpointError(
                f"{self.path}: fields 'task'/'checkpoint_id' say task {vertex}#{subtask}, "
                f"checkpoint {cid}, but the metadata lists it for task {task}, checkpoint "
                f"{checkpoint_id}"
            )

    def operators(self) -> set[str] | None:
        """The uids of every operator the task ran, stateless ones too (None: a state file
        of a ckptsim that did not record them)."""
        listed = self.body.get("operators")
        if listed is None:
            return None
        if not isinstance(listed, list) or not all(isinstance(u, str) for u in listed):
            raise self.fields._wrong("operators", listed, "a list of operator uids")
        return set(listed)

    def operator_states(self) -> dict[str, Any]:
        states = self.fields.items("operator_states", self.body, "operator_states", dict)
        for uid in states:
            if not isinstance(uid, str):
                raise self.fields._wrong("operator_states", uid, "keyed by operator uids")
        return {uid: self._decode(s, f"operator_states[{uid!r}]") for uid, s in states.items()}

    def buffers(self, key: str) -> dict[int, list[Buffer]]:
        channels = self.fields.items(key, self.body, key, dict, {})
        out: dict[int, list[Buffer]] = {}
        for channel, buffers in channels.items():
            at = f"{key}[{channel!r}]"
            if not isinstance(channel, str) or not channel.isdigit():
                raise self.fields._wrong(at, channel, "a channel number")
            if not isinstance(buffers, list):
                raise self.fields._wrong(at, buffers, "a list of buffers")
            decoded = []
            for i, raw_buffer in enumerate(buffers):
                buffer = self.fields.mapping(f"{at}[{i}]", raw_buffer)
                size = self.fields.integer(f"{at}[{i}].size", buffer, "size")
                records = self._decode(
                    self.fields.items(
                        f"{at}[{i}].records",
                        buffer,
                        "records",
                        bytes if self.packed else (list, dict),
                    ),
                    f"{at}[{i}].records",
                )
                if not isinstance(records, list):
                    raise self.fields._wrong(f"{at}[{i}].records", records, "a list of records")
                stamps = buffer.get("timestamps")
                if stamps is not None and (
                    not isinstance(stamps, list)
                    or len(stamps) != len(records)
                    or not all(t is None or (type(t) is int) for t in stamps)
                ):
                    raise self.fields._wrong(
                        f"{at}[{i}].timestamps", stamps, "a list of timestamps, one per record"
                    )
                decoded.append(Buffer(records, size, None, stamps))
            out[int(channel)] = decoded
        return out

    def ended_input(self) -> bool:
        value = self.body.get("ended_input", False)
        if not isinstance(value, bool):
            raise self.fields._wrong("ended_input", value, "true or false")
        return value

    def _decode(self, data: Any, name: str) -> Any:
        where = f"{self.path}: field '{name}'"
        try:
            if self.packed:
                if type(data) is not bytes:
                    raise self.fields._wrong(name, data, "msgpack bin (packed state)")
                return serde.unpack(data, where=where)
            return serde.decode(data, where=where)
        except serde.StateFormatError as error:
            raise CorruptCheckpointError(str(error)) from None


def _json_document(data: bytes, path: Path) -> Any:
    try:
        return json.loads(data)
    except RecursionError:
        raise CorruptCheckpointError(
            f"{path} is nested too deeply to be a ckptsim checkpoint file"
        ) from None
    except ValueError as error:  # also UnicodeDecodeError
        raise CorruptCheckpointError(
            f"{path} is not a ckptsim checkpoint file: not JSON ({error})"
        ) from None


def _msgpack_document(data: bytes, path: Path) -> Any:
    try:
        return msgspec.msgpack.decode(data)
    except RecursionError:
        raise CorruptCheckpointError(
            f"{path} is nested too deeply to be a ckptsim checkpoint file"
        ) from None
    except (msgspec.MsgspecError, ValueError, TypeError) as error:
        raise CorruptCheckpointError(
            f"{path} is not a ckptsim checkpoint file: not msgpack ({error})"
        ) from None


#: the largest ``_metadata`` file a restore reads (a checkpoint of hundreds of thousands of
#: tasks fits): a bigger one is no checkpoint's metadata
MAX_METADATA_BYTES = 64 * 2**20
#: a restore reads a file in pieces of this size, never more than its recorded size
READ_CHUNK = 2**20


def _read_inside(
    root: Path,
    location: Path,
    name: str,
    field: str | None,
    *,
    task: TaskId | None = None,
    size: int | None = None,
    size_field: str | None = None,
    checksum: str | None = None,
) -> bytes:
    """The bytes of the regular file ``name`` inside the checkpoint directory ``root``
    (resolved). Absolute paths, paths leading out (``..``, a symbolic link) and anything but a
    regular file are refused, naming the metadata field that gave the name (None: the
    metadata file itself). ``size``: the size the metadata records (field ``size_field``),
    compared before reading (without one: at most ``MAX_METADATA_BYTES``); the file is read
    in pieces, never past that size. ``checksum``: the one the metadata records, compared
    first in a pass that holds one piece at a time, so a file that fails it (a crafted one
    of the recorded size, however large) is never held in memory."""
    shown = location / name
    what = f"state file {shown} of task {task}" if task is not None else str(shown)
    entry = f"{location / METADATA}: field '{field}' ({name!r})" if field else str(shown)
    if not name or "\0" in name or Path(name).is_absolute():
        raise CorruptCheckpointError(
            f"{entry} is not a path inside the checkpoint directory: a restore reads only "
            f"files inside {location}"
        )
    try:
        target = (root / name).resolve()
    except (RuntimeError, OSError) as error:  # a symbolic link loop (RuntimeError before 3.13)
        raise CorruptCheckpointError(
            f"{entry} is a symbolic link that leads in a loop ({error}): a restore reads only "
            f"regular files inside {location}"
        ) from None
    if not target.is_relative_to(root) or target == root:
        raise CorruptCheckpointError(
            f"{entry} leads out of the checkpoint directory (to {target}): a restore reads "
            f"only files inside {location}"
        )
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError as error:
        raise CorruptCheckpointError(f"{what} is missing: {error}") from error
    except OSError as error:
        raise CorruptCheckpointError(f"{what} cannot be read: {error}") from error
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory, " if stat.S_ISDIR(info.st_mode) else ""
            raise CorruptCheckpointError(f"{entry} is {kind}not a regular file")
        limit = size if size is not None else MAX_METADATA_BYTES
        if size is not None and info.st_size != size:
            raise CorruptCheckpointError(
                f"{what} is {info.st_size} bytes, but field '{size_field}' of "
                f"{location / METADATA} records {size}: the file was changed or damaged "
                "(it was not read)"
            )
        if info.st_size > limit:
            raise CorruptCheckpointError(
                f"{what} is {info.st_size} bytes: more than the {limit} a ckptsim checkpoint's "
                "metadata can be (it was not read)"
            )
        if checksum is not None:
            if _digest(fd, limit, what) != checksum:
                raise CorruptCheckpointError(f"{what} fails its checksum")
            os.lseek(fd, 0, os.SEEK_SET)
        return _read_at_most(fd, limit, what)
    finally:
        os.close(fd)


def _digest(fd: int, limit: int, what: str) -> str:
    """The checksum (``serde.checksum``'s) of the file's bytes, read a piece at a time."""
    digest = hashlib.sha256()
    left = limit
    try:
        while True:
            piece = os.read(fd, min(READ_CHUNK, left) if left else 1)
            if not piece:
                return "sha256:" + digest.hexdigest()
            if not left:
                raise CorruptCheckpointError(
                    f"{what} holds more than the {limit} bytes recorded for it: it is changing"
                )
            digest.update(piece)
            left -= len(piece)
    except OSError as error:
        raise CorruptCheckpointError(f"{what} cannot be read: {error}") from error


def _read_at_most(fd: int, limit: int, what: str) -> bytes:
    """The file's bytes, read in pieces of at most ``READ_CHUNK``; a file that holds more than
    ``limit`` (it grew since it was measured) is refused without reading the rest."""
    pieces: list[bytes] = []
    left = limit
    try:
        while True:
            piece = os.read(fd, min(READ_CHUNK, left) if left else 1)
            if not piece:
                return b"".join(pieces)
            if not left:
                raise CorruptCheckpointError(
                    f"{what} holds more than the {limit} bytes recorded for it: it is changing"
                )
            pieces.append(piece)
            left -= len(piece)
    except OSError as error:
        raise CorruptCheckpointError(f"{what} cannot be read: {error}") from error


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def make_temp_dir(prefix: str = "ckptsim-") -> str:
    return tempfile.mkdtemp(prefix=prefix)
