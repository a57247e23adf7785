"""Pykka actors that run ckptsim jobs: JobMaster, CheckpointCoordinator, StreamTask, InputChannel.

Topology scripts import the API from here::

    from actors import StreamExecutionEnvironment, KeyedProcessFunction
"""

from __future__ import annotations

from typing import Any

from runtime.config import CheckpointingMode, Configuration
from runtime.datastream import DataStream, KeyedStream
from runtime.datastream import StreamExecutionEnvironment as _Environment
from runtime.functions import KeyedProcessFunction, ProcessFunction, RuntimeContext
from runtime.graph import GraphError, JobGraph
from runtime.job import JobResult
from runtime.restart import bound_restarts_by_default
from runtime.state import ListState, ValueState


def _execute(job: JobGraph, config: Configuration, **options: Any) -> JobResult:
    from actors.launcher import execute  # noqa: PLC0415 - keeps `import actors` light

    return execute(job, config, **options)


class StreamExecutionEnvironment(_Environment):
    """The DataStream environment whose ``execute`` runs the job on Pykka actors.

    Under ``ckptsim run`` the command line's ``-D`` settings and ``--parallelism`` apply on
    top of what the script configured.
    """

    executor = staticmethod(_execute)

    def from_spark(self, data: Any, **options: Any) -> DataStream:
        """A source reading a Spark DataFrame or RDD, one partition per split, with replayable
        (partition, row) positions (``spark_bridge.from_spark``; needs PySpark and Java)."""
        from spark_bridge import from_spark  # noqa: PLC0415 - Spark only when asked for

        stream: DataStream = from_spark(self, data, **options)
        return stream

    def execute(self, name: str = "ckptsim job", **options: Any) -> JobResult:
        from actors import session  # noqa: PLC0415

        active = session.current()
        if active is not None:
            self.configuration.override(active.settings)
            if active.bounded_restarts and bound_restarts_by_default(self.configuration):
                active.bounded.append(name)
            options = {**active.options, **options}
            with active.pause_script_timer():
                result = super().execute(name, **options)
        else:
            result = super().execute(name, **options)
        if active is not None:
            active.results.append(result)
        return result


__all__ = [
    "CheckpointingMode",
    "DataStream",
    "GraphError",
    "JobResult",
    "KeyedProcessFunction",
    "KeyedStream",
    "ListState",
    "ProcessFunction",
    "RuntimeContext",
    "StreamExecutionEnvironment",
    "ValueState",
]
