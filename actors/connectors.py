"""Sink connectors: the I/O of a sink, driven by the task core's effects.

The task core keeps the sinks' transactions (``runtime.task.sinks``: one per checkpoint id);
a connector does what each step means for its files. With checkpointing enabled, the file
sinks are transactional (two-phase commit, as Flink's ``FileSink``): records go into the
current transaction (``write``); the task's snapshot for checkpoint *n* pre-commits it
(``pre_commit(n)``: it becomes pending); the checkpoint's completion commits it (``commit(n)``);
a restore makes the committed files exactly those the restored snapshot stands for (its
lineage: it commits its pending transactions, commits being idempotent, and takes every other
part file out of the committed output: ``restore``, ``retract_after``), whatever other runs did
to the folder. What a reader sees is only committed data: exactly once with exactly-once
checkpoints and a replayable source. Without checkpointing they write directly. The collect
sink needs no connector: the core stages its buffers and publishes them to the job's result
on commit.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol, assert_never

import msgspec

from actors.stdout import discard_stdout
from runtime.checkpoint import TaskId
from runtime.descriptors import SinkDescriptor, SinkKind
from runtime.task.sinks import (
    ANY_WRITER,
    Lineage,
    lineage_holds,
    missing_pending,
    restored_lineage,
)


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
    parallelism 1), as Flink's ``PrintSinkOutputWriter``. When the reader of its stream left
    (a closed pipe), it stops writing and the job goes on: what it printed is nobody's input
    any more (standard output goes to ``os.devnull``: ``discard_stdout``)."""

    def __init__(
        self,
        task: TaskId,
        parallelism: int,
        stream: IO[str] | None = None,
        identifier: str | None = None,
        formatter: Callable[[Any], str] | None = None,
    ) -> None:
        subtask = f"{task.subtask + 1}" if parallelism > 1 else ""
        label = f"{identifier}:{subtask}" if identifier and subtask else identifier or subtask
        self.prefix = f"{label}> " if label else ""
        self.stream = stream or sys.stdout
        self.formatter = formatter
        self.reader_left = False

    def write(self, records: Any) -> None:
        if self.reader_left:
            return
        prefix, fmt = self.prefix, self.formatter
        if fmt is None:
            text = "".join(f"{prefix}{r}\n" for r in records)
        else:
            text = "".join(f"{prefix}{fmt(r)}\n" for r in records)
        self._output(self.stream.write, text)

    def _output(self, call: Callable[..., Any], *args: Any) -> None:
        try:
            call(*args)
        except BrokenPipeError:
            self.reader_left = True
            if self.stream is sys.stdout or self.stream is sys.__stdout__:
                discard_stdout()

    def pre_commit(self, checkpoint_id: int) -> Any:
        if not self.reader_left:
            self._output(self.stream.flush)
        return None

    def close(self, *, finished: bool) -> list[Any] | None:
        if not self.reader_left:
            self._output(self.stream.flush)
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


def _suffix(fmt: str, part_suffix: str | None) -> str:
    """A part file's extension: the sink's own (``OutputFileConfig``'s ``.ext``) or the
    format's."""
    if part_suffix:
        return part_suffix.removeprefix(".")
    return "jsonl" if fmt == "json" else "txt"


class FileConnector(NoTransactions):
    """Without checkpointing: one part file per subtask, ``<path>/<prefix>-<vertex>-<subtask>.<ext>``
    (prefix ``part``)."""

    def __init__(
        self,
        path: str,
        task: TaskId,
        fmt: str,
        prefix: str = "part",
        part_suffix: str | None = None,
    ) -> None:
        directory = Path(path)
        directory.mkdir(parents=True, exist_ok=True)
        suffix = _suffix(fmt, part_suffix)
        self.path = directory / f"{prefix}-{task.vertex}-{task.subtask}.{suffix}"
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


#: the namespace of the writer ids the deterministic runtime derives (``writer_id``)
_WRITERS = uuid.UUID("9f1d4f5e-6c1b-4d0e-9a53-0c6b3e2f8a71")
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
#: where a restore puts part files that are not in the lineage of the checkpoint it restores
#: but may be in another's (a checkpoint of another run: ``StagedFiles``)
RETRACTED = ".retracted"


def _job_tag(job_id: str) -> str:
    """The first group of the writer ids of one job's writers (8 hex digits)."""
    return uuid.uuid5(_WRITERS, job_id).hex[:8]


def writer_id(job_id: str, task: TaskId, attempt: int, sink: str, *, deterministic: bool) -> str:
    """A unique id for one writer (a sink subtask's attempt), which its part files are named
    by, as Flink's ``FileSink`` names them by a random UUID per writer. Its first group names
    the job (every writer of one job shares it); the rest is random on threads, and on the
    deterministic runtime derived from the job id (the seed's), the task, the attempt and the
    sink, so that a seed replays the same file names (``StagedFiles`` makes sure its folder
    holds no file of that id yet)."""
    if deterministic:
        rest = uuid.uuid5(_WRITERS, f"{job_id}/{task}/{attempt}/{sink}")
    else:
        rest = uuid.uuid4()
    return f"{_job_tag(job_id)}{str(rest)[8:]}"


class StagedFiles:
    """Flink's ``FileSink`` pattern for one sink subtask, whatever the file format: records
    go to an in-progress file ``<dir>/.staging/part-<vertex>-<subtask>-<writer>.inprogress``;
    the snapshot for checkpoint *n* turns it into the pending file ``...-<writer>-<n>.pending``
    (the pre-committed transaction); the checkpoint's completion renames that to
    ``<dir>/part-<vertex>-<subtask>-<writer>-<n>.<suffix>``, the file readers see. ``<writer>``
    is a UUID of this writer (this attempt of the subtask; ``writer_id``), so no writer ever
    replaces another one's file, as Flink's ``<prefix>-<uuid>-<counter><suffix>``.

    A checkpoint stands for a *lineage* of the subtask's part files (``runtime.task.sinks``):
    per writer, its files up to a checkpoint id. A restore makes the committed files exactly
    the restored lineage's, whatever happened to the folder since: it commits the lineage's
    pending files and brings back its files that another restore retracted; it takes every
    other part file out of the committed output (``retract_after``) and everything else
    staged out of ``.staging``. What an earlier attempt of this job (a writer of the same job)
    wrote is deleted, as are in-progress files and files committed at an end without a final
    checkpoint (no checkpoint stands for those); what other runs wrote goes to
    ``<dir>/.retracted/``, since a checkpoint of theirs may stand for it (a reader skips that
    folder, as it skips ``.staging``). Subclasses write the in-progress file and close it
    (``_close_writer``)."""

    def __init__(
        self,
        directory: Path,
        task: TaskId,
        suffix: str,
        writer: str | None = None,
        prefix: str = "part",
        *,
        create: bool = True,
    ) -> None:
        self.directory = directory
        self._task, self._prefix = task, prefix
        self.staging = directory / ".staging"
        if create:  # (not to look only: ``missing_pending`` before a restore)
            self.staging.mkdir(parents=True, exist_ok=True)
        self.retracted = directory / RETRACTED
        self.stem = f"{prefix}-{task.vertex}-{task.subtask}"
        self.suffix = suffix
        #: this subtask's files, of any writer (and the names of earlier ckptsim versions:
        #: no writer, ``.attempt-<n>.inprogress``)
        self._names = re.compile(
            rf"{re.escape(self.stem)}(?:-(?P<writer>{_UUID}))?(?:-(?P<txn>\d+|end))?"
            rf"(?:\.attempt-\d+)?\.(?P<kind>inprogress|pending|{re.escape(suffix)})"
        )
        self.writer_id = self._unused(writer or str(uuid.uuid4()))
        self.in_progress = self.staging / f"{self.stem}-{self.writer_id}.inprogress"
        self.pending: list[int] = []
        #: the lineage the last restore restored (None: none known, an older checkpoint's)
        self.lineage: Lineage | None = None

    def _unused(self, writer: str) -> str:
        """``writer``, or (if files of that id are here already: a second simulated run of
        one seed) an id derived from it, of the same job, that no file here has."""
        while any(
            any(folder.glob(f"{self.stem}-{writer}[-.]*"))
            for folder in (self.directory, self.staging, self.retracted)
        ):
            writer = f"{writer[:8]}{str(uuid.uuid5(_WRITERS, writer))[8:]}"
        return writer

    def _same_job(self, writer: str) -> bool:
        """``writer`` is one of this job's (an earlier attempt's): a checkpoint of another run
        cannot stand for its files."""
        return bool(writer) and writer[:8] == self.writer_id[:8]

    def _close_writer(self) -> bool:
        """Close the in-progress file; False when nothing was written since the last one."""
        raise NotImplementedError

    def _pending_path(self, checkpoint_id: int | str) -> Path:
        return self.staging / f"{self.stem}-{self.writer_id}-{checkpoint_id}.pending"

    def final_path(self, checkpoint_id: int | str | None, writer: str | None = None) -> Path:
        """The committed file of a checkpoint written by ``writer`` (default: this one; None
        as the checkpoint: the one file of a sink without checkpoints)."""
        if checkpoint_id is None:
            return self.directory / f"{self.stem}.{self.suffix}"
        writer = self.writer_id if writer is None else writer
        middle = f"-{writer}" if writer else ""
        return self.directory / f"{self.stem}{middle}-{checkpoint_id}.{self.suffix}"

    def _files(self, folder: Path, kind: str | None) -> list[tuple[Path, str, str | None]]:
        """This subtask's files of ``kind`` (None: the pending and committed ones) in
        ``folder``: (path, writer, transaction)."""
        found = []
        kinds = (kind,) if kind is not None else ("pending", self.suffix)
        for path in folder.glob(f"{self.stem}[-.]*"):
            match = self._names.fullmatch(path.name)
            # a directory of a part file's name is not one (a restore must not count it)
            if match is not None and match["kind"] in kinds and path.is_file():
                found.append((path, match["writer"] or "", match["txn"]))
        return found

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
        """Commit checkpoint ``checkpoint_id``'s pending file: this writer's, or (restored
        from a checkpoint that recorded no lineage) the one an earlier writer staged; nothing
        if it was committed already."""
        own = self._pending_path(checkpoint_id)
        if own.exists():
            os.replace(own, self.final_path(checkpoint_id))
            return
        txn = str(checkpoint_id)
        staged = [(p, w) for p, w, t in self._files(self.staging, "pending") if t == txn]
        for pending, writer in staged:
            os.replace(pending, self.final_path(checkpoint_id, writer))
        if not staged and not any(t == txn for _, _, t in self._files(self.directory, self.suffix)):
            raise self._gone(checkpoint_id)

    def _gone(self, checkpoint_id: int | str) -> FileNotFoundError:
        return FileNotFoundError(
            f"cannot commit checkpoint {checkpoint_id} of {self.stem}: its pending file "
            f"is gone from {self.staging} (was the sink's directory changed?)"
        )

    def staged_in(self, states: list[Any]) -> Path:
        """The folder that holds the restored pending part files: this one if it holds part
        files of the writers the checkpoint restores (the job's own folder, or one moved or
        copied with the checkpoint), else the one the checkpoint's sink state names
        (``folder``: a job resumed with another output folder, as a Flink user resumes with a
        new output path; Flink's FileSink commits its committables at the paths they
        name)."""
        named = {
            state["folder"]
            for state in states
            if isinstance(state, dict) and isinstance(state.get("folder"), str)
        }
        if len(named) != 1:  # none recorded (an older checkpoint): this folder
            return self.directory
        folder = Path(named.pop())
        if folder.resolve() == self.directory.resolve() or self._holds_restored_output(states):
            return self.directory
        return folder

    def _holds_restored_output(self, states: list[Any]) -> bool:
        """This folder holds a part file (staged, committed or retracted) of a writer the
        restored lineage names (of any writer, when the checkpoint recorded none)."""
        writers = {
            str(entry[0])
            for state in states
            if isinstance(state, dict) and isinstance(state.get("lineage"), list)
            for entry in state["lineage"]
            if isinstance(entry, list) and entry
        }
        found = self._staged_or_retracted() + self._files(self.directory, self.suffix)
        if not writers or ANY_WRITER in writers:
            return bool(found)
        return any(writer in writers for _, writer, _ in found)

    def _in(self, folder: Path) -> StagedFiles:
        """This subtask's part files in another folder (only to look and commit there)."""
        return StagedFiles(folder, self._task, self.suffix, None, self._prefix, create=False)

    def _staged_or_retracted(self) -> list[tuple[Path, str, str | None]]:
        """This subtask's pending files in ``.staging`` and its files in ``.retracted``."""
        found = self._files(self.staging, "pending")
        if self.retracted.is_dir():
            found += self._files(self.retracted, None)
        return found

    def _recover(self, states: list[Any]) -> tuple[list[int], list[str]]:
        """Commit the restored lineage's pending files (and bring back its retracted ones)
        and take whatever else is staged out of ``.staging``; returns the restored pending
        checkpoint ids and the names of what left ``.staging``. Committed files outside the
        lineage go with ``retract_after``. A job resumed into another folder commits the
        pending files in the folder that staged them (``staged_in``), as Flink's FileSink
        commits its committables at their paths, touching nothing else there."""
        folder = self.staged_in(states)
        if folder == self.directory:
            keep = self._commit_restored(states, only_pending=False)
        else:
            there = self._in(folder)
            keep = there._commit_restored(states, only_pending=True)
            self.lineage = there.lineage
        return keep, self._discard_staged(but=self.in_progress)

    def _commit_restored(self, states: list[Any], *, only_pending: bool) -> list[int]:
        """In this folder: commit the restored pending transactions and, by the restored
        lineage (kept in ``lineage``), bring its files back from ``.retracted`` (with
        ``only_pending``: only the pending transactions' files); returns their ids."""
        gone = self.missing_pending(states)  # before anything moves (the same rule a
        if gone is not None:  # restore from a given checkpoint checks before the job starts)
            raise self._gone(gone)
        keep = sorted({int(k) for state in states for k in (state or {}).get("pending", [])})
        recorded = [s for s in states if isinstance(s, dict) and "lineage" in s]
        if not recorded:  # a restart from scratch, or a checkpoint without lineage
            self.lineage = None  # retract_after knows which
            for k in keep:
                self._commit(k)
            return keep
        self.lineage = restored_lineage(recorded, 0)
        for path, writer, txn in self._staged_or_retracted():
            if only_pending and not (txn is not None and txn.isdigit() and int(txn) in keep):
                continue
            if self._stands_for(writer, txn, explicit_only=True):
                os.replace(path, self.final_path(txn, writer))
        # the restored pending transactions are the last writer's: committed by the moves above
        return keep

    def missing_pending(self, states: list[Any]) -> int | None:
        """Read-only, before a restore of ``states``: the first restored pending transaction
        whose part file the restore could not commit (``runtime.task.sinks.missing_pending``),
        looked for in the folder that staged it (``staged_in``)."""
        folder = self.staged_in(states)
        if folder != self.directory:
            return self._in(folder).missing_pending(states)
        return self._missing_here(states)

    def _missing_here(self, states: list[Any]) -> int | None:
        """``missing_pending`` in this folder."""
        return missing_pending(
            states,
            [(w, t) for _, w, t in self._files(self.staging, "pending")],
            [(w, t) for _, w, t in self._files(self.directory, self.suffix)],
            [(w, t) for _, w, t in self._files(self.retracted, None)],
        )

    def _stands_for(self, writer: str, txn: str | None, *, explicit_only: bool = False) -> bool:
        """The restored lineage holds part file ``txn`` of ``writer`` (``lineage_holds``)."""
        return lineage_holds(self.lineage, writer, txn, explicit_only=explicit_only)

    def retract_after(self, checkpoint_id: int) -> list[str]:
        """After a restore of checkpoint ``checkpoint_id`` (0: a restart with no checkpoint):
        take this subtask's part files, of any writer, that the restored lineage does not
        hold out of the committed output (without a recorded lineage: those committed for
        later checkpoints, or at an end without a final checkpoint); the replay writes their
        records again. Returns their names."""
        if self.lineage is None:
            self.lineage = restored_lineage([], checkpoint_id)
        retracted = []
        for part, writer, txn in self._files(self.directory, self.suffix):
            if txn is None or self._stands_for(writer, txn):
                continue  # the one file of a run without checkpoints is nobody's transaction
            self._set_aside(part, writer, txn)
            retracted.append(part.name)
        return sorted(retracted)

    def _set_aside(self, path: Path, writer: str, txn: str | None) -> None:
        """``path`` leaves the committed output or ``.staging``: deleted if no checkpoint of
        another run can stand for it (an earlier attempt of this job wrote it, or it was
        committed at an end), else moved to ``.retracted``."""
        if txn in (None, "end") or self._same_job(writer) or not writer:
            path.unlink(missing_ok=True)
            return
        self.retracted.mkdir(exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.replace(path, self.retracted / path.name)

    def _discard_staged(self, but: Path | None = None) -> list[str]:
        """Clear ``.staging`` of this subtask's files but ``but``: in-progress files are
        deleted (no checkpoint stands for them), pending ones set aside (``_set_aside``)."""
        discarded = []
        for leftover, _, _ in self._files(self.staging, "inprogress"):
            if leftover != but:
                leftover.unlink(missing_ok=True)
                discarded.append(leftover.name)
        for leftover, writer, txn in self._files(self.staging, "pending"):
            self._set_aside(leftover, writer, txn)
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

    def __init__(
        self,
        path: str,
        task: TaskId,
        fmt: str,
        writer: str | None = None,
        prefix: str = "part",
        part_suffix: str | None = None,
        *,
        create: bool = True,
    ) -> None:
        super().__init__(Path(path), task, _suffix(fmt, part_suffix), writer, prefix, create=create)
        self.fmt = fmt
        self.file: IO[bytes] | None = None

    def write(self, records: Any) -> None:
        if self.file is None:
            # "w": the file is this writer's own (its id is unique), new after each pre-commit
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
    writer: str | None = None,
) -> Connector | None:
    """The connector of one sink subtask (None for a collect sink: it needs none).
    ``writer``: the unique id its part files are named by (``writer_id``; None: a random
    one), given to a ``sink_to`` factory that takes a ``writer`` keyword."""
    match sink.sink:
        case SinkKind.COLLECT:
            return None
        case SinkKind.PRINT:
            return PrintConnector(
                task, parallelism, identifier=sink.identifier, formatter=sink.formatter
            )
        case SinkKind.FILE:
            assert sink.path is not None
            prefix, suffix = sink.part_prefix, sink.part_suffix
            if transactional:
                return TransactionalFileConnector(
                    sink.path, task, sink.format, writer, prefix, suffix
                )
            return FileConnector(sink.path, task, sink.format, prefix, suffix)
        case SinkKind.CUSTOM:  # DataStream.sink_to(factory)
            assert sink.factory is not None
            extra = {"writer": writer} if _takes_writer(sink.factory) else {}
            connector: Connector = sink.factory(
                task=task,
                parallelism=parallelism,
                transactional=transactional,
                attempt=attempt,
                **extra,
            )
            return connector
        case _:
            assert_never(sink.sink)


def missing_pending_file(
    sink: SinkDescriptor, task: TaskId, states: list[Any]
) -> tuple[int, str] | None:
    """Read-only, before a job restores sink subtask ``task`` from ``states``: the first
    pending transaction whose part file the restore could not commit, and the sink's folder
    (``StagedFiles.missing_pending``); None when each is there, or the sink stages no files
    (a ``sink_to`` factory says so with a ``missing_pending(task, states)`` method)."""
    if sink.sink is SinkKind.FILE:
        assert sink.path is not None
        files = TransactionalFileConnector(
            sink.path, task, sink.format, None, sink.part_prefix, sink.part_suffix, create=False
        )
        k = files.missing_pending(states)
        return None if k is None else (k, str(files.staged_in(states)))
    check = getattr(sink.factory, "missing_pending", None) if sink.sink is SinkKind.CUSTOM else None
    if check is None:
        return None
    found: tuple[int, str] | None = check(task, states)
    return found


def _takes_writer(factory: Any) -> bool:
    """Whether a ``sink_to`` factory names a ``writer`` parameter (the documented signature
    has ``task``, ``parallelism``, ``transactional`` and ``attempt``; ``**kwargs`` alone may
    be passed on to something that takes no writer)."""
    try:
        return "writer" in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # no signature to read: call it as documented
        return False
