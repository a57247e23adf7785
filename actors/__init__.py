"""Pykka actors that run ckptsim jobs: JobMaster, CheckpointCoordinator, StreamTask, InputChannel.

Topology scripts import the API from here::

    from actors import StreamExecutionEnvironment, KeyedProcessFunction
"""

from __future__ import annotations

from typing import Any

from runtime.config import CheckpointingMode, Configuration
from runtime.datastream import DataStream, KeyedStream
from runtime.datastream import StreamExecutionEnvironment as _Environment
from runtime.graph import GraphError, JobGraph
from runtime.job import JobResult
from runtime.operators import KeyedProcessFunction, RuntimeContext
from runtime.state import ListState, ValueState


def _execute(job: JobGraph, config: Configuration, **options: Any) -> JobResult:
    from actors.launcher import execute  # noqa: PLC0415 - keeps `import actors` light

    return execute(job, config, **options)


class StreamExecutionEnvironment(_Environment):
    """The DataStream environment whose ``execute`` runs the job on Pykka actors."""

    executor = staticmethod(_execute)


__all__ = [
    "CheckpointingMode",
    "DataStream",
    "GraphError",
    "JobResult",
    "KeyedProcessFunction",
    "KeyedStream",
    "ListState",
    "RuntimeContext",
    "StreamExecutionEnvironment",
    "ValueState",
]
