"""``StreamExecutionEnvironment``: the DataStream API's environment, run on Pykka actors."""

from __future__ import annotations

from typing import Any

from actors.launcher import execute_environment
from runtime.datastream import DataStream, StreamEnvironment


class StreamExecutionEnvironment(StreamEnvironment):
    """The environment a job is built in and run from: settings, sources, the stream graph;
    ``execute`` runs the job on Pykka actors (``runtime="threaded"``, the default, or
    ``"simulation"``) and returns its ``JobResult``.

    Under ``ckptsim run`` the command line's ``-D`` settings and ``--parallelism`` apply on
    top of what the script configured.
    """

    executor = staticmethod(execute_environment)

    def from_spark(self, data: Any, **options: Any) -> DataStream:
        """A source reading a Spark DataFrame or RDD, one partition per split, with replayable
        (partition, row) positions (``ckptsim.from_spark``; needs PySpark and Java)."""
        from spark_bridge import from_spark  # noqa: PLC0415 - Spark only when asked for

        stream: DataStream = from_spark(self, data, **options)
        return stream


__all__ = ["StreamExecutionEnvironment"]
