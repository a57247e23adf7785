"""A Spark user's own data at growing sizes: the driver's memory stays flat.

    python benchmarks/spark_typed_memory.py [--rows 1000000,4000000,10000000]

For each size, in a fresh process (``local[2]``, ``spark.driver.maxResultSize=16m``): an
uncached table of ``user`` (bigint), ``amount`` (decimal(10,2)), ``at`` (timestamp) in 4
partitions (each far more than 16 MB at 10M rows) runs through a topology summing the
decimals and keeping the latest timestamp per user in keyed state, with exactly-once
checkpoints every second and ``final_only=True``, into the Parquet sink; the result is
checked against Spark's ``groupBy``. Prints rows/s, the peak RSS of the driver's Python
process and of the driver's JVM, and each divided by the smallest size's (target <= 1.5:
partitions are read in slices, nothing is collected whole, state is one entry per user).
"""

from __future__ import annotations

import argparse
import json
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

PARTITIONS = 4
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


def child(rows: int) -> None:
    """In a fresh process: one size; prints one JSON line."""
    from pyspark.sql import functions as F  # noqa: PLC0415

    spark = local_spark(config={"spark.driver.maxResultSize": "16m"})
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
    parser.add_argument("--rows", default="1000000,4000000,10000000")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    configure_logging(level="error")
    if args.child:
        child(args.child)
        return
    sizes = [int(n) for n in args.rows.split(",")]
    results = [measure(rows) for rows in sizes]
    base = results[0]
    print(f"{PARTITIONS} partitions, {USERS:,} users, spark.driver.maxResultSize=16m, local[2]")
    print(
        f"{'rows':>12} {'rows/s':>10} {'Python MB':>10} {'x':>6} {'JVM MB':>8} {'x':>6}  Spark's answer"
    )
    for r in results:
        print(
            f"{r['rows']:>12,} {r['rows'] / r['seconds']:>10,.0f} "
            f"{r['python_kb'] / 1024:>10.0f} {r['python_kb'] / base['python_kb']:>6.2f} "
            f"{r['jvm_kb'] / 1024:>8.0f} {r['jvm_kb'] / max(1, base['jvm_kb']):>6.2f}  "
            f"{'matches' if r['match'] else 'DIFFERS'}"
        )
    largest = results[-1]
    print(
        f"peak RSS at {largest['rows']:,} rows / at {base['rows']:,} rows: Python "
        f"{largest['python_kb'] / base['python_kb']:.2f}, driver JVM "
        f"{largest['jvm_kb'] / max(1, base['jvm_kb']):.2f}  (target <= 1.5)"
    )


if __name__ == "__main__":
    main()
