"""File-system checkpoint storage: layout, checksums, clear errors for damaged checkpoints,
and cleanup that never touches what the job did not write."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from runtime import serde
from runtime.checkpoint import (
    CheckpointProperties,
    CompletedCheckpoint,
    ExternalizedCheckpointRetention,
    TaskId,
)
from runtime.network import Buffer
from runtime.snapshot import TaskSnapshot
from runtime.storage import (
    METADATA,
    CheckpointStorageError,
    CorruptCheckpointError,
    FileSystemCheckpointStorage,
    load_checkpoint,
)
from tests.crafted_checkpoints import (
    as_version_2,
    first_operator_state,
    first_packed_operator_state,
    point_first_file_at,
    replace_state,
    reseal,
    rewrite_packed_state,
    rewrite_state,
    state_files,
)

PROPS = CheckpointProperties.for_checkpoint(
    ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
)
A, B = TaskId("source-1", 0), TaskId("reduce-2", 1)
WORD_COUNT = str(Path(__file__).resolve().parents[2] / "examples" / "word_count.py")


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
                input_channels={1: [Buffer([b"raw", None], 8), Buffer(["e"], 4, None, [7])]},
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
        "reduce-2-1.state.msgpack",
        "source-1-0.state.msgpack",
    ]
    loaded = load_checkpoint(str(path / METADATA))  # the _metadata file or its directory
    assert (loaded.checkpoint_id, loaded.timestamp, loaded.job_name) == (3, 5, "demo")
    assert loaded.operator_uids == ["reduce-2", "source-1"]
    assert loaded.tasks[A].operator_states == {"source-1": {"position": 41}}
    assert loaded.tasks[B].operator_states["reduce-2"]["values"] == [(1, 2), {3}]
    assert loaded.tasks[A].output_channels[0][0].records == [("k", 1)]
    assert loaded.tasks[B].input_channels[1][0].records == [b"raw", None]
    assert loaded.tasks[B].input_channels[1][0].timestamps is None
    assert loaded.tasks[B].input_channels[1][1].timestamps == [7]  # event time in flight
    assert not [p for p in path.iterdir() if p.name.endswith(".tmp")]


def relabel(metadata: Path, **changes: object) -> None:
    """Change fields of a metadata file but not its checksum (as a careless edit would)."""
    document = json.loads(metadata.read_text())
    document["metadata"].update(changes)
    metadata.write_text(json.dumps(document))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (  # a changed size is found before the file is read
            lambda p: (p / "reduce-2-1.state.msgpack").write_text("{}"),
            r"reduce-2-1.state.msgpack of task reduce-2#1 is 2 bytes, but field "
            r"'tasks\[0\].files\[0\].size' of .*_metadata records \d+",
        ),
        (  # the same size, other bytes
            lambda p: (p / "reduce-2-1.state.msgpack").write_bytes(  # (1, 2) -> (1, 3)
                (p / "reduce-2-1.state.msgpack")
                .read_bytes()
                .replace(b"\x92\x01\x02", b"\x92\x01\x03")
            ),
            "reduce-2-1.state.msgpack of task reduce-2#1 fails its checksum",
        ),
        (
            lambda p: (p / "source-1-0.state.msgpack").unlink(),
            "source-1-0.state.msgpack of task source-1#0 is missing",
        ),
        (lambda p: relabel(p / METADATA, checkpoint_id=4), "_metadata fails its checksum"),
        (
            lambda p: (p / METADATA).write_text("not json"),
            "_metadata is not a ckptsim checkpoint file: not JSON",
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


def test_a_link_to_nothing_is_named_a_link_not_a_missing_path(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(CorruptCheckpointError, match=r"a is a symbolic link to nothing .* loop"):
        load_checkpoint(str(tmp_path / "a"))


def test_a_jobs_checkpoint_directory_names_the_checkpoints_it_holds(tmp_path: Path) -> None:
    storage = FileSystemCheckpointStorage(str(tmp_path), "job1")
    write_checkpoint(storage, 3)
    write_checkpoint(storage, 12)
    with pytest.raises(CorruptCheckpointError) as caught:
        load_checkpoint(str(tmp_path / "job1"))
    assert str(caught.value).endswith("; it holds chk-3, chk-12: give one of those"), caught.value


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


def test_a_discard_cut_short_leaves_no_checkpoint_that_lacks_its_state_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process killed while it discards a subsumed checkpoint (here: the first state file's
    deletion is the last thing it does) leaves a directory that is no checkpoint at all, as
    in Flink (the metadata goes first), not a ``_metadata`` naming files that are gone."""
    storage = FileSystemCheckpointStorage(str(tmp_path), "job1")
    checkpoint = write_checkpoint(storage, 1)
    unlink = Path.unlink

    def killed_after_the_first_state_file(path: Path, missing_ok: bool = False) -> None:
        unlink(path, missing_ok)
        if path.name != METADATA:
            raise KeyboardInterrupt("killed")

    monkeypatch.setattr(Path, "unlink", killed_after_the_first_state_file)
    with pytest.raises(KeyboardInterrupt):
        storage.discard(1, checkpoint.handles())
    monkeypatch.undo()
    left = path_of(checkpoint)
    assert any(left.iterdir()), "a state file is left"
    with pytest.raises(CorruptCheckpointError, match="is not a checkpoint: it has no _metadata"):
        load_checkpoint(str(left))


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


# --- an untrusted checkpoint: valid checksums, crafted content ------------------------------------


def _outside_state(chk: Path, tmp: Path) -> Path:
    """A copy of a real state file outside the checkpoint, with its position moved on."""
    state = json.loads(state_files(as_version_2(chk))[-1].read_text())
    state["operator_states"]["source-1"] = {"position": 12_352 + 41}
    outside = tmp / "outside.json"
    outside.write_text(json.dumps(state))
    return outside


def escape_absolute(chk: Path, tmp: Path) -> tuple[Path, str]:
    point_first_file_at(chk, str(_outside_state(chk, tmp)))
    return (
        chk / METADATA,
        r"field 'tasks\[0\].files\[0\].file' \('/.*outside.json'\) is not a path inside",
    )


def escape_dot_dot(chk: Path, tmp: Path) -> tuple[Path, str]:
    point_first_file_at(chk, "../../etc/passwd")
    return chk / METADATA, r"field 'tasks\[0\].files\[0\].file' \('../../etc/passwd'\) leads out"


def escape_to_an_outside_state_file(chk: Path, tmp: Path) -> tuple[Path, str]:
    _outside_state(chk, tmp)
    point_first_file_at(chk, "../../outside.json")
    return chk / METADATA, r"\('../../outside.json'\) leads out of the checkpoint directory"


def escape_by_symlink(chk: Path, tmp: Path) -> tuple[Path, str]:
    (chk / "link.state.json").symlink_to(_outside_state(chk, tmp))
    point_first_file_at(chk, "link.state.json")
    return chk / METADATA, r"\('link.state.json'\) leads out of the checkpoint directory"


def metadata_symlink_out(chk: Path, tmp: Path) -> tuple[Path, str]:
    real = tmp / "elsewhere_metadata"
    (chk / METADATA).rename(real)
    (chk / METADATA).symlink_to(real)
    return chk / METADATA, r"_metadata leads out of the checkpoint directory"


def metadata_symlink_loop(chk: Path, tmp: Path) -> tuple[Path, str]:
    (chk / METADATA).unlink()
    (chk / METADATA).symlink_to(METADATA)  # a link to itself: resolving it never ends
    return chk / METADATA, r"_metadata is a symbolic link that leads in a loop"


def state_file_symlink_loop(chk: Path, tmp: Path) -> tuple[Path, str]:
    (chk / "a.state.json").symlink_to("b.state.json")
    (chk / "b.state.json").symlink_to("a.state.json")
    point_first_file_at(chk, "a.state.json")
    return chk / METADATA, r"\('a.state.json'\) is a symbolic link that leads in a loop"


def not_a_regular_file(chk: Path, tmp: Path) -> tuple[Path, str]:
    os.mkfifo(chk / "fifo.state.json")  # reading it would block forever
    point_first_file_at(chk, "fifo.state.json")
    return chk / METADATA, r"\('fifo.state.json'\) is not a regular file"


def state_not_json(chk: Path, tmp: Path) -> tuple[Path, str]:
    return replace_state(chk, b"\x80 not json"), "is not a ckptsim checkpoint file: not JSON"


def tasks_missing(chk: Path, tmp: Path) -> tuple[Path, str]:
    return reseal(chk, lambda body: body.pop("tasks")), "field 'tasks' is missing"


def subtask_not_a_number(chk: Path, tmp: Path) -> tuple[Path, str]:
    def edit(body: dict[str, object]) -> None:
        body["tasks"][0]["subtask"] = "one"  # type: ignore[index]

    path = reseal(chk, edit)
    return path, r"field 'tasks\[0\].subtask' must be a whole number >= 0, got 'one'"


def unhashable_in_a_set(chk: Path, tmp: Path) -> tuple[Path, str]:
    value = {"$ckptsim": "set", "v": [[1, 2]]}
    path = rewrite_state(chk, first_operator_state(value))
    return path, r"field 'operator_states\['.*'\]' at \['v'\]\[0\]: an unhashable value"


def deeply_nested(chk: Path, tmp: Path) -> tuple[Path, str]:
    return replace_state(chk, b"[" * 200_000 + b"]" * 200_000), "nested too deeply"


def unknown_tag(chk: Path, tmp: Path) -> tuple[Path, str]:
    value = {"$ckptsim": "pickle", "v": "gASVAAAAAAAAAACMBWJ1aWx0aW5zlIwEZXZhbJSTlC4="}
    path = rewrite_state(chk, first_operator_state(value))
    return path, r"field 'operator_states\['.*'\]': unknown tag 'pickle'"


def state_of_another_task(chk: Path, tmp: Path) -> tuple[Path, str]:
    first, second = state_files(chk)
    first.write_bytes(second.read_bytes())
    reseal(chk)
    return first, "fields 'task'/'checkpoint_id' say task source-1#0, checkpoint 3, but the"


def channel_not_a_number(chk: Path, tmp: Path) -> tuple[Path, str]:
    def edit(state: dict[str, object]) -> None:
        state["input_channels"] = {"x": []}

    return rewrite_state(chk, edit), r"field 'input_channels\['x'\]' must be a channel number"


def running_and_finished(chk: Path, tmp: Path) -> tuple[Path, str]:
    def edit(body: dict[str, object]) -> None:
        first = body["tasks"][0]  # type: ignore[index]
        body["finished_tasks"] = [[first["vertex"], first["subtask"]]]

    path = reseal(chk, edit)
    return path, r"field 'finished_tasks' lists .*#[0-9]+, which field 'tasks' lists as running"


def packed_state_not_msgpack(chk: Path, tmp: Path) -> tuple[Path, str]:
    path = sorted(chk.glob("*.state.msgpack"))[0]
    path.write_bytes(b"\xc1 not msgpack")
    reseal(chk)
    return path, "is not a ckptsim checkpoint file: not msgpack"


def packed_unknown_extension(chk: Path, tmp: Path) -> tuple[Path, str]:
    forged = {"position": [1, msgspec.msgpack.Ext(99, b"pickled?")]}
    path = rewrite_packed_state(chk, first_packed_operator_state(forged))
    return (
        path,
        r"field 'operator_states\['.*'\]' at \['position'\]\[1\]: unknown extension code 99",
    )


def packed_forged_decimal_in_a_tuple(chk: Path, tmp: Path) -> tuple[Path, str]:
    inner = msgspec.msgpack.Ext(serde.EXT_DECIMAL, b"1.2.3")
    forged = [msgspec.msgpack.Ext(serde.EXT_TUPLE, msgspec.msgpack.encode(["a", inner]))]
    path = rewrite_packed_state(chk, first_packed_operator_state(forged))
    return path, r"at \[0\]<tuple>\[1\]: not a decimal"


def packed_records_not_bytes(chk: Path, tmp: Path) -> tuple[Path, str]:
    def edit(state: dict[str, Any]) -> None:
        state["output_channels"]["0"][0]["records"] = [["k", 1]]

    path = rewrite_packed_state(chk, edit, index=1)
    return path, r"field 'output_channels\['0'\]\[0\]\.records' must be msgpack bin"


def packed_deeply_nested(chk: Path, tmp: Path) -> tuple[Path, str]:
    path = rewrite_packed_state(
        chk, lambda s: s["operator_states"].update({"reduce-2": b"\x91" * 200_000 + b"\xc0"})
    )
    return path, "nested too deeply|not msgpack"


CRAFTED: dict[str, Callable[[Path, Path], tuple[Path, str]]] = {
    "absolute path": escape_absolute,
    "../../etc/passwd": escape_dot_dot,
    "an outside state file": escape_to_an_outside_state_file,
    "a symlink out": escape_by_symlink,
    "_metadata a symlink out": metadata_symlink_out,
    "_metadata a symlink loop": metadata_symlink_loop,
    "a state file a symlink loop": state_file_symlink_loop,
    "a fifo": not_a_regular_file,
    "state not JSON": state_not_json,
    "no tasks": tasks_missing,
    "subtask not a number": subtask_not_a_number,
    "unhashable set member": unhashable_in_a_set,
    "deeply nested": deeply_nested,
    "unknown tag pickle": unknown_tag,
    "state of another task": state_of_another_task,
    "channel not a number": channel_not_a_number,
    "a subtask running and finished": running_and_finished,
    "v3 state not msgpack": packed_state_not_msgpack,
    "v3 unknown extension code": packed_unknown_extension,
    "v3 forged decimal in a tuple": packed_forged_decimal_in_a_tuple,
    "v3 records not packed": packed_records_not_bytes,
    "v3 deeply nested": packed_deeply_nested,
}


@pytest.mark.parametrize("case", list(CRAFTED))
def test_a_crafted_checkpoint_with_valid_checksums_is_refused_naming_the_file_and_field(
    tmp_path: Path, case: str
) -> None:
    chk = path_of(write_checkpoint(FileSystemCheckpointStorage(str(tmp_path / "c"), "job1"), 3))
    assert load_checkpoint(str(chk)).checkpoint_id == 3
    named, field = CRAFTED[case](chk, tmp_path)
    with pytest.raises(CorruptCheckpointError) as caught:
        load_checkpoint(str(chk))
    message = str(caught.value)
    assert message.startswith(str(named)) or f"state file {named} " in message, message
    assert re.search(field, message), message
    assert "\n" not in message


def test_the_command_line_refuses_a_crafted_checkpoint_with_exit_2_and_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ckptsim._cli import main  # noqa: PLC0415

    for i, (case, craft) in enumerate(CRAFTED.items()):
        root = tmp_path / f"case-{i}"
        chk = path_of(write_checkpoint(FileSystemCheckpointStorage(str(root), "job1"), 3))
        named, field = craft(chk, root)
        for flag in ("--from-checkpoint", "--from-savepoint"):
            assert main(["run", WORD_COUNT, "-q", flag, str(chk)]) == 2, case
            out, err = capsys.readouterr()
            assert err.count("\n") == 1 and re.search(field, err), (case, err)
            assert str(named) in err
            assert err.startswith(f"ckptsim run: {flag} {chk}: not a usable checkpoint")
            assert out == ""


def test_a_symlink_to_a_file_inside_the_checkpoint_is_read(tmp_path: Path) -> None:
    chk = path_of(write_checkpoint(FileSystemCheckpointStorage(str(tmp_path), "job1"), 3))
    real = state_files(chk)[0]
    (chk / "alias.state.json").symlink_to(real.name)
    point_first_file_at(chk, "alias.state.json")
    loaded = load_checkpoint(str(chk))
    assert loaded.tasks[B].operator_states["reduce-2"]["values"] == [(1, 2), {3}]
