"""``pyflink.common.serialization``: ``Encoder`` (how a ``FileSink`` writes a record) and the
string schemas."""

from __future__ import annotations

from ckptsim.pyflink._unsupported import missing


class Encoder:
    """Writes a record as a line of its Java ``toString`` (``simple_string_encoder``)."""

    def __init__(self, charset_name: str = "UTF-8") -> None:
        self.charset_name = charset_name

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> Encoder:
        return Encoder(charset_name)

    def __repr__(self) -> str:
        return f"Encoder.simple_string_encoder({self.charset_name!r})"


class SerializationSchema:
    """Base of the serialization schemas (used by JVM connectors only)."""


class DeserializationSchema:
    """Base of the deserialization schemas (used by JVM connectors only)."""


class SimpleStringSchema(SerializationSchema, DeserializationSchema):
    def __init__(self, charset: str = "UTF-8") -> None:
        self.charset = charset


class ByteArraySchema(SerializationSchema, DeserializationSchema):
    pass


__getattr__ = missing("pyflink.common.serialization")


__all__ = [
    "ByteArraySchema",
    "DeserializationSchema",
    "Encoder",
    "SerializationSchema",
    "SimpleStringSchema",
]
