"""``pyflink.datastream.output_tag``: ``OutputTag``, the name (and type) of a side output.

The job model's own (``runtime.functions.OutputTag``), with PyFlink's checks of its type: None
is ``PICKLED_BYTE_ARRAY``, a list of types a ``ROW`` of them. A process function emits to it
with ``yield tag, value``; ``stream.get_side_output(tag)`` reads it."""

from __future__ import annotations

from typing import Any

from ckptsim.pyflink._unsupported import missing
from ckptsim.pyflink.common.typeinfo import RowTypeInfo, TypeInformation, Types
from runtime.functions import OutputTag as _OutputTag


class OutputTag(_OutputTag):
    """A typed and named tag for a side output: ``OutputTag("late", Types.STRING())``."""

    __slots__ = ()

    def __init__(self, tag_id: str, type_info: TypeInformation | list[Any] | None = None) -> None:
        if not tag_id:
            raise ValueError("OutputTag tag_id cannot be None or empty string")
        if type_info is None:
            type_info = Types.PICKLED_BYTE_ARRAY()
        elif isinstance(type_info, list):
            type_info = RowTypeInfo(type_info)
        elif not isinstance(type_info, TypeInformation):
            raise TypeError("OutputTag type_info must be None, list or TypeInformation")
        super().__init__(tag_id, type_info)


__getattr__ = missing("pyflink.datastream.output_tag")

__all__ = ["OutputTag"]
