#: the JVM options of the Spark tests' short-lived JVMs (the suite's driver, conftest.py; the
#: cluster's driver and executors, cluster_job.py): the quick compiler only, the serial
#: collector. As ``spark.*.defaultJavaOptions``, so that ``local_spark``'s own
#: ``extraJavaOptions`` (the log settings, from the JVM's start on) still apply.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

#: a guard against a hang, not a measure: how long the listener bus may take to drain
LISTENER_BUS_GUARD_MS = 120_000


def jobs_in_group(spark: object, group: str) -> set[int]:
    """The ids of the Spark jobs of job group ``group`` so far, once Spark's listener bus has
    delivered every event posted before the call: the status tracker learns of a job from that
    bus, asynchronously, so without waiting a job that already ran can be missing from it (and
    turn up in a later reading)."""
    sc = spark.sparkContext  # type: ignore[attr-defined]
    sc._jsc.sc().listenerBus().waitUntilEmpty(LISTENER_BUS_GUARD_MS)  # no Python API for it
    return set(sc.statusTracker().getJobIdsForGroup(group))
