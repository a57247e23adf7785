"""Spark DataFrames and RDDs as replayable sources: ``from_spark(env, df)``.

Each Spark partition is a split (``spark_bridge.feed``). A split is read with one Spark job
over that partition alone (the JVM side of ``SparkContext.runJob``, given one partition
index), whose result the driver streams over a local socket as ``DataFrame.toLocalIterator``
does, one buffer at a time: the driver never holds the whole input, only the partition being
served to each source subtask (in the driver JVM) and the buffers in flight (in Python).
Source subtasks read their splits in parallel, each with its own Spark jobs.

- A DataFrame travels as Arrow: the JVM turns each partition into Arrow record batches
  (``Dataset.toArrowBatchRdd``, no Python worker involved) and the driver decodes them
  without copying. ``batch_format="rows"`` (default) hands the job lists of rows
  (``runtime.row.TupleRow``: tuples in the DataFrame's column order whose fields also have
  the columns' names, ``r[0]`` or ``r.user``, as PySpark's ``Row``), holding Spark's Python
  values (``spark_bridge.values``: a timestamp is an aware ``datetime`` in the session time
  zone, a map a dict, a struct a row); ``"tuples"`` the same values in plain tuples;
  ``"arrow"`` hands it ``pyarrow.RecordBatch`` slices (for ``map_batch`` functions and sinks
  that take Arrow: nothing unpacks the records; a batch cannot cross a ``key_by``/
  ``rebalance`` edge). Where Arrow cannot carry a column type the DataFrame falls back to
  ``df.rdd`` (rows pickled by Python workers, several times slower).
- An RDD's elements are the records, as pickled by Spark.

Replay: after a restore a split is read again from row 0 and the rows before the restored
offset are skipped (on the driver for a DataFrame, on the executor for an RDD), so the input
must give the same rows in the same order per partition every time it is computed. By
default the input is persisted (``stabilize="persist"``, MEMORY_AND_DISK): replays read the
cached partitions; a partition lost with its executor is recomputed from the plan, so the
plan must still be deterministic (no unseeded ``rand()``, no ``repartition()`` or shuffle
without a sort within partitions, no source that changes). ``"local_checkpoint"`` stores
the partitions once and truncates the plan (a lost partition fails the job instead of
changing it); ``"none"`` leaves the input as it is (it must be deterministic by itself).
"""

from __future__ import annotations

import datetime as dt
import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from actors.logs import get_logger
from actors.protocol import CancelJob
from runtime.operators import OperatorContext
from runtime.row import row_class
from spark_bridge._pyspark_seam import (
    arrow_batch_rdd,
    java_rdd,
    local_socket,
    max_result_size,
    run_partition_job,
    session_sql_confs,
)
from spark_bridge.feed import FeedChanged, PartitionFeed, SplitReader
from spark_bridge.session import (
    CONNECT_MESSAGE,
    SparkConnectNotSupported,
    arrow_schema_of,
    is_connect,
    require_pyarrow,
    require_pyspark,
)
from spark_bridge.values import UTC, RecordConverter, session_time_zone

if TYPE_CHECKING:
    from runtime.datastream import DataStream, StreamEnvironment

log = get_logger(__name__)

BatchFormat = Literal["rows", "tuples", "arrow"]
BATCH_FORMATS = ("rows", "tuples", "arrow")
Stabilize = Literal["persist", "local_checkpoint", "none"]

#: records per chunk of an RDD split (an Arrow split comes in Spark's Arrow batches,
#: ``spark.sql.execution.arrow.maxRecordsPerBatch``, 10,000 rows by default)
RDD_CHUNK = 4096
#: elements of an RDD one Spark job returns at most
RDD_ROWS_PER_JOB = 262_144


#: the local properties of a thread that say whose its Spark jobs are: the job group (and
#: whether cancelling it interrupts tasks), the description, the fair-scheduler pool, tags
CONTEXT_PROPERTIES = (
    "spark.jobGroup.id",
    "spark.job.description",
    "spark.job.interruptOnCancel",
    "spark.scheduler.pool",
    "spark.job.tags",
)


def caller_context(sc: Any) -> dict[str, str]:
    """The calling thread's Spark job context (``CONTEXT_PROPERTIES`` that are set): what
    ``sc.setJobGroup``, ``setJobDescription``, ``setLocalProperty("spark.scheduler.pool",
    ...)`` and ``addJobTag`` said in this thread."""
    context = {}
    for key in CONTEXT_PROPERTIES:
        value = sc.getLocalProperty(key)
        if value is not None:
            context[key] = str(value)
    return context


class SparkJobCancelled(RuntimeError):
    """A source's Spark job was cancelled with the caller's job group (the source task's
    failure; ``run_topology`` raises ``JobGroupCancelled``)."""


class CancelWatch:
    """Whether the caller's Spark job group (``sc.setJobGroup`` in the thread that called
    ``run_topology``) was cancelled (``sc.cancelJobGroup``) while a source read its input;
    told by the feed when a Spark job of the group fails as cancelled. It then cancels the
    topology's job (no restart: every Spark job after would belong to the cancelled group)
    and no source submits another Spark job. As a ``JobObserver`` it hears which JobMaster
    to tell."""

    def __init__(self, group: str | None) -> None:
        self.group = group
        self.cancelled = False
        self._master: Any = None
        self._lock = threading.Lock()

    def check(self) -> None:
        """Refuse to start a Spark job once the group was cancelled."""
        if self.cancelled:
            raise SparkJobCancelled(self._message())

    def failed(self, error: BaseException) -> None:
        """A Spark job of a source failed with ``error``: if the group was cancelled, stop
        the topology and raise ``SparkJobCancelled``; otherwise return (the caller re-raises)."""
        text = str(error)
        if self.group is None or "cancel" not in text.lower() or self.group not in text:
            return
        self.group_cancelled(self.group)
        raise SparkJobCancelled(self._message()) from None

    def group_cancelled(self, group: str) -> None:
        """``sc.cancelJobGroup(group)`` was called (``_pyspark_seam.hearing_group_cancels``:
        whether or not one of the bridge's Spark jobs ran then): if it is the caller's group,
        cancel the topology's job and refuse further Spark jobs."""
        if self.group is None or group != self.group:
            return
        with self._lock:
            self.cancelled = True
            master = self._master
        if master is not None:
            master.tell(CancelJob())

    def _message(self) -> str:
        return f"Spark job group {self.group!r} was cancelled (sc.cancelJobGroup)"

    def job_started(self, *, master: Any, **_: Any) -> None:
        with self._lock:
            self._master = master
            cancelled = self.cancelled
        if cancelled:
            master.tell(CancelJob())

    def job_ended(self, job_id: str, result: Any) -> None:
        with self._lock:
            self._master = None


def _run_partition_job(
    sc: Any,
    jrdd: Any,
    partition: int,
    description: str,
    context: dict[str, str] | None = None,
    watch: CancelWatch | None = None,
    sql_confs: dict[str, str] | None = None,
) -> Any:
    """One Spark job over one partition of ``jrdd`` (a JavaRDD of byte arrays), in the job
    group, pool and tags of ``context`` (the thread that made the feed: a source subtask
    runs in a thread of its own), described as the caller's description and ``description``,
    with a DataFrame's session settings ``sql_confs`` for its executors (as Spark runs a SQL
    execution's jobs); returns the socket the driver JVM serves its result on. The thread's
    own properties are put back afterwards."""
    context = dict(context or {})
    mine = context.get("spark.job.description")
    context["spark.job.description"] = f"{mine}: {description}" if mine else description
    if watch is not None:
        watch.check()
    properties: dict[str, str | None] = dict(sql_confs or {})
    properties.update({key: context.get(key) for key in CONTEXT_PROPERTIES})
    before = {key: sc.getLocalProperty(key) for key in properties}
    for key, value in properties.items():
        sc.setLocalProperty(key, value)
    try:
        return run_partition_job(sc, jrdd, partition)
    except Exception as error:
        if watch is not None:
            watch.failed(error)  # raises SparkJobCancelled if the group was cancelled
        raise
    finally:
        for key, value in before.items():
            sc.setLocalProperty(key, value)


class ArrowDataFrameFeed:
    """A DataFrame's partitions as Arrow record batches made by the JVM."""

    #: ``SplitReader`` fetches the next split's first batch while this one is read
    prefetch = True

    def __init__(
        self,
        df: Any,
        *,
        batch_format: BatchFormat,
        name: str,
        context: dict[str, str] | None = None,
        rows_per_job: int | None = None,
        watch: CancelWatch | None = None,
    ) -> None:
        pa = require_pyarrow()
        self.watch = watch
        from pyspark.serializers import NoOpSerializer  # noqa: PLC0415

        self.df = df
        self.name = name
        self.batch_format = batch_format
        self.sc = df.sparkSession.sparkContext
        self.context = context or {}
        large = df.sparkSession.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false")
        self.schema = arrow_schema_of(df.schema, large_types=str(large).lower() == "true")
        self.time_zone = session_time_zone(df.sparkSession)
        self.sql_confs = session_sql_confs(df.sparkSession)
        self.convert: Callable[[Any], Sequence[Any]] | None = (
            None
            if batch_format == "arrow"
            else RecordConverter(self.schema, time_zone=self.time_zone, rows=batch_format == "rows")
        )
        from pyspark.sql import functions as F  # noqa: PLC0415

        self._partitions = int(arrow_batch_rdd(df).getNumPartitions())
        self._indexed = df.select("*", F.monotonically_increasing_id().alias(_ROW_INDEX))
        self._indexed_schema = self.schema.append(pa.field(_ROW_INDEX, pa.int64()))
        self.rows_per_job = (
            default_rows_per_job(self.schema, max_result_size(self.sc))
            if rows_per_job is None
            else int(rows_per_job)
        )
        if self.rows_per_job < 1:
            raise ValueError(f"rows_per_job must be at least 1, got {rows_per_job!r}")
        self._pa = pa
        self._frames = NoOpSerializer()

    @property
    def num_partitions(self) -> int:
        return self._partitions

    def open(self, partition: int, offset: int) -> Iterator[Sequence[Any]]:
        """The partition from row ``offset`` on, one Spark job per ``rows_per_job`` rows: each
        job keeps only its rows on the executors (a filter on the row's index within the
        partition, ``monotonically_increasing_id``), so no task result holds more than that
        (``spark.driver.maxResultSize``), and a restore skips the rows read before on the
        executors. The first job of a restore also fetches the row before ``offset``: if it
        is not there, the input changed."""
        start, check = offset, offset > 0
        while True:
            low = start - 1 if check else start
            high = start + self.rows_per_job
            rows = -1 if check else 0  # the row before offset is checked, not emitted
            indexed = check  # only the slice that checks a row reads the row index
            for fetched in self._slice(partition, low, high, indexed=indexed):
                if not fetched.num_rows:
                    continue
                batch = fetched
                if check:
                    first = batch.column(batch.num_columns - 1)[0].as_py() & _ROW_MASK
                    if first != low:
                        break
                    check, batch = False, batch.slice(1)
                    rows += 1
                rows += batch.num_rows
                if batch.num_rows:  # made rows one buffer at a time (``convert``)
                    yield batch.select(range(batch.num_columns - 1)) if indexed else batch
            if check:  # not even the row before offset is there
                raise FeedChanged(
                    f"source {self.name!r}: the checkpoint had read {offset} rows of partition "
                    f"{partition}, which has fewer now: the input changed"
                )
            if rows < high - start:  # the partition ends in this slice
                return
            start = high

    def _slice(self, partition: int, low: int, high: int, *, indexed: bool) -> Iterator[Any]:
        """The Arrow batches of rows ``low`` to ``high`` (excluded) of ``partition``; with
        ``indexed``, their row index as a last column (the executors send 8 bytes a row less
        without it)."""
        from pyspark.sql import functions as F  # noqa: PLC0415

        pa = self._pa
        base = partition << _PARTITION_SHIFT
        row = F.col(_ROW_INDEX)
        part = self._indexed.where((row >= base + low) & (row < base + high))
        schema = self._indexed_schema
        if not indexed:
            part, schema = part.drop(_ROW_INDEX), self.schema
        sock_info = _run_partition_job(
            self.sc,
            arrow_batch_rdd(part),
            partition,
            f"ckptsim source {self.name!r}: partition {partition}, rows {low} to {high}",
            self.context,
            self.watch,
            sql_confs=self.sql_confs,
        )
        sockfile, sock = local_socket(sock_info)
        try:
            for frame in self._frames.load_stream(sockfile):
                yield pa.ipc.read_record_batch(pa.py_buffer(frame), schema)
        finally:
            sockfile.close()
            sock.close()


#: ``monotonically_increasing_id``: the partition index above bit 33, the row's below
_PARTITION_SHIFT = 33
_ROW_MASK = (1 << _PARTITION_SHIFT) - 1
_ROW_INDEX = "__ckptsim_row_index"

#: the Arrow bytes a Spark job of a DataFrame source returns at most (about: columns of
#: unknown width count 32 bytes), and at most a quarter of ``spark.driver.maxResultSize``
BYTES_PER_JOB = 64 * 1024 * 1024


def default_rows_per_job(schema: Any, max_result: int = 0) -> int:
    """Rows of ``schema`` that make about ``BYTES_PER_JOB`` of Arrow, or a quarter of
    ``max_result`` bytes if less (at least 1,000)."""
    width = 8  # the row index
    for field in schema:
        try:
            width += max(1, field.type.bit_width // 8)
        except ValueError:  # variable width: strings, binaries, lists, maps, structs
            width += 32
    budget = min(BYTES_PER_JOB, max_result // 4) if max_result > 0 else BYTES_PER_JOB
    return max(1_000, budget // width)


def to_tuples(batch: Any, time_zone: dt.tzinfo = UTC) -> list[tuple[Any, ...]]:
    """An Arrow record batch as a list of plain tuples, in column order, holding Spark's
    Python values (``spark_bridge.values``: a timestamp an aware ``datetime`` in
    ``time_zone``, a date a ``date``, a map a dict, a struct a ``TupleRow``)."""
    return RecordConverter(batch.schema, time_zone=time_zone, rows=False)(batch)


#: first element of an RDD split: (marker, rows the executor skipped); a plain tuple, so the
#: executors need nothing of ckptsim to unpickle it
_SKIPPED = "ckptsim-skipped-rows"


class RDDFeed:
    """An RDD's partitions: its elements are the records (a DataFrame's ``Row``s become
    ``TupleRow``s with ``rows="rows"``, plain tuples with ``rows="tuples"``). Rows before the
    offset are skipped on the executor."""

    convert: Callable[[Any], Sequence[Any]] | None = None

    def __init__(
        self,
        rdd: Any,
        *,
        name: str,
        rows: Literal["rows", "tuples"] | None = None,
        context: dict[str, str] | None = None,
        rows_per_job: int | None = None,
        watch: CancelWatch | None = None,
    ) -> None:
        self.watch = watch
        self.rdd = rdd
        self.name = name
        self.rows = rows
        self.sc = rdd.context
        self.context = context or {}
        self.rows_per_job = RDD_ROWS_PER_JOB if rows_per_job is None else int(rows_per_job)
        if self.rows_per_job < 1:
            raise ValueError(f"rows_per_job must be at least 1, got {rows_per_job!r}")
        self._partitions = int(rdd.getNumPartitions())

    @property
    def num_partitions(self) -> int:
        return self._partitions

    def open(self, partition: int, offset: int) -> Iterator[Sequence[Any]]:
        """The partition from row ``offset`` on, one Spark job per ``rows_per_job``
        elements, each skipping the rows before its own on the executor."""
        start = offset
        while True:
            count = 0
            for chunk in self._slice(partition, start, start + self.rows_per_job, offset):
                count += len(chunk)
                if self.rows == "tuples":
                    yield [tuple(r) for r in chunk]
                elif self.rows == "rows":
                    yield [_tuple_row(r) for r in chunk]
                else:
                    yield chunk
            if count < self.rows_per_job:
                return
            start += self.rows_per_job

    def _slice(self, partition: int, low: int, high: int, offset: int) -> Iterator[list[Any]]:
        """Elements ``low`` to ``high`` (excluded) of ``partition``, in chunks."""

        def skip_rows(rows: Iterator[Any]) -> Iterator[Any]:
            skipped = sum(1 for _ in itertools.islice(rows, low))
            yield (_SKIPPED, skipped)
            yield from itertools.islice(rows, high - low)

        mapped = self.rdd.mapPartitions(skip_rows, preservesPartitioning=True)
        jrdd, deserializer = java_rdd(mapped)
        sock_info = _run_partition_job(
            self.sc,
            jrdd,
            partition,
            f"ckptsim source {self.name!r}: partition {partition}, rows {low} to {high}",
            self.context,
            self.watch,
        )
        sockfile, sock = local_socket(sock_info)
        try:
            records = iter(deserializer.load_stream(sockfile))
            marker, skipped = next(records)
            assert marker == _SKIPPED, marker
            if skipped != low:
                raise FeedChanged(
                    f"source {self.name!r}: the checkpoint had read {offset} rows of partition "
                    f"{partition}, which has only {skipped} now: the input changed"
                )
            while True:
                chunk = list(itertools.islice(records, RDD_CHUNK))
                if not chunk:
                    break
                yield chunk
        finally:
            sockfile.close()
            sock.close()


def _tuple_row(row: Any) -> Any:
    """A PySpark ``Row`` as a ``TupleRow`` of its names (nested rows too)."""
    fields = getattr(row, "__fields__", None)
    values = [_tuple_row(v) if isinstance(v, tuple) else v for v in row]
    return row_class(fields).make(values) if fields else tuple(values)


class SparkFeed:
    """The feed of one Spark input, and what was done to make it stable (to undo it)."""

    def __init__(self, feed: PartitionFeed, data: Any, *, persisted: bool) -> None:
        self.feed = feed
        self.convert = feed.convert
        self.prefetch = bool(getattr(feed, "prefetch", False))
        self.data = data
        self.persisted = persisted

    @property
    def num_partitions(self) -> int:
        return self.feed.num_partitions

    def open(self, partition: int, offset: int) -> Iterator[Sequence[Any]]:
        return self.feed.open(partition, offset)

    def release(self) -> None:
        """Unpersist the input if this feed persisted it."""
        if self.persisted:
            self.data.unpersist()
            self.persisted = False


def spark_feed(
    data: Any,
    *,
    name: str = "Spark Source",
    stabilize: Stabilize = "persist",
    batch_format: BatchFormat = "rows",
    rows_per_job: int | None = None,
    watch: CancelWatch | None = None,
) -> SparkFeed:
    """The partition feed of a DataFrame or RDD (classic sessions only), made stable for
    replay as ``stabilize`` says (see the module documentation). A partition is read with one
    Spark job per ``rows_per_job`` rows (default: about 64 MB of Arrow for a DataFrame, or a
    quarter of ``spark.driver.maxResultSize`` if less; 262,144 elements for an RDD), in the job group, description, scheduler pool and tags of
    the calling thread."""
    require_pyspark()
    from pyspark import RDD, StorageLevel  # noqa: PLC0415
    from pyspark.sql import DataFrame  # noqa: PLC0415

    if stabilize not in ("persist", "local_checkpoint", "none"):
        raise ValueError(
            f"stabilize must be 'persist', 'local_checkpoint' or 'none', got {stabilize!r}"
        )
    if batch_format not in BATCH_FORMATS:
        raise ValueError(f"batch_format must be 'rows', 'tuples' or 'arrow', got {batch_format!r}")
    if isinstance(data, DataFrame):
        if is_connect(data):
            raise SparkConnectNotSupported(CONNECT_MESSAGE.format(what="DataFrame"))
    elif not isinstance(data, RDD):
        raise TypeError(
            f"from_spark reads a Spark DataFrame or RDD, got {type(data).__module__}."
            f"{type(data).__qualname__}"
        )
    persisted = False
    if stabilize == "persist" and not data.is_cached:
        data = data.persist(StorageLevel.MEMORY_AND_DISK)
        persisted = True
    elif stabilize == "local_checkpoint":
        if isinstance(data, DataFrame):
            data = data.localCheckpoint(eager=True)
        else:
            data.localCheckpoint()
            data.count()  # materialize it now, before any split is read
    feed: PartitionFeed
    context = caller_context(
        data.sparkSession.sparkContext if isinstance(data, DataFrame) else data.context
    )
    if isinstance(data, RDD):
        if batch_format == "arrow":
            raise ValueError("batch_format='arrow' needs a DataFrame; an RDD's records are Python")
        feed = RDDFeed(data, name=name, context=context, rows_per_job=rows_per_job, watch=watch)
    else:
        try:
            feed = ArrowDataFrameFeed(
                data,
                batch_format=batch_format,
                name=name,
                context=context,
                rows_per_job=rows_per_job,
                watch=watch,
            )
        except Exception as error:
            if batch_format == "arrow":
                raise
            log.warning("spark_arrow_unavailable", source=name, reason=str(error)[:300])
            feed = RDDFeed(
                data.rdd,
                name=name,
                rows="tuples" if batch_format == "tuples" else "rows",
                context=context,
                rows_per_job=rows_per_job,
                watch=watch,
            )
    log.info(
        "spark_feed_ready",
        source=name,
        partitions=feed.num_partitions,
        kind=type(feed).__name__,
        persisted=persisted,
    )
    return SparkFeed(feed, data, persisted=persisted)


def from_spark(
    env: StreamEnvironment,
    data: Any,
    *,
    name: str = "Spark Source",
    uid: str | None = None,
    parallelism: int | None = None,
    stabilize: Stabilize = "persist",
    batch_format: BatchFormat = "rows",
    rows_per_job: int | None = None,
) -> DataStream:
    """A source reading the DataFrame or RDD ``data``: each partition is a split, subtask
    ``s`` of ``p`` reads partitions ``s, s + p, ...``; records arrive in buffers (lists of
    rows, ``r[0]`` or ``r.column``; plain tuples with ``batch_format="tuples"``; Arrow record
    batches with ``"arrow"``); the read position
    (partition, row offset) is checkpointed and a restore resumes right after it.
    ``stabilize`` makes the input replayable (default: persist it; ``data.unpersist()``
    when done); ``rows_per_job`` bounds what one Spark job returns (see ``spark_feed``)."""
    feed = spark_feed(
        data, name=name, stabilize=stabilize, batch_format=batch_format, rows_per_job=rows_per_job
    )
    return source_from_feed(env, feed, name=name, uid=uid, parallelism=parallelism)


def source_from_feed(
    env: StreamEnvironment,
    feed: PartitionFeed,
    *,
    name: str,
    uid: str | None = None,
    parallelism: int | None = None,
) -> DataStream:
    """A source over any ``PartitionFeed`` (``feed.InMemoryFeed`` in tests)."""

    def reader(ctx: OperatorContext) -> SplitReader:
        return SplitReader(feed, ctx.subtask, ctx.parallelism, name=name)

    return env.from_source(reader, name=name, parallelism=parallelism, uid=uid)
