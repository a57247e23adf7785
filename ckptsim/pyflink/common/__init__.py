"""``pyflink.common``: types and values, time, configuration, job results."""

from __future__ import annotations

from ckptsim.pyflink._unsupported import missing
from ckptsim.pyflink.common.completable_future import CompletableFuture
from ckptsim.pyflink.common.configuration import Configuration
from ckptsim.pyflink.common.execution_config import ExecutionConfig
from ckptsim.pyflink.common.job_client import JobClient
from ckptsim.pyflink.common.job_execution_result import JobExecutionResult
from ckptsim.pyflink.common.job_id import JobID
from ckptsim.pyflink.common.job_status import JobStatus
from ckptsim.pyflink.common.serialization import (
    ByteArraySchema,
    DeserializationSchema,
    Encoder,
    SerializationSchema,
    SimpleStringSchema,
)
from ckptsim.pyflink.common.time import Duration, Instant, Time
from ckptsim.pyflink.common.typeinfo import TypeInformation, Types
from ckptsim.pyflink.common.types import Row, RowKind
from ckptsim.pyflink.common.watermark_strategy import WatermarkStrategy

__getattr__ = missing("pyflink.common")

__all__ = [
    "ByteArraySchema",
    "CompletableFuture",
    "Configuration",
    "DeserializationSchema",
    "Duration",
    "Encoder",
    "ExecutionConfig",
    "Instant",
    "JobClient",
    "JobExecutionResult",
    "JobID",
    "JobStatus",
    "Row",
    "RowKind",
    "SerializationSchema",
    "SimpleStringSchema",
    "Time",
    "TypeInformation",
    "Types",
    "WatermarkStrategy",
]
