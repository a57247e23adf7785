"""``pyflink.datastream.CheckpointConfig``: ``env.get_checkpoint_config()``.

A live view of the environment's Flink configuration: every getter reads and every setter
writes a key of ``execution.checkpointing.*`` (``ckptsim config`` lists them), so PyFlink's
calls and ``-D`` settings meet in one place (the program starts from the command line's
``-D``, and its setters win over it, as in Flink).
"""

from __future__ import annotations

from typing import Any

from ckptsim.pyflink._unsupported import missing
from ckptsim.pyflink.common.time import Duration, millis
from runtime.checkpoint import ExternalizedCheckpointRetention
from runtime.config import CheckpointingMode, Configuration

_CP = "execution.checkpointing."
_INT_MAX = 2**31 - 1


class CheckpointConfig:
    def __init__(self, configuration: Configuration) -> None:
        self._conf = configuration

    def _get(self, key: str) -> Any:
        return self._conf[_CP + key]

    def _set(self, key: str, value: Any) -> CheckpointConfig:
        self._conf.set(_CP + key, value)
        return self

    def is_checkpointing_enabled(self) -> bool:
        return self._get("interval") is not None

    def get_checkpointing_mode(self) -> CheckpointingMode:
        """As Flink 2.3: ``AT_LEAST_ONCE`` while checkpointing is not enabled, whatever mode
        was set (``CheckpointingOptions.getCheckpointingMode``); the mode set once it is."""
        if not self.is_checkpointing_enabled():
            return CheckpointingMode.AT_LEAST_ONCE
        return CheckpointingMode(self._get("mode"))

    def set_checkpointing_mode(self, checkpointing_mode: CheckpointingMode) -> CheckpointConfig:
        return self._set("mode", CheckpointingMode(checkpointing_mode).value)

    def get_checkpoint_interval(self) -> int:
        """Milliseconds; -1 when checkpointing is disabled (as Flink)."""
        interval = self._get("interval")
        return -1 if interval is None else int(interval)

    def set_checkpoint_interval(self, checkpoint_interval: int | Duration) -> CheckpointConfig:
        return self._set("interval", millis(checkpoint_interval))

    def get_checkpoint_timeout(self) -> int:
        return int(self._get("timeout"))

    def set_checkpoint_timeout(self, checkpoint_timeout: int | Duration) -> CheckpointConfig:
        return self._set("timeout", millis(checkpoint_timeout))

    def get_min_pause_between_checkpoints(self) -> int:
        return int(self._get("min-pause"))

    def set_min_pause_between_checkpoints(
        self, min_pause_between_checkpoints: int | Duration
    ) -> CheckpointConfig:
        return self._set("min-pause", millis(min_pause_between_checkpoints))

    def get_max_concurrent_checkpoints(self) -> int:
        return int(self._get("max-concurrent-checkpoints"))

    def set_max_concurrent_checkpoints(self, max_concurrent_checkpoints: int) -> CheckpointConfig:
        return self._set("max-concurrent-checkpoints", max_concurrent_checkpoints)

    def is_fail_on_checkpointing_errors(self) -> bool:
        return self.get_tolerable_checkpoint_failure_number() == 0

    def set_fail_on_checkpointing_errors(
        self, fail_on_checkpointing_errors: bool
    ) -> CheckpointConfig:
        return self.set_tolerable_checkpoint_failure_number(
            0 if fail_on_checkpointing_errors else _INT_MAX
        )

    def get_tolerable_checkpoint_failure_number(self) -> int:
        return int(self._get("tolerable-failed-checkpoints"))

    def set_tolerable_checkpoint_failure_number(
        self, tolerable_checkpoint_failure_number: int
    ) -> CheckpointConfig:
        return self._set("tolerable-failed-checkpoints", tolerable_checkpoint_failure_number)

    def set_externalized_checkpoint_retention(
        self, retention_mode: ExternalizedCheckpointRetention
    ) -> CheckpointConfig:
        return self._set(
            "externalized-checkpoint-retention",
            ExternalizedCheckpointRetention(retention_mode).value,
        )

    def is_externalized_checkpoints_enabled(self) -> bool:
        return self.get_externalized_checkpoint_retention() is not (
            ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
        )

    def get_externalized_checkpoint_retention(self) -> ExternalizedCheckpointRetention:
        return ExternalizedCheckpointRetention(self._get("externalized-checkpoint-retention"))

    def is_unaligned_checkpoints_enabled(self) -> bool:
        return bool(self._get("unaligned.enabled"))

    def enable_unaligned_checkpoints(self, enabled: bool = True) -> CheckpointConfig:
        return self._set("unaligned.enabled", bool(enabled))

    def disable_unaligned_checkpoints(self) -> CheckpointConfig:
        return self.enable_unaligned_checkpoints(False)

    def set_aligned_checkpoint_timeout(self, alignment_timeout: Duration) -> CheckpointConfig:
        return self._set("aligned-checkpoint-timeout", millis(alignment_timeout))

    def get_aligned_checkpoint_timeout(self) -> Duration:
        return Duration.of_millis(int(self._get("aligned-checkpoint-timeout")))

    set_alignment_timeout = set_aligned_checkpoint_timeout
    get_alignment_timeout = get_aligned_checkpoint_timeout

    def set_force_unaligned_checkpoints(
        self, force_unaligned_checkpoints: bool = True
    ) -> CheckpointConfig:
        return self._set("unaligned.forced", bool(force_unaligned_checkpoints))

    def is_force_unaligned_checkpoints(self) -> bool:
        return bool(self._get("unaligned.forced"))

    def __repr__(self) -> str:
        keys = sorted(k for k in self._conf.explicit() if k.startswith(_CP))
        return f"CheckpointConfig({', '.join(f'{k}={self._conf[k]!r}' for k in keys)})"


__getattr__ = missing("pyflink.datastream.checkpoint_config")

__all__ = ["CheckpointConfig"]
