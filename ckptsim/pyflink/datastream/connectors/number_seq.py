"""``pyflink.datastream.connectors.number_seq``: ``NumberSequenceSource``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ckptsim.pyflink._unsupported import missing
from ckptsim.pyflink.common.typeinfo import TypeInformation, Types, converter
from ckptsim.pyflink.datastream.connectors.base import Source
from runtime.operators import OperatorContext, SourceReader


class NumberSequenceSource(Source):
    """The numbers ``start`` to ``end`` (both included), as ``LONG``s; each subtask reads a
    contiguous share (Flink hands its splits to readers as they ask; ckptsim gives subtask
    ``i`` the ``i``-th)."""

    def __init__(self, start: int, end: int) -> None:
        if end < start:
            raise ValueError(f"end ({end}) must not be less than start ({start})")
        self.start = start
        self.end = end

    def _type_info(self) -> TypeInformation | None:
        return Types.LONG()

    def _reader(
        self, type_info: TypeInformation | None
    ) -> Callable[[OperatorContext], SourceReader]:
        start, end = self.start, self.end
        # numbers are LONGs already; another type converts them
        convert = None if type_info == Types.LONG() else converter(type_info)

        def reader(ctx: OperatorContext) -> SourceReader:
            total = end - start + 1
            base, extra = divmod(total, ctx.parallelism)
            first = start + ctx.subtask * base + min(ctx.subtask, extra)
            count = base + (1 if ctx.subtask < extra else 0)
            return _RangeReader(first, first + count, convert)

        return reader

    def __repr__(self) -> str:
        return f"NumberSequenceSource({self.start}, {self.end})"


class _RangeReader:
    """Numbers ``next`` up to ``stop`` (excluded); the position is the next number."""

    def __init__(self, first: int, stop: int, convert: Callable[[Any], Any] | None) -> None:
        self.next = first
        self.stop = stop
        self.convert = convert

    def read(self, max_records: int, now: int) -> Sequence[Any] | None:
        if self.next >= self.stop:
            return None
        end = min(self.stop, self.next + max_records)
        batch: list[Any] = list(range(self.next, end))
        self.next = end
        convert = self.convert
        return [convert(v) for v in batch] if convert is not None else batch

    def next_ready(self, now: int) -> int | None:
        return None

    def position(self) -> Any:
        return {"next": self.next}

    def seek(self, position: Any) -> None:
        self.next = int(position["next"])


__getattr__ = missing("pyflink.datastream.connectors.number_seq")

__all__ = ["NumberSequenceSource"]
