"""``pyflink.datastream.state_backend``: PyFlink's state backend classes, accepted with their
options.

ckptsim keeps keyed state in its own heap backend and snapshots it in full, whichever backend
a program names: these objects hold the settings a program gives them and answer its getters
as PyFlink's do. (PyFlink 2.3 has no ``set_state_backend``: a program picks its backend with
``state.backend.type``, which ckptsim accepts and names once, in its log, as a setting that
changes nothing here.) ``CustomStateBackend`` wraps a Java object and is refused.
"""

from __future__ import annotations

import enum
from typing import Any

from ckptsim.pyflink._unsupported import JVM, STATE_BACKEND, ignored, missing, unsupported


class StateBackend:
    """What every state backend is (PyFlink's base class)."""

    def __init__(self, j_state_backend: Any = None) -> None:
        if j_state_backend is not None:
            unsupported(f"{type(self).__name__} of a Java object", JVM)


class HashMapStateBackend(StateBackend):
    """Working state on the heap (Flink's default backend)."""

    def __init__(self, j_hashmap_state_backend: Any = None) -> None:
        super().__init__(j_hashmap_state_backend)

    def __str__(self) -> str:
        return "HashMapStateBackend"


class PredefinedOptions(enum.Enum):
    """RocksDB's predefined option profiles."""

    DEFAULT = 0
    SPINNING_DISK_OPTIMIZED = 1
    SPINNING_DISK_OPTIMIZED_HIGH_MEM = 2
    FLASH_SSD_OPTIMIZED = 3


class EmbeddedRocksDBStateBackend(StateBackend):
    """Working state in an embedded RocksDB: its options are kept, none changes a job here."""

    def __init__(
        self,
        enable_incremental_checkpointing: bool | None = None,
        j_embedded_rocks_db_state_backend: Any = None,
    ) -> None:
        super().__init__(j_embedded_rocks_db_state_backend)
        if enable_incremental_checkpointing not in (None, True, False):
            raise TypeError(
                "Unsupported input for 'enable_incremental_checkpointing': %s, the value of the "
                "parameter should be None orTrue or False."
            )
        self._incremental = enable_incremental_checkpointing
        self._paths: list[str] | None = None
        self._predefined = PredefinedOptions.DEFAULT
        self._options: str | None = None
        self._transfer_threads = 4

    def set_db_storage_paths(self, *paths: str) -> None:
        self._paths = list(paths) if paths else None

    def get_db_storage_paths(self) -> list[str]:
        return list(self._paths or [])

    def is_incremental_checkpoints_enabled(self) -> bool:
        return bool(self._incremental)

    def set_predefined_options(self, options: PredefinedOptions) -> None:
        self._predefined = PredefinedOptions(options)

    def get_predefined_options(self) -> PredefinedOptions:
        return self._predefined

    def set_options(self, options_factory_class_name: str) -> None:
        ignored("EmbeddedRocksDBStateBackend.set_options()", STATE_BACKEND)
        self._options = options_factory_class_name

    def get_options(self) -> str | None:
        return self._options

    def get_number_of_transfer_threads(self) -> int:
        return self._transfer_threads

    def set_number_of_transfer_threads(self, number_of_transfering_threads: int) -> None:
        self._transfer_threads = number_of_transfering_threads

    def __str__(self) -> str:
        return "EmbeddedRocksDBStateBackend"


__getattr__ = missing("pyflink.datastream.state_backend")

__all__ = [
    "EmbeddedRocksDBStateBackend",
    "HashMapStateBackend",
    "PredefinedOptions",
    "StateBackend",
]
