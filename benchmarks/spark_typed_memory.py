"""A Spark user's own data at growing sizes: the driver's memory stays flat.

    python benchmarks/spark_typed_memory.py [--rows 1000000,4000000]
    python benchmarks/spark_typed_memory.py --rows 1000000,4000000,10000000  # opt-in
    CKPTSIM_BENCH_ROWS=1000000,4000000,10000000 make bench                   # the same

The default sizes are 1M and 4M rows (a few minutes on a 2-core machine; ``make bench`` runs
those); 10M rows take long (about 40 s per million rows on a loaded 2-core machine, plus
Spark's own ``groupBy`` to check against): ask for them with ``--rows`` or the
``CKPTSIM_BENCH_ROWS`` environment variable (``--rows`` wins).

For each size, in a fresh process (``local[2]``, ``spark.driver.maxResultSize=16m``,
``spark.driver.memory=1g``: the driver's maximum heap set explicitly, see below): an
uncached table of ``user`` (bigint), ``amount`` (decimal(10,2)), ``at`` (timestamp) in 4
partitions (each far more than 16 MB at 10M rows) runs through a topology summing the
decimals and keeping the latest timestamp per user in keyed state, with exactly-once
checkpoints every second and ``final_only=True``, into the Parquet sink; the result is
checked against Spark's ``groupBy``. Prints rows/s, the peak RSS of the driver's Python
process and of the driver's JVM, the JVM's heap live (MB used after a full collection at
the end of the run), and each divided by the smallest size's
(target <= 1.5: partitions are read in slices, nothing is collected whole, state is one
entry per user). The JVM's RSS is its committed heap plus about 330 MB outside the heap
(metaspace, code, threads, GC); G1 grows the committed heap towards the maximum while
garbage is made fast, whether or not it is live, so the JVM's peak RSS grows with the run's
length up to that bound: the live heap is the figure that says whether anything is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ckptsim._cli import configure_logging
from runtime.datastream import DataStream
from runtime.row import TupleRow
from spark_bridge import local_spark, run_topology_job
from spark_bridge._pyspark_seam import driver_heap_after_gc

PARTITIONS = 4
#: ``make bench``'s sizes; 10M rows are opt-in (``--rows`` or ``CKPTSIM_BENCH_ROWS``)
DEFAULT_ROWS = "1000000,4000000"
#: the driver's maximum heap, set explicitly: the JVM's RSS follows its committed heap, which
#: G1 grows towards this maximum under allocation pressure whatever is live
DRIVER_HEAP = "1g"
USERS = 10_000


def table(spark: Any, rows: int) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415

    ids = spark.range(0, rows, 1, PARTITIONS)
    return ids.select(
        F.pmod(F.xxhash64("id"), F.lit(USERS)).alias("user"),
        (F.pmod(F.xxhash64("id", F.lit(1)), F.lit(100_000)) / 100)
        .cast("decimal(10,2)")
        .alias("amount"),
        F.timestamp_micros(F.lit(1_700_000_000_000_000) + F.col("id") * 1_000_003).alias("at"),
    )


def per_user(stream: DataStream) -> DataStream:
    return (
        stream.map(lambda r: TupleRow(user=r.user, total=r.amount, n=1, at=r.at), name="Payment")
        .key_by(lambda r: r.user)
        .reduce(
            lambda a, b: TupleRow(
                user=a.user, total=a.total + b.total, n=a.n + b.n, at=max(a.at, b.at)
            ),
            name="Per user",
        )
    )


def jvm_heap(spark: Any) -> dict[str, int]:
    """The driver JVM's heap in MB: ``heap_live`` used after a full collection (what the JVM
    keeps), ``heap_max`` its maximum (G1 grows the committed heap, which its RSS counts,
    towards it under allocation pressure, live or not)."""
    used, most = driver_heap_after_gc(spark.sparkContext)
    return {"heap_live": used >> 20, "heap_max": most >> 20}


def child(rows: int) -> None:
    """In a fresh process: one size; prints one JSON line."""
    from pyspark.sql import functions as F  # noqa: PLC0415

    spark = local_spark(
        config={"spark.driver.maxResultSize": "16m", "spark.driver.memory": DRIVER_HEAP}
    )
    df = table(spark, rows)
    with tempfile.TemporaryDirectory(prefix="ckptsim-bench-") as out:
        started = time.perf_counter()
        run = run_topology_job(
            spark,
            df,
            per_user,
            output=f"{out}/out",
            parallelism=2,
            checkpoint_interval="1 s",
            final_only=True,
            stabilize="none",  # the plan is deterministic: nothing cached in the JVM
        )
        seconds = time.perf_counter() - started
        heap = jvm_heap(spark)
        ours = {r["user"]: (r["n"], r["total"], r["at"]) for r in run.dataframe.collect()}
    theirs = {
        r["user"]: (r["n"], r["total"], r["at"])
        for r in df.groupBy("user")
        .agg(F.count("*").alias("n"), F.sum("amount").alias("total"), F.max("at").alias("at"))
        .collect()
    }
    jvm_kb = 0
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    if proc is not None:
        for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                jvm_kb = int(line.split()[1])
    python_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "rows": rows,
                "seconds": seconds,
                "python_kb": python_kb,
                "jvm_kb": jvm_kb,
                **heap,
                "match": ours == theirs,
            }
        )
    )
    spark.stop()


def measure(rows: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-W", "ignore", __file__, "--child", str(rows)],
        capture_output=True,
        text=True,
        check=False,
    )
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            result: dict[str, Any] = json.loads(line)
            return result
    raise SystemExit(f"the run of {rows} rows failed:\n{done.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rows",
        default=os.environ.get("CKPTSIM_BENCH_ROWS") or DEFAULT_ROWS,
        help=f"comma-separated sizes, the first the base (default {DEFAULT_ROWS}, or "
        "CKPTSIM_BENCH_ROWS; add 10000000 for the 10M-row case)",
    )
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    configure_logging(level="error")
    if args.child:
        child(args.child)
        return
    sizes = [int(n) for n in args.rows.split(",")]
    results = [measure(rows) for rows in sizes]
    base = results[0]
    print(
        f"{PARTITIONS} partitions, {USERS:,} users, spark.driver.maxResultSize=16m, local[2], "
        f"spark.driver.memory={DRIVER_HEAP} (heap max {base['heap_max']} MB)"
    )
    print(
        f"{'rows':>12} {'rows/s':>10} {'Python MB':>10} {'x':>6} {'JVM MB':>8} {'x':>6} "
        f"{'heap live':>9} {'x':>6}  Spark's answer"
    )
    for r in results:
        print(
            f"{r['rows']:>12,} {r['rows'] / r['seconds']:>10,.0f} "
            f"{r['python_kb'] / 1024:>10.0f} {r['python_kb'] / base['python_kb']:>6.2f} "
            f"{r['jvm_kb'] / 1024:>8.0f} {r['jvm_kb'] / max(1, base['jvm_kb']):>6.2f} "
            f"{r['heap_live']:>9} {r['heap_live'] / max(1, base['heap_live']):>6.2f}  "
            f"{'matches' if r['match'] else 'DIFFERS'}"
        )
    largest = results[-1]
    print(
        f"peak RSS at {largest['rows']:,} rows / at {base['rows']:,} rows: Python "
        f"{largest['python_kb'] / base['python_kb']:.2f}, driver JVM "
        f"{largest['jvm_kb'] / max(1, base['jvm_kb']):.2f}, driver JVM heap live after a "
        f"full GC {largest['heap_live'] / max(1, base['heap_live']):.2f}  (target <= 1.5)"
    )


if __name__ == "__main__":
    main()
