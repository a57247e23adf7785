"""Edit a checkpoint on disk as an attacker would: change a file, then recompute every checksum
(plain SHA-256), so that only the restore's own validation can refuse it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    return sorted(chk.glob("*.state.json"))


def rewrite_state(chk: Path, edit: Callable[[Body], object], index: int = 0) -> Path:
    """Change one state file's JSON (then reseal): returns that file."""
    path = state_files(chk)[index]
    state = json.loads(path.read_text())
    edit(state)
    path.write_text(json.dumps(state))
    reseal(chk)
    return path


def replace_state(chk: Path, data: bytes, index: int = 0) -> Path:
    """Put raw bytes into one state file (then reseal): returns that file."""
    path = state_files(chk)[index]
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
