"""``pyflink.common``: types and values, time, configuration, job results."""

from __future__ import annotations

from actors.pyflink._unsupported import missing
from actors.pyflink.common.completable_future import CompletableFuture
from actors.pyflink.common.configuration import Configuration
from actors.pyflink.common.execution_config import ExecutionConfig
from actors.pyflink.common.job_client import JobClient
from actors.pyflink.common.job_execution_result import JobExecutionResult
from actors.pyflink.common.job_id import JobID
from actors.pyflink.common.job_status import JobStatus
from actors.pyflink.common.serialization import (
    ByteArraySchema,
    DeserializationSchema,
    Encoder,
    SerializationSchema,
    SimpleStringSchema,
)
from actors.pyflink.common.time import Duration, Instant, Time
from actors.pyflink.common.typeinfo import TypeInformation, Types
from actors.pyflink.common.types import Row, RowKind
from actors.pyflink.common.watermark_strategy import WatermarkStrategy

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
