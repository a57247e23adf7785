"""The Spark bridge's main job: click events from Spark, a keyed aggregation on actors with
checkpoints every 200 ms, a task failure midway, and the result checked against Spark's own
``groupBy``.

    .venv/bin/python examples/spark_clicks.py                 # 2M generated clicks, local[2]
    .venv/bin/python examples/spark_clicks.py --rows 200000 --no-failure
    .venv/bin/python examples/spark_clicks.py --input clicks.parquet --master spark://host:7077

1. Spark (embedded ``local[2]``, UI off) generates the click table: ``user`` (bigint),
   ``ts`` (timestamp), ``amount`` (double), ``--rows`` rows over 4 partitions; or reads
   ``--input`` (Parquet, or CSV with a header) with those columns.
2. ``spark_bridge.run_topology`` runs on actors in this process: the table's partitions feed
   the source (2 subtasks, 2 partitions each), ``key_by(user)`` and a running
   ``(user, total amount, clicks)`` per user, written to the exactly-once Parquet sink;
   exactly-once checkpoints every 200 ms. A ``FailTask`` fails the first aggregation subtask
   when it has processed half its records; the job restarts from the latest completed
   checkpoint (sources seek back to their partition offsets, the sink drops what it staged
   after that checkpoint).
3. The sink's output is a changelog (one row per click: the user's running totals); Spark
   takes each user's last row and compares it with ``groupBy("user")`` over the same table.

Prints progress (rows read, checkpoints) to stderr, the checkpoint summary, and
"exactly-once: N keys match Spark's batch result" (exit 0), or the mismatches (exit 1).
Under ``ckptsim run examples/spark_clicks.py`` it runs with its defaults, and ``ckptsim
run``'s own options (``-D``, ``--simulate``, ``--stats`` ...) apply to its job; ckptsim then
prints the checkpoint summary.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ckptsim import (
    DataStream,
    FailTask,
    SparkBridgeError,
    TopologyFailed,
    configure_logging,
    local_spark,
    run_topology_job,
    summary_table,
)

#: the aggregation's output, as the Parquet sink writes it
SCHEMA = "user long, amount double, clicks long"
AGGREGATION_TASK = "reduce-3#0"  # vertices: spark-source (source + map), reduce-3 (reduce + sink)


def spend_per_user(clicks: DataStream) -> DataStream:
    """(user, ts, amount) rows -> running (user, total amount, clicks) per user."""
    return (
        clicks.map(lambda row: (row[0], row[2], 1), name="Click")
        .key_by(lambda click: click[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1], a[2] + b[2]), name="Spend")
    )


def generate(spark: Any, rows: int, users: int, partitions: int) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415

    ids = spark.range(0, rows, 1, partitions)
    return ids.select(
        F.pmod(F.xxhash64("id"), F.lit(users)).alias("user"),
        F.timestamp_millis(F.lit(1_750_000_000_000) + F.col("id") * 37).alias("ts"),
        (F.pmod(F.xxhash64("id", F.lit(1)), F.lit(50_000)) / 100.0).alias("amount"),
    )


def read_input(spark: Any, path: str) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415

    if path.endswith(".csv") or (Path(path).is_dir() and any(Path(path).glob("*.csv"))):
        table = spark.read.csv(path, header=True, inferSchema=True)
    else:
        table = spark.read.parquet(path)
    missing = {"user", "amount"} - set(table.columns)
    if missing:
        raise SystemExit(f"--input {path}: needs columns user, ts, amount; missing {missing}")
    ts = F.col("ts") if "ts" in table.columns else F.lit(None).cast("timestamp")
    return table.select(F.col("user").cast("long"), ts.alias("ts"), F.col("amount").cast("double"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="clicks to generate")
    parser.add_argument("--users", type=int, default=10_000, help="distinct users")
    parser.add_argument("--partitions", type=int, default=4, help="Spark partitions")
    parser.add_argument("--input", help="read the clicks (Parquet, or CSV) instead")
    parser.add_argument("--master", default="local[2]", help="Spark master URL")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--interval", default="200 ms", help="checkpoint interval")
    parser.add_argument("--no-failure", action="store_true", help="inject no task failure")
    parser.add_argument("--output", help="Parquet directory (default: temporary)")
    parser.add_argument(
        "--log-level",
        default="error",
        help="protocol events at this level and above to stderr (info: every checkpoint and "
        "split; the failure and the restart show in the summary anyway)",
    )
    args = parser.parse_args(argv)
    if __name__ != "__ckptsim__":  # ckptsim run configures logging itself
        configure_logging(fmt="console", level=args.log_level)
    started = time.perf_counter()
    try:
        spark = local_spark(args.master, app_name="ckptsim spark_clicks")
    except SparkBridgeError as error:
        print(f"spark_clicks: {error}", file=sys.stderr)
        return 2
    from pyspark.sql import functions as F  # noqa: PLC0415

    clicks = (
        read_input(spark, args.input)
        if args.input
        else generate(spark, args.rows, args.users, args.partitions)
    ).cache()
    rows = clicks.count()
    print(
        f"{rows:,} clicks in {clicks.rdd.getNumPartitions()} partitions "
        f"({time.perf_counter() - started:.1f} s with Spark's start)",
        file=sys.stderr,
    )
    per_subtask = rows // args.parallelism
    faults = (
        [] if args.no_failure else [FailTask(task=AGGREGATION_TASK, at_record=per_subtask // 2)]
    )
    tty = sys.stderr.isatty()

    def progress(snapshot: dict[str, Any]) -> None:
        counts = snapshot.get("counts", {})
        line = (
            f"{snapshot.get('status', '?')}: {snapshot.get('records', 0):,} rows read"
            + (" since the restore" if counts.get("restored") else "")
            + f", checkpoints {counts.get('completed', 0)} completed"
        )
        print("\r" + line.ljust(70) if tty else line, end="" if tty else "\n", file=sys.stderr)

    job_started = time.perf_counter()
    try:
        run = run_topology_job(
            spark,
            clicks,
            spend_per_user,
            schema=SCHEMA,
            output=args.output,
            name="spark clicks",
            parallelism=args.parallelism,
            checkpoint_interval=args.interval,
            config={
                "restart-strategy.type": "fixed-delay",
                "restart-strategy.fixed-delay.attempts": 3,
                "restart-strategy.fixed-delay.delay": "100 ms",
                "ckptsim.buffer.records": 4096,
            },
            faults=faults,
            progress=progress,
            progress_interval=0.5 if tty else 2.0,
        )
    except TopologyFailed as error:
        print(f"\nspark_clicks: {error}", file=sys.stderr)
        return 1
    finally:
        if tty:
            print(file=sys.stderr)
    job_seconds = time.perf_counter() - job_started
    result = run.result
    if __name__ != "__ckptsim__":  # ckptsim run prints the summary itself
        print(summary_table(result))
    print(
        f"\n{rows:,} clicks through the topology in {job_seconds:.1f} s "
        f"({rows / job_seconds:,.0f} rows/s), {result.restarts} restart(s)"
    )

    changelog = run.dataframe
    final = changelog.groupBy("user").agg(
        F.max("clicks").alias("clicks"), F.max_by("amount", "clicks").alias("amount")
    )
    batch = clicks.groupBy("user").agg(
        F.count("*").alias("clicks"), F.sum("amount").alias("amount")
    )
    ours = {r["user"]: (r["clicks"], r["amount"]) for r in final.collect()}
    theirs = {r["user"]: (r["clicks"], r["amount"]) for r in batch.collect()}
    mismatches: list[tuple[Any, Any, Any]] = [
        (user, ours.get(user), expected)
        for user, expected in sorted(theirs.items())
        if user not in ours
        or ours[user][0] != expected[0]
        or not math.isclose(ours[user][1], expected[1], rel_tol=1e-9, abs_tol=1e-6)
    ]
    mismatches += [(user, ours[user], None) for user in sorted(set(ours) - set(theirs))]
    written = changelog.count()
    print(
        f"changelog: {written:,} rows in {len(list(run.path.glob('part-*.parquet')))} committed "
        f"Parquet files under {run.path}"
    )
    clicks.unpersist()
    print(f"total {time.perf_counter() - started:.1f} s")
    if mismatches or written != rows:
        print(
            f"NOT exactly-once: {len(mismatches)} of {len(theirs)} keys differ from Spark's batch "
            f"result; {written:,} changelog rows for {rows:,} clicks"
        )
        for user, got, expected in mismatches[:20]:
            print(f"  user {user}: topology (clicks, amount) = {got}, Spark = {expected}")
        return 1
    print(f"exactly-once: {len(theirs)} keys match Spark's batch result")
    return 0


if __name__ == "__main__":
    sys.exit(main())
elif __name__ == "__ckptsim__":  # ckptsim run examples/spark_clicks.py
    code = main([])
    if code == 2:  # Spark cannot start (no Java 17, no PySpark): said above, with the fix
        sys.exit(2)
    if code != 0:
        raise RuntimeError("the job failed or its output does not match Spark's batch result")
