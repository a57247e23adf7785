"""``pyflink.datastream.connectors.base``: ``Source``, ``Sink``, ``DeliveryGuarantee``."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from ckptsim.pyflink._unsupported import missing
from ckptsim.pyflink.common.typeinfo import TypeInformation
from runtime.operators import OperatorContext, SourceReader


class Source:
    """A source ckptsim can read: it makes each subtask's reader (with a restorable
    position)."""

    def _type_info(self) -> TypeInformation | None:
        """The type of the records without ``type_info`` given to ``from_source``."""
        return None

    def _reader(
        self, type_info: TypeInformation | None
    ) -> Callable[[OperatorContext], SourceReader]:
        raise NotImplementedError


class Sink:
    """A sink ckptsim can write (``FileSink``)."""

    def _attach(self, stream: Any) -> Any:
        raise NotImplementedError


class DeliveryGuarantee(enum.Enum):
    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1
    NONE = 2


__getattr__ = missing("pyflink.datastream.connectors.base")

__all__ = ["DeliveryGuarantee", "Sink", "Source"]
