"""Run a topology on actors from a Spark driver: ``run_topology(spark, df, build)``.

A Spark job calls it between two of its own stages::

    def build(clicks):                      # the source stream: rows of the df's columns
        return (clicks.map(lambda c: (c.user, c.amount, 1))
                      .key_by(lambda r: r[0])
                      .reduce(lambda a, b: (a[0], a[1] + b[1], a[2] + b[2])))

    totals = run_topology(spark, clicks_df, build, schema="user long, amount double, n long",
                          checkpoint_interval="200 ms")
    totals.groupBy("user").agg(...)         # a DataFrame again

The DataFrame's partitions feed the source (``spark_feed``), the job runs on Pykka actors in
this process (threaded runtime by default, the deterministic simulation with
``runtime="simulation"``) with exactly-once checkpoints and Flink's restart strategies, and
the stream ``build`` returns goes into the exactly-once Parquet sink (``sinks``); the result
is those Parquet files read back by Spark, with ``schema`` or the schema the sink inferred.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actors.launcher import execute_environment
from actors.logs import get_logger
from runtime.datastream import DataStream, StreamEnvironment
from runtime.functions import KeyedProcessFunction
from runtime.job import JobResult
from runtime.restart import BOUNDED_RESTARTS
from runtime.state import ValueStateDescriptor
from runtime.status import JobStatus
from runtime.watermarks import MAX_WATERMARK
from spark_bridge._pyspark_seam import hearing_group_cancels
from spark_bridge.carry import StateFolder, operators_not_carried
from spark_bridge.locations import (
    Location,
    check_cluster_can_read,
    is_local_master,
    resolve,
    scheme_of,
)
from spark_bridge.session import (
    SparkBridgeError,
    arrow_schema_of,
    arrow_types,
    require_classic_session,
    require_pyspark,
)
from spark_bridge.sinks import ParquetSink
from spark_bridge.spark_feed import (
    BatchFormat,
    CancelWatch,
    Stabilize,
    caller_context,
    source_from_feed,
    spark_feed,
)
from spark_bridge.values import session_time_zone

log = get_logger(__name__)

#: the name of the sink ``run_topology`` adds (``JobResult.output`` has no entry: it writes files)
OUTPUT_SINK = "spark_output"


#: the restart strategy of a batch step unless ``config`` sets one (as ``ckptsim run``'s)
BATCH_RESTARTS = BOUNDED_RESTARTS


class TopologyFailed(RuntimeError):
    """The job did not finish (failed past its restart strategy, or was cancelled)."""

    def __init__(self, result: JobResult) -> None:
        super().__init__(
            f"job {result.name!r} ended {result.status.value} after {result.restarts} "
            f"restart(s): {_cause(result)}"
        )
        self.result = result


class JobGroupCancelled(TopologyFailed):
    """The caller's Spark job group (``sc.setJobGroup`` in the thread that called
    ``run_topology``) was cancelled (``sc.cancelJobGroup``, from another thread) while the
    topology ran: the topology's job was cancelled at once (no restart, no further
    Spark job). The output folder holds only what completed checkpoints committed (staged
    files stay in its hidden ``.staging``); a ``state=`` run commits nothing."""

    def __init__(self, group: str, result: JobResult) -> None:
        RuntimeError.__init__(
            self,
            f"Spark job group {group!r} was cancelled (sc.cancelJobGroup): job "
            f"{result.name!r} stopped ({result.status.value}); the output holds only what "
            "its completed checkpoints committed",
        )
        self.group = group
        self.result = result


def _cause(result: JobResult) -> str:
    # cancelled (a timeout) while failing over: the last failure says why it did not finish
    after = f"after the failure {result.failures[-1]}" if result.failures else None
    if result.failure:
        cancelled = result.status is JobStatus.CANCELED
        return f"{result.failure}, {after}" if cancelled and after else result.failure
    if after:
        return f"{result.status.value.lower()} {after}"
    return "no cause reported"


@dataclass(frozen=True)
class TopologyRun:
    """What ``run_topology_job`` returns: the output DataFrame, the job's result (status,
    checkpoint statistics, restarts) and the Parquet folder the DataFrame reads: ``uri`` as
    given (or the temporary folder's path), ``path`` the same as a local ``Path`` (None for
    a folder of a remote filesystem)."""

    dataframe: Any
    result: JobResult
    path: Path | None
    uri: str = ""


def run_topology(
    spark: Any, data: Any, build: Callable[[DataStream], DataStream], **options: Any
) -> Any:
    """Run ``build`` over ``data`` on actors and return its output as a DataFrame (see
    ``run_topology_job`` for the options)."""
    return run_topology_job(spark, data, build, **options).dataframe


def run_topology_job(
    spark: Any,
    data: Any,
    build: Callable[[DataStream], DataStream],
    *,
    schema: Any = None,
    output: str | Path | None = None,
    name: str = "spark topology",
    parallelism: int | None = None,
    checkpoint_interval: int | str | None = "1 s",
    mode: str = "EXACTLY_ONCE",
    config: Mapping[str, object] | None = None,
    faults: Sequence[Any] = (),
    runtime: str = "threaded",
    seed: int | None = None,
    timeout: float | None = None,
    progress: Callable[[dict[str, Any]], None] | None = None,
    progress_interval: float = 0.5,
    stabilize: Stabilize = "persist",
    batch_format: BatchFormat = "rows",
    rows_per_job: int | None = None,
    final_only: bool | Callable[[Any], Any] = False,
    source_name: str = "Spark Source",
    source_uid: str = "spark-source",
    state: str | Path | None = None,
    run_id: str | None = None,
) -> TopologyRun:
    """Run a topology over a Spark DataFrame or RDD on actors, from the driver.

    ``build(stream)`` gets the source stream (``from_spark``: buffers of rows, tuples in the
    DataFrame's column order whose fields also have the columns' names: ``r[0]`` or
    ``r.user``) and returns the stream to write out. ``schema`` (a Spark ``StructType``, a
    DDL string such as ``"user long, total double"``, or a ``pyarrow.Schema``) types the
    output; without it the sink takes one from the first records: columns named after the
    fields of the rows the topology returns (``_1``, ``_2`` ... for plain tuples), a column
    named as an input column with that column's type (decimal precision, timestamp, map ...),
    others as Spark infers them; an input with no rows gives an output of its own schema.
    ``parallelism`` (default: the number of partitions, at most Spark's default
    parallelism and the driver's cores) applies to every operator. ``output`` is the
    Parquet folder (new or empty): a path, or a URI Spark reads (``file:///...``,
    ``hdfs://...``, ``s3a://...``: ``spark_bridge.locations``; a plain path only with a local
    master, whose executors share the driver's disk); default: a temporary folder of the
    driver, removed when the process exits (with a cluster master the result then reaches
    Spark from the driver's memory, as Arrow). Checkpoint folders in ``config`` are the
    driver's (paths or ``file:`` URIs). ``checkpoint_interval`` (None: no
    checkpoints, and no exactly-once output after failures), ``mode``, ``parallelism`` and
    ``config`` (Flink keys, e.g. ``restart-strategy.type``; unless it says otherwise a
    checkpointed job restarts at most 3 times, 1 s apart, so that a batch step with a
    deterministic error fails instead of retrying forever) configure the job; ``faults``
    (``FailTask``, ``CrashTask``, ...; tasks named as ``describe_tasks`` lists them, or by an
    operator's ``name=`` or uid and the subtask: ``FailTask(task="Spend#1", ...)``) are
    injected; ``runtime``, ``seed``, ``timeout``, ``progress`` as for ``env.execute``.
    ``stabilize``, ``batch_format`` and ``rows_per_job`` as for ``from_spark`` (the bridge's
    Spark jobs run in the calling thread's job group, description, scheduler pool and tags);
    the input is unpersisted afterwards if this call persisted it. ``final_only=True`` writes
    one record per key, its last (the final value of a keyed ``reduce`` or aggregation, which
    otherwise writes a changelog: one record per input), when the input ends; give the key
    function (``final_only=lambda r: r.user``) when the returned stream is not a keyed
    operator's own output. Raises ``TopologyFailed`` when the job does not finish, its
    subclass ``JobGroupCancelled`` when the caller's Spark job group was cancelled
    (``sc.cancelJobGroup``) while it ran.
    """
    require_pyspark()
    require_classic_session(spark)
    from pyspark.sql.types import StructType  # noqa: PLC0415

    spark_schema = _spark_schema(spark, schema)
    master = str(spark.sparkContext.master)
    settings = _driver_folders(dict(config or {}))
    resuming = any(settings.get(key) is not None for key in RESTORE_KEYS)
    attempt = None
    if state is not None:
        if checkpoint_interval is None:
            raise ValueError(
                "state= carries the state of the run's final checkpoint: give a "
                "checkpoint_interval (not None)"
            )
        attempt = StateFolder(state).start(run_id)  # type: ignore[arg-type]
        settings = attempt.config(settings)
    elif run_id is not None:
        raise ValueError("run_id= names a run of a state folder: give state= too")
    input_schema = _input_schema(data)
    if input_schema is not None:
        _check_column_names(input_schema, _case_sensitive(spark))
        _check_column_types(input_schema)
    location = _output_location(output, master, resuming=resuming)
    sink = ParquetSink(
        location,
        spark_schema if spark_schema is not None else schema,
        input_schema=_arrow_or_none(input_schema),
        time_zone=session_time_zone(spark),
    )
    watch = CancelWatch(caller_context(spark.sparkContext).get("spark.jobGroup.id"))
    feed = spark_feed(
        data,
        name=source_name,
        stabilize=stabilize,
        batch_format=batch_format,
        rows_per_job=rows_per_job,
        watch=watch,
    )
    try:
        if parallelism is None:  # a subtask per partition, per core Spark offers, per driver core
            cores = spark.sparkContext.defaultParallelism
            parallelism = max(1, min(feed.num_partitions, cores, os.cpu_count() or 1))
        env = StreamEnvironment(parallelism=parallelism, executor=execute_environment)
        if checkpoint_interval is not None:
            env.enable_checkpointing(checkpoint_interval, mode)
        if checkpoint_interval is not None and not any(
            key.startswith("restart-strategy") for key in settings
        ):
            settings = {**BATCH_RESTARTS, **settings}
        env.configure(settings)
        stream = build(source_from_feed(env, feed, name=source_name, uid=source_uid))
        if not isinstance(stream, DataStream):
            raise TypeError(
                f"build() must return the stream to write out (a DataStream), got "
                f"{type(stream).__name__}"
            )
        if final_only is not False:
            stream = _final_values(stream, final_only)
        stream.sink_to(sink, name=OUTPUT_SINK)
        faults = _check_fault_tasks(env, name, faults)
        drop: set[str] = set()
        if attempt is not None:
            sink.on_finish = attempt.keep_final
            drop = {*operators_not_carried(env.build_job_graph(name)), FINAL_VALUE_UID}
        options: dict[str, Any] = {"runtime": runtime, "faults": faults, "observer": watch}
        if seed is not None:
            options["seed"] = seed
        if timeout is not None:
            options["timeout"] = timeout
        if progress is not None:
            options["progress"] = progress
            options["progress_interval"] = progress_interval
        with hearing_group_cancels(spark.sparkContext, watch.group_cancelled):
            result = env.execute(name, **options)
    except BaseException:
        if attempt is not None:
            attempt.abandon()
        raise
    finally:
        feed.release()
    log.info(
        "spark_topology_finished",
        job=result.job_id,
        status=result.status.value,
        restarts=result.restarts,
        output=location.uri,
    )
    if not result.succeeded:
        if attempt is not None:
            attempt.abandon()
        if watch.cancelled and watch.group is not None:
            raise JobGroupCancelled(watch.group, result)
        raise TopologyFailed(result)
    sink.remove_staging()
    if attempt is not None:
        attempt.commit(drop, location.uri, result.job_id)
    if sink.committed_files() and output is None and not is_local_master(master):
        # the driver's temporary folder, which executors elsewhere cannot read: the result
        # goes to Spark from the driver's memory, as Arrow
        dataframe = _from_arrow(spark, sink, spark_schema)
    elif sink.committed_files():
        reader = spark.read if spark_schema is None else spark.read.schema(spark_schema)
        dataframe = reader.parquet(location.uri)
    else:  # nothing was written: an empty DataFrame of the schema, if one is known
        known = spark_schema
        if known is None and sink.schema is not None:
            known = arrow_types().from_arrow_schema(sink.schema)
        if known is None:  # no record at all: the input's schema (an empty input keeps it)
            known = input_schema
        dataframe = spark.createDataFrame([], known if known is not None else StructType([]))
    return TopologyRun(dataframe=dataframe, result=result, path=sink.path, uri=location.uri)


#: the uid of the operator ``final_only`` adds
FINAL_VALUE_UID = "ckptsim-final-value"


class _FinalValue(KeyedProcessFunction):
    """The last record of each key, emitted when the input ends (a timer at the end of
    event time, which the end of input fires); until then it is keyed state."""

    def open(self, runtime_context: Any) -> None:
        self.last = runtime_context.get_state(ValueStateDescriptor("final value"))

    def process_element(self, value: Any, ctx: Any) -> None:
        if self.last.value() is None:
            ctx.timer_service().register_event_time_timer(MAX_WATERMARK)
        self.last.update((value,))  # a 1-tuple: a record may be None

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        held = self.last.value()
        self.last.clear()
        return [held[0]] if held is not None else []


def _final_values(stream: DataStream, final_only: bool | Callable[[Any], Any]) -> DataStream:
    """``stream`` reduced to the last record of each key (see ``run_topology_job``)."""
    key: Any
    if callable(final_only):
        key = final_only
    else:
        selectors = {getattr(node.operator, "key_selector", None) for node in stream.nodes}
        if len(selectors) != 1 or None in selectors:
            raise ValueError(
                "final_only=True takes the key of the operator that makes the stream build() "
                "returns, which is not a keyed operator (key_by(...).reduce(...), .sum(...), "
                ".process(...)): give the key function instead, final_only=lambda r: r[0]"
            )
        (found,) = selectors
        key = found
    return stream.key_by(key).process(_FinalValue(), name="Final value").uid(FINAL_VALUE_UID)


def describe_tasks(env: StreamEnvironment, name: str = "ckptsim job") -> list[str]:
    """The task names of ``env``'s job (``"<vertex>#<subtask>"``, as faults and traces name
    them)."""
    job = env.build_job_graph(name)
    return [f"{v.vertex_id}#{i}" for v in job.vertices for i in range(v.parallelism)]


def _check_fault_tasks(env: StreamEnvironment, name: str, faults: Sequence[Any]) -> list[Any]:
    """``faults`` with their tasks as the job names them: a task (``reduce-3#0``) or an
    operator's name or uid as given (``Spend#0``; ``Spend`` for an operator of parallelism
    1), whichever task runs that operator (chained operators share one)."""
    tasks = describe_tasks(env, name)
    job = env.build_job_graph(name)
    vertices: dict[str, set[str]] = {}  # operator name or uid -> the vertices running it
    for vertex in job.vertices:
        for op in vertex.operators:
            for alias in {op.name, op.uid}:
                vertices.setdefault(alias, set()).add(vertex.vertex_id)
    parallelism = {v.vertex_id: v.parallelism for v in job.vertices}

    def task_of(fault: Any, value: str) -> str:
        if value in tasks:
            return value
        operator, _, subtask = value.rpartition("#") if "#" in value else (value, "", "")
        found = vertices.get(operator, set())
        if len(found) == 1:
            (vertex,) = found
            if subtask.isdigit() and f"{vertex}#{subtask}" in tasks:
                return f"{vertex}#{subtask}"
            if not subtask and parallelism[vertex] == 1:
                return f"{vertex}#0"
        named = sorted(
            f"{alias}#0..{parallelism[next(iter(v))] - 1}"
            for alias, v in vertices.items()
            if len(v) == 1 and not alias.startswith(OUTPUT_SINK)
        )
        raise ValueError(
            f"{fault!r} names task {value!r}, which this job does not have; its tasks are "
            f"{', '.join(tasks)} (or an operator's name or uid and a subtask: "
            f"{', '.join(named)})"
        )

    resolved = []
    for fault in faults:
        changes = {
            field: task_of(fault, value)
            for field in ("task", "producer", "consumer")
            if isinstance(value := getattr(fault, field, None), str)
        }
        resolved.append(dataclasses.replace(fault, **changes) if changes else fault)
    return resolved


def _input_schema(data: Any) -> Any:
    """The input's Spark schema (None for an RDD)."""
    from pyspark.sql import DataFrame  # noqa: PLC0415

    return data.schema if isinstance(data, DataFrame) else None


def _case_sensitive(spark: Any) -> bool:
    """Whether the session tells column names apart by case (``spark.sql.caseSensitive``)."""
    return str(spark.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"


def _types_within(kind: Any, where: str = "") -> Iterator[tuple[str, Any]]:
    """``kind`` and every type inside it (a struct's fields, an array's elements, a map's keys
    and values), each with the path of the struct fields it is in (``a.b.``)."""
    from pyspark.sql.types import ArrayType, MapType, StructType  # noqa: PLC0415

    yield where, kind
    if isinstance(kind, StructType):
        for field in kind.fields:
            yield from _types_within(field.dataType, f"{where}{field.name}.")
    elif isinstance(kind, ArrayType):
        yield from _types_within(kind.elementType, where)
    elif isinstance(kind, MapType):
        yield from _types_within(kind.keyType, where)
        yield from _types_within(kind.valueType, where)


def _check_column_names(struct: Any, case_sensitive: bool) -> None:
    """Refuse an input whose columns (or a struct column's fields) repeat a name (a join's
    ``id`` and ``id``), before the job runs: its records' fields could not be told apart
    by name, and Spark would not read the output back (its ``df.write.parquet`` refuses
    such a schema up front, COLUMN_ALREADY_EXISTS)."""
    from pyspark.sql.types import StructType  # noqa: PLC0415

    for where, kind in _types_within(struct):
        if not isinstance(kind, StructType):
            continue
        seen: dict[str, str] = {}
        repeated: list[str] = []
        for field in kind.fields:
            key = field.name if case_sensitive else field.name.lower()
            if key in seen and seen[key] not in repeated:
                repeated.append(seen[key])
            seen.setdefault(key, field.name)
        if repeated:
            names = ", ".join(f"`{where}{name}`" for name in repeated)
            inside = f" (inside column `{where.rstrip('.')}`)" if where else ""
            raise SparkBridgeError(
                f"[COLUMN_ALREADY_EXISTS] the input has more than one column named {names}"
                f"{inside}, as Spark's df.write.parquet refuses too: rename or drop them "
                "before run_topology (e.g. select with aliases after a join: "
                "left.id.alias('left_id'), right.id.alias('right_id'))"
            )


def _unreadable_types() -> tuple[type, ...]:
    """The Spark types PySpark cannot turn into Python values (NOT_IMPLEMENTED in a Python
    worker): a calendar interval and a year-month interval."""
    from pyspark.sql import types  # noqa: PLC0415

    names = ("CalendarIntervalType", "YearMonthIntervalType")
    return tuple(getattr(types, name) for name in names if hasattr(types, name))


def _check_column_types(struct: Any) -> None:
    """Refuse, before any Spark job runs, an input column of a type whose values Python
    cannot read (a struct's field, an array's elements, a map's keys or values too): the
    source would fail in a Python worker at every restart of the job."""
    unreadable = _unreadable_types()
    for field in struct.fields:
        kinds = (kind for _, kind in _types_within(field.dataType))
        kind: Any = next((k for k in kinds if isinstance(k, unreadable)), None)
        if kind is not None:
            inside = "" if kind is field.dataType else f" (in {field.dataType.simpleString()})"
            raise SparkBridgeError(
                f"column `{field.name}` is of type {kind.simpleString()} "
                f"({type(kind).__name__}){inside}, whose values "
                "PySpark cannot read into Python (NOT_IMPLEMENTED): cast it to a string "
                f"(CAST(`{field.name}` AS STRING)) or drop it before run_topology"
            )


def _arrow_or_none(struct: Any) -> Any:
    """A Spark schema as Arrow (None if it has none, or a type Arrow cannot carry)."""
    if struct is None:
        return None
    try:
        return arrow_schema_of(struct)
    except Exception:  # e.g. a user-defined type: its columns' types are inferred instead
        return None


def _spark_schema(spark: Any, schema: Any) -> Any:
    """A DDL string or StructType as a StructType; None and Arrow schemas as they are None
    (the sink takes an Arrow schema itself)."""
    from pyspark.sql.types import StructType  # noqa: PLC0415

    if schema is None or isinstance(schema, StructType):
        return schema
    if isinstance(schema, str):
        return spark.createDataFrame([], schema).schema
    return None


_temporary: list[Path] = []

#: the most a result read back into the driver's memory (Parquet bytes) should be, before a
#: warning says to give ``output=``
ARROW_RESULT_WARNING = 256 * 1024 * 1024


def _remove_temporary() -> None:
    for path in _temporary:
        shutil.rmtree(path, ignore_errors=True)


#: the Flink keys that start a job from a checkpoint or savepoint (the second deprecated)
RESTORE_KEYS = ("execution.state-recovery.path", "execution.savepoint.path")


def _output_location(
    output: str | os.PathLike[str] | None, master: str, *, resuming: bool = False
) -> Location:
    """Where the output goes: ``output`` (a path or a URI Spark reads; checked before the
    job runs) or a temporary folder on the driver, removed at exit. A fresh run's folder is
    new or empty (its files are that run's output); a run ``resuming`` from a checkpoint or
    savepoint continues the files already there, as ``ckptsim run -s`` does for a file sink
    (the sink's restore keeps what the checkpoint's lineage committed and retracts what
    came after)."""
    if output is None:
        if not _temporary:
            atexit.register(_remove_temporary)
        path = Path(tempfile.mkdtemp(prefix="ckptsim-spark-"))
        _temporary.append(path)
        return resolve(path, "output=")
    location = resolve(output, "output=")
    check_cluster_can_read(location, master, "output=")
    from pyarrow.fs import FileSelector, FileType  # noqa: PLC0415

    filesystem = location.filesystem
    try:
        found = filesystem.get_file_info(location.path).type
        if found not in (FileType.NotFound, FileType.Directory):
            raise FileExistsError(
                f"the output {location.uri} exists and is not a directory: give run_topology "
                "a new or empty directory (its files are the job's output)"
            )
        if (
            found == FileType.Directory
            and not resuming
            and filesystem.get_file_info(FileSelector(location.path))
        ):
            raise FileExistsError(
                f"the output {location.uri} exists and is not an empty directory: give "
                "run_topology a new or empty directory (its files are the job's output), or "
                "resume the run that wrote them (config execution.state-recovery.path: one "
                "of its retained checkpoints) to continue them"
            )
        filesystem.create_dir(location.path, recursive=True)
    except OSError as error:
        if isinstance(error, FileExistsError):
            raise
        raise SparkBridgeError(
            f"output={location.uri!r}: the driver cannot create that folder: {error}"
        ) from None
    return location


#: Flink keys naming folders the driver's checkpoint storage writes and reads
DRIVER_FOLDERS = (
    "execution.checkpointing.dir",
    "state.checkpoints.dir",
    "execution.checkpointing.savepoint-dir",
    "state.savepoints.dir",
    "execution.state-recovery.path",
    "execution.savepoint.path",
)


def _driver_folders(settings: dict[str, object]) -> dict[str, object]:
    """``settings`` with ``file:`` URIs of checkpoint folders as paths; any other URI is
    refused now, before the job runs: the checkpoint storage runs on the driver (the actors
    do) and writes the driver's files (a shared or mounted folder for durability)."""
    out = dict(settings)
    for key in DRIVER_FOLDERS:
        value = out.get(key)
        if not isinstance(value, str):
            continue
        scheme = scheme_of(value)
        if scheme == "file":
            out[key] = resolve(value, f"{key}=").path
        elif scheme:
            raise SparkBridgeError(
                f"{key}={value!r}: the checkpoint directory is a folder of the driver (the "
                "actors, and the checkpoint storage that writes and reads checkpoints, run on "
                "the driver; executors never read it): give a path or a file:/// URI (a "
                f"mounted or shared folder to keep checkpoints when the driver's host goes), "
                f"not a {scheme}:// URI"
            )
    return out


def _from_arrow(spark: Any, sink: ParquetSink, spark_schema: Any) -> Any:
    """The committed Parquet files read on the driver and handed to Spark as one Arrow
    table (``createDataFrame``), for executors that cannot read the driver's folder."""
    import pyarrow.parquet as pq  # noqa: PLC0415

    filesystem = sink.location.filesystem
    files = [str(f) for f in sink.committed_files()]
    size = sum(info.size or 0 for info in filesystem.get_file_info(files))
    if size > ARROW_RESULT_WARNING:
        log.warning(
            "spark_result_through_driver",
            bytes=size,
            hint="the result goes to Spark from the driver's memory: give run_topology "
            "output= (a folder every node reads) for a result this big",
        )
    table = pq.ParquetDataset(files, filesystem=filesystem).read()
    return spark.createDataFrame(table, schema=spark_schema)
