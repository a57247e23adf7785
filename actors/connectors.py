"""Sink connectors: where a sink's records go (the I/O the pure operators leave to the runtime).

With checkpointing enabled, the collect and file sinks are transactional (two-phase commit,
as Flink's ``TwoPhaseCommitSinkFunction`` and ``FileSink``): records go into the current
transaction; the task's snapshot for checkpoint *n* pre-commits it (it becomes pending, and the
pending transactions are part of the snapshot); notify-checkpoint-complete commits every
pending transaction up to *n*; a restore commits the pending transactions of the restored
snapshot (commits are idempotent) and discards whatever else was staged. What a reader sees is
only committed data: exactly once with exactly-once checkpoints and a replayable source.
Without checkpointing they write directly.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol

from runtime.checkpoint import TaskId

#: publish(transaction id, records): hand committed records of a collect sink to the job
Publish = Callable[[int | str, list[Any]], None]


class Connector(Protocol):
    def write(self, records: Any) -> None: ...

    def pre_commit(self, checkpoint_id: int) -> Any:
        """Close the current transaction for checkpoint ``checkpoint_id``; returns the sink's
        state for the snapshot (None when not transactional)."""

    def commit(self, checkpoint_id: int) -> None:
        """Commit every pending transaction up to ``checkpoint_id`` (idempotent)."""

    def restore(self, states: list[Any]) -> None:
        """Recover after a restore: commit the restored pending transactions, drop the rest."""

    def close(self, *, finished: bool) -> list[Any] | None:
        """End (``finished``: the task finished normally, else it was cancelled). A
        non-transactional collect sink returns its records."""


class CollectConnector:
    """``collect(name)``: records reach ``JobResult.output[name]``; transactional with
    checkpointing (committed records are published to the JobMaster, which keeps each
    transaction once)."""

    def __init__(self, publish: Publish | None = None) -> None:
        self.publish = publish
        self.current: list[Any] = []
        self.pending: dict[int, list[Any]] = {}

    def write(self, records: Any) -> None:
        self.current.extend(records)

    def pre_commit(self, checkpoint_id: int) -> Any:
        if self.publish is None:
            return None
        self.pending[checkpoint_id] = self.current
        self.current = []
        return {"pending": [[k, list(v)] for k, v in sorted(self.pending.items())]}

    def commit(self, checkpoint_id: int) -> None:
        if self.publish is None:
            return
        for k in sorted(k for k in self.pending if k <= checkpoint_id):
            self.publish(k, self.pending.pop(k))

    def restore(self, states: list[Any]) -> None:
        if self.publish is None:
            return
        for state in states:
            for k, records in (state or {}).get("pending", []):
                self.publish(int(k), list(records))

    def close(self, *, finished: bool) -> list[Any] | None:
        if self.publish is None:
            return self.current
        if finished:  # no final checkpoint (checkpoints-after-tasks-finish off): commit the rest
            for k in sorted(self.pending):
                self.publish(k, self.pending.pop(k))
            if self.current:
                self.publish("end", self.current)
        self.current, self.pending = [], {}
        return None


class NoTransactions:
    """A sink outside Flink's two-phase commit: nothing to commit, nothing to recover (a
    restore replays what it wrote)."""

    def commit(self, checkpoint_id: int) -> None:
        pass

    def restore(self, states: list[Any]) -> None:
        pass


class PrintConnector(NoTransactions):
    """Flink's print sink: ``<subtask index + 1>> <record>`` per record (not transactional)."""

    def __init__(self, task: TaskId, parallelism: int, stream: IO[str] | None = None) -> None:
        self.prefix = f"{task.subtask + 1}> " if parallelism > 1 else ""
        self.stream = stream or sys.stdout

    def write(self, records: Any) -> None:
        self.stream.write("".join(f"{self.prefix}{r}\n" for r in records))

    def pre_commit(self, checkpoint_id: int) -> Any:
        self.stream.flush()
        return None

    def close(self, *, finished: bool) -> list[Any] | None:
        self.stream.flush()
        return None


def _lines(records: Any, fmt: str) -> str:
    """``json``: one plain JSON document per record, as any reader expects (tuples become
    arrays; values JSON has no type for are written as their ``str``)."""
    if fmt == "json":
        return "".join(json.dumps(r, default=str) + "\n" for r in records)
    return "".join(f"{r}\n" for r in records)


class FileConnector(NoTransactions):
    """Without checkpointing: one part file per subtask, ``<path>/part-<vertex>-<subtask>.<ext>``."""

    def __init__(self, path: str, task: TaskId, fmt: str) -> None:
        directory = Path(path)
        directory.mkdir(parents=True, exist_ok=True)
        suffix = "jsonl" if fmt == "json" else "txt"
        self.path = directory / f"part-{task.vertex}-{task.subtask}.{suffix}"
        self.fmt = fmt
        self.file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def write(self, records: Any) -> None:
        self.file.write(_lines(records, self.fmt))

    def pre_commit(self, checkpoint_id: int) -> Any:
        self.file.flush()
        return None

    def close(self, *, finished: bool) -> list[Any] | None:
        self.file.close()
        return None


class StagedFiles:
    """Flink's ``FileSink`` pattern for one sink subtask, whatever the file format: records
    go to an in-progress file under ``<dir>/.staging/``; the snapshot for checkpoint *n*
    turns it into a pending file (the pre-committed transaction); the checkpoint's completion
    renames that to ``<dir>/part-<vertex>-<subtask>-<n>.<suffix>``, the file readers see. A
    restore commits the restored pending files and deletes every other staged file of the
    subtask. Subclasses write the in-progress file and close it (``_close_writer``)."""

    def __init__(self, directory: Path, task: TaskId, suffix: str, attempt: int) -> None:
        self.directory = directory
        self.staging = directory / ".staging"
        self.staging.mkdir(parents=True, exist_ok=True)
        self.stem = f"part-{task.vertex}-{task.subtask}"
        self.suffix = suffix
        self.in_progress = self.staging / f"{self.stem}.attempt-{attempt}.inprogress"
        self.pending: list[int] = []

    def _close_writer(self) -> bool:
        """Close the in-progress file; False when nothing was written since the last one."""
        raise NotImplementedError

    def _pending_path(self, checkpoint_id: int | str) -> Path:
        return self.staging / f"{self.stem}-{checkpoint_id}.pending"

    def final_path(self, checkpoint_id: int | str | None) -> Path:
        """The committed file of a checkpoint (None: the one file of a sink without
        checkpoints)."""
        suffix = "" if checkpoint_id is None else f"-{checkpoint_id}"
        return self.directory / f"{self.stem}{suffix}.{self.suffix}"

    def _close_in_progress(self, into: Path) -> bool:
        if not self._close_writer():
            return False
        os.replace(self.in_progress, into)
        return True

    def _stage(self, checkpoint_id: int) -> Any:
        """Pre-commit: the in-progress file becomes checkpoint ``checkpoint_id``'s pending
        file; the pending checkpoints are the sink's state."""
        if self._close_in_progress(self._pending_path(checkpoint_id)):
            self.pending.append(checkpoint_id)
        return {"pending": list(self.pending)}

    def commit(self, checkpoint_id: int) -> None:
        for k in [k for k in self.pending if k <= checkpoint_id]:
            self._commit(k)
            self.pending.remove(k)

    def _commit(self, checkpoint_id: int | str) -> None:
        pending, final = self._pending_path(checkpoint_id), self.final_path(checkpoint_id)
        if pending.exists():
            os.replace(pending, final)
        elif not final.exists():
            raise FileNotFoundError(
                f"cannot commit {final.name}: its pending file {pending} is gone (was the "
                "sink's directory changed?)"
            )

    def _recover(self, states: list[Any]) -> tuple[list[int], list[str]]:
        """Commit the restored pending files (idempotent) and delete what the subtask staged
        after that checkpoint; returns the committed ids and the discarded file names."""
        keep: set[int] = set()
        for state in states:
            keep.update(int(k) for k in (state or {}).get("pending", []))
        for k in sorted(keep):
            self._commit(k)
        return sorted(keep), self._discard_staged(but=self.in_progress)

    def _discard_staged(self, but: Path | None = None) -> list[str]:
        discarded = []
        for leftover in self.staging.glob(f"{self.stem}[-.]*"):
            if leftover != but:
                leftover.unlink(missing_ok=True)
                discarded.append(leftover.name)
        return sorted(discarded)

    def _commit_rest(self) -> None:
        """The end of input with no final checkpoint (checkpoints-after-tasks-finish off):
        commit every pending file and what is in progress."""
        for k in list(self.pending):
            self._commit(k)
        self.pending = []
        if self._close_in_progress(self._pending_path("end")):
            self._commit("end")


class TransactionalFileConnector(StagedFiles):
    """``sink_to_file`` with checkpointing: text or JSON lines, staged per checkpoint."""

    def __init__(self, path: str, task: TaskId, fmt: str, attempt: int) -> None:
        super().__init__(Path(path), task, "jsonl" if fmt == "json" else "txt", attempt)
        self.fmt = fmt
        self.file: IO[str] | None = None

    def write(self, records: Any) -> None:
        if self.file is None:
            # "w": an in-progress file left here was never pre-committed (an earlier run that
            # stopped, or one with the same attempt number): its records are replayed
            self.file = open(self.in_progress, "w", encoding="utf-8")  # noqa: SIM115
        self.file.write(_lines(records, self.fmt))

    def _close_writer(self) -> bool:
        if self.file is None:
            return False
        self.file.close()
        self.file = None
        return True

    def pre_commit(self, checkpoint_id: int) -> Any:
        return self._stage(checkpoint_id)

    def restore(self, states: list[Any]) -> None:
        self._recover(states)

    def close(self, *, finished: bool) -> list[Any] | None:
        if finished:
            self._commit_rest()
        else:
            self._close_writer()
        with contextlib.suppress(OSError):
            if self.in_progress.exists() and self.in_progress.stat().st_size == 0:
                self.in_progress.unlink()
        return None


def make_connector(
    sink: str,
    options: dict[str, Any],
    task: TaskId,
    parallelism: int,
    *,
    transactional: bool = False,
    attempt: int = 0,
    publish: Publish | None = None,
) -> Connector:
    if sink == "collect":
        return CollectConnector(publish if transactional else None)
    if sink == "print":
        return PrintConnector(task, parallelism)
    if sink == "file":
        fmt = options.get("format", "text")
        if transactional:
            return TransactionalFileConnector(options["path"], task, fmt, attempt)
        return FileConnector(options["path"], task, fmt)
    if sink == "custom":  # DataStream.sink_to(factory)
        connector: Connector = options["factory"](
            task=task, parallelism=parallelism, transactional=transactional, attempt=attempt
        )
        return connector
    raise ValueError(f"unknown sink {sink!r}")
