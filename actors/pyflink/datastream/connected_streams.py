"""``ConnectedStreams``: two streams into one operator (``connect``), once the runtime has it."""

from __future__ import annotations

from typing import Any, NoReturn

from actors.pyflink._unsupported import unsupported


def ConnectedStreams(first: Any, second: Any) -> NoReturn:
    unsupported("DataStream.connect()", "this ckptsim version's runtime has no connect() yet")
