"""The Spark feed's speed and memory, as ratios against baselines measured in the same run.

    python benchmarks/spark_feed.py [--rows 5000000] [--small 500000] [--repeat 5]

(a) records/s of a cached ``--rows``-row DataFrame (4 partitions: a long, an int, a double)
    through source -> identity (``map_batch``) -> sink on actors at parallelism 2, divided by
    records/s of the fastest plain streaming read of the same DataFrame in the same process
    (target >= 0.8). The tuple pipeline also runs with the feed's prefetch (the next
    partition's first slice fetched while one is read) switched off, and the ratio of the two
    rates, prefetch on / off, is printed. The plain reads, best first: the JVM's Arrow batches streamed partition
    by partition with prefetch (``toLocalIterator`` over ``Dataset.toArrowBatchRdd``, what
    the feed reads too), and the issue's ``mapInArrow`` + ``toLocalIterator(prefetch)``.
    Two pairs doing the same work: Arrow buffers (``batch_format="arrow"``) against the
    Arrow read, and buffers of tuples against the Arrow read turned into tuples. The sink
    counts the records (a connector that writes nothing: this measures the feed).
(b) peak RSS of the driver's Python process running the tuple pipeline over ``--rows`` rows
    divided by the same over ``--small`` rows, each in a fresh process reading an uncached
    DataFrame (target <= 1.5: streamed, not collected). The driver JVM's peak is printed too.

Every figure of (a) is the best of ``--repeat`` runs, variants interleaved.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from actors.connectors import NoTransactions
from ckptsim import StreamExecutionEnvironment
from ckptsim._cli import configure_logging
from runtime.checkpoint import TaskId
from spark_bridge import from_spark, local_spark
from spark_bridge._pyspark_seam import arrow_frames_of_all_partitions
from spark_bridge.session import arrow_schema_of
from spark_bridge.spark_feed import ArrowDataFrameFeed, to_tuples

PARTITIONS = 4
PARALLELISM = 2


def table(spark: Any, rows: int) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415

    return spark.range(0, rows, 1, PARTITIONS).select(
        F.col("id"),
        (F.col("id") % 100_000).cast("int").alias("user"),
        ((F.col("id") % 1000) / 10.0).alias("amount"),
    )


# --- plain reads -----------------------------------------------------------------------------


def arrow_read(df: Any, *, tuples: bool) -> int:
    """Every partition's Arrow batches, streamed with prefetch (``toLocalIterator``'s path)."""
    import pyarrow as pa  # noqa: PLC0415

    schema = arrow_schema_of(df.schema)
    rows = 0
    for frame in arrow_frames_of_all_partitions(df):
        batch = pa.ipc.read_record_batch(pa.py_buffer(frame), schema)
        rows += len(to_tuples(batch)) if tuples else batch.num_rows
    return rows


def map_in_arrow_read(df: Any) -> int:
    """``mapInArrow`` packing each batch as Arrow IPC bytes + ``toLocalIterator(True)``."""
    import pyarrow as pa  # noqa: PLC0415

    def pack(batches: Any) -> Any:
        import pyarrow as pa  # noqa: PLC0415

        for batch in batches:
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, batch.schema) as writer:
                writer.write_batch(batch)
            yield pa.RecordBatch.from_pylist([{"ipc": sink.getvalue().to_pybytes()}])

    rows = 0
    for row in df.mapInArrow(pack, "ipc binary").toLocalIterator(prefetchPartitions=True):
        for batch in pa.ipc.open_stream(row[0]):
            rows += batch.num_rows
    return rows


# --- the pipeline ------------------------------------------------------------------------------


class CountingSink:
    """A sink that only counts what it gets (shared by its subtasks)."""

    def __init__(self) -> None:
        self.rows = 0

    def __call__(self, *, task: TaskId, parallelism: int, transactional: bool, attempt: int) -> Any:
        return _Counter(self)


class _Counter(NoTransactions):
    def __init__(self, sink: CountingSink) -> None:
        self.sink = sink

    def write(self, records: Any) -> None:
        self.sink.rows += len(records)

    def pre_commit(self, checkpoint_id: int) -> Any:
        return None

    def close(self, *, finished: bool) -> list[Any] | None:
        return None


def pipeline(df: Any, *, batch_format: str, prefetch: bool = True) -> int:
    """Records through source -> identity -> counting sink; ``prefetch=False`` switches off
    the feed's prefetch of each next partition's first slice (an internal switch: the feed
    class's ``prefetch``, read when the feed is made)."""
    ArrowDataFrameFeed.prefetch = prefetch
    try:
        return _pipeline(df, batch_format=batch_format)
    finally:
        ArrowDataFrameFeed.prefetch = True


def _pipeline(df: Any, *, batch_format: str) -> int:
    env = StreamExecutionEnvironment(parallelism=PARALLELISM)
    sink = CountingSink()
    (
        from_spark(env, df, stabilize="none", batch_format=batch_format)  # type: ignore[arg-type]
        .map_batch(lambda buffer: buffer, name="Identity")
        .sink_to(sink, name="count")
    )
    result = env.execute("spark feed benchmark", timeout=600)
    if not result.succeeded:
        raise SystemExit(f"the job did not finish: {result.status.value} {result.failure}")
    return sink.rows


def measure_rate(fn: Callable[[], int], rows: int, results: list[float]) -> None:
    gc.collect()
    started = time.perf_counter()
    got = fn()
    elapsed = time.perf_counter() - started
    if got != rows:
        raise SystemExit(f"read {got} rows, expected {rows}")
    results.append(rows / elapsed)


# --- memory ------------------------------------------------------------------------------------


def rss_child(rows: int) -> None:
    """In a fresh process: the tuple pipeline over ``rows`` uncached rows; prints peak RSS."""
    spark = local_spark()
    df = table(spark, rows)
    got = pipeline(df, batch_format="tuples")
    assert got == rows, got
    jvm_kb = 0
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    if proc is not None:
        for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                jvm_kb = int(line.split()[1])
    python_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"rows": rows, "python_kb": python_kb, "jvm_kb": jvm_kb}))
    spark.stop()


def measure_rss(rows: int) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-W", "ignore", __file__, "--rss-child", str(rows)],
        capture_output=True,
        text=True,
        check=False,
    )
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            result: dict[str, int] = json.loads(line)
            return result
    raise SystemExit(f"the RSS run of {rows} rows failed:\n{done.stderr[-3000:]}")


PLAIN_TUPLES = "plain read: the same, turned into tuples"
ACTORS_ARROW = "actors: source -> identity -> sink, Arrow buffers"
ACTORS_TUPLES = "actors: source -> identity -> sink, tuple buffers"
ACTORS_NO_PREFETCH = "actors: the same, tuple buffers, the feed's prefetch off"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--small", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rss-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    configure_logging(level="error")
    if args.rss_child:
        rss_child(args.rss_child)
        return
    spark = local_spark()
    df = table(spark, args.rows).cache()
    assert df.count() == args.rows
    variants: dict[str, Callable[[], int]] = {
        "plain read: Arrow batches (toArrowBatchRdd + toLocalIterator, prefetch)": lambda: (
            arrow_read(df, tuples=False)
        ),
        PLAIN_TUPLES: lambda: arrow_read(df, tuples=True),
        ACTORS_ARROW: lambda: pipeline(df, batch_format="arrow"),
        ACTORS_TUPLES: lambda: pipeline(df, batch_format="tuples"),
        ACTORS_NO_PREFETCH: lambda: pipeline(df, batch_format="tuples", prefetch=False),
    }
    if importlib.util.find_spec("pandas") is not None:  # PySpark's mapInArrow needs pandas
        variants["plain read: mapInArrow + toLocalIterator(prefetch)"] = lambda: map_in_arrow_read(
            df
        )
    else:
        print("(mapInArrow variant skipped: PySpark's mapInArrow needs pandas, not installed)")
    rates: dict[str, list[float]] = {name: [] for name in variants}
    for fn in variants.values():  # warm up: JIT, Python workers, page cache
        fn()
    for _ in range(args.repeat):
        for name, fn in variants.items():
            measure_rate(fn, args.rows, rates[name])
    best = {name: max(r) for name, r in rates.items()}
    print(
        f"{args.rows:,} rows, {PARTITIONS} partitions, parallelism {PARALLELISM}, best of {args.repeat}"
    )
    for name, rate in best.items():
        print(f"  {name:<75} {rate / 1e6:6.2f} M records/s")
    fastest = max(rate for name, rate in best.items() if name.startswith("plain read"))
    arrow, tuples = best[ACTORS_ARROW], best[ACTORS_TUPLES]
    arrow_ratio = arrow / fastest
    tuple_ratio = tuples / best[PLAIN_TUPLES]
    print(f"(a) Arrow buffers / fastest plain read:            {arrow_ratio:.2f}  (target >= 0.8)")
    print(
        f"    tuple buffers / plain read turned into tuples: {tuple_ratio:.2f}"
        f"  (tuple buffers / fastest plain read: {tuples / fastest:.2f})"
    )
    print(
        f"    prefetch on / off (tuple buffers):             "
        f"{tuples / best[ACTORS_NO_PREFETCH]:.2f}"
    )
    spark.stop()
    small, large = measure_rss(args.small), measure_rss(args.rows)
    ratio = large["python_kb"] / small["python_kb"]
    print(
        f"(b) driver RSS, Python process: {large['python_kb'] / 1024:.0f} MB at {args.rows:,} rows "
        f"/ {small['python_kb'] / 1024:.0f} MB at {args.small:,} rows = {ratio:.2f}  (target <= 1.5)"
    )
    if small["jvm_kb"] and large["jvm_kb"]:
        print(
            f"    driver JVM (local mode: also the executor): {large['jvm_kb'] / 1024:.0f} MB "
            f"/ {small['jvm_kb'] / 1024:.0f} MB = {large['jvm_kb'] / small['jvm_kb']:.2f}"
        )


if __name__ == "__main__":
    main()
