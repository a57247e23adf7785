"""The cluster path, run by ``test_cluster.py`` in a process of its own (one SparkContext per
process): Spark on ``local-cluster[2,1,1024]`` (a master, two workers and their executors,
each its own JVM), ``spark.driver.maxResultSize`` of 1 MB (each partition is more), a
``decimal(10,2)`` column summed per user and the latest row per user with its timestamp,
checkpoints, a task failure, the output in a ``file://`` URI, Spark's own answer to compare.

    .venv/bin/python -m tests.spark_bridge.cluster_job /tmp/out

Prints one JSON line: what the test checks.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from actors.faults import FailTask
from runtime.datastream import DataStream
from runtime.row import TupleRow
from spark_bridge import local_spark, run_topology_job
from tests.spark_bridge import JVM_OPTIONS, jobs_in_group

ROWS = 20_000


def payments(spark: Any) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415

    ids = spark.range(0, ROWS, 1, 2)
    return ids.select(
        (F.col("id") % 13).alias("user"),
        ((F.col("id") * 7919 % 100_000) / 100).cast("decimal(10,2)").alias("amount"),
        F.timestamp_micros(F.lit(1_700_000_000_000_000) + F.col("id") * 1_000_003).alias("at"),
        F.concat(F.lit("x" * 100), F.col("id").cast("string")).alias("note"),  # 1.2 MB each
    )


def totals_and_latest(stream: DataStream) -> DataStream:
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


def main(out: str) -> int:
    from pyspark.sql import functions as F  # noqa: PLC0415

    spark = local_spark(
        "local-cluster[2,1,1024]",
        app_name="ckptsim cluster test",
        config={
            "spark.driver.maxResultSize": "1m",
            "spark.executor.memory": "512m",
            "spark.driver.defaultJavaOptions": JVM_OPTIONS,
            "spark.executor.defaultJavaOptions": JVM_OPTIONS,
        },
    )
    df = payments(spark)
    spark.sparkContext.setJobGroup("ckptsim-cluster", "the cluster test")
    run = run_topology_job(
        spark,
        df,
        totals_and_latest,
        output=f"file://{out}",
        parallelism=2,
        checkpoint_interval=10,
        config={
            "ckptsim.buffer.records": 500,
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.delay": "5 ms",
        },
        faults=[FailTask(task="Per user#1", at_record=ROWS // 4)],
        final_only=True,
        runtime="simulation",
        seed=3,
    )
    jobs = len(jobs_in_group(spark, "ckptsim-cluster"))
    ours = {r["user"]: (r["n"], r["total"], r["at"]) for r in run.dataframe.collect()}
    theirs = {
        r["user"]: (r["n"], r["total"], r["at"])
        for r in df.groupBy("user")
        .agg(F.count("*").alias("n"), F.sum("amount").alias("total"), F.max("at").alias("at"))
        .collect()
    }
    print(
        json.dumps(
            {
                "master": spark.sparkContext.master,
                "application": spark.sparkContext.applicationId,
                "restarts": run.result.restarts,
                "schema": run.dataframe.schema.simpleString(),
                "keys": len(theirs),
                "match": ours == theirs,
                "rows_per_partition": ROWS // 2,
                "jobs_in_group": jobs,
            }
        )
    )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
