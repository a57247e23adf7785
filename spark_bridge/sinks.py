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

Records may be tuples (or lists, Rows, named tuples), dicts, single values, or Arrow record
batches. The schema is ``schema`` (an Arrow schema or a Spark ``StructType``) or else taken
from the first records written (names from Rows/named tuples/dicts, else ``_1``, ``_2``, ...;
types inferred by Arrow) and kept for every file of the run.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from actors.connectors import StagedFiles
from actors.logs import get_logger
from runtime.checkpoint import TaskId
from spark_bridge.session import arrow_schema_of, require_pyarrow, require_pyspark

log = get_logger(__name__)

#: rows gathered before a Parquet row group is written
ROW_GROUP_ROWS = 65_536


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
        path: str | os.PathLike[str],
        schema: Any = None,
        *,
        row_group_rows: int = ROW_GROUP_ROWS,
    ) -> None:
        self.pa = require_pyarrow()
        self.path = Path(path)
        self.row_group_rows = row_group_rows
        self._lock = threading.Lock()
        self.schema: Any = None
        self._struct: Any = None
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
        schema = self.schema or self._fix_schema(lambda: _infer_schema(pa, records))
        first = records[0]
        if isinstance(first, list):
            records = [tuple(r) for r in records]
        elif not isinstance(first, tuple | dict):
            records = [(r,) for r in records]
        try:  # one conversion for the whole buffer: tuples by position, dicts by name
            return pa.RecordBatch.from_struct_array(pa.array(records, type=self._struct))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError) as error:
            raise SchemaMismatch(_misfit(pa, schema, records, error)) from None

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
        self._struct = self.pa.struct(list(schema))


def _infer_schema(pa: Any, records: Sequence[Any]) -> Any:
    """A schema for a buffer's records: names from Rows, named tuples or dicts (else ``_1``,
    ``_2``, ...; ``value`` for single values), types as Arrow infers them."""
    first = records[0]
    if isinstance(first, dict):
        names = list(first)
        columns = [[r.get(n) for r in records] for n in names]
    elif isinstance(first, tuple | list):
        if any(len(r) != len(first) for r in records):
            raise SchemaMismatch(
                "records of different lengths reached the sink; give every record the same fields"
            )
        names = _field_names(first) or [f"_{i + 1}" for i in range(len(first))]
        columns = [list(c) for c in zip(*records, strict=True)]
    else:
        names, columns = ["value"], [list(records)]
    return pa.schema([(n, pa.array(c).type) for n, c in zip(names, columns, strict=True)])


def _misfit(pa: Any, schema: Any, records: Sequence[Any], error: Exception) -> str:
    """Which column of ``records`` does not fit ``schema``, as a message."""
    for index, field in enumerate(schema):
        try:
            pa.array(
                [r.get(field.name) if isinstance(r, dict) else r[index] for r in records],
                type=field.type,
            )
        except IndexError:
            break
        except Exception as column_error:
            return (
                f"column {field.name!r} does not fit its type {field.type}: {column_error}. "
                "Give the sink a schema (schema=...) if the first records did not show the "
                "column's type"
            )
    return f"records do not fit the sink's schema {schema} ({len(schema)} fields): {error}"


def _field_names(record: Any) -> list[str] | None:
    fields = getattr(record, "__fields__", None) or getattr(record, "_fields", None)
    return list(fields) if fields else None


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
