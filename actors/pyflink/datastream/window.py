"""``pyflink.datastream.window``: window assigners, windows and triggers (the job model's own,
``runtime.windows``, once the runtime has them)."""

from __future__ import annotations

from typing import Any, NoReturn

from actors.pyflink._unsupported import missing, unsupported

_PENDING = "this ckptsim version's runtime has no windows yet"


def windowed(stream: Any, assigner: Any) -> NoReturn:
    unsupported("KeyedStream.window()", _PENDING)


def count_windowed(stream: Any, size: int, slide: int) -> NoReturn:
    unsupported("KeyedStream.count_window()", _PENDING)


def all_windowed(stream: Any, assigner: Any) -> NoReturn:
    unsupported("DataStream.window_all()", _PENDING)


__getattr__ = missing("pyflink.datastream.window", {})
