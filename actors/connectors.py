"""Sink connectors: the I/O of a sink, driven by the task core's effects.

The task core keeps the sinks' transactions (``runtime.task.sinks``: one per checkpoint id);
a connector does what each step means for its files. With checkpointing enabled, the file
sinks are transactional (two-phase commit, as Flink's ``FileSink``): records go into the
current transaction (``write``); the task's snapshot for checkpoint *n* pre-commits it
(``pre_commit(n)``: it becomes pending); the checkpoint's completion commits it (``commit(n)``);
a restore commits the pending transactions of the restored snapshot (commits are idempotent)
and discards whatever else was staged (``restore``). What a reader sees is only committed
data: exactly once with exactly-once checkpoints and a replayable source. Without
checkpointing they write directly. The collect sink needs no connector: the core stages its
buffers and publishes them to the job's result on commit.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import IO, Any, Protocol, assert_never

import msgspec

from runtime.checkpoint import TaskId
from runtime.descriptors import SinkDescriptor, SinkKind


class Connector(Protocol):
    def write(self, records: Any) -> None: ...

    def pre_commit(self, checkpoint_id: int) -> Any:
        """Close the current transaction as checkpoint ``checkpoint_id``'s pending one (the
        task asks only when records were written into it); a non-transactional connector
        flushes. The return value is not used (the task core keeps the pending ids)."""

    def commit(self, checkpoint_id: int) -> None:
        """Commit every pending transaction up to ``checkpoint_id`` (idempotent)."""

    def restore(self, states: list[Any]) -> None:
        """Recover after a restore: commit the restored pending transactions (``states``: one
        ``{"pending": [ids]}`` per subtask that ran the sink), drop whatever else was staged."""

    def close(self, *, finished: bool) -> list[Any] | None:
        """End (``finished``: the task finished normally and what is left is committed; else
        it was cancelled, stopped or failed). The return value is not used."""


class NoTransactions:
    """A sink outside Flink's two-phase commit: nothing to commit, nothing to recover (a
    restore replays what it wrote)."""

    def commit(self, checkpoint_id: int) -> None:
        pass

    def restore(self, states: list[Any]) -> None:
        pass


class PrintConnector(NoTransactions):
    """Flink's print sink: ``<subtask index + 1>> <record>`` per record (not transactional);
    with a sink identifier ``<identifier>:<subtask index + 1>> `` (``<identifier>> `` at
    parallelism 1), as Flink's ``PrintSinkOutputWriter``."""

    def __init__(
        self,
        task: TaskId,
        parallelism: int,
        stream: IO[str] | None = None,
        identifier: str | None = None,
    ) -> None:
        subtask = f"{task.subtask + 1}" if parallelism > 1 else ""
        label = f"{identifier}:{subtask}" if identifier and subtask else identifier or subtask
        self.prefix = f"{label}> " if label else ""
        self.stream = stream or sys.stdout

    def write(self, records: Any) -> None:
        self.stream.write("".join(f"{self.prefix}{r}\n" for r in records))

    def pre_commit(self, checkpoint_id: int) -> Any:
        self.stream.flush()
        return None

    def close(self, *, finished: bool) -> list[Any] | None:
        self.stream.flush()
        return None


#: JSON lines, a whole buffer per call (msgspec: tens of times faster than ``json.dumps`` per
#: record); a value JSON has no type for is written as its ``str``
_JSON = msgspec.json.Encoder(enc_hook=str)


def _lines(records: Any, fmt: str) -> bytes:
    """A buffer's lines, UTF-8. ``json``: one compact JSON document per record, as any reader
    expects (tuples become arrays); ``text``: each record's ``str``."""
    if fmt == "json":
        return _JSON.encode_lines(records)
    if not records:
        return b""
    return ("\n".join(map(str, records)) + "\n").encode()


class FileConnector(NoTransactions):
    """Without checkpointing: one part file per subtask, ``<path>/part-<vertex>-<subtask>.<ext>``."""

    def __init__(self, path: str, task: TaskId, fmt: str) -> None:
        directory = Path(path)
        directory.mkdir(parents=True, exist_ok=True)
        suffix = "jsonl" if fmt == "json" else "txt"
        self.path = directory / f"part-{task.vertex}-{task.subtask}.{suffix}"
        self.fmt = fmt
        self.file = open(self.path, "wb")  # noqa: SIM115 - closed in close()

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

    def retract_after(self, checkpoint_id: int) -> list[str]:
        """After a restore of checkpoint ``checkpoint_id``: delete this subtask's part files
        committed for later checkpoints (or at an end without a final checkpoint), whose
        records the replay writes again; returns their names."""
        prefix, suffix = f"{self.stem}-", f".{self.suffix}"
        retracted = []
        for part in self.directory.glob(f"{self.stem}-*{suffix}"):
            tail = part.name[len(prefix) : -len(suffix)]
            if tail == "end" or (tail.isdigit() and int(tail) > checkpoint_id):
                part.unlink(missing_ok=True)
                retracted.append(part.name)
        return sorted(retracted)

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
        self.file: IO[bytes] | None = None

    def write(self, records: Any) -> None:
        if self.file is None:
            # "w": an in-progress file left here was never pre-committed (an earlier run that
            # stopped, or one with the same attempt number): its records are replayed
            self.file = open(self.in_progress, "wb")  # noqa: SIM115
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
    sink: SinkDescriptor,
    task: TaskId,
    parallelism: int,
    *,
    transactional: bool = False,
    attempt: int = 0,
) -> Connector | None:
    """The connector of one sink subtask (None for a collect sink: it needs none)."""
    match sink.sink:
        case SinkKind.COLLECT:
            return None
        case SinkKind.PRINT:
            return PrintConnector(task, parallelism, identifier=sink.identifier)
        case SinkKind.FILE:
            assert sink.path is not None
            if transactional:
                return TransactionalFileConnector(sink.path, task, sink.format, attempt)
            return FileConnector(sink.path, task, sink.format)
        case SinkKind.CUSTOM:  # DataStream.sink_to(factory)
            assert sink.factory is not None
            connector: Connector = sink.factory(
                task=task, parallelism=parallelism, transactional=transactional, attempt=attempt
            )
            return connector
        case _:
            assert_never(sink.sink)
