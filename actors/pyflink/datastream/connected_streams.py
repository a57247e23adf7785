"""``ConnectedStreams``: two streams into one two-input operator (``DataStream.connect``), on
the job model's own two-input operators."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from actors.pyflink.common.typeinfo import TypeInformation
from actors.pyflink.datastream.functions import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedCoProcessFunction,
)
from runtime import datastream as ck

if TYPE_CHECKING:
    from actors.pyflink.datastream.data_stream import DataStream


class ConnectedStreams:
    """Two streams, each keeping its type: co-map, co-flat-map and co-process functions
    (keyed when both inputs are keyed)."""

    def __init__(self, stream1: DataStream, stream2: DataStream) -> None:
        self.stream1 = stream1
        self.stream2 = stream2

    def key_by(
        self, key_selector1: Any, key_selector2: Any, key_type: TypeInformation | None = None
    ) -> ConnectedStreams:
        from actors.pyflink.datastream.data_stream import KeyedStream  # noqa: PLC0415

        first = self.stream1._origin if isinstance(self.stream1, KeyedStream) else self.stream1
        second = self.stream2._origin if isinstance(self.stream2, KeyedStream) else self.stream2
        return ConnectedStreams(
            first.key_by(key_selector1, key_type), second.key_by(key_selector2, key_type)
        )

    def _connected(self) -> ck.ConnectedStreams:
        return ck.ConnectedStreams(self.stream1._stream, self.stream2._stream)

    def _keyed(self) -> bool:
        from actors.pyflink.datastream.data_stream import KeyedStream  # noqa: PLC0415

        return isinstance(self.stream1, KeyedStream) and isinstance(self.stream2, KeyedStream)

    def _derive(self, stream: ck.DataStream, output_type: TypeInformation | None) -> DataStream:
        return self.stream1._derive(stream, output_type, python=False)

    def map(self, func: CoMapFunction, output_type: TypeInformation | None = None) -> DataStream:
        if not isinstance(func, CoMapFunction):
            raise TypeError("The input function must be a CoMapFunction!")
        return self._derive(self._connected().map(func, name="Co-Map"), output_type)

    def flat_map(
        self, func: CoFlatMapFunction, output_type: TypeInformation | None = None
    ) -> DataStream:
        if not isinstance(func, CoFlatMapFunction):
            raise TypeError("The input must be a CoFlatMapFunction!")
        return self._derive(self._connected().flat_map(func, name="Co-Flat Map"), output_type)

    def process(
        self,
        func: CoProcessFunction | KeyedCoProcessFunction,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        if not isinstance(func, CoProcessFunction | KeyedCoProcessFunction):
            raise TypeError("The input must be a CoProcessFunction or KeyedCoProcessFunction!")
        name = "Keyed Co-Process" if self._keyed() else "Co-Process"
        return self._derive(self._connected().process(func, name=name), output_type)


__all__ = ["ConnectedStreams"]
