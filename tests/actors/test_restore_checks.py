"""A restore that checks what it reads (issue 22, items 3 and 4).

A checkpoint is untrusted input, and its checksums are plain SHA-256 that anyone can
recompute: each case here edits a real retained checkpoint of the counting job and reseals it
(``tests.crafted_checkpoints``), so only the restore's own checks can refuse it. Each is refused
before the job starts, naming the file and the field: ``ckptsim run --from-checkpoint`` /
``--from-savepoint`` exits 2 with one line, the API raises ``RestoreError`` or
``CorruptCheckpointError``. Before, each restored silently (duplicates, lost records, wrong
sums) or failed later with a traceback.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ckptsim import StreamExecutionEnvironment
from ckptsim._cli import main
from runtime.job import RestoreError
from runtime.status import JobStatus
from runtime.storage import METADATA, CorruptCheckpointError, load_checkpoint
from tests.actors.test_failover import count, counting, failure_free, key, observe, record
from tests.crafted_checkpoints import (
    as_version_2,
    drop_operator_state,
    drop_tasks,
    list_no_file_for,
    make_sparse,
    replace_with_a_directory,
    reseal,
    set_operator_state,
    state_file_of,
)

#: the counting job as a script for ``ckptsim run`` (the same job as ``counting(env)``)
SCRIPT = """
from tests.actors.test_failover import counting


def build(env):
    counting(env)
"""

RETAIN = {
    "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    "execution.checkpointing.num-retained": 1,
}


@pytest.fixture(scope="module")
def retained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A retained checkpoint of the counting job: a run cancelled after a few checkpoints."""
    root = tmp_path_factory.mktemp("retained")
    env = StreamExecutionEnvironment()
    counting(env)
    env.configure({**RETAIN, "execution.checkpointing.dir": str(root)})
    result = env.execute("first", runtime="simulation", seed=1, timeout=0.03)
    assert result.status is JobStatus.CANCELED
    (path,) = result.retained_checkpoints
    return Path(path)


@pytest.fixture
def chk(retained: Path, tmp_path: Path) -> Path:
    """A copy of the retained checkpoint to craft."""
    copy = tmp_path / "chk" / retained.name
    shutil.copytree(retained, copy)
    return copy


def position(emitted: object, index: object) -> dict[str, object]:
    return {"position": {"emitted": emitted, "index": index}}


Craft = Callable[[Path], tuple[Path, str]]


def negative_position(chk: Path) -> tuple[Path, str]:
    """7,936 duplicates before: the source read its records again from before the start."""
    path = set_operator_state(chk, "numbers#0", "numbers", position(-100, -200))
    return path, r"field 'operator_states\['numbers'\]\.position' .*'emitted' is -100"


def position_past_the_end(chk: Path) -> tuple[Path, str]:
    """22,064 records lost before: the source had nothing left to read."""
    path = set_operator_state(chk, "numbers#1", "numbers", position(10**12, 1 + 2 * 10**12))
    return path, r"'emitted' is 1000000000000: subtask 1 of 2 emits 1000 of the 2000 records"


def nan_position(chk: Path) -> tuple[Path, str]:
    """Before: the job started and failed later, ten log lines instead of one."""
    path = set_operator_state(chk, "numbers#0", "numbers", position(float("nan"), 0))
    return path, r"field 'operator_states\['numbers'\]\.position' holds nan"


def position_of_another_subtask(chk: Path) -> tuple[Path, str]:
    """Index 7 is subtask 1's record: subtask 0 would emit the odd records too."""
    path = set_operator_state(chk, "numbers#0", "numbers", position(3, 7))
    return path, r"'index' is 7: .*after 3 of them its next index is 6"


def fractional_position(chk: Path) -> tuple[Path, str]:
    path = set_operator_state(chk, "numbers#0", "numbers", position(2.5, 5))
    return path, r"position' holds 2\.5: a source's position is made of whole numbers"


def no_position(chk: Path) -> tuple[Path, str]:
    path = drop_operator_state(chk, "numbers#1", "numbers")
    return path, r"field 'operator_states' holds no position of source .* \(numbers\)"


def no_tasks(chk: Path) -> tuple[Path, str]:
    """15,881 duplicates before: every task started from scratch."""
    return drop_tasks(chk, lambda task: False), r"field 'tasks' lists no task"


def _list_as_finished(task: tuple[str, int], final: object = None) -> Callable[[Any], None]:
    """The metadata lists running subtask ``task`` as finished instead (its state file left
    out), with ``final`` as its final source position if given."""

    def edit(body: Any) -> None:
        body["tasks"] = [t for t in body["tasks"] if (t["vertex"], t["subtask"]) != task]
        body["finished_tasks"] = sorted([*body.get("finished_tasks", []), list(task)])
        if final is not None:
            body["final_positions"] = [[*task, {task[0]: final}]]

    return edit


def a_running_source_listed_as_finished(chk: Path) -> tuple[Path, str]:
    """Records lost before (exit 0): the subtask was not restarted, so the rest of its input
    was never read."""
    path = reseal(chk, _list_as_finished(("numbers", 0)))
    return path, r"field 'final_positions' holds no final position of source .* for numbers#0"


def a_running_source_listed_as_finished_in_an_older_format(chk: Path) -> tuple[Path, str]:
    """Lowering the version does not dodge the check: format 2 recorded no final positions."""

    path = reseal(as_version_2(chk), _list_as_finished(("numbers", 1)))
    return path, r"for numbers#1, .*\(format version 2 recorded none: restore a checkpoint"


def a_finished_source_short_of_its_end(chk: Path) -> tuple[Path, str]:
    """Listed as finished with a final position it could reach, but not its end."""
    path = reseal(chk, _list_as_finished(("numbers", 0), {"emitted": 3, "index": 6}))
    return path, r"'index' is 6: subtask 0 of 2 finishes after emitting all of its 1000 records"


def a_final_position_of_a_running_subtask(chk: Path) -> tuple[Path, str]:
    def edit(body: Any) -> None:
        body["final_positions"] = [["numbers", 1, {"numbers": {"emitted": 1000, "index": 2001}}]]

    path = reseal(chk, edit)
    return path, r"field 'final_positions\[0\]' gives a final position of numbers#1, which field"


def a_keyed_subtask_listed_as_finished(chk: Path) -> tuple[Path, str]:
    """6,714 duplicates and as many lost before (exit 0): the subtask started from scratch."""
    path = reseal(chk, _list_as_finished(("counts", 1)))
    return path, r"'finished_tasks' lists counts#1, but field 'tasks' lists its input numbers#"


def a_final_position_with_a_field_of_its_own(chk: Path) -> tuple[Path, str]:
    final = {"emitted": 1000, "index": 2000, "extra": 1}
    path = reseal(chk, _list_as_finished(("numbers", 0), final))
    return path, r"'extra' is not one of the source's \(index, emitted\)"


def a_subtask_listed_twice_as_finished(chk: Path) -> tuple[Path, str]:
    def edit(body: Any) -> None:
        _list_as_finished(("numbers", 0))(body)
        body["finished_tasks"].append(["numbers", 0])

    return reseal(chk, edit), r"field 'finished_tasks\[1\]' repeats task numbers#0"


def _edit_state_file(task: str, edit: Callable[[dict[str, Any]], object]) -> Craft:
    def craft(chk: Path) -> tuple[Path, str]:
        path = state_file_of(chk, task)
        state = json.loads(path.read_text())
        edit(state)
        path.write_text(json.dumps(state))
        reseal(chk)
        return path, ""

    return craft


def no_operators_and_no_keyed_state(chk: Path) -> tuple[Path, str]:
    """Before: a missing list switched the every-operator check off, and the subtask's
    keyed state started empty (6,714 duplicates and as many lost)."""

    def edit(state: dict[str, Any]) -> None:
        del state["operators"]
        del state["operator_states"]["counts"]

    path, _ = _edit_state_file("counts#1", edit)(chk)
    return path, r"holds no state of .*\(counts\), which task counts#1 ran \(its other"


def fewer_operators(chk: Path) -> tuple[Path, str]:
    def edit(state: dict[str, Any]) -> None:
        state["operators"] = ["sink-counts"]
        del state["operator_states"]["counts"]

    path, _ = _edit_state_file("counts#1", edit)(chk)
    return path, r"holds no state of .*\(counts\), which task counts#1 ran"


def keyed_state_dropped(chk: Path) -> tuple[Path, str]:
    path, _ = _edit_state_file("counts#1", lambda s: s["operator_states"].pop("counts"))(chk)
    return path, r"field 'operator_states' holds no state of .*\(counts\), which task counts#1"


def a_task_without_files(chk: Path) -> tuple[Path, str]:
    """Wrong sums before: the task's keyed state was left out."""
    return list_no_file_for(chk, "counts#1"), r"field 'tasks\[\d\]\.files' lists no file"


def a_subtask_left_out(chk: Path) -> tuple[Path, str]:
    path = drop_tasks(chk, lambda task: (task["vertex"], task["subtask"]) != ("counts", 1))
    return path, r"field 'tasks\[\d\]\.parallelism' is 2, but the checkpoint lists 1 subtask"


def a_first_subtask_left_out(chk: Path) -> tuple[Path, str]:
    """Without the recorded parallelism (an older checkpoint), the gap shows it."""

    def edit(task: dict[str, object]) -> bool:
        task.pop("parallelism", None)
        return (task["vertex"], task["subtask"]) != ("counts", 0)

    path = drop_tasks(chk, edit)
    return path, r"list subtasks of counts up to counts#1 but not counts#0"


def a_vertex_left_out(chk: Path) -> tuple[Path, str]:
    path = drop_tasks(chk, lambda task: task["vertex"] != "counts")
    return path, r"field 'tasks' holds no task that ran operator\(s\) .*\(counts\)"


def a_state_file_that_is_a_directory(chk: Path) -> tuple[Path, str]:
    """An IsADirectoryError traceback before."""
    name = state_file_of(chk, "counts#0").name
    replace_with_a_directory(chk, "counts#0")
    return chk / METADATA, rf"\('{re.escape(name)}'\) is a directory, not a regular file"


def a_sparse_state_file(chk: Path) -> tuple[Path, str]:
    """3 GB of holes where the metadata records about 1.5 KB: refused by its size, unread
    (before, a restore read it whole: 3.18 GB of memory, or a MemoryError)."""
    recorded = state_file_of(chk, "counts#0").stat().st_size
    path = make_sparse(chk, "counts#0", 3 * 2**30)
    return path, rf"is {3 * 2**30} bytes, but field 'tasks\[\d\]\.files\[0\]\.size' .* {recorded}"


def collect_pending(value: object) -> Craft:
    """Sink 'counts' (a collect sink) of counts#1 holds ``value`` as its pending transactions:
    a crafted id committed another checkpoint's records, or failed the job later."""

    def craft(chk: Path) -> tuple[Path, str]:
        state = {"pending": value, "writer": "counts#1"}
        path = set_operator_state(chk, "counts#1", "sink-counts", state)
        return path, r"field 'operator_states\['sink-counts'\]\.pending\[0\]' is "

    return craft


def keyed(edit: Callable[[dict[str, Any]], object], field: str) -> Craft:
    """``edit`` changes the keyed state of 'counts' in counts#0's state file (the running
    counts: a state '_reduce' of a few key groups)."""

    def craft(chk: Path) -> tuple[Path, str]:
        state = json.loads(state_file_of(chk, "counts#0").read_text())["operator_states"]
        edit(state["counts"])
        return set_operator_state(chk, "counts#0", "counts", state["counts"]), field

    return craft


def _set_max_parallelism(value: object) -> Callable[[dict[str, Any]], None]:
    def edit(state: dict[str, Any]) -> None:
        state["max_parallelism"] = value

    return edit


def _move_a_key_group(to: str) -> Callable[[dict[str, Any]], None]:
    def edit(state: dict[str, Any]) -> None:
        groups = state["states"]["_reduce"]["key_groups"]
        groups[to] = groups.pop(sorted(groups)[0])

    return edit


def _unpair(state: dict[str, Any]) -> None:
    groups = state["states"]["_reduce"]["key_groups"]
    groups[sorted(groups)[0]]["keys"].append(77)


CRAFTED: dict[str, Craft] = {
    "a negative source position": negative_position,
    "a source position past the end": position_past_the_end,
    "a NaN source position": nan_position,
    "a source position of another subtask": position_of_another_subtask,
    "a fractional source position": fractional_position,
    "a source subtask without its position": no_position,
    '"tasks": []': no_tasks,
    "a running source subtask listed as finished": a_running_source_listed_as_finished,
    "a finished source subtask short of its end": a_finished_source_short_of_its_end,
    "a running source subtask listed as finished in format 2": (
        a_running_source_listed_as_finished_in_an_older_format
    ),
    "a final position of a running subtask": a_final_position_of_a_running_subtask,
    "a keyed subtask listed as finished while its inputs run": a_keyed_subtask_listed_as_finished,
    "a state file without operators or keyed state": no_operators_and_no_keyed_state,
    "a final position with a field of its own": a_final_position_with_a_field_of_its_own,
    "a subtask listed twice as finished": a_subtask_listed_twice_as_finished,
    "a state file naming fewer operators": fewer_operators,
    "a keyed state dropped": keyed_state_dropped,
    'a task with "files": []': a_task_without_files,
    "a subtask left out": a_subtask_left_out,
    "a first subtask left out of an older checkpoint": a_first_subtask_left_out,
    "a vertex left out": a_vertex_left_out,
    "a state file that is a directory": a_state_file_that_is_a_directory,
    "a 3 GB sparse state file": a_sparse_state_file,
    "a negative pending transaction": collect_pending([-5]),
    "a pending transaction after the checkpoint": collect_pending([10**12]),
    "a pending transaction that is no number": collect_pending(["2"]),
    "keyed state of another max parallelism": keyed(
        lambda state: state.update(max_parallelism=0),
        r"field 'operator_states\['counts'\]\.max_parallelism' is 0, but the job's max "
        r"parallelism is 128",
    ),
    **{
        f"keyed state whose max parallelism is {value!r}": keyed(
            _set_max_parallelism(value), r"field 'operator_states\['counts'\]\.max_parallelism' is "
        )
        for value in ([256], "256", 2.5, True, None, 64)
    },
    "a key group past the max parallelism": keyed(
        _move_a_key_group("999"), r"\.key_groups\['999'\]': subtask 0 of 2 holds key groups 0"
    ),
    "a key group of the other subtask": keyed(
        _move_a_key_group("100"), r"\.key_groups\['100'\]': subtask 0 of 2 holds key groups 0"
    ),
    "a key group that is no number": keyed(_move_a_key_group("-1"), r"\.key_groups\['-1'\]'"),
    "more keys than values": keyed(_unpair, r"must hold lists 'keys' and 'values' of one length"),
    "a keyed state of no kind": keyed(
        lambda state: state["states"]["_reduce"].update(kind="bogus"),
        r"field 'operator_states\['counts'\]\.states\['_reduce'\]\.kind' is 'bogus'",
    ),
}


def test_the_untouched_checkpoint_resumes_the_job_exactly(retained: Path, chk: Path) -> None:
    """What the crafted cases start from restores, and the output is exact."""
    env = StreamExecutionEnvironment()
    counting(env)
    env.configure({"execution.state-recovery.path": str(chk)})
    result = env.execute("resumed", runtime="simulation", seed=2)
    assert result.status is JobStatus.FINISHED
    indices, _ = observe(result.collected("counts"))
    assert set(indices.values()) == {1} and max(indices) == max(failure_free()[0])


@pytest.mark.parametrize("case", list(CRAFTED))
def test_a_crafted_checkpoint_is_refused_by_the_api_naming_the_file_and_field(
    chk: Path, case: str
) -> None:
    named, field = CRAFTED[case](chk)
    env = StreamExecutionEnvironment()
    counting(env)
    env.configure({"execution.state-recovery.path": str(chk)})
    with pytest.raises((RestoreError, CorruptCheckpointError)) as caught:
        env.execute("resumed", runtime="simulation", seed=2)
    message = str(caught.value)
    assert str(named) in message, message
    assert re.search(field, message), message
    assert "\n" not in message


@pytest.mark.parametrize("flag", ["--from-checkpoint", "--from-savepoint"])
@pytest.mark.parametrize("case", list(CRAFTED))
def test_a_crafted_checkpoint_exits_2_with_one_line_naming_the_file_and_field(
    chk: Path, tmp_path: Path, case: str, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    named, field = CRAFTED[case](chk)
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    assert main(["run", str(script), "-q", "--simulate", flag, str(chk)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("ckptsim run: "), err
    assert str(named) in err and re.search(field, err), err


def test_a_sparse_state_file_is_refused_without_being_read(chk: Path) -> None:
    """The recorded size is compared before anything is read: the refusal comes from the
    file's size alone (its 3 GB of holes are never read; measured before: 3.18 GB RSS)."""
    path = make_sparse(chk, "counts#0", 3 * 2**30)
    with pytest.raises(CorruptCheckpointError, match=r"\(it was not read\)") as caught:
        load_checkpoint(str(chk))
    assert f"state file {path} of task counts#0 is 3221225472 bytes" in str(caught.value)


@pytest.fixture(scope="module")
def retained_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A retained checkpoint of the counting job into part files (checkpoint 2), and its sink's
    folder."""
    root = tmp_path_factory.mktemp("retained-files")
    env = StreamExecutionEnvironment()
    counting(env, out=root / "out")
    env.configure({**RETAIN, "execution.checkpointing.dir": str(root / "chk")})
    result = env.execute("first", runtime="simulation", seed=1, timeout=0.02)
    assert result.status is JobStatus.CANCELED
    (path,) = result.retained_checkpoints
    assert Path(path).name == "chk-2", "the tests name its pending transaction 2"
    return Path(path), root / "out"


LINEAGES: dict[str, object] = {
    "not a list": "x",
    "a negative checkpoint id": [["ed4f360f-9d34-5855-b0c1-89b15c2a6c07", -3]],
    "a NaN checkpoint id": [["ed4f360f-9d34-5855-b0c1-89b15c2a6c07", float("nan")]],
    "an id after the checkpoint": [["ed4f360f-9d34-5855-b0c1-89b15c2a6c07", 10**6]],
    "a writer that is no id": [["../../etc", 1]],
    "an entry that is no pair": [["ed4f360f-9d34-5855-b0c1-89b15c2a6c07"]],
    # a well-formed lineage whose writer never wrote into the folder: before, the job failed
    # at every restart ("its pending file is gone") and exited 1 after three
    "a writer that never wrote here": [["0badc0de-9d34-5855-b0c1-89b15c2a6c07", 2]],
    # the snapshotting writer's entry ends before its own pending transaction 2: its part
    # files after 1 would be taken out of the output (1,892 records lost before)
    "a last entry before the pending transaction": [["ed4f360f-9d34-5855-b0c1-89b15c2a6c07", 1]],
}


@pytest.mark.parametrize("case", list(LINEAGES))
def test_a_crafted_lineage_of_a_file_sink_exits_2_naming_the_file_and_field(
    retained_files: tuple[Path, Path],
    tmp_path: Path,
    case: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A file sink's lineage says which part files the checkpoint stands for: a crafted one
    took committed output away (a negative id: records lost) or crashed the task (NaN: a
    traceback). It is refused before the job starts."""
    retained, folder = retained_files
    chk = tmp_path / "chk" / retained.name
    shutil.copytree(retained, chk)
    shutil.copytree(folder, tmp_path / "out")
    state = json.loads(state_file_of(chk, "counts#0").read_text())["operator_states"]
    path = set_operator_state(
        chk, "counts#0", "sink-files", {**state["sink-files"], "lineage": LINEAGES[case]}
    )
    script = tmp_path / "job.py"
    script.write_text(SCRIPT_INTO_FILES.format(out=str(tmp_path / "out")))
    assert main(["run", str(script), "-q", "--simulate", "--from-checkpoint", str(chk)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("ckptsim run: "), err
    assert str(path) in err and "field 'operator_states['sink-files'].lineage" in err, err
    assert not list((tmp_path / "out").glob("part-*-end.*"))


@pytest.mark.parametrize("folder", [5, "", ["out"]])
def test_a_crafted_folder_of_a_file_sink_exits_2_naming_the_file_and_field(
    retained_files: tuple[Path, Path],
    tmp_path: Path,
    folder: object,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A file sink's state names the folder that staged its pending part files (a resume into
    another folder commits them there): one that is no path is refused before the job
    starts."""
    retained, out_folder = retained_files
    chk = tmp_path / "chk" / retained.name
    shutil.copytree(retained, chk)
    shutil.copytree(out_folder, tmp_path / "out")
    state = json.loads(state_file_of(chk, "counts#0").read_text())["operator_states"]
    assert state["sink-files"]["folder"] == str(out_folder)
    path = set_operator_state(
        chk, "counts#0", "sink-files", {**state["sink-files"], "folder": folder}
    )
    script = tmp_path / "job.py"
    script.write_text(SCRIPT_INTO_FILES.format(out=str(tmp_path / "out")))
    assert main(["run", str(script), "-q", "--simulate", "--from-checkpoint", str(chk)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("ckptsim run: "), err
    assert str(path) in err and "field 'operator_states['sink-files'].folder'" in err, err


#: the counting job into part files under {out}, as a script for ``ckptsim run``
SCRIPT_INTO_FILES = """
from pathlib import Path
from tests.actors.test_failover import counting


def build(env):
    counting(env, out=Path({out!r}))
"""


def test_a_state_file_of_the_recorded_size_that_fails_its_checksum_is_never_held_whole(
    chk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crafted state file of exactly the recorded size (64 MB of holes, resealed, then one
    byte changed) is refused by its checksum, computed a piece at a time, before it is read
    into memory (before: a 1 GB one peaked at 2.1 GB RSS to fail its checksum)."""
    from runtime import storage  # noqa: PLC0415

    path = state_file_of(chk, "counts#0")
    with path.open("r+b") as file:
        file.truncate(64 * 2**20)
    reseal(chk)
    with path.open("r+b") as file:
        file.seek(32 * 2**20)
        file.write(b"x")
    read_whole: list[str] = []
    read_at_most = storage._read_at_most

    def watched(fd: int, limit: int, what: str) -> bytes:
        read_whole.append(what)
        return read_at_most(fd, limit, what)

    monkeypatch.setattr(storage, "_read_at_most", watched)
    with pytest.raises(CorruptCheckpointError, match="fails its checksum") as caught:
        load_checkpoint(str(chk))
    assert f"state file {path} of task counts#0 fails its checksum" in str(caught.value)
    assert not [what for what in read_whole if str(path) in what], read_whole


def _with_a_short_source(env: StreamExecutionEnvironment) -> None:
    """The counting job with a second source of 20 records ('few', indices from 10**6) that
    finishes early, while 'numbers' runs on."""
    env.set_parallelism(2)
    env.enable_checkpointing(10)
    env.configure({"ckptsim.buffer.records": 50})
    few = env.from_collection([record(10**6 + i) for i in range(20)]).uid("few")
    numbers = env.from_generator(record, 20_000, rate=50_000).uid("numbers")
    numbers.union(few).key_by(key).reduce(count).uid("counts").processing_cost(
        per_buffer_ms=1
    ).collect("counts")


def test_a_finished_source_records_its_final_position_and_restores_exactly(
    tmp_path: Path,
) -> None:
    """A checkpoint taken after a source subtask finished lists it as finished with its final
    position (format version 3); a restore from it checks that position and does not read
    the source again, and the checkpoints of the resumed run record it again: over three runs
    every record is counted exactly once."""
    runs = []
    restore: str | None = None
    for n, timeout in enumerate((0.15, 0.05, None)):
        env = StreamExecutionEnvironment()
        _with_a_short_source(env)
        env.configure({**RETAIN, "execution.checkpointing.dir": str(tmp_path / str(n))})
        if restore is not None:
            env.configure({"execution.state-recovery.path": restore})
        result = env.execute(f"run {n}", runtime="simulation", seed=n + 1, timeout=timeout)
        runs.append(result)
        if timeout is None:
            assert result.status is JobStatus.FINISHED
            break
        assert result.status is JobStatus.CANCELED
        (restore,) = result.retained_checkpoints
        body = json.loads((Path(restore) / METADATA).read_text())["metadata"]
        assert body["version"] == 3
        assert body["finished_tasks"] == [["few", 0], ["few", 1]], "the short source finished"
        assert body["final_positions"] == [
            ["few", 0, {"few": {"offset": 10}}],
            ["few", 1, {"few": {"offset": 10}}],
        ]
        assert load_checkpoint(restore).final_positions
    indices, _ = observe(r for run in runs for r in run.collected("counts"))
    assert indices == Counter([*range(20_000), *range(10**6, 10**6 + 20)])


def test_a_directory_of_a_pending_part_files_name_is_no_part_file(
    retained_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The restore commits pending transaction 2 of counts#0's writer: a directory of its
    file's name does not count as that file (before, the restore went on, exit 0, and the
    directory stayed among the committed output)."""
    retained, folder = retained_files
    chk = tmp_path / "chk" / retained.name
    shutil.copytree(retained, chk)
    out = tmp_path / "out"
    shutil.copytree(folder, out)
    (part,) = [
        p
        for p in [
            *out.glob("part-sink-files-0-*-2.*"),
            *out.glob(".staging/part-sink-files-0-*-2.*"),
        ]
    ]
    part.unlink()
    part.mkdir()
    script = tmp_path / "job.py"
    script.write_text(SCRIPT_INTO_FILES.format(out=str(out)))
    assert main(["run", str(script), "-q", "--simulate", "--from-checkpoint", str(chk)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "leaves pending transaction 2 of sink 'files'" in err, err
    assert part.is_dir()
