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
import math
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
            lines: list[str] = []
            try:
                for r in records:
                    lines.append(f"{prefix}{fmt(r)}\n")
            except Exception:  # a record the formatter fails on: those before it are printed
                self._output(self.stream.write, "".join(lines))
                raise
            text = "".join(lines)
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

#: how a float JSON has no number for is written: as Python's ``json`` and Jackson's readers
#: (Spark's ``allowNonNumericNumbers``) take it back (msgspec wrote null, as if it were None)
_NON_FINITE = {"NaN": b"NaN", "Infinity": b"Infinity", "-Infinity": b"-Infinity"}


def _json_lines(records: Any) -> bytes:
    """``records`` as JSON lines; a record holding inf, -inf or NaN (in a tuple, list or dict)
    keeps them as ``Infinity``, ``-Infinity`` and ``NaN``. Only a buffer whose lines hold a
    null is looked through for them: the others cost nothing more."""
    data = _JSON.encode_lines(records)
    if b"null" not in data or not any(map(_has_non_finite, records)):
        return data
    return b"".join(_json_line(record) for record in records)


def _json_line(record: Any) -> bytes:
    line = _JSON.encode(_marked(record))
    for token, written in _NON_FINITE.items():
        line = line.replace(b'"\\u0000' + token.encode() + b'\\u0000"', written)
    return line + b"\n"


def _has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, tuple | list):
        return any(map(_has_non_finite, value))
    if isinstance(value, dict):
        return any(map(_has_non_finite, value.values()))
    return False


def _marked(value: Any) -> Any:
    """``value`` with each non-finite float as a marked string ``_json_line`` turns into its
    token (a string of its own would not hold the NUL characters the mark has)."""
    if isinstance(value, float) and _has_non_finite(value):
        name = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return f"\x00{name}\x00"
    if isinstance(value, tuple | list):
        return [_marked(v) for v in value]
    if isinstance(value, dict):
        return {k: _marked(v) for k, v in value.items()}
    return value


def _lines(records: Any, fmt: str) -> bytes:
    """A buffer's lines, UTF-8. ``json``: one compact JSON document per record, as any reader
    expects (tuples become arrays; inf and NaN as ``Infinity`` and ``NaN``, as Python's
    ``json`` writes them); ``text``: each record's ``str``."""
    if fmt == "json":
        return _json_lines(records)
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
    go to an in-progress file ``<dir>/.staging/<prefix>-<sink>-<subtask>-<writer>.inprogress``;
    the snapshot for checkpoint *n* turns it into the pending file ``...-<writer>-<n>.pending``
    (the pre-committed transaction); the checkpoint's completion renames that to
    ``<dir>/<prefix>-<sink>-<subtask>-<writer>-<n>.<suffix>``, the file readers see. ``<sink>``
    is the sink operator's uid (not its job vertex, which a change of chaining renames; a sink
    constructed without one names its files by its task's vertex, as ckptsim did before);
    ``<writer>`` is a UUID of this writer (this attempt of the subtask; ``writer_id``), so no
    writer ever replaces another one's file, as Flink's ``<prefix>-<uuid>-<counter><suffix>``.

    A checkpoint stands for a *lineage* of the sink's part files (``runtime.task.sinks``):
    per writer, its files up to a checkpoint id. A restore makes the committed files exactly
    the restored lineage's, whatever happened to the folder since: it commits the lineage's
    pending files and brings back its files that another restore retracted, found by their
    writer whatever subtask or vertex wrote them (a resume with another parallelism or
    chaining); it takes every other part file of its share out of the committed output
    (``retract_after``: the files of the sink's subtask indexes ``i``, ``i + p``, ... at
    parallelism ``p``, of the sink's lineage of every former subtask, ``output``) and everything
    else of that share staged out of ``.staging``. What an earlier attempt of this job (a
    writer of the same job) wrote is deleted, as are in-progress files and files committed at
    an end without a final checkpoint (no checkpoint stands for those); what other runs wrote
    goes to ``<dir>/.retracted/``, since a checkpoint of theirs may stand for it (a reader
    skips that folder, as it skips ``.staging``). Subclasses write the in-progress file and
    close it (``_close_writer``); a subclass on another filesystem (``spark_bridge``'s Parquet
    sink) overrides the file operations (``_join`` ... ``_in``)."""

    def __init__(
        self,
        directory: Any,
        task: TaskId,
        suffix: str,
        writer: str | None = None,
        prefix: str = "part",
        *,
        create: bool = True,
        sink: str | None = None,
        parallelism: int = 1,
    ) -> None:
        self.directory = directory
        self._task, self._prefix = task, prefix
        self._sink, self._parallelism = sink, max(parallelism, 1)
        self.staging = self._join(directory, ".staging")
        if create:  # (not to look only: ``missing_pending`` before a restore)
            self._make_dir(self.staging)
        self.retracted = self._join(directory, RETRACTED)
        #: the names this subtask gives its files: by the sink's uid (else the vertex's)
        self.stem = f"{prefix}-{sink or task.vertex}-{task.subtask}"
        #: the names of the job vertex's subtask (ckptsim's names before they named the sink)
        self._legacy_stem = f"{prefix}-{task.vertex}-{task.subtask}"
        self.suffix = suffix
        kinds = rf"(?P<kind>inprogress|pending|{re.escape(suffix)})"
        #: this subtask's files by its vertex's name, of any writer (and the names of earlier
        #: ckptsim versions: no writer, ``.attempt-<n>.inprogress``)
        self._names = re.compile(
            rf"{re.escape(self._legacy_stem)}(?:-(?P<writer>{_UUID}))?(?:-(?P<txn>\d+|end))?"
            rf"(?:\.attempt-\d+)?\.{kinds}"
        )
        #: any subtask's files of a writer: ``<prefix>-<sink or vertex>-<subtask>-<writer>...``
        self._any = re.compile(
            rf"{re.escape(prefix)}-(?P<owner>.+)-(?P<subtask>\d+)-(?P<writer>{_UUID})"
            rf"(?:-(?P<txn>\d+|end))?\.{kinds}"
        )
        self.writer_id = self._unused(writer or str(uuid.uuid4()))
        self.in_progress = self._join(self.staging, f"{self.stem}-{self.writer_id}.inprogress")
        self.pending: list[int] = []
        #: the lineage the last restore restored (None: none known, an older checkpoint's)
        self.lineage: Lineage | None = None
        #: the committed output the restored checkpoint stands for, of every former subtask
        #: of the sink (``SinkRecover.output``; None: this subtask's ``lineage`` only)
        self.output: Lineage | None = None

    # --- the file operations (local files here) ---------------------------------------------------

    def _join(self, folder: Any, name: str) -> Any:
        return folder / name

    def _name(self, path: Any) -> str:
        return str(path.name)

    def _listing(self, folder: Any) -> list[str]:
        """The names of the files in ``folder`` (none if it is not there; a directory of a
        part file's name is not one, a restore must not count it)."""
        try:
            return [entry.name for entry in os.scandir(folder) if entry.is_file()]
        except (FileNotFoundError, NotADirectoryError):
            return []

    def _exists(self, path: Any) -> bool:
        return bool(path.exists())

    def _move(self, source: Any, target: Any) -> None:
        os.replace(source, target)

    def _delete(self, path: Any) -> None:
        path.unlink(missing_ok=True)

    def _make_dir(self, folder: Any) -> None:
        folder.mkdir(parents=True, exist_ok=True)

    def _same_folder(self, folder: str) -> bool:
        """``folder`` (as a sink state names it) is this one."""
        return bool(Path(folder).resolve() == Path(self.directory).resolve())

    def _in(self, folder: str) -> StagedFiles:
        """This subtask's part files in another folder (only to look and commit there)."""
        return self._looking_at(StagedFiles, Path(folder))

    def _looking_at(self, kind: type[StagedFiles], directory: Any) -> StagedFiles:
        """This subtask's part files in ``directory`` as a ``kind`` (only to look and commit
        there: nothing created, no writer of its own)."""
        return kind(
            directory,
            self._task,
            self.suffix,
            None,
            self._prefix,
            create=False,
            sink=self._sink,
            parallelism=self._parallelism,
        )

    # --- names ------------------------------------------------------------------------------------

    def _unused(self, writer: str) -> str:
        """``writer``, or (if files of that id are here already: a second simulated run of
        one seed) an id derived from it, of the same job, that no file here has."""
        while any(
            f"-{writer}-" in name or f"-{writer}." in name
            for folder in (self.directory, self.staging, self.retracted)
            for name in self._listing(folder)
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

    def _pending_path(self, checkpoint_id: int | str) -> Any:
        return self._join(self.staging, f"{self.stem}-{self.writer_id}-{checkpoint_id}.pending")

    def final_path(self, checkpoint_id: int | str | None, writer: str | None = None) -> Any:
        """The committed file of a checkpoint written by ``writer`` (default: this one; None
        as the checkpoint: the one file of a sink without checkpoints)."""
        if checkpoint_id is None:
            return self._join(self.directory, f"{self.stem}.{self.suffix}")
        writer = self.writer_id if writer is None else writer
        middle = f"-{writer}" if writer else ""
        return self._join(self.directory, f"{self.stem}{middle}-{checkpoint_id}.{self.suffix}")

    def _committed(self, path: Any) -> Any:
        """Where a staged or retracted part file is committed: its name in the folder, a
        pending one's with the committed suffix (whichever subtask or vertex named it)."""
        name = self._name(path)
        if name.endswith(".pending"):
            name = f"{name.removesuffix('.pending')}.{self.suffix}"
        return self._join(self.directory, name)

    def _files(
        self, folder: Any, kind: str | None, *, share: bool = True
    ) -> list[tuple[Any, str, str | None]]:
        """Part files of ``kind`` (None: the pending and committed ones) in ``folder``:
        (path, writer, transaction). ``share``: this subtask's share of the sink's files (its
        own index and those a rescale to this parallelism gave it: ``i``, ``i + p``, ..., by
        the sink's name or by this vertex's); else every part file that names a writer."""
        found = []
        kinds = (kind,) if kind is not None else ("pending", self.suffix)
        for name in self._listing(folder):
            own = self._names.fullmatch(name)
            if own is not None and own["kind"] in kinds:
                found.append((self._join(folder, name), own["writer"] or "", own["txn"]))
                continue
            match = self._any.fullmatch(name)
            if match is None or match["kind"] not in kinds:
                continue
            if share and not self._in_share(match["owner"], int(match["subtask"]), match["writer"]):
                continue
            found.append((self._join(folder, name), match["writer"], match["txn"]))
        return found

    def _in_share(self, owner: str, subtask: int, writer: str) -> bool:
        """A file of subtask ``subtask`` of the sink (named by its uid, or by this vertex, or
        by another vertex and a writer the restored lineage names: ckptsim's names before
        they named the sink, under another chaining) is this subtask's to tidy and retract
        when a rescale gave it that subtask's state."""
        if subtask % self._parallelism != self._task.subtask:
            return False
        if owner in (self._sink, self._task.vertex):
            return True
        named = [*(self.output or []), *(self.lineage or [])]
        return any(w == writer for w, _ in named)

    # --- the transactions -------------------------------------------------------------------------

    def _close_in_progress(self, into: Any) -> bool:
        if not self._close_writer():
            return False
        self._move(self.in_progress, into)
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
        if self._exists(own):
            self._move(own, self.final_path(checkpoint_id))
            return
        txn = str(checkpoint_id)
        staged = [p for p, _, t in self._files(self.staging, "pending") if t == txn]
        for pending in staged:
            self._move(pending, self._committed(pending))
        if not staged and not any(t == txn for _, _, t in self._files(self.directory, self.suffix)):
            raise self._gone(checkpoint_id)

    def _gone(self, checkpoint_id: int | str) -> FileNotFoundError:
        return FileNotFoundError(
            f"cannot commit checkpoint {checkpoint_id} of {self.stem}: its pending file "
            f"is gone from {self.staging} (was the sink's directory changed?)"
        )

    # --- a restore --------------------------------------------------------------------------------

    def restore(self, states: list[Any], output: Lineage | None = None) -> None:
        """Commit the restored pending transactions and the restored lineage (``states``);
        ``output``: the lineage of every former subtask of the sink, which ``retract_after``
        keeps committed (``SinkRecover.output``)."""
        self.output = output
        self._recover(states)

    def staged_in(self, states: list[Any]) -> Any:
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
        folder = named.pop()
        if self._same_folder(folder) or self._holds_restored_output(states):
            return self.directory
        return folder

    def _holds_restored_output(self, states: list[Any]) -> bool:
        """This folder holds a part file (staged, committed or retracted) of the writer whose
        pending transactions the checkpoint restores (the last its lineage names), or, with
        none pending, of a writer the restored lineage names (of any writer, when the
        checkpoint recorded none). An earlier writer's files do not count when another one's
        are pending: a resume back into the folder of a run before the one checkpointed
        commits the pending ones where they were staged."""
        named: set[str] = set()  # the writers the lineages name
        pending: set[str] = set()  # the last of them, of a state with pending transactions
        for state in states:
            if not isinstance(state, dict) or not isinstance(state.get("lineage"), list):
                continue
            lineage = [
                str(entry[0]) for entry in state["lineage"] if isinstance(entry, list) and entry
            ]
            named.update(lineage)
            if lineage and state.get("pending"):
                pending.add(lineage[-1])
        writers = pending or named
        found = self._staged_or_retracted(share=False) + self._files(
            self.directory, self.suffix, share=False
        )
        if not writers or ANY_WRITER in writers:
            return bool(found)
        return any(writer in writers for _, writer, _ in found)

    def _staged_or_retracted(self, *, share: bool = True) -> list[tuple[Any, str, str | None]]:
        """Pending files in ``.staging`` and files in ``.retracted`` (``_files``)."""
        return self._files(self.staging, "pending", share=share) + self._files(
            self.retracted, None, share=share
        )

    def _recover(self, states: list[Any]) -> tuple[list[int], list[str]]:
        """Commit the restored lineage's pending files (and bring back its retracted ones)
        and take whatever else of this subtask's share is staged out of ``.staging``; returns
        the restored pending checkpoint ids and the names of what left ``.staging``. Committed
        files outside the lineage go with ``retract_after``. A job resumed into another folder
        commits the pending files in the folder that staged them (``staged_in``), as Flink's
        FileSink commits its committables at their paths, touching nothing else there."""
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
        ``only_pending``: only the pending transactions' files); returns their ids. A
        lineage's files are found by their writer, whatever subtask or vertex named them."""
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
        for path, writer, txn in self._staged_or_retracted(share=False):
            if only_pending and not (txn is not None and txn.isdigit() and int(txn) in keep):
                continue
            if self._stands_for(writer, txn, explicit_only=True):
                with contextlib.suppress(FileNotFoundError):  # (another subtask's, just moved)
                    self._move(path, self._committed(path))
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
        """``missing_pending`` in this folder: a lineage's files by their writer, anywhere;
        an older checkpoint's (no lineage) in this subtask's share."""
        lineage = any(isinstance(s, dict) and "lineage" in s for s in states)
        share = not lineage
        return missing_pending(
            states,
            [(w, t) for _, w, t in self._files(self.staging, "pending", share=share)],
            [(w, t) for _, w, t in self._files(self.directory, self.suffix, share=share)],
            [(w, t) for _, w, t in self._files(self.retracted, None, share=share)],
        )

    def _stands_for(self, writer: str, txn: str | None, *, explicit_only: bool = False) -> bool:
        """The restored lineage holds part file ``txn`` of ``writer`` (``lineage_holds``)."""
        return lineage_holds(self.lineage, writer, txn, explicit_only=explicit_only)

    def retract_after(self, checkpoint_id: int) -> list[str]:
        """After a restore of checkpoint ``checkpoint_id`` (0: a restart with no checkpoint):
        take the part files of this subtask's share, of any writer, that the restored output
        (``output``, else this subtask's lineage) does not hold out of the committed output
        (without a recorded lineage: those committed for later checkpoints, or at an end
        without a final checkpoint); the replay writes their records again. Returns their
        names."""
        if self.lineage is None:
            self.lineage = restored_lineage([], checkpoint_id)
        output = self.output if self.output is not None else self.lineage
        retracted = []
        for part, writer, txn in self._files(self.directory, self.suffix):
            if txn is None or lineage_holds(output, writer, txn):
                continue  # the one file of a run without checkpoints is nobody's transaction
            self._set_aside(part, writer, txn)
            retracted.append(self._name(part))
        return sorted(retracted)

    def _set_aside(self, path: Any, writer: str, txn: str | None) -> None:
        """``path`` leaves the committed output or ``.staging``: deleted if no checkpoint of
        another run can stand for it (an earlier attempt of this job wrote it, or it was
        committed at an end), else moved to ``.retracted``."""
        if txn in (None, "end") or self._same_job(writer) or not writer:
            self._delete(path)
            return
        self._make_dir(self.retracted)
        with contextlib.suppress(FileNotFoundError):
            self._move(path, self._join(self.retracted, self._name(path)))

    def _discard_staged(self, but: Any = None) -> list[str]:
        """Clear ``.staging`` of this subtask's share of files but ``but`` and what the
        restored output holds: in-progress files are deleted (no checkpoint stands for
        them), pending ones set aside (``_set_aside``)."""
        output = self.output if self.output is not None else self.lineage
        discarded = []
        for leftover, _, _ in self._files(self.staging, "inprogress"):
            if leftover != but:
                self._delete(leftover)
                discarded.append(self._name(leftover))
        for leftover, writer, txn in self._files(self.staging, "pending"):
            if lineage_holds(output, writer, txn, explicit_only=True):
                continue  # another subtask's to commit (a rescale)
            self._set_aside(leftover, writer, txn)
            discarded.append(self._name(leftover))
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
        sink: str | None = None,
        parallelism: int = 1,
    ) -> None:
        super().__init__(
            Path(path),
            task,
            _suffix(fmt, part_suffix),
            writer,
            prefix,
            create=create,
            sink=sink,
            parallelism=parallelism,
        )
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
    uid: str | None = None,
) -> Connector | None:
    """The connector of one sink subtask (None for a collect sink: it needs none).
    ``writer``: the unique id its part files are named by (``writer_id``; None: a random
    one), given to a ``sink_to`` factory that takes a ``writer`` keyword; ``uid``: the sink
    operator's uid, which names its part files whatever vertex runs it (given to a factory
    that takes a ``uid`` keyword)."""
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
                    sink.path,
                    task,
                    sink.format,
                    writer,
                    prefix,
                    suffix,
                    sink=uid,
                    parallelism=parallelism,
                )
            return FileConnector(sink.path, task, sink.format, prefix, suffix)
        case SinkKind.CUSTOM:  # DataStream.sink_to(factory)
            assert sink.factory is not None
            given = {"writer": writer, "uid": uid}
            extra = {k: v for k, v in given.items() if _takes(sink.factory, k)}
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
    sink: SinkDescriptor,
    task: TaskId,
    states: list[Any],
    uid: str | None = None,
    parallelism: int = 1,
) -> tuple[int, str] | None:
    """Read-only, before a job restores sink subtask ``task`` (of sink operator ``uid``)
    from ``states``: the first pending transaction whose part file the restore could not
    commit, and the folder it looked in (``StagedFiles.missing_pending``); None when each is
    there, or the sink stages no files (a ``sink_to`` factory says so with a
    ``missing_pending(task, states)`` method)."""
    if sink.sink is SinkKind.FILE:
        assert sink.path is not None
        files = TransactionalFileConnector(
            sink.path,
            task,
            sink.format,
            None,
            sink.part_prefix,
            sink.part_suffix,
            create=False,
            sink=uid,
            parallelism=parallelism,
        )
        k = files.missing_pending(states)
        return None if k is None else (k, str(files.staged_in(states)))
    check = getattr(sink.factory, "missing_pending", None) if sink.sink is SinkKind.CUSTOM else None
    if check is None:
        return None
    given = {"uid": uid, "parallelism": parallelism}
    found: tuple[int, str] | None = check(
        task, states, **{k: v for k, v in given.items() if _takes(check, k)}
    )
    return found


def _takes(factory: Any, keyword: str) -> bool:
    """Whether a ``sink_to`` factory names parameter ``keyword`` (the documented signature
    has ``task``, ``parallelism``, ``transactional`` and ``attempt``; ``**kwargs`` alone may
    be passed on to something that takes no such keyword)."""
    try:
        return keyword in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # no signature to read: call it as documented
        return False
