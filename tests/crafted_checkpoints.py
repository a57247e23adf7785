"""Edit a checkpoint on disk as an attacker would: change a file, then recompute every checksum
(plain SHA-256), so that only the restore's own validation can refuse it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from runtime import serde
from runtime.serde import checksum
from runtime.storage import METADATA

Body = dict[str, Any]


def reseal(chk: Path, edit: Callable[[Body], object] | None = None) -> Path:
    """Apply ``edit`` to the metadata body, refresh each listed file's checksum and size (when
    the file is readable) and the metadata's own checksum; returns the metadata path."""
    path = chk / METADATA
    document = json.loads(path.read_text())
    body = document["metadata"]
    if edit is not None:
        edit(body)
    for task in body.get("tasks", []) if isinstance(body.get("tasks"), list) else []:
        for file in task.get("files", []) if isinstance(task, dict) else []:
            target = chk / str(file.get("file")) if isinstance(file, dict) else None
            if target is not None and target.is_file():
                data = target.read_bytes()
                file["checksum"], file["size"] = checksum(data), len(data)
    canonical = json.dumps(body, separators=(",", ":"), sort_keys=True)
    document["checksum"] = checksum(canonical.encode())
    path.write_text(json.dumps(document))
    return path


def state_files(chk: Path) -> list[Path]:
    return sorted(chk.glob("*.state.*"))


def as_version_2(chk: Path) -> Path:
    """Rewrite a format-version-3 checkpoint (msgpack state files) as format version 2 (JSON
    state files, values in ``serde``'s tagged JSON encoding), resealed, so that a test can
    read and edit its state as JSON: version 2 still restores, with the same checks.
    Returns ``chk``; a version 1 or 2 checkpoint is left as it is."""
    path = chk / METADATA
    body = json.loads(path.read_text())["metadata"]
    if body.get("version") != 3:
        return chk
    for task in body["tasks"]:
        for file in task["files"]:
            old = chk / file["file"]
            state = msgspec.msgpack.decode(old.read_bytes())
            state["operator_states"] = {
                uid: serde.encode(serde.unpack(data))
                for uid, data in state["operator_states"].items()
            }
            for side in ("input_channels", "output_channels"):
                for buffers in state.get(side, {}).values():
                    for buffer in buffers:
                        buffer["records"] = serde.encode(serde.unpack(buffer["records"]))
            new = old.with_name(old.name.replace(".state.msgpack", ".state.json"))
            new.write_text(json.dumps(state, separators=(",", ":"), sort_keys=True))
            old.unlink()
            file["file"] = new.name

    def edit(metadata: Body) -> None:
        metadata["version"] = 2
        metadata["tasks"] = body["tasks"]

    reseal(chk, edit)
    return chk


def rewrite_state(chk: Path, edit: Callable[[Body], object], index: int = 0) -> Path:
    """Change one state file's JSON (the checkpoint rewritten as format version 2 first;
    then reseal): returns that file."""
    path = state_files(as_version_2(chk))[index]
    state = json.loads(path.read_text())
    edit(state)
    path.write_text(json.dumps(state))
    reseal(chk)
    return path


def replace_state(chk: Path, data: bytes, index: int = 0) -> Path:
    """Put raw bytes into one state file of the checkpoint as format version 2 (JSON state
    files; then reseal): returns that file."""
    path = state_files(as_version_2(chk))[index]
    path.write_bytes(data)
    reseal(chk)
    return path


def point_first_file_at(chk: Path, name: str) -> Path:
    """The first task's first file entry names ``name`` instead (then reseal)."""

    def edit(body: Body) -> None:
        body["tasks"][0]["files"][0]["file"] = name

    return reseal(chk, edit)


def first_operator_state(value: object) -> Callable[[Body], None]:
    def edit(state: Body) -> None:
        uid = sorted(state["operator_states"])[0]
        state["operator_states"][uid] = value

    return edit


def state_file_of(chk: Path, task: str) -> Path:
    """The state file of ``task`` (``vertex#subtask``) as the metadata lists it, the
    checkpoint rewritten as format version 2 first (JSON state files a test can read)."""
    as_version_2(chk)
    vertex, subtask = task.rsplit("#", 1)
    body = json.loads((chk / METADATA).read_text())["metadata"]
    for entry in body["tasks"]:
        if (entry["vertex"], entry["subtask"]) == (vertex, int(subtask)):
            return chk / entry["files"][0]["file"]
    raise LookupError(f"{chk} lists no task {task}")


def set_operator_state(chk: Path, task: str, uid: str, value: object) -> Path:
    """Operator ``uid``'s state in ``task``'s state file becomes ``value`` (JSON, NaN allowed;
    then reseal): returns that file."""
    path = state_file_of(chk, task)
    state = json.loads(path.read_text())
    state["operator_states"][uid] = value
    path.write_text(json.dumps(state))
    reseal(chk)
    return path


def drop_operator_state(chk: Path, task: str, uid: str) -> Path:
    """``task``'s state file no longer holds operator ``uid``'s state (then reseal)."""
    path = state_file_of(chk, task)
    state = json.loads(path.read_text())
    del state["operator_states"][uid]
    path.write_text(json.dumps(state))
    reseal(chk)
    return path


def drop_tasks(chk: Path, keep: Callable[[Body], bool]) -> Path:
    """The metadata lists only the tasks ``keep`` says yes to (then reseal)."""

    def edit(body: Body) -> None:
        body["tasks"] = [t for t in body["tasks"] if keep(t)]

    return reseal(chk, edit)


def list_no_file_for(chk: Path, task: str) -> Path:
    """``task``'s entry in the metadata lists no state file (then reseal)."""
    vertex, subtask = task.rsplit("#", 1)

    def edit(body: Body) -> None:
        for entry in body["tasks"]:
            if (entry["vertex"], entry["subtask"]) == (vertex, int(subtask)):
                entry["files"] = []

    return reseal(chk, edit)


def replace_with_a_directory(chk: Path, task: str) -> Path:
    """``task``'s state file is a directory of that name (the metadata is left as it was)."""
    path = state_file_of(chk, task)
    path.unlink()
    path.mkdir()
    return path


def make_sparse(chk: Path, task: str, size: int) -> Path:
    """``task``'s state file becomes a sparse file of ``size`` bytes, holes only (made with
    truncate: it takes no disk space); the metadata keeps the size it records."""
    path = state_file_of(chk, task)
    with open(path, "r+b") as handle:
        handle.truncate(size)
    return path


# --- damage, as a disk or a person does it (no checksum recomputed unless said) ---------------------


def completed_checkpoints(root: Path) -> list[Path]:
    """The checkpoints under ``root`` that completed (their ``_metadata`` is written), oldest
    first."""
    done = [p for p in root.rglob("chk-*") if (p / METADATA).is_file()]
    return sorted(done, key=lambda p: int(p.name.removeprefix("chk-")))


def flip_a_byte_of_a_state_file(chk: Path) -> Path:
    path = state_files(chk)[0]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    return path


def delete_a_state_file(chk: Path) -> Path:
    path = state_files(chk)[-1]
    path.unlink()
    return path


def empty_a_state_file(chk: Path) -> Path:
    path = state_files(chk)[-1]
    path.write_bytes(b"")
    return path


def change_the_metadata(chk: Path) -> Path:
    path = chk / METADATA
    document = json.loads(path.read_text())
    document["metadata"]["timestamp"] += 1  # the checksum no longer fits
    path.write_text(json.dumps(document))
    return path


def truncate_the_metadata(chk: Path) -> Path:
    path = chk / METADATA
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def point_a_file_out_of_the_checkpoint(chk: Path) -> Path:
    """Checksums recomputed: only the restore's path check can refuse it."""
    return point_first_file_at(chk, "../../etc/passwd")


def pickle_into_the_state(chk: Path) -> Path:
    """Checksums recomputed: only the restore's schema check can refuse it."""
    return rewrite_state(chk, first_operator_state({"$ckptsim": "pickle", "v": "gASVAA=="}))


#: ways to damage a completed checkpoint, each with what the restore says of it
DAMAGE: dict[str, tuple[Callable[[Path], Path], str]] = {
    "flipped state": (flip_a_byte_of_a_state_file, "fails its checksum"),
    "missing state": (delete_a_state_file, "is missing"),
    # its size is compared before it is read
    "empty state": (empty_a_state_file, "is 0 bytes, but field 'tasks[3].files[0].size'"),
    "changed metadata": (change_the_metadata, "fails its checksum"),
    "truncated metadata": (truncate_the_metadata, "is not a ckptsim checkpoint file: not JSON"),
    "path out of the checkpoint": (
        point_a_file_out_of_the_checkpoint,
        "('../../etc/passwd') leads out of the checkpoint directory",
    ),
    "crafted state": (pickle_into_the_state, "unknown tag 'pickle'"),
}


# --- format version 3: msgpack state files --------------------------------------------------------


def rewrite_packed_state(chk: Path, edit: Callable[[Body], object], index: int = 0) -> Path:
    """Change one msgpack state file of a format-version-3 checkpoint (then reseal): returns
    that file."""
    path = sorted(chk.glob("*.state.msgpack"))[index]
    state = msgspec.msgpack.decode(path.read_bytes())
    edit(state)
    path.write_bytes(msgspec.msgpack.encode(state))
    reseal(chk)
    return path


def first_packed_operator_state(value: object) -> Callable[[Body], None]:
    """The first operator's state becomes ``value`` encoded as msgpack (``Ext`` values kept
    as they are: an attacker's extension codes)."""

    def edit(state: Body) -> None:
        uid = sorted(state["operator_states"])[0]
        state["operator_states"][uid] = msgspec.msgpack.encode(value)

    return edit
