#: the JVM options of the Spark tests' short-lived JVMs (the suite's driver, conftest.py; the
#: cluster's driver and executors, cluster_job.py): the quick compiler only, the serial
#: collector. As ``spark.*.defaultJavaOptions``, so that ``local_spark``'s own
#: ``extraJavaOptions`` (the log settings, from the JVM's start on) still apply.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
