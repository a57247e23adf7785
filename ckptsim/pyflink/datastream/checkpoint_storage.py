"""``pyflink.datastream.checkpoint_storage``: PyFlink's checkpoint storage classes, accepted
with their options.

ckptsim writes checkpoints to files under ``execution.checkpointing.dir`` (a temporary
directory when none is set), or with ``execution.checkpointing.storage: jobmanager`` keeps them
in the JobManager's memory; these objects hold the settings a program gives them and answer
its getters as PyFlink's do. (PyFlink 2.3 has no
``set_checkpoint_storage``: a program picks its storage with ``execution.checkpointing.storage``
and ``execution.checkpointing.dir``.) ``CustomCheckpointStorage`` wraps a Java object and is
refused.
"""

from __future__ import annotations

from typing import Any

from ckptsim.pyflink._unsupported import JVM, missing, unsupported


def _path(path: str | None) -> str | None:
    """A path as Flink's ``Path.toString`` writes it: ``file:///x`` as ``file:/x``, no trailing
    slash."""
    if path is None:
        return None
    text = str(path)
    scheme, sep, rest = text.partition("://")
    if sep and rest.startswith("/"):
        text = f"{scheme}:{rest}"
    if len(text) > 1 and text.endswith("/") and not text.endswith(":/"):
        text = text.rstrip("/") or "/"
    return text


class CheckpointStorage:
    """What every checkpoint storage is (PyFlink's base class)."""

    def __init__(self, j_checkpoint_storage: Any = None) -> None:
        if j_checkpoint_storage is not None:
            unsupported(f"{type(self).__name__} of a Java object", JVM)


class JobManagerCheckpointStorage(CheckpointStorage):
    """Checkpoints in the JobManager's memory (in Flink)."""

    #: the default maximal size of the snapshotted state (5 MiB)
    DEFAULT_MAX_STATE_SIZE = 5 * 1024 * 1024

    def __init__(
        self,
        checkpoint_path: str | None = None,
        max_state_size: int | None = None,
        j_jobmanager_checkpoint_storage: Any = None,
    ) -> None:
        super().__init__(j_jobmanager_checkpoint_storage)
        self._path = _path(checkpoint_path)
        self._max_state_size = (
            self.DEFAULT_MAX_STATE_SIZE if max_state_size is None else max_state_size
        )

    def get_checkpoint_path(self) -> str | None:
        return self._path

    def get_max_state_size(self) -> int:
        return self._max_state_size

    def get_savepoint_path(self) -> str | None:
        return None

    def __str__(self) -> str:
        return "JobManagerCheckpointStorage"


class FileSystemCheckpointStorage(CheckpointStorage):
    """Checkpoints as files under a directory."""

    #: the largest state stored with the metadata rather than in files (1 MiB)
    MAX_FILE_STATE_THRESHOLD = 1024 * 1024

    def __init__(
        self,
        checkpoint_path: str | None = None,
        file_state_size_threshold: int | None = None,
        write_buffer_size: int = -1,
        j_filesystem_checkpoint_storage: Any = None,
    ) -> None:
        super().__init__(j_filesystem_checkpoint_storage)
        if j_filesystem_checkpoint_storage is None and checkpoint_path is None:
            raise ValueError("checkpoint_path must not be None")
        self._path = _path(checkpoint_path)
        self._threshold = -1 if file_state_size_threshold is None else file_state_size_threshold
        self._write_buffer_size = write_buffer_size

    def get_checkpoint_path(self) -> str:
        return self._path or ""

    def get_savepoint_path(self) -> str | None:
        return None

    def get_min_file_size_threshold(self) -> int:
        """The threshold given, else Flink's default (``execution.checkpointing.
        data-inline-threshold``, 20 kb)."""
        return self._threshold if self._threshold >= 0 else 20 * 1024

    def get_write_buffer_size(self) -> int:
        """The size given, else Flink's default (4096 bytes)."""
        return self._write_buffer_size if self._write_buffer_size >= 0 else 4096

    def __str__(self) -> str:
        return "FileSystemCheckpointStorage"


__getattr__ = missing("pyflink.datastream.checkpoint_storage")

__all__ = [
    "CheckpointStorage",
    "FileSystemCheckpointStorage",
    "JobManagerCheckpointStorage",
]
