"""Keyed state carried from one batch run to the next: ``run_topology(..., state=PATH,
run_id="2024-05-01")``.

A nightly job processes each day's input with the keyed state of every earlier day. The state
folder ``PATH`` (the driver's: a path or a ``file:`` URI) holds, per run that finished:

- ``runs/<n>-<run id>.json``: the run's record (written last, atomically: a run counts once
  this file is there), naming the run before it and the carried state;
- ``attempts/<uuid>/state/savepoint-.../``: the run's final state, a savepoint of ckptsim's
  format holding the state of every operator but the sources and sinks (their positions and
  transactions belong to that run's input and output), with no in-flight data and no
  operator marked ended, so that the next run restores it as the state before its first
  record (``execution.state-recovery.path``).

How the final state is found: a run with ``state=`` keeps its checkpoints in
``attempts/<uuid>/checkpoints`` and retains its last few; when a sink subtask finishes (after
its final checkpoint completed, before the job ends and discards its checkpoints) the
completed checkpoints are hard-linked into ``attempts/<uuid>/final``. After the job, each
task's state is taken from the newest of them in which the task had ended its input
(FLIP-147: every task's final checkpoint is taken after its input ended), so each operator's
state holds every record of the run exactly once.

Exactly once across runs: a run restores the newest committed run's state; its own state
counts only once its record is written, after the job finished and its output was committed.
A run whose ``run_id`` is committed already is refused before anything runs (its records are
in the state once already); a run that failed leaves no record (run it again: its output
folder must be new or empty again).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actors.logs import get_logger
from runtime.checkpoint import CheckpointProperties, CompletedCheckpoint, TaskId
from runtime.snapshot import LoadedCheckpoint, LoadedTaskState, TaskSnapshot
from runtime.storage import METADATA, FileSystemCheckpointStorage, load_checkpoint
from spark_bridge.locations import resolve, scheme_of
from spark_bridge.session import SparkBridgeError

log = get_logger(__name__)

#: completed checkpoints a run with ``state=`` retains (unless its config says more): a task
#: that finished before the newest one has its final state in an older one
RETAINED = 4
_RUN_FILE = re.compile(r"(\d{6})-(.*)\.json")


@dataclass(frozen=True)
class CommittedRun:
    """A run whose state is in the folder: its sequence number, id and carried state."""

    seq: int
    run_id: str
    state: Path
    record: Path


class StateFolder:
    """The state folder of ``run_topology(..., state=PATH)`` (see the module docstring)."""

    def __init__(self, where: str | os.PathLike[str]) -> None:
        text = os.fspath(where)
        scheme = scheme_of(text)
        if scheme not in ("", "file"):
            raise SparkBridgeError(
                f"state={text!r}: the state folder is the driver's (the actors and the "
                "checkpoint storage run on the driver): give a path or a file:/// URI, not a "
                f"{scheme}:// URI"
            )
        self.root = Path(resolve(text, "state=").path)
        self.runs = self.root / "runs"
        self.attempts = self.root / "attempts"
        try:
            self.runs.mkdir(parents=True, exist_ok=True)
            self.attempts.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise SparkBridgeError(
                f"state={text!r}: the driver cannot create that folder: {error}"
            ) from None

    def committed(self) -> list[CommittedRun]:
        """The runs whose state is in the folder, oldest first."""
        found = []
        for path in sorted(self.runs.iterdir()):
            match = _RUN_FILE.fullmatch(path.name)
            if match is None:
                continue
            record = json.loads(path.read_text())
            found.append(
                CommittedRun(
                    seq=int(match.group(1)),
                    run_id=str(record["run_id"]),
                    state=self.root / record["state"],
                    record=path,
                )
            )
        return sorted(found, key=lambda r: r.seq)

    def start(self, run_id: str) -> Attempt:
        """A new attempt of run ``run_id``: refused if that run is committed already."""
        if not isinstance(run_id, str) or not run_id.strip():
            raise ValueError(
                f"state= needs run_id=, the name of this run (e.g. the day it processes: "
                f"run_id='2024-05-01'), got {run_id!r}"
            )
        runs = self.committed()
        for run in runs:
            if run.run_id == run_id:
                raise SparkBridgeError(
                    f"run {run_id!r} ran already into the state in {self.root} (its record: "
                    f"{run.record}): its records are in the keyed state once, a second run "
                    "would count them twice. Give the next run's id; to redo the newest run, "
                    "delete its record file and run it again with a new or empty output folder"
                )
        previous = runs[-1] if runs else None
        return Attempt(self, run_id, previous, (previous.seq + 1) if previous else 1)


class Attempt:
    """One attempt of a run: where its checkpoints go, what it restores, how it commits."""

    def __init__(
        self, folder: StateFolder, run_id: str, previous: CommittedRun | None, seq: int
    ) -> None:
        self.folder = folder
        self.run_id = run_id
        self.previous = previous
        self.seq = seq
        self.directory = folder.attempts / uuid.uuid4().hex
        self.checkpoints = self.directory / "checkpoints"
        self.final = self.directory / "final"
        self.checkpoints.mkdir(parents=True)
        self.final.mkdir()
        self._lock = threading.Lock()

    def config(self, settings: dict[str, object]) -> dict[str, object]:
        """``settings`` for the run: its checkpoints in the attempt's folder, retained, and
        the previous run's state restored."""
        for key in (
            "execution.checkpointing.dir",
            "state.checkpoints.dir",
            "execution.state-recovery.path",
            "execution.savepoint.path",
        ):
            if settings.get(key) is not None:
                raise SparkBridgeError(
                    f"{key}= and state= together: with state= the run keeps its checkpoints "
                    f"in {self.folder.root} and restores the previous run's state from there"
                )
        out = dict(settings)
        out["execution.checkpointing.dir"] = str(self.checkpoints)
        retained = out.get("execution.checkpointing.num-retained")
        if not isinstance(retained, int) or retained < RETAINED:
            out["execution.checkpointing.num-retained"] = RETAINED
        if self.previous is not None:
            out["execution.state-recovery.path"] = str(self.previous.state)
        return out

    def keep_final(self) -> None:
        """A sink subtask finished: hard-link every completed checkpoint of the run into
        ``final`` (the job discards its checkpoints when it ends). Called from the sink
        subtasks' threads."""
        with self._lock:
            for metadata in self.checkpoints.glob(f"*/chk-*/{METADATA}"):
                source = metadata.parent
                target = self.final / source.name
                if target.exists():
                    continue
                partial = self.final / f".{source.name}.{uuid.uuid4().hex}"
                try:
                    partial.mkdir()
                    for file in source.iterdir():
                        os.link(file, partial / file.name)
                    partial.rename(target)
                except OSError:  # discarded meanwhile (subsumed): an older one, not needed
                    shutil.rmtree(partial, ignore_errors=True)

    def commit(self, drop: set[str], output: str, job_id: str) -> Path:
        """After the job finished: write its final state (without the operators ``drop``:
        sources, sinks) as the carried savepoint, then the run's record. Returns the
        savepoint's folder."""
        loaded = [load_checkpoint(str(p)) for p in self.final.iterdir() if p.name[:4] == "chk-"]
        if not loaded:
            raise SparkBridgeError(
                f"run {self.run_id!r}: no completed checkpoint holds the job's final state "
                f"(in {self.final}), so the state is not carried: the job took no checkpoint "
                "after its input ended"
            )
        loaded.sort(key=lambda c: c.checkpoint_id, reverse=True)
        newest = loaded[0]
        tasks = {*newest.tasks, *newest.finished_tasks}
        final: dict[TaskId, LoadedTaskState] = {}
        for task in tasks:
            state = _final_state(task, loaded)
            if state is None:
                raise SparkBridgeError(
                    f"run {self.run_id!r}: the final state of task {task} is in none of the "
                    f"checkpoints the run retained ({', '.join(str(c.checkpoint_id) for c in loaded)}), "
                    "so the state is not carried: retain more checkpoints "
                    "(execution.checkpointing.num-retained)"
                )
            final[task] = state
        savepoint = self._write(newest, final, drop)
        record = {
            "run_id": self.run_id,
            "seq": self.seq,
            "state": str(savepoint.relative_to(self.folder.root)),
            "previous": self.previous.run_id if self.previous else None,
            "checkpoint_id": newest.checkpoint_id,
            "job_id": job_id,
            "output": output,
        }
        name = f"{self.seq:06d}-{_safe(self.run_id)}.json"
        partial = self.directory / f".{name}"
        partial.write_text(json.dumps(record, indent=1))
        try:
            os.link(partial, self.folder.runs / name)  # fails if another run took the number
        except FileExistsError:
            raise SparkBridgeError(
                f"run {self.run_id!r}: another run committed run number {self.seq} into "
                f"{self.folder.root} meanwhile (two drivers on one state folder): this run's "
                "state is not carried"
            ) from None
        finally:
            partial.unlink()
        for leftover in (self.checkpoints, self.final):
            shutil.rmtree(leftover, ignore_errors=True)
        self._remove_unused()
        log.info("spark_state_carried", run=self.run_id, seq=self.seq, state=str(savepoint))
        return savepoint

    def _write(
        self, newest: LoadedCheckpoint, final: dict[TaskId, LoadedTaskState], drop: set[str]
    ) -> Path:
        storage = FileSystemCheckpointStorage(
            str(self.directory / "state"), "carried", job_name=newest.job_name, create_subdir=False
        )
        props = CheckpointProperties.for_savepoint(forced=True)
        cid = newest.checkpoint_id
        location = storage.initialize_location(cid, props, None)
        handles = {}
        for task, state in final.items():
            snapshot = TaskSnapshot(
                checkpoint_id=cid,
                task=task,
                operator_states={
                    uid: value for uid, value in state.operator_states.items() if uid not in drop
                },
                input_channels={},
                output_channels={},
                ended_input=False,
            )
            handles[task] = storage.write_task_state(location, snapshot)
        storage.finalize(
            CompletedCheckpoint(
                checkpoint_id=cid,
                timestamp=newest.timestamp,
                completion_timestamp=newest.timestamp,
                props=props,
                task_states=handles,
                external_path=location,
            )
        )
        assert location is not None
        return Path(location)

    def _remove_unused(self) -> None:
        """Attempts whose state no committed run of the last two names (failed attempts,
        states two runs old) go."""
        keep = {
            run.state.relative_to(self.folder.attempts).parts[0]
            for run in self.folder.committed()[-2:]
        }
        for attempt in self.folder.attempts.iterdir():
            if attempt.name not in keep and attempt != self.directory:
                with contextlib.suppress(OSError):
                    shutil.rmtree(attempt)

    def abandon(self) -> None:
        """The run failed: its attempt's folder goes (nothing of it counts)."""
        shutil.rmtree(self.directory, ignore_errors=True)


def _final_state(task: TaskId, loaded: list[LoadedCheckpoint]) -> LoadedTaskState | None:
    """``task``'s state in the newest checkpoint of ``loaded`` taken after its input ended."""
    for checkpoint in loaded:
        state = checkpoint.tasks.get(task)
        if state is not None and state.ended_input:
            return state
    return None


def _safe(run_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", run_id)[:80]


def operators_not_carried(job: Any) -> set[str]:
    """The uids of ``job``'s sources and sinks: their state is the run's own."""
    from runtime.descriptors import SinkDescriptor, SourceDescriptor  # noqa: PLC0415

    return {
        op.uid
        for vertex in job.vertices
        for op in vertex.operators
        if isinstance(op.operator, SourceDescriptor | SinkDescriptor)
    }
