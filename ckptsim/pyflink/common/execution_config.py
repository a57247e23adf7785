"""``pyflink.common.ExecutionConfig``: ``env.get_config()``.

Parallelism, max parallelism and the auto-watermark interval (``pipeline.auto-watermark-
interval``) are the environment's; the global job parameters are kept for the runtime
context's ``get_job_parameter``; settings that tune only Flink's serialization (Kryo, Avro,
POJOs), its closure cleaner or latency tracking are accepted with a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ckptsim.pyflink._unsupported import ignored, missing

_SERIALIZERS = "ckptsim keeps records as Python objects (no Java serializers)"


class ExecutionConfig:
    def __init__(self, env: Any) -> None:
        self._env = env  # the PyFlink StreamExecutionEnvironment

    # --- what ckptsim uses ---------------------------------------------------------------------

    def get_parallelism(self) -> int:
        value: int = self._env.get_parallelism()
        return value

    def set_parallelism(self, parallelism: int) -> ExecutionConfig:
        self._env.set_parallelism(parallelism)
        return self

    def get_max_parallelism(self) -> int:
        value: int = self._env.get_max_parallelism()
        return value

    def set_max_parallelism(self, max_parallelism: int) -> ExecutionConfig:
        self._env.set_max_parallelism(max_parallelism)
        return self

    def set_auto_watermark_interval(self, interval: int) -> ExecutionConfig:
        self._env._configure("pipeline.auto-watermark-interval", interval)
        return self

    def get_auto_watermark_interval(self) -> int:
        value: int = self._env._setting("pipeline.auto-watermark-interval", 200)
        return value

    def get_global_job_parameters(self) -> dict[str, str]:
        value: dict[str, str] | None = self._env._setting("pipeline.global-job-parameters")
        return dict(value or {})

    def set_global_job_parameters(
        self, global_job_parameters_dict: Mapping[str, Any]
    ) -> ExecutionConfig:
        """What every function reads with ``RuntimeContext.get_job_parameter``
        (``pipeline.global-job-parameters``)."""
        self._env._configure(
            "pipeline.global-job-parameters",
            {str(k): str(v) for k, v in global_job_parameters_dict.items()},
        )
        return self

    # --- accepted, with no effect ---------------------------------------------------------------

    def _ignored(self, call: str, reason: str = _SERIALIZERS) -> ExecutionConfig:
        ignored(f"ExecutionConfig.{call}", reason)
        return self

    def enable_closure_cleaner(self) -> ExecutionConfig:
        return self._ignored("enable_closure_cleaner()", "Python functions need no cleaning")

    def disable_closure_cleaner(self) -> ExecutionConfig:
        return self._ignored("disable_closure_cleaner()", "Python functions need no cleaning")

    def is_closure_cleaner_enabled(self) -> bool:
        return True

    def set_latency_tracking_interval(self, interval: int) -> ExecutionConfig:
        return self._ignored("set_latency_tracking_interval()", "ckptsim has no latency markers")

    def get_latency_tracking_interval(self) -> int:
        return 0

    def get_task_cancellation_interval(self) -> int:
        return 30_000

    def set_task_cancellation_interval(self, interval: int) -> ExecutionConfig:
        return self._ignored(
            "set_task_cancellation_interval()", "a cancelled task is waited for 30 s"
        )

    def get_task_cancellation_timeout(self) -> int:
        return 180_000

    def set_task_cancellation_timeout(self, timeout: int) -> ExecutionConfig:
        return self._ignored(
            "set_task_cancellation_timeout()", "a cancelled task is waited for 30 s"
        )

    def enable_force_kryo(self) -> ExecutionConfig:
        return self._ignored("enable_force_kryo()")

    def disable_force_kryo(self) -> ExecutionConfig:
        return self._ignored("disable_force_kryo()")

    def is_force_kryo_enabled(self) -> bool:
        return False

    def enable_generic_types(self) -> ExecutionConfig:
        return self._ignored("enable_generic_types()")

    def disable_generic_types(self) -> ExecutionConfig:
        return self._ignored("disable_generic_types()")

    def has_generic_types_disabled(self) -> bool:
        return False

    def enable_auto_generated_uids(self) -> ExecutionConfig:
        return self

    def disable_auto_generated_uids(self) -> ExecutionConfig:
        return self._ignored("disable_auto_generated_uids()", "operators without uid get ckptsim's")

    def has_auto_generated_uids_enabled(self) -> bool:
        return True

    def enable_force_avro(self) -> ExecutionConfig:
        return self._ignored("enable_force_avro()")

    def disable_force_avro(self) -> ExecutionConfig:
        return self._ignored("disable_force_avro()")

    def is_force_avro_enabled(self) -> bool:
        return False

    def enable_object_reuse(self) -> ExecutionConfig:
        return self._ignored(
            "enable_object_reuse()", "records are Python objects, passed on as they are"
        )

    def disable_object_reuse(self) -> ExecutionConfig:
        return self

    def is_object_reuse_enabled(self) -> bool:
        return False

    def get_default_kryo_serializer_classes(self) -> dict[str, str]:
        return {}

    def get_registered_kryo_types(self) -> list[str]:
        return []

    def get_registered_pojo_types(self) -> list[str]:
        return []

    def is_use_snapshot_compression(self) -> bool:
        return False

    def set_use_snapshot_compression(self, use_snapshot_compression: bool) -> ExecutionConfig:
        return self._ignored("set_use_snapshot_compression()", "checkpoints are JSON files")


__getattr__ = missing("pyflink.common.execution_config")

__all__ = ["ExecutionConfig"]
