"""The Spark bridge: Spark partitions as replayable sources, a driver-side orchestrator, and
an exactly-once Parquet sink whose output Spark reads back. The only package importing PySpark
(lazily: ``import spark_bridge`` works without it; using it says what is missing).

    from spark_bridge import from_spark, local_spark, run_topology

    spark = local_spark("local[2]")
    stream = from_spark(env, df)             # a source in your own job: rows, r.user or r[0]
    totals = run_topology(spark, df, build, schema="user long, total double")  # a DataFrame
"""

from __future__ import annotations

from runtime.row import TupleRow
from spark_bridge.feed import FeedChanged, InMemoryFeed, PartitionFeed, SplitReader
from spark_bridge.orchestrator import (
    JobGroupCancelled,
    TopologyFailed,
    TopologyRun,
    describe_tasks,
    run_topology,
    run_topology_job,
)
from spark_bridge.session import (
    SparkBridgeError,
    SparkConnectNotSupported,
    ensure_java,
    local_spark,
    require_pyspark,
)
from spark_bridge.sinks import ParquetSink, SchemaMismatch
from spark_bridge.spark_feed import from_spark, source_from_feed, spark_feed, to_tuples

__all__ = [
    "FeedChanged",
    "InMemoryFeed",
    "JobGroupCancelled",
    "ParquetSink",
    "PartitionFeed",
    "SchemaMismatch",
    "SparkBridgeError",
    "SparkConnectNotSupported",
    "SplitReader",
    "TopologyFailed",
    "TopologyRun",
    "TupleRow",
    "describe_tasks",
    "ensure_java",
    "from_spark",
    "local_spark",
    "require_pyspark",
    "run_topology",
    "run_topology_job",
    "source_from_feed",
    "spark_feed",
    "to_tuples",
]
