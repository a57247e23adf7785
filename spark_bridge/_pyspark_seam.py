"""PySpark internals the Spark bridge needs, in one module: the only place that touches them.

Reading one partition with its own Spark job and streaming its result to the driver (what
``DataFrame.toLocalIterator`` does for all of them) has no public PySpark API. The bridge uses:

- ``SparkContext._jvm.PythonRDD.runJob(SparkContext._jsc.sc(), jrdd, [partition])``: one job
  over one partition, whose result the driver JVM serves on a local socket;
- ``_create_local_socket`` (``pyspark.util`` in PySpark 4, ``pyspark.rdd`` in 3.5) to read it;
- ``DataFrame._jdf.toArrowBatchRdd()``: the JVM turns a DataFrame's partitions into Arrow;
- ``RDD._jrdd`` and ``RDD._jrdd_deserializer``: an RDD's JVM side and how its elements are
  pickled;
- ``PythonRDD.toLocalIteratorAndServe`` and ``_local_iterator_from_socket``: every partition
  streamed with prefetch, as ``toLocalIterator`` does (the benchmark's baseline read);
- ``SparkContext._active_spark_context``: whether a JVM is up yet;
- ``SparkContext._jsc.sc().conf().getSizeAsBytes``: ``spark.driver.maxResultSize`` in bytes;
- ``SparkSession._jsparkSession`` / ``DataFrame._jdf``: a classic session (a Spark Connect
  one has none);
- ``SparkContext.cancelJobGroup``, wrapped on the instance while a topology runs: Spark
  cancels only the group's jobs running at that moment and keeps no trace of the cancel, so
  a cancel that falls between two of the bridge's Spark jobs is heard here instead.

Importing this module checks the installed PySpark's version (without importing PySpark) and
fails with ``PySparkSeamError`` naming the releases it works with. Without PySpark it imports
fine: ``session.require_pyspark`` says how to install it when the bridge is used.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import threading
from collections.abc import Callable, Iterator
from typing import Any

#: PySpark releases these internals are known to work with: 3.5 up to (not including) 5
OLDEST_SUPPORTED = (3, 5)
FIRST_UNSUPPORTED = (5, 0)


class PySparkSeamError(ImportError):
    """The installed PySpark is a release whose internals the Spark bridge does not know."""


def check_pyspark(version: str | None = None) -> None:
    """Raise ``PySparkSeamError`` unless ``version`` (default: the installed PySpark's, if
    any) is a supported release."""
    if version is None:
        try:
            version = importlib.metadata.version("pyspark")
        except importlib.metadata.PackageNotFoundError:
            return  # no PySpark: the bridge says how to install it when it is used
    parts = version.split(".")
    try:
        release = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        release = (-1, -1)
    if not OLDEST_SUPPORTED <= release < FIRST_UNSUPPORTED:
        raise PySparkSeamError(
            f"PySpark {version} is installed; the Spark bridge reads partitions through PySpark "
            "internals (SparkContext._jvm, DataFrame._jdf.toArrowBatchRdd, RDD._jrdd, "
            "_create_local_socket) known to work with PySpark 3.5 and 4.x: install one, "
            "e.g. pip install 'pyspark>=3.5,<5'"
        )


check_pyspark()


def is_classic(obj: Any) -> bool:
    """Whether ``obj`` (a session or DataFrame) has a JVM behind it (classic, not Connect)."""
    session = any(cls.__name__ == "SparkSession" for cls in type(obj).__mro__)
    attribute = "_jsparkSession" if session else "_jdf"
    return attribute in getattr(obj, "__dict__", {})


def jvm_is_running() -> bool:
    """Whether a SparkContext (and so its JVM) is up in this process."""
    from pyspark import SparkContext  # noqa: PLC0415 - PySpark only when the bridge runs

    return SparkContext._active_spark_context is not None


def max_result_size(sc: Any) -> int:
    """``spark.driver.maxResultSize`` in bytes (0: no limit), as the driver JVM reads it."""
    return int(sc._jsc.sc().conf().getSizeAsBytes("spark.driver.maxResultSize", "1g"))


def driver_heap_after_gc(sc: Any) -> tuple[int, int]:
    """The driver JVM's heap in bytes after a full collection (``System.gc()``): (used, max)
    (benchmarks: what the JVM keeps, apart from what its committed heap and RSS show)."""
    jvm = sc._jvm
    jvm.java.lang.System.gc()
    usage = jvm.java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage()
    return int(usage.getUsed()), int(usage.getMax())


def arrow_batch_rdd(df: Any) -> Any:
    """The JavaRDD of a DataFrame's partitions as serialized Arrow record batches."""
    return df._jdf.toArrowBatchRdd().toJavaRDD()


def java_rdd(rdd: Any) -> tuple[Any, Any]:
    """An RDD's JavaRDD (of pickled byte arrays) and the deserializer of its elements."""
    return rdd._jrdd, rdd._jrdd_deserializer


def session_sql_confs(spark: Any) -> dict[str, str]:
    """The SQL settings of ``spark``'s session (``spark.sql.*``), which the executors'
    ``SQLConf.get`` reads from a job's local properties: Spark hands every ``spark*`` setting
    of the session to the jobs of a SQL execution so (``SQLExecution.withSQLConfPropagated``).
    The bridge's own Spark jobs over a DataFrame run outside a SQL execution, so they set them
    themselves (else a session setting such as ``spark.sql.legacy.allowNegativeScaleOfDecimal``
    is the default on the executors). Only the SQL ones: each is a call into the JVM per job,
    and the context's settings (master, application, driver) are the executors' already."""
    get_all = getattr(spark.conf, "getAll", None)  # PySpark 4
    if get_all is not None:
        confs = dict(get_all)
    else:  # PySpark 3.5: the JVM's session conf
        scala = spark._jsparkSession.sessionState().conf().getAllConfs()
        confs = dict(spark._jvm.scala.collection.JavaConverters.mapAsJavaMap(scala))
    return {str(k): str(v) for k, v in confs.items() if str(k).startswith("spark.sql.")}


def run_partition_job(sc: Any, jrdd: Any, partition: int) -> Any:
    """One Spark job over one partition of ``jrdd``; returns the socket the driver JVM serves
    its result on (``PythonRDD.runJob``, as ``toLocalIterator`` uses)."""
    return sc._jvm.PythonRDD.runJob(sc._jsc.sc(), jrdd, [partition])


def local_socket(sock_info: Any) -> tuple[Any, Any]:
    """Connect to what the JVM serves: ``(file, socket)``, both to be closed by the caller."""
    try:
        from pyspark.util import _create_local_socket  # noqa: PLC0415 - PySpark 4
    except ImportError:  # PySpark 3.5
        from pyspark.rdd import _create_local_socket  # type: ignore[no-redef]  # noqa: PLC0415
    sockfile, sock = _create_local_socket(sock_info)
    return sockfile, sock


def arrow_frames_of_all_partitions(df: Any) -> Iterator[bytes]:
    """Every partition's Arrow record batches (serialized), streamed to the driver with
    prefetch, as ``DataFrame.toLocalIterator(prefetchPartitions=True)`` streams rows."""
    from pyspark.serializers import NoOpSerializer  # noqa: PLC0415

    try:
        from pyspark.util import _local_iterator_from_socket  # noqa: PLC0415 - PySpark 4
    except ImportError:  # PySpark 3.5
        from pyspark.rdd import _local_iterator_from_socket  # type: ignore[no-redef]  # noqa: PLC0415
    sc = df.sparkSession.sparkContext
    sock = sc._jvm.PythonRDD.toLocalIteratorAndServe(df._jdf.toArrowBatchRdd(), True)
    frames: Iterator[bytes] = _local_iterator_from_socket(sock, NoOpSerializer())
    return frames


#: per SparkContext (by id) with a wrapped ``cancelJobGroup``: what hears a group's cancel,
#: and the instance's own ``cancelJobGroup`` before (None: the class's)
_hearing: dict[int, tuple[list[Callable[[str], None]], Any]] = {}
_hearing_lock = threading.Lock()


@contextlib.contextmanager
def hearing_group_cancels(sc: Any, listener: Callable[[str], None]) -> Iterator[None]:
    """While inside, ``listener(group)`` is called after each ``sc.cancelJobGroup(group)``
    made in this process (any thread). Spark cancels only the group's jobs running then and
    keeps no trace of it; the bridge's jobs are short, one per slice, so most cancels would
    fall between two of them unseen. The instance's ``cancelJobGroup`` is wrapped (the one
    it had runs first, as before) while any listener of that context is inside."""
    key = id(sc)
    with _hearing_lock:
        if key not in _hearing:
            before = sc.__dict__.get("cancelJobGroup")
            cancel = before if before is not None else type(sc).cancelJobGroup.__get__(sc)

            def cancel_job_group(group_id: str, *args: Any, **kwargs: Any) -> Any:
                done = cancel(group_id, *args, **kwargs)
                with _hearing_lock:
                    told = list(_hearing[key][0]) if key in _hearing else []
                for hear in told:
                    hear(group_id)
                return done

            _hearing[key] = ([], before)
            sc.cancelJobGroup = cancel_job_group
        _hearing[key][0].append(listener)
    try:
        yield
    finally:
        with _hearing_lock:
            listeners, before = _hearing[key]
            listeners.remove(listener)
            if not listeners:
                del _hearing[key]
                if before is None:
                    sc.__dict__.pop("cancelJobGroup", None)
                else:
                    sc.cancelJobGroup = before
