"""An exactly-once Parquet sink (Flink's ``FileSink`` pattern, written with PyArrow).

``stream.sink_to(ParquetSink(path, schema), name="out")``: each sink subtask writes its
records into an in-progress file under ``<path>/.staging/``. With checkpointing enabled the
sink is transactional (two-phase commit):

- the subtask's snapshot for checkpoint *n* closes the in-progress file as a *pending* file
  (``.staging/part-<sink>-<subtask>-<writer>-<n>.pending``, ``<sink>`` the sink operator's
  uid, ``<writer>`` a UUID of this attempt of the subtask, as Flink names part files); the
  pending ids are sink state in the checkpoint;
- when checkpoint *n* completes, the pending files up to *n* are renamed to
  ``<path>/part-<sink>-<subtask>-<writer>-<n>.parquet``: committed, and visible to readers;
- a restore (after a failure, or a resume from any retained checkpoint of any run) makes the
  committed files exactly the checkpoint's lineage (``runtime.task.sinks``): it commits the
  pending files that checkpoint holds (commits are idempotent) and takes every other file
  of the subtask out of the committed output (the restored sources write those records
  again), whatever other runs did to the folder since, with another parallelism or chaining
  too, and a resume into another folder commits the checkpoint's pending files in the folder
  that staged them: ``sink_to_file``'s staging, ``actors.connectors.StagedFiles``, on a
  ``pyarrow.fs`` filesystem (``ArrowStagedFiles``).

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
import threading
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from actors.connectors import StagedFiles
from actors.logs import get_logger
from runtime.checkpoint import TaskId
from runtime.row import Row
from runtime.task.sinks import Lineage
from spark_bridge.locations import Location, resolve
from spark_bridge.session import arrow_schema_of, require_pyarrow, require_pyspark
from spark_bridge.values import UTC, Unrepresentable, field_names, infer_type, to_arrow_column

log = get_logger(__name__)

#: rows gathered before a Parquet row group is written
ROW_GROUP_ROWS = 65_536


class SchemaMismatch(ValueError):
    """Records that do not fit the sink's schema."""


class ParquetSink:
    """An exactly-once Parquet sink: ``stream.sink_to(ParquetSink(path, schema), name=...)``
    (it makes the connector of each sink subtask). With checkpointing, each subtask writes a
    file per checkpoint, staged until the checkpoint completes, then renamed to
    ``part-<sink>-<subtask>-<writer>-<n>.parquet``; ``schema`` (a Spark ``StructType`` or a
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
        #: whether the user gave the schema (else the first records made it)
        self.schema_given = schema is not None
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
        uid: str | None = None,
    ) -> ParquetConnector:
        return ParquetConnector(
            self,
            task,
            transactional=transactional,
            writer=writer,
            uid=uid,
            parallelism=parallelism,
        )

    @property
    def folder(self) -> str:
        """The folder, as the sink's checkpointed state names it (a resume into another
        folder commits the checkpoint's pending files in this one, as ``sink_to_file``)."""
        return self.location.uri

    @property
    def output_folder(self) -> Path | None:
        """The folder on local disk (None: a remote filesystem): the launcher checks before
        the job runs that it is, or can be made, a folder this process may write in."""
        return self.path

    def missing_pending(
        self, task: TaskId, states: list[Any], uid: str | None = None, parallelism: int = 1
    ) -> tuple[int, str] | None:
        """Read-only, before a job restores sink subtask ``task`` (of sink operator ``uid``)
        from ``states``: the first pending transaction whose Parquet file the restore could
        not commit, and the folder it looked in (``actors.connectors.missing_pending_file``
        asks)."""
        files = ParquetConnector(
            self, task, transactional=True, create=False, uid=uid, parallelism=parallelism
        )
        k = files.missing_pending(states)
        if k is None:
            return None
        folder = files.staged_in(states)
        return k, self.location.uri if folder == files.directory else str(folder)

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
            except Unrepresentable as error:
                raise SchemaMismatch(f"column {field.name!r}: {error}{self._advice()}") from None
            except self._errors as error:
                raise SchemaMismatch(
                    f"column {field.name!r} does not fit its type {field.type}: {error}"
                    f"{self._advice()}"
                ) from None
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def _advice(self) -> str:
        """What to do about records that do not fit the schema: give one, if the first records
        made it; nothing to add if the user gave it."""
        if self.schema_given:
            return ""
        return (
            ". Give the sink a schema (schema=...) if the first records did not show the "
            "column's type"
        )

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
                try:  # values of a larger scale than the input's decimal: a new column
                    to_arrow_column(pa, values, kind, self.time_zone, rounding=False)
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
            to_arrow_column(self.pa, values, kind, self.time_zone, rounding=False)
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


class ArrowStagedFiles(StagedFiles):
    """``actors.connectors.StagedFiles`` (Flink's ``FileSink`` pattern, one implementation
    for every file sink: names, lineage, restore, retraction, resume into another folder)
    over a ``pyarrow.fs`` filesystem (a local folder, HDFS, S3 ...): a pending file's commit
    is a move, a rename on a local disk and HDFS, a copy and a delete on an object store,
    whose readers see a file whole or not at all. Paths are strings in ``filesystem``.
    Subclasses write the in-progress file (``in_progress``, in ``filesystem``) and close it
    (``_close_writer``)."""

    def __init__(
        self,
        location: Location,
        task: TaskId,
        suffix: str,
        writer: str | None = None,
        prefix: str = "part",
        *,
        create: bool = True,
        sink: str | None = None,
        parallelism: int = 1,
    ) -> None:
        self.location = location
        self.filesystem = location.filesystem
        super().__init__(
            location.path.rstrip("/"),
            task,
            suffix,
            writer,
            prefix,
            create=create,
            sink=sink,
            parallelism=parallelism,
        )

    def _join(self, folder: Any, name: str) -> Any:
        return f"{folder}/{name}"

    def _name(self, path: Any) -> str:
        return str(path).rsplit("/", 1)[-1]

    def _listing(self, folder: Any) -> list[str]:
        from pyarrow.fs import FileSelector, FileType  # noqa: PLC0415

        infos = self.filesystem.get_file_info(FileSelector(folder, allow_not_found=True))
        return [info.base_name for info in infos if info.type == FileType.File]

    def _exists(self, path: Any) -> bool:
        from pyarrow.fs import FileType  # noqa: PLC0415

        return bool(self.filesystem.get_file_info(path).type != FileType.NotFound)

    def _move(self, source: Any, target: Any) -> None:
        self.filesystem.move(source, target)

    def _delete(self, path: Any) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.filesystem.delete_file(path)

    def _make_dir(self, folder: Any) -> None:
        self.filesystem.create_dir(folder, recursive=True)

    def _other(self, folder: str) -> Location | None:
        """The folder a sink state names, as a location (None if it cannot be one)."""
        try:
            return resolve(folder, "a Parquet sink's ")
        except (ValueError, OSError, ImportError):
            return None

    def _same_folder(self, folder: str) -> bool:
        other = self._other(folder)
        return (
            other is not None
            and other.path.rstrip("/") == self.directory
            and other.filesystem.type_name == self.filesystem.type_name
        )

    def _in(self, folder: str) -> StagedFiles:
        other = self._other(folder)
        if other is None:
            raise FileNotFoundError(f"the folder {folder!r} a sink state names cannot be read")
        return self._looking_at(ArrowStagedFiles, other)


class ParquetConnector(ArrowStagedFiles):
    """One sink subtask's Parquet files (``actors.connectors.Connector``; staged per
    checkpoint as ``actors.connectors.StagedFiles``)."""

    def __init__(
        self,
        sink: ParquetSink,
        task: TaskId,
        *,
        transactional: bool,
        writer: str | None = None,
        create: bool = True,
        uid: str | None = None,
        parallelism: int = 1,
    ) -> None:
        super().__init__(
            sink.location,
            task,
            "parquet",
            writer,
            create=create,
            sink=uid,
            parallelism=parallelism,
        )
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

    def restore(self, states: list[Any], output: Lineage | None = None) -> None:
        if not self.transactional:
            return
        self.output = output
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
