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
- after a failure the job restores the latest completed checkpoint: the sink commits the
  pending files that checkpoint holds (commits are idempotent), deletes every other file
  it staged and retracts its part files committed for later checkpoints (the restored
  sources write those records again).

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
from pathlib import Path
from typing import Any

from actors.connectors import StagedFiles
from actors.logs import get_logger
from runtime.checkpoint import TaskId
from runtime.row import Row
from spark_bridge.session import arrow_schema_of, require_pyarrow, require_pyspark
from spark_bridge.values import UTC, field_names, infer_type, to_arrow_column

log = get_logger(__name__)

#: rows gathered before a Parquet row group is written
ROW_GROUP_ROWS = 65_536


class SchemaMismatch(ValueError):
    """Records that do not fit the sink's schema."""


class ParquetSink:
    """Makes the Parquet connector of each sink subtask (a ``DataStream.sink_to`` factory)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        schema: Any = None,
        *,
        row_group_rows: int = ROW_GROUP_ROWS,
        input_schema: Any = None,
        time_zone: dt.tzinfo = UTC,
    ) -> None:
        self.pa = require_pyarrow()
        self.path = Path(path)
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

    def committed_files(self) -> list[Path]:
        """The files a reader sees now."""
        return sorted(self.path.glob("part-*.parquet"))

    def remove_staging(self) -> bool:
        """After a finished job: remove ``.staging`` if nothing is left in it (True if gone)."""
        with contextlib.suppress(FileNotFoundError):
            try:
                (self.path / ".staging").rmdir()
            except OSError:
                return False
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
                kind = hint.field(hint.names.index(name)).type
                try:
                    to_arrow_column(pa, values, kind, self.time_zone)
                except self._errors:
                    kind = None  # not the input's column any more: infer its type
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
                log.info("parquet_schema_inferred", path=str(self.path), schema=str(schema))
            return self.schema

    def _set_schema(self, schema: Any) -> None:
        self.schema = schema


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


class ParquetConnector(StagedFiles):
    """One sink subtask's Parquet files (``actors.connectors.Connector``; staged per
    checkpoint as ``actors.connectors.StagedFiles``)."""

    def __init__(
        self, sink: ParquetSink, task: TaskId, *, transactional: bool, writer: str | None = None
    ) -> None:
        super().__init__(sink.path, task, "parquet", writer)
        self.sink = sink
        self.pq = _parquet()
        self.transactional = transactional
        self.writer: Any = None
        self.rows_written = 0
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
            path=str(self.directory),
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
        return None

    # --- files ----------------------------------------------------------------------------------

    def _flush(self) -> None:
        if not self._gathered:
            return
        pa = self.sink.pa
        table = pa.Table.from_batches(self._gathered, schema=self.sink.schema)
        if self.writer is None:
            self.staging.mkdir(parents=True, exist_ok=True)
            self.writer = self.pq.ParquetWriter(self.in_progress, self.sink.schema)
        self.writer.write_table(table)
        self.rows_written += table.num_rows
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
            self.in_progress.unlink(missing_ok=True)


def _parquet() -> Any:
    require_pyarrow()
    import pyarrow.parquet as pq  # noqa: PLC0415

    return pq
