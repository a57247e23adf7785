"""An exactly-once Parquet sink (Flink's ``FileSink`` pattern, written with PyArrow).

``stream.sink_to(ParquetSink(path, schema), name="out")``: each sink subtask writes its
records into an in-progress file under ``<path>/.staging/``. With checkpointing enabled the
sink is transactional (two-phase commit):

- the subtask's snapshot for checkpoint *n* closes the in-progress file as a *pending* file
  (``.staging/part-<vertex>-<subtask>-<writer>-<n>.pending``, ``<writer>`` a UUID of this
  attempt of the subtask, as Flink names part files); the pending ids are sink state in the
  checkpoint;
- when checkpoint *n* completes, the pending files up to *n* are renamed to
  ``<path>/part-<vertex>-<subtask>-<writer>-<n>.parquet``: committed, and visible to readers;
- a restore (after a failure, or a resume from any retained checkpoint of any run) makes the
  committed files exactly the checkpoint's lineage (``runtime.task.sinks``): it commits the
  pending files that checkpoint holds (commits are idempotent) and takes every other file
  of the subtask out of the committed output (the restored sources write those records
  again), whatever other runs did to the folder since, as ``sink_to_file`` does.

``spark.read.parquet(path)`` reads only committed files (Spark skips names starting with
``.``), so a reader sees every record once: exactly once, with exactly-once checkpoints and a
replayable source. Without checkpointing each subtask writes one file,
``part-<vertex>-<subtask>.parquet``, renamed into place when the subtask finishes.

Records may be tuples (or lists, rows: ``TupleRow``, ``pyspark.sql.Row``, PyFlink's ``Row``,
named tuples), dicts, single values, or Arrow record batches. The schema is ``schema`` (an
Arrow schema or a Spark ``StructType``) or else taken from the first records written and
kept for every file of the run: names from rows, named tuples or dicts (else ``_1``, ``_2``,
...); a column named as a column of ``input_schema`` (the Spark input's, passed through) has
that column's type when its values fit it (a decimal keeps its precision, a timestamp its
time zone semantics, a map stays a map); other columns get the type Spark would infer
(``spark_bridge.values.infer_type``: a datetime a timestamp, a Decimal decimal(38, 18), a
dict a map). A naive datetime written to a timestamp column is wall-clock time in
``time_zone`` (the Spark session's).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from actors.logs import get_logger
from runtime.checkpoint import TaskId
from runtime.row import Row
from runtime.task.sinks import Lineage, lineage_holds, missing_pending, restored_lineage
from spark_bridge.locations import Location, resolve
from spark_bridge.session import arrow_schema_of, require_pyarrow, require_pyspark
from spark_bridge.values import UTC, field_names, infer_type, to_arrow_column

log = get_logger(__name__)

#: rows gathered before a Parquet row group is written
ROW_GROUP_ROWS = 65_536

#: where the ids of writers derived from a taken one come from (``uuid.uuid5``)
_WRITERS = uuid.UUID("5c0b7e0a-3f55-4c8e-9d1e-2b6f0c9a4e13")
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
#: where a restore puts part files that are not in the lineage of the checkpoint it restores
#: but may be in another's (a checkpoint of another run), as ``sink_to_file`` does
RETRACTED = ".retracted"


class SchemaMismatch(ValueError):
    """Records that do not fit the sink's schema."""


class ParquetSink:
    """An exactly-once Parquet sink: ``stream.sink_to(ParquetSink(path, schema), name=...)``
    (it makes the connector of each sink subtask). With checkpointing, each subtask writes a
    file per checkpoint, staged until the checkpoint completes, then renamed to
    ``part-<vertex>-<subtask>-<writer>-<n>.parquet``; ``schema`` (a Spark ``StructType`` or a
    ``pyarrow.Schema``; None: inferred from the first records) types it."""

    def __init__(
        self,
        path: str | os.PathLike[str] | Location,
        schema: Any = None,
        *,
        row_group_rows: int = ROW_GROUP_ROWS,
        input_schema: Any = None,
        time_zone: dt.tzinfo = UTC,
    ) -> None:
        self.pa = require_pyarrow()
        self.location = path if isinstance(path, Location) else resolve(path, "a Parquet sink's ")
        #: the folder as a local path (None on a remote filesystem: see ``location.uri``)
        self.path: Path | None = Path(self.location.path) if self._on_local_disk() else None
        self.row_group_rows = row_group_rows
        self.input_schema = input_schema
        self.time_zone = time_zone
        self._lock = threading.Lock()
        #: what Arrow raises for values that do not fit a type
        self._errors = (
            self.pa.ArrowInvalid,
            self.pa.ArrowTypeError,
            OverflowError,
            ValueError,
            TypeError,
        )
        self.schema: Any = None
        if schema is not None:
            self._set_schema(_arrow_schema(schema))
        #: called when a sink subtask finishes (after its final checkpoint completed, before
        #: the job ends): ``run_topology(state=...)`` keeps the final checkpoint then
        self.on_finish: Callable[[], None] | None = None

    def __call__(
        self,
        *,
        task: TaskId,
        parallelism: int,
        transactional: bool,
        attempt: int,
        writer: str | None = None,
    ) -> ParquetConnector:
        return ParquetConnector(self, task, transactional=transactional, writer=writer)

    @property
    def output_folder(self) -> Path | None:
        """The folder on local disk (None: a remote filesystem): the launcher checks before
        the job runs that it is, or can be made, a folder this process may write in."""
        return self.path

    def missing_pending(self, task: TaskId, states: list[Any]) -> tuple[int, str] | None:
        """Read-only, before a job restores sink subtask ``task`` from ``states``: the first
        pending transaction whose Parquet file the restore could not commit, and the folder
        (``actors.connectors.missing_pending_file`` asks)."""
        files = ParquetConnector(self, task, transactional=True, create=False)
        k = files.missing_pending(states)
        return None if k is None else (k, self.location.uri)

    def _on_local_disk(self) -> bool:
        from pyarrow.fs import LocalFileSystem  # noqa: PLC0415

        return isinstance(self.location.filesystem, LocalFileSystem)

    def committed_files(self) -> list[PurePosixPath]:
        """The files a reader sees now (paths in the sink's filesystem)."""
        from pyarrow.fs import FileSelector, FileType  # noqa: PLC0415

        infos = self.location.filesystem.get_file_info(
            FileSelector(self.location.path, allow_not_found=True)
        )
        return sorted(
            PurePosixPath(info.path)
            for info in infos
            if info.type == FileType.File
            and info.base_name.startswith("part-")
            and info.base_name.endswith(".parquet")
        )

    def remove_staging(self) -> bool:
        """After a finished job: remove ``.staging`` if nothing is left in it (True if gone)."""
        from pyarrow.fs import FileSelector, FileType  # noqa: PLC0415

        filesystem, staging = self.location.filesystem, self.location.join(".staging")
        if filesystem.get_file_info(staging).type == FileType.NotFound:
            return True
        if filesystem.get_file_info(FileSelector(staging)):
            return False
        with contextlib.suppress(FileNotFoundError):
            filesystem.delete_dir(staging)
        return True

    # --- records to Arrow -------------------------------------------------------------------------

    def to_batch(self, records: Any) -> Any:
        """``records`` as an Arrow record batch with the sink's schema."""
        pa = self.pa
        if isinstance(records, pa.RecordBatch):
            schema = self.schema or self._fix_schema(lambda: records.schema)
            if records.schema.equals(schema):
                return records
            try:
                return (
                    pa.Table.from_batches([records]).cast(schema).combine_chunks().to_batches()[0]
                )
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as error:
                raise SchemaMismatch(
                    f"an Arrow batch with schema {records.schema} does not fit the sink's "
                    f"schema {schema}: {error}"
                ) from None
        schema = self.schema or self._fix_schema(lambda: self._infer_schema(records))
        columns = _columns(records, schema.names)
        if len(columns) != len(schema):
            raise SchemaMismatch(
                f"records with {len(columns)} field(s) do not fit the sink's schema {schema} "
                f"({len(schema)} fields)"
            )
        arrays = []
        for field, values in zip(schema, columns, strict=True):
            try:
                arrays.append(to_arrow_column(pa, values, field.type, self.time_zone))
            except self._errors as error:
                raise SchemaMismatch(
                    f"column {field.name!r} does not fit its type {field.type}: {error}. Give "
                    "the sink a schema (schema=...) if the first records did not show the "
                    "column's type"
                ) from None
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def _infer_schema(self, records: Sequence[Any]) -> Any:
        """A schema for the first buffer's records: names from rows, named tuples or dicts
        (else ``_1``, ``_2``, ...; ``value`` for single values); a named column of the input
        keeps the input's type if its values fit it, other types as Spark infers them."""
        pa = self.pa
        first = records[0]
        named = field_names(first)
        if isinstance(first, dict | tuple | list | Row):
            width = len(first)
            names = named or [f"_{i + 1}" for i in range(width)]
        else:
            names = ["value"]
        columns = _columns(records, names)
        hint = self.input_schema
        fields = []
        for name, values in zip(names, columns, strict=True):
            kind = None
            if named and hint is not None and name in hint.names:
                kind = parquet_type(pa, hint.field(hint.names.index(name)).type)
                try:
                    to_arrow_column(pa, values, kind, self.time_zone)
                except self._errors:
                    kind = None  # not the input's column any more: infer its type
            if kind is None and hint is not None:
                kind = self._input_struct(values)
            if kind is None:
                try:
                    kind = infer_type(pa, values)
                except self._errors as error:
                    raise SchemaMismatch(
                        f"column {name!r} has values of no one type ({error}): give the sink a "
                        "schema (schema=...)"
                    ) from None
            fields.append(pa.field(name, kind))
        return pa.schema(fields)

    def _input_struct(self, values: Sequence[Any]) -> Any:
        """Rows whose fields are all named as input columns (an input row passed through as
        a column, or part of one) as a struct of the input columns' types (decimal precision,
        timestamp_ntz, a struct's field types: none of it guessed from the values); None if
        they are not, or do not fit it."""
        hint = self.input_schema
        first = next((v for v in values if v is not None), None)
        names = field_names(first) if first is not None else None
        if not names or not all(name in hint.names for name in names):
            return None
        kind = parquet_type(
            self.pa, self.pa.struct([hint.field(hint.names.index(name)) for name in names])
        )
        try:
            to_arrow_column(self.pa, values, kind, self.time_zone)
        except self._errors:
            return None
        return kind

    def _fix_schema(self, make: Callable[[], Any]) -> Any:
        """Fix the sink's schema from the first records (the first subtask to write wins)."""
        with self._lock:
            if self.schema is None:
                schema = make()
                nulls = [f.name for f in schema if self.pa.types.is_null(f.type)]
                if nulls:
                    raise SchemaMismatch(
                        f"the first records have only None in column(s) {nulls}: give the "
                        "sink a schema (schema=...)"
                    )
                self._set_schema(schema)
                log.info("parquet_schema_inferred", path=self.location.uri, schema=str(schema))
            return self.schema

    def _set_schema(self, schema: Any) -> None:
        for field in schema:
            if parquet_type(self.pa, field.type) != field.type:
                raise SchemaMismatch(
                    f"column {field.name!r} is {field.type}: Parquet has no decimal of negative "
                    f"scale (nor can Spark write one): make it {parquet_type(self.pa, field.type)}"
                )
        self.schema = schema


def parquet_type(pa: Any, kind: Any) -> Any:
    """``kind`` with every decimal of negative scale (Spark's
    ``spark.sql.legacy.allowNegativeScaleOfDecimal``), which Parquet cannot hold, made the
    decimal of scale 0 that holds the same values: decimal(5, -2) is decimal(7, 0)."""
    if pa.types.is_decimal(kind):
        if kind.scale >= 0:
            return kind
        digits = kind.precision - kind.scale
        return pa.decimal128(digits, 0) if digits <= 38 else pa.decimal256(digits, 0)
    if pa.types.is_struct(kind):
        fields = [kind.field(i) for i in range(kind.num_fields)]
        made = [f.with_type(parquet_type(pa, f.type)) for f in fields]
        return kind if made == fields else pa.struct(made)
    if pa.types.is_map(kind):
        key, item = parquet_type(pa, kind.key_type), parquet_type(pa, kind.item_type)
        same = key == kind.key_type and item == kind.item_type
        return (
            kind
            if same
            else pa.map_(kind.key_field.with_type(key), kind.item_field.with_type(item))
        )
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        item = parquet_type(pa, kind.value_type)
        if item == kind.value_type:
            return kind
        field = kind.value_field.with_type(item)
        return pa.list_(field) if pa.types.is_list(kind) else pa.large_list(field)
    return kind


def _columns(records: Sequence[Any], names: Sequence[str]) -> list[Sequence[Any]]:
    """The buffer's records as columns: dicts by name, rows and tuples by position, other
    values as one column."""
    first = records[0]
    if isinstance(first, dict):
        return [[r.get(n) if isinstance(r, dict) else None for r in records] for n in names]
    if isinstance(first, Row):
        records = [r._values if isinstance(r, Row) else r for r in records]
    elif not isinstance(first, tuple | list):
        return [records]
    try:
        return list(zip(*records, strict=True))
    except (ValueError, TypeError):
        raise SchemaMismatch(
            "records of different lengths reached the sink; give every record the same fields"
        ) from None


def _arrow_schema(schema: Any) -> Any:
    pa = require_pyarrow()
    if isinstance(schema, pa.Schema):
        return schema
    require_pyspark()
    from pyspark.sql.types import StructType  # noqa: PLC0415

    if isinstance(schema, StructType):
        return arrow_schema_of(schema)
    raise TypeError(
        f"a Parquet sink's schema is a pyarrow.Schema or a Spark StructType, got "
        f"{type(schema).__name__} (a DDL string: run_topology accepts it, or "
        "spark.createDataFrame([], ddl).schema)"
    )


class StagedFiles:
    """Flink's ``FileSink`` pattern for one sink subtask, over a ``pyarrow.fs`` filesystem
    (a local folder, HDFS, S3 ...), as ``actors.connectors.StagedFiles`` does it with local
    files, with the same names: records go to an in-progress file
    ``<dir>/.staging/part-<vertex>-<subtask>-<writer>.inprogress``; the snapshot for
    checkpoint *n* moves it to the pending file ``...-<writer>-<n>.pending``; the checkpoint's
    completion moves that to ``<dir>/part-<vertex>-<subtask>-<writer>-<n>.<suffix>``, the file
    readers see (a rename on a local disk and HDFS; a copy and a delete on an object store,
    whose readers see a file whole or not at all). A checkpoint stands for a *lineage* of the
    subtask's part files (``runtime.task.sinks``): a restore makes the committed files exactly
    the restored lineage's, whatever other runs did to the folder since, as
    ``actors.connectors.StagedFiles`` does: it commits the lineage's pending files and brings
    back its files another restore set aside; every other part file leaves the committed
    output (deleted when this job wrote it or it was committed at an end, else moved to
    ``<dir>/.retracted/`` for a restore of another run's checkpoint). Subclasses write the
    in-progress file (``in_progress``, in ``filesystem``) and close it (``_close_writer``)."""

    def __init__(
        self,
        location: Location,
        task: TaskId,
        suffix: str,
        writer: str | None = None,
        prefix: str = "part",
        *,
        create: bool = True,
    ) -> None:
        self.location = location
        self.filesystem = location.filesystem
        self.directory = location.path.rstrip("/")
        self.staging = f"{self.directory}/.staging"
        if create:  # (not to look only: ``missing_pending`` before a restore)
            self.filesystem.create_dir(self.staging, recursive=True)
        self.retracted = f"{self.directory}/{RETRACTED}"
        self.stem = f"{prefix}-{task.vertex}-{task.subtask}"
        self.suffix = suffix
        #: this subtask's files, of any writer (and the names of earlier ckptsim versions:
        #: no writer, ``.attempt-<n>.inprogress``)
        self._names = re.compile(
            rf"{re.escape(self.stem)}(?:-(?P<writer>{_UUID}))?(?:-(?P<txn>\d+|end))?"
            rf"(?:\.attempt-\d+)?\.(?P<kind>inprogress|pending|{re.escape(suffix)})"
        )
        self.writer_id = self._unused(writer or str(uuid.uuid4()))
        self.in_progress = f"{self.staging}/{self.stem}-{self.writer_id}.inprogress"
        self.pending: list[int] = []
        #: the lineage the last restore restored (None: none known, an older checkpoint's)
        self.lineage: Lineage | None = None

    def _listing(self, folder: str) -> list[str]:
        """The names of the files in ``folder`` (none if it is not there)."""
        from pyarrow.fs import FileSelector, FileType  # noqa: PLC0415

        infos = self.filesystem.get_file_info(FileSelector(folder, allow_not_found=True))
        return [info.base_name for info in infos if info.type == FileType.File]

    def _exists(self, path: str) -> bool:
        from pyarrow.fs import FileType  # noqa: PLC0415

        return bool(self.filesystem.get_file_info(path).type != FileType.NotFound)

    def _delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.filesystem.delete_file(path)

    def _unused(self, writer: str) -> str:
        """``writer``, or (if files of that id are here already: a second simulated run of
        one seed) an id derived from it, of the same job (its first group), that no file here
        has."""
        while any(
            name.startswith((f"{self.stem}-{writer}-", f"{self.stem}-{writer}."))
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

    def _pending_path(self, checkpoint_id: int | str) -> str:
        return f"{self.staging}/{self.stem}-{self.writer_id}-{checkpoint_id}.pending"

    def final_path(self, checkpoint_id: int | str | None, writer: str | None = None) -> str:
        """The committed file of a checkpoint written by ``writer`` (default: this one; None
        as the checkpoint: the one file of a sink without checkpoints)."""
        if checkpoint_id is None:
            return f"{self.directory}/{self.stem}.{self.suffix}"
        writer = self.writer_id if writer is None else writer
        middle = f"-{writer}" if writer else ""
        return f"{self.directory}/{self.stem}{middle}-{checkpoint_id}.{self.suffix}"

    def missing_pending(self, states: list[Any]) -> int | None:
        """Read-only, before a restore of ``states``: the first restored pending transaction
        whose part file the restore could not commit (``runtime.task.sinks.missing_pending``)."""
        return missing_pending(
            states,
            [(w, t) for _, w, t in self._files(self.staging, "pending")],
            [(w, t) for _, w, t in self._files(self.directory, self.suffix)],
            [(w, t) for _, w, t in self._files(self.retracted, None)],
        )

    def _files(self, folder: str, kind: str | None) -> list[tuple[str, str, str | None]]:
        """This subtask's files of ``kind`` (None: the pending and committed ones) in
        ``folder``: (path, writer, transaction)."""
        found = []
        kinds = (kind,) if kind is not None else ("pending", self.suffix)
        for name in self._listing(folder):
            match = self._names.fullmatch(name)
            if match is not None and match["kind"] in kinds:
                found.append((f"{folder}/{name}", match["writer"] or "", match["txn"]))
        return found

    def _close_in_progress(self, into: str) -> bool:
        if not self._close_writer():
            return False
        self.filesystem.move(self.in_progress, into)
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
            self.filesystem.move(own, self.final_path(checkpoint_id))
            return
        txn = str(checkpoint_id)
        staged = [(p, w) for p, w, t in self._files(self.staging, "pending") if t == txn]
        for pending, writer in staged:
            self.filesystem.move(pending, self.final_path(checkpoint_id, writer))
        if not staged and not any(t == txn for _, _, t in self._files(self.directory, self.suffix)):
            raise self._gone(checkpoint_id)

    def _gone(self, checkpoint_id: int | str) -> FileNotFoundError:
        return FileNotFoundError(
            f"cannot commit checkpoint {checkpoint_id} of {self.stem}: its pending file "
            f"is gone from {self.staging} (was the sink's directory changed?)"
        )

    def _recover(self, states: list[Any]) -> tuple[list[int], list[str]]:
        """Commit the restored lineage's pending files (and bring back its retracted ones)
        and take whatever else is staged out of ``.staging``; returns the restored pending
        checkpoint ids and the names of what left ``.staging``. Committed files outside the
        lineage go with ``retract_after``."""
        gone = self.missing_pending(states)  # before anything moves (the same rule a
        if gone is not None:  # restore from a given checkpoint checks before the job starts)
            raise self._gone(gone)
        keep: set[int] = set()
        for state in states:
            keep.update(int(k) for k in (state or {}).get("pending", []))
        recorded = [s for s in states if isinstance(s, dict) and "lineage" in s]
        if not recorded:  # a restart from scratch, or a checkpoint without lineage
            self.lineage = None  # retract_after knows which
            for k in sorted(keep):
                self._commit(k)
            return sorted(keep), self._discard_staged(but=self.in_progress)
        self.lineage = restored_lineage(recorded, 0)
        back = self._files(self.staging, "pending") + self._files(self.retracted, None)
        for path, writer, txn in back:
            if self._stands_for(writer, txn, explicit_only=True):
                self.filesystem.move(path, self.final_path(txn, writer))
        # the restored pending transactions are the last writer's: committed by the moves above
        return sorted(keep), self._discard_staged(but=self.in_progress)

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
            retracted.append(part.rsplit("/", 1)[-1])
        return sorted(retracted)

    def _set_aside(self, path: str, writer: str, txn: str | None) -> None:
        """``path`` leaves the committed output or ``.staging``: deleted if no checkpoint of
        another run can stand for it (an earlier attempt of this job wrote it, or it was
        committed at an end), else moved to ``.retracted``."""
        if txn in (None, "end") or self._same_job(writer) or not writer:
            self._delete(path)
            return
        self.filesystem.create_dir(self.retracted, recursive=True)
        with contextlib.suppress(FileNotFoundError):
            self.filesystem.move(path, f"{self.retracted}/{path.rsplit('/', 1)[-1]}")

    def _discard_staged(self, but: str | None = None) -> list[str]:
        """Clear ``.staging`` of this subtask's files but ``but``: in-progress files are
        deleted (no checkpoint stands for them), pending ones set aside (``_set_aside``)."""
        discarded = []
        for leftover, _, _ in self._files(self.staging, "inprogress"):
            if leftover != but:
                self._delete(leftover)
                discarded.append(leftover.rsplit("/", 1)[-1])
        for leftover, writer, txn in self._files(self.staging, "pending"):
            self._set_aside(leftover, writer, txn)
            discarded.append(leftover.rsplit("/", 1)[-1])
        return sorted(discarded)

    def _commit_rest(self) -> None:
        """The end of input with no final checkpoint (checkpoints-after-tasks-finish off):
        commit every pending file and what is in progress."""
        for k in list(self.pending):
            self._commit(k)
        self.pending = []
        if self._close_in_progress(self._pending_path("end")):
            self._commit("end")


class ParquetConnector(StagedFiles):
    """One sink subtask's Parquet files (``actors.connectors.Connector``; staged per
    checkpoint as ``StagedFiles``)."""

    def __init__(
        self,
        sink: ParquetSink,
        task: TaskId,
        *,
        transactional: bool,
        writer: str | None = None,
        create: bool = True,
    ) -> None:
        super().__init__(sink.location, task, "parquet", writer, create=create)
        self.sink = sink
        self.pq = _parquet()
        self.transactional = transactional
        self.writer: Any = None
        self._gathered: list[Any] = []
        self._gathered_rows = 0

    # --- Connector ------------------------------------------------------------------------------

    def write(self, records: Any) -> None:
        if not len(records):
            return
        batch = self.sink.to_batch(records)
        self._gathered.append(batch)
        self._gathered_rows += batch.num_rows
        if self._gathered_rows >= self.sink.row_group_rows:
            self._flush()

    def pre_commit(self, checkpoint_id: int) -> Any:
        if not self.transactional:
            self._flush()
            return None
        return self._stage(checkpoint_id)

    def restore(self, states: list[Any]) -> None:
        if not self.transactional:
            return
        committed, discarded = self._recover(states)
        log.info(
            "parquet_sink_restored",
            path=self.location.uri,
            committed=committed,
            discarded=discarded,
        )

    def close(self, *, finished: bool) -> list[Any] | None:
        if not finished:  # cancelled or failed: what is staged waits for a restore (or stays)
            self._abandon()
            return None
        if not self.transactional:
            self._close_in_progress(self.final_path(None))
            return None
        self._commit_rest()
        # what is still staged under this subtask's name was never committed by any attempt
        # (e.g. staged before a restart that found no completed checkpoint): garbage now
        self._discard_staged()
        # .staging itself stays: another subtask may be about to write into it (removing it
        # here raced with that: FileNotFoundError); ParquetSink.remove_staging() after the job
        if self.sink.on_finish is not None:
            self.sink.on_finish()
        return None

    # --- files ----------------------------------------------------------------------------------

    def _flush(self) -> None:
        if not self._gathered:
            return
        pa = self.sink.pa
        table = pa.Table.from_batches(self._gathered, schema=self.sink.schema)
        if self.writer is None:
            self.filesystem.create_dir(self.staging, recursive=True)
            self.writer = self.pq.ParquetWriter(
                self.in_progress, self.sink.schema, filesystem=self.filesystem
            )
        self.writer.write_table(table)
        self._gathered, self._gathered_rows = [], 0

    def _close_writer(self) -> bool:
        self._flush()
        if self.writer is None:
            return False
        self.writer.close()
        self.writer = None
        return True

    def _abandon(self) -> None:
        self._gathered, self._gathered_rows = [], 0
        if self.writer is not None:
            with contextlib.suppress(Exception):
                self.writer.close()
            self.writer = None
        if not self.transactional:
            self._delete(self.in_progress)


def _parquet() -> Any:
    require_pyarrow()
    import pyarrow.parquet as pq  # noqa: PLC0415

    return pq
