"""``pyflink.common.typeinfo``: ``Types`` and the type information classes.

In PyFlink a stream's type information chooses the serializer its records cross to Java and
back with. That changes values (a ``FLOAT`` comes back rounded to 32 bits, an ``INT`` stays an
``int``, a ``DOUBLE`` becomes a ``float``, a ``ROW`` becomes a ``Row``), how Java prints them
(``Types.TUPLE`` prints ``(hi,1)``) and how Java hashes a key. ckptsim keeps records as Python
objects; each type information here says what its values become (``convert``), Java's
``toString`` of them (``java_str``) and Java's ``hashCode`` (``java_hash``). Without type
information a stream is ``PICKLED_BYTE_ARRAY``: values pass unchanged.
"""

from __future__ import annotations

import datetime
import enum
import pickle
import struct
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from ckptsim.pyflink import _java
from ckptsim.pyflink._unsupported import missing, unsupported
from runtime.row import Row, RowKind


class TypeInformation:
    """Base of the type information classes."""

    #: values come back unchanged (no conversion needed on ckptsim's side)
    identity = False

    def __init__(self) -> None:
        self._j_typeinfo: Any = None

    # PyFlink's own surface
    def get_java_type_info(self) -> Any:
        unsupported(
            "TypeInformation.get_java_type_info()",
            "ckptsim runs no JVM; type information is used as given",
        )

    def need_conversion(self) -> bool:
        return False

    def to_internal_type(self, obj: Any) -> Any:
        return obj

    def from_internal_type(self, obj: Any) -> Any:
        return obj

    # what the type does to values (ckptsim)
    def convert(self, value: Any) -> Any:
        """The value as a Python function receives it after it crossed Flink's serializer."""
        return value

    def java_str(self, value: Any) -> str:
        """Java's ``toString`` of the value (``null`` for None)."""
        return "null" if value is None else str(value)

    def holds_float(self) -> bool:
        """Whether values of this type hold a ``FLOAT`` or a ``BIG_DEC`` (which ``collected``
        changes)."""
        return False

    def collected(self, value: Any) -> Any:
        """The value as ``execute_and_collect`` returns it: PyFlink reads a ``FLOAT`` back
        from Java's ``Float.toString`` (``0.1``, where the 32-bit float's own value is
        0.10000000149011612); other values come back as they are."""
        return value

    def java_hash(self, value: Any) -> int:
        """Java's ``hashCode`` of the value (never called with None)."""
        raise TypeError(f"ckptsim cannot hash a key of type {self!r} as Flink does")

    def serialize(self, value: Any) -> bytes:
        """The bytes Flink's serializer of this type writes for the value (never None): the
        order of keys in BATCH mode is the order of these bytes."""
        return pickled(value)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(repr(self))

    def __repr__(self) -> str:
        return type(self).__name__


class BasicType(enum.Enum):
    STRING = "String"
    BYTE = "Byte"
    BOOLEAN = "Boolean"
    SHORT = "Short"
    INT = "Integer"
    LONG = "Long"
    FLOAT = "Float"
    DOUBLE = "Double"
    CHAR = "Char"
    BIG_INT = "BigInteger"
    BIG_DEC = "BigDecimal"
    INSTANT = "Instant"


_INT_BITS = {BasicType.BYTE: 8, BasicType.SHORT: 16, BasicType.INT: 32, BasicType.LONG: 64}


def _whole(value: Any, kind: BasicType) -> int:
    if isinstance(value, bool):
        return int(value)
    if not isinstance(value, int):
        raise TypeError(f"a {kind.value} field needs an int, got {type(value).__name__} {value!r}")
    bits = _INT_BITS.get(kind)
    if bits is not None and not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise OverflowError(f"{value} does not fit a Java {kind.value} ({bits} bits)")
    return value


class BasicTypeInfo(TypeInformation):
    """Strings, numbers, booleans, BigInteger, BigDecimal, Instant."""

    def __init__(self, basic_type: BasicType) -> None:
        super().__init__()
        self._basic_type = basic_type
        self.identity = basic_type in (BasicType.STRING, BasicType.CHAR)

    def need_conversion(self) -> bool:
        return self._basic_type is BasicType.INSTANT

    def convert(self, value: Any) -> Any:
        kind = self._basic_type
        if value is None:
            return None
        if kind in _INT_BITS or kind is BasicType.BIG_INT:
            return _whole(value, kind)
        if kind is BasicType.FLOAT:
            return _java.to_float32(float(value))
        if kind is BasicType.DOUBLE:
            return float(value)
        if kind is BasicType.BOOLEAN:
            return bool(value)
        if kind is BasicType.BIG_DEC:
            return value if isinstance(value, Decimal) else Decimal(str(value))
        if kind is BasicType.STRING and not isinstance(value, str):
            raise TypeError(f"a String field needs a str, got {type(value).__name__} {value!r}")
        return value

    def java_str(self, value: Any) -> str:
        kind = self._basic_type
        if value is None:
            return "null"
        if kind is BasicType.FLOAT:
            return _java.float_to_string(float(value))
        if kind is BasicType.DOUBLE:
            return _java.double_to_string(float(value))
        if kind is BasicType.BOOLEAN:
            return _java.boolean_to_string(bool(value))
        return str(value)

    def holds_float(self) -> bool:
        return self._basic_type in (BasicType.FLOAT, BasicType.BIG_DEC)

    def collected(self, value: Any) -> Any:
        if value is None:
            return value
        if self._basic_type is BasicType.BIG_DEC:  # Java's BigDecimal.toPlainString: 1E+5 is
            return Decimal(format(value, "f"))  # 100000, 1.10 stays 1.10, 1E-10 stays
        if self._basic_type is not BasicType.FLOAT:
            return value
        return float(_java.float_to_string(float(value)))

    def java_hash(self, value: Any) -> int:
        kind = self._basic_type
        if kind in (BasicType.STRING,):
            return _java.string_hash(value)
        if kind is BasicType.CHAR:
            return ord(value)
        if kind is BasicType.LONG:
            return _java.long_hash(int(value))
        if kind in _INT_BITS:
            return int(value)
        if kind is BasicType.FLOAT:
            return _java.float_hash(float(value))
        if kind is BasicType.DOUBLE:
            return _java.double_hash(float(value))
        if kind is BasicType.BOOLEAN:
            return _java.boolean_hash(bool(value))
        if kind is BasicType.BIG_INT:
            return _java.big_integer_hash(int(value))
        if kind is BasicType.BIG_DEC:
            return _java.big_decimal_hash(Decimal(value))
        return super().java_hash(value)

    def serialize(self, value: Any) -> bytes:
        kind = self._basic_type
        if kind is BasicType.STRING:
            return _java.string_bytes(value)
        if kind in _INT_BITS:
            return int(value).to_bytes(_INT_BITS[kind] // 8, "big", signed=True)
        if kind is BasicType.FLOAT:
            return struct.pack(">f", float(value))
        if kind is BasicType.DOUBLE:
            return struct.pack(">d", float(value))
        if kind is BasicType.BOOLEAN:
            return b"\x01" if value else b"\x00"
        if kind is BasicType.CHAR:
            return ord(value).to_bytes(2, "big")
        return super().serialize(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BasicTypeInfo) and self._basic_type == other._basic_type

    def __hash__(self) -> int:
        return hash(self._basic_type)

    def __repr__(self) -> str:
        return self._basic_type.value

    @staticmethod
    def STRING_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.STRING)

    @staticmethod
    def BOOLEAN_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.BOOLEAN)

    @staticmethod
    def BYTE_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.BYTE)

    @staticmethod
    def SHORT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.SHORT)

    @staticmethod
    def INT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.INT)

    @staticmethod
    def LONG_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.LONG)

    @staticmethod
    def FLOAT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.FLOAT)

    @staticmethod
    def DOUBLE_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.DOUBLE)

    @staticmethod
    def CHAR_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.CHAR)

    @staticmethod
    def BIG_INT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.BIG_INT)

    @staticmethod
    def BIG_DEC_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.BIG_DEC)

    @staticmethod
    def INSTANT_TYPE_INFO() -> BasicTypeInfo:
        return InstantTypeInfo(BasicType.INSTANT)


class InstantTypeInfo(BasicTypeInfo):
    """``pyflink.common.time.Instant`` values, kept to the millisecond (as PyFlink's coder)."""

    def convert(self, value: Any) -> Any:
        from ckptsim.pyflink.common.time import Instant  # noqa: PLC0415 - a cycle otherwise

        if value is None:
            return None
        return Instant.of_epoch_milli(value.to_epoch_milli())

    def java_str(self, value: Any) -> str:
        if value is None:
            return "null"
        seconds, nanos = value.seconds, value.nanos
        moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
        text = moment.strftime("%Y-%m-%dT%H:%M:%S")
        if nanos:
            fraction = f"{nanos:09d}"
            while fraction.endswith("000"):  # Java prints 3, 6 or 9 digits
                fraction = fraction[:-3]
            text += "." + fraction
        return text + "Z"

    def java_hash(self, value: Any) -> int:
        return _java.int32(_java.long_hash(value.seconds) + 51 * value.nanos)


class SqlTimeTypeInfo(TypeInformation):
    @staticmethod
    def DATE() -> DateTypeInfo:
        return DateTypeInfo()

    @staticmethod
    def TIME() -> TimeTypeInfo:
        return TimeTypeInfo()

    @staticmethod
    def TIMESTAMP() -> TimestampTypeInfo:
        return TimestampTypeInfo()


class DateTypeInfo(TypeInformation):
    """``datetime.date`` values (Java ``java.sql.Date``: prints ``2024-01-31``)."""

    identity = True

    def java_str(self, value: Any) -> str:
        return "null" if value is None else _sql_date(value)


class TimeTypeInfo(TypeInformation):
    """``datetime.time`` values (Java ``java.sql.Time``: prints ``12:30:05``)."""

    identity = True

    def java_str(self, value: Any) -> str:
        return "null" if value is None else value.strftime("%H:%M:%S")


class TimestampTypeInfo(TypeInformation):
    """``datetime.datetime`` values (Java ``java.sql.Timestamp``: ``2024-01-31 12:30:05.0``)."""

    identity = True

    def java_str(self, value: Any) -> str:
        if value is None:
            return "null"
        fraction = f"{value.microsecond:06d}000".rstrip("0") or "0"
        return f"{_sql_date(value.date())} {value.strftime('%H:%M:%S')}.{fraction}"


#: the first day of the Gregorian calendar (1582-10-15) as a proleptic Gregorian ordinal
_GREGORIAN_REFORM = datetime.date(1582, 10, 15).toordinal()


def _sql_date(value: datetime.date) -> str:
    """A date as ``java.sql.Date`` / ``Timestamp`` print it: PyFlink hands Java the day
    (days since 1970-01-01, proleptic Gregorian as Python counts), and Java's calendar shows a
    day before 1582-10-15 in the Julian calendar (``date(1, 1, 1)`` prints ``0001-01-03``,
    ``date(1582, 10, 4)`` ``1582-09-24``)."""
    ordinal = value.toordinal()
    if ordinal >= _GREGORIAN_REFORM:
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    # the Julian calendar's date of the Julian day number
    c = ordinal + 1721425 + 32082
    d = (4 * c + 3) // 1461
    e = c - 1461 * d // 4
    m = (5 * e + 2) // 153
    day = e - (153 * m + 2) // 5 + 1
    month = m + 3 - 12 * (m // 10)
    year = d - 4800 + m // 10
    return f"{year:04d}-{month:02d}-{day:02d}"


class LocalTimeTypeInfo(TypeInformation):
    """``datetime.date`` / ``time`` / ``datetime`` as Java's ``java.time`` local types."""

    class TimeType(enum.Enum):
        LOCAL_DATE = 0
        LOCAL_TIME = 1
        LOCAL_DATE_TIME = 2

    identity = True

    def __init__(self, time_type: LocalTimeTypeInfo.TimeType) -> None:
        super().__init__()
        self._time_type = time_type

    def java_str(self, value: Any) -> str:
        if value is None:
            return "null"
        if self._time_type is LocalTimeTypeInfo.TimeType.LOCAL_DATE:
            return str(value.isoformat())
        if self._time_type is LocalTimeTypeInfo.TimeType.LOCAL_TIME:
            return _local_time(value)
        return f"{value.date().isoformat()}T{_local_time(value.time())}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LocalTimeTypeInfo) and self._time_type == other._time_type

    def __hash__(self) -> int:
        return hash(self._time_type)

    def __repr__(self) -> str:
        return f"LocalTimeTypeInfo<{self._time_type.name}>"


def _local_time(value: datetime.time) -> str:
    """``LocalTime.toString``: ``HH:mm``, then ``:ss`` and a fraction only when not zero."""
    text = f"{value.hour:02d}:{value.minute:02d}"
    if value.second or value.microsecond:
        text += f":{value.second:02d}"
        if value.microsecond:
            text += (
                f".{value.microsecond:06d}"
                if value.microsecond % 1000
                else (f".{value.microsecond // 1000:03d}")
            )
    return text


class PickledBytesTypeInfo(TypeInformation):
    """Any Python value, pickled when it crosses to Java (the default type of a stream)."""

    identity = True

    def java_str(self, value: Any) -> str:
        # Java holds a byte[]: its toString is an identity hash, which ckptsim cannot print
        return "null" if value is None else str(value)

    def java_hash(self, value: Any) -> int:
        return _java.bytes_hash(pickled(value))

    def serialize(self, value: Any) -> bytes:
        data = pickled(value)  # a byte[]: its length, then its bytes
        return len(data).to_bytes(4, "big") + data

    def __repr__(self) -> str:
        return "PickledByteArrayTypeInfo"


def pickled(value: Any) -> bytes:
    """The bytes PyFlink pickles a value to (cloudpickle, protocol 5: for values of built-in
    types the same bytes as the standard library's pickle)."""
    return pickle.dumps(value, protocol=5)


class _Fields(TypeInformation):
    """Shared by rows and tuples: typed fields."""

    def __init__(self, field_types: Sequence[TypeInformation]) -> None:
        super().__init__()
        self._field_types = list(field_types)
        for field in self._field_types:
            if not isinstance(field, TypeInformation):
                raise TypeError(f"a field type must be a TypeInformation, got {field!r}")

    def get_field_types(self) -> list[TypeInformation]:
        return list(self._field_types)

    def need_conversion(self) -> bool:
        return True

    def _values(self, value: Any) -> list[Any]:
        if isinstance(value, Row | tuple | list):
            values = list(value)
        else:
            raise ValueError(f"Unexpected tuple {value!r} with {self!r}")
        if len(values) != len(self._field_types):
            raise ValueError(
                f"{self!r} has {len(self._field_types)} fields, the value {value!r} has "
                f"{len(values)}"
            )
        return values

    def holds_float(self) -> bool:
        return any(t.holds_float() for t in self._field_types)

    def _collected_fields(self, values: Sequence[Any]) -> list[Any]:
        return [t.collected(v) for t, v in zip(self._field_types, values, strict=True)]

    def _hashes(self, values: Sequence[Any]) -> list[int | None]:
        return [
            None if v is None else t.java_hash(v)
            for t, v in zip(self._field_types, values, strict=True)
        ]

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._field_types == other._field_types

    def __hash__(self) -> int:
        return hash(tuple(self._field_types))


class TupleTypeInfo(_Fields):
    """Python tuples; Java's ``TupleN``: prints ``(hi,0,5)``."""

    def convert(self, value: Any) -> Any:
        if value is None:
            return None
        values = self._values(value)
        for index, v in enumerate(values):
            if v is None:  # Java's TupleSerializer (NullFieldException), PyFlink's coders
                raise TypeError(
                    f"field {index} of the TUPLE {value!r} is None: a Flink tuple's fields "
                    "cannot be null (use Types.ROW for nullable fields)"
                )
        return tuple(t.convert(v) for t, v in zip(self._field_types, values, strict=True))

    def to_internal_type(self, obj: Any) -> Any:
        return None if obj is None else tuple(obj)

    def collected(self, value: Any) -> Any:
        return None if value is None else tuple(self._collected_fields(self._values(value)))

    def java_str(self, value: Any) -> str:
        if value is None:
            return "null"
        values = self._values(value)
        inner = ",".join(t.java_str(v) for t, v in zip(self._field_types, values, strict=True))
        return f"({inner})"

    def java_hash(self, value: Any) -> int:
        return _java.tuple_hash(h or 0 for h in self._hashes(self._values(value)))

    def serialize(self, value: Any) -> bytes:
        values = self._values(value)
        return b"".join(t.serialize(v) for t, v in zip(self._field_types, values, strict=True))

    def __repr__(self) -> str:
        return f"TupleTypeInfo({', '.join(str(t) for t in self._field_types)})"


class RowTypeInfo(_Fields):
    """``Row`` values, named (``ROW_NAMED``) or with Java's default names ``f0``, ``f1``, ...;
    prints ``+I[ANN,1]`` at the top level (PyFlink formats it in Python), Java's
    ``+I[ANN, 1]`` inside another value."""

    def __init__(
        self, field_types: Sequence[TypeInformation], field_names: Sequence[str] | None = None
    ) -> None:
        super().__init__(field_types)
        if field_names is not None and len(field_names) != len(self._field_types):
            raise ValueError(
                f"{len(field_names)} field names for {len(self._field_types)} field types"
            )
        self._field_names = None if field_names is None else list(field_names)

    def get_field_names(self) -> list[str]:
        if self._field_names is not None:
            return list(self._field_names)
        return [f"f{i}" for i in range(len(self._field_types))]

    def get_field_index(self, field_name: str) -> int:
        names = self.get_field_names()
        return names.index(field_name) if field_name in names else -1

    def _row_values(self, value: Any) -> tuple[list[Any], RowKind]:
        names = self.get_field_names()
        if isinstance(value, Row):
            fields = value.get_field_names()
            values = value.get_fields_by_names(names) if fields is not None else list(value)
            kind = value.get_row_kind()
        elif isinstance(value, dict):
            values, kind = [value.get(n) for n in names], RowKind.INSERT
        else:
            values, kind = self._values(value), RowKind.INSERT
        if len(values) != len(self._field_types):
            raise ValueError(
                f"{self!r} has {len(self._field_types)} fields, the row {value!r} has {len(values)}"
            )
        return list(values), kind

    def convert(self, value: Any) -> Any:
        if value is None:
            return None
        values, kind = self._row_values(value)
        row = Row(*(t.convert(v) for t, v in zip(self._field_types, values, strict=True)))
        row.set_field_names(self.get_field_names())
        row.set_row_kind(kind)
        return row

    def to_internal_type(self, obj: Any) -> Any:
        return obj

    def collected(self, value: Any) -> Any:
        if value is None:
            return None
        values, kind = self._row_values(value)
        row = Row(*self._collected_fields(values))
        row.set_field_names(self.get_field_names())
        row.set_row_kind(kind)
        return row

    def top_level_str(self, value: Any) -> str:
        """How PyFlink's ``print()`` writes a row of this type: ``+I[a,1]`` (fields as Python
        ``str``)."""
        values, kind = self._row_values(value)
        return f"{kind}[{','.join(str(v) for v in values)}]"

    def java_str(self, value: Any) -> str:
        if value is None:
            return "null"
        values, kind = self._row_values(value)
        inner = ", ".join(t.java_str(v) for t, v in zip(self._field_types, values, strict=True))
        return f"{kind}[{inner}]"

    def java_hash(self, value: Any) -> int:
        values, kind = self._row_values(value)
        return _java.row_hash(kind.value, self._hashes(values))

    def serialize(self, value: Any) -> bytes:
        values, kind = self._row_values(value)
        fields = b"".join(
            t.serialize(v) for t, v in zip(self._field_types, values, strict=True) if v is not None
        )
        return _java.row_header(kind.value, [v is None for v in values]) + fields

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RowTypeInfo) and self._field_types == other._field_types

    def __hash__(self) -> int:
        return hash(tuple(self._field_types))

    def __repr__(self) -> str:
        if self._field_names:
            fields = ", ".join(
                f"{n}: {t}" for n, t in zip(self._field_names, self._field_types, strict=True)
            )
        else:
            fields = ", ".join(str(t) for t in self._field_types)
        return f"RowTypeInfo({fields})"


class _Elements(TypeInformation):
    """Arrays and lists: Python lists of one element type."""

    label = ""
    #: whether PyFlink's coder writes a None element (a BASIC_ARRAY's or OBJECT_ARRAY's, with a
    #: null flag per element), or writes each element as its type (a LIST's or
    #: PRIMITIVE_ARRAY's) and so fails the job on a None one
    null_elements = False

    def __init__(self, element_type: TypeInformation) -> None:
        super().__init__()
        self._element_type = element_type

    def convert(self, value: Any) -> Any:
        if value is None:
            return None
        element_type = self._element_type
        if not self.null_elements and not isinstance(element_type, PickledBytesTypeInfo):
            for index, v in enumerate(value):
                if v is None:  # PyFlink's PrimitiveArrayCoder
                    raise TypeError(
                        f"element {index} of the {self.label} {value!r} is None: PyFlink's coder "
                        "of a LIST or PRIMITIVE_ARRAY cannot write a None element (a "
                        "BASIC_ARRAY's or OBJECT_ARRAY's may be None)"
                    )
        return [element_type.convert(v) for v in value]

    def holds_float(self) -> bool:
        return self._element_type.holds_float()

    def collected(self, value: Any) -> Any:
        return None if value is None else [self._element_type.collected(v) for v in value]

    def java_hash(self, value: Any) -> int:
        return _java.list_hash(0 if v is None else self._element_type.java_hash(v) for v in value)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._element_type == other._element_type

    def __hash__(self) -> int:
        return hash((type(self), self._element_type))

    def __repr__(self) -> str:
        return f"{self.label}<{self._element_type}>"


class PrimitiveArrayTypeInfo(_Elements):
    """Java arrays of a primitive type: Java prints them as ``[I@1b6d3586`` (an identity
    hash); ckptsim prints their elements as ``[1, 2]``."""

    label = "PrimitiveArrayTypeInfo"

    def java_str(self, value: Any) -> str:
        return "null" if value is None else _java_list(self._element_type, value)


class BasicArrayTypeInfo(PrimitiveArrayTypeInfo):
    label = "BasicArrayTypeInfo"
    null_elements = True


class ObjectArrayTypeInfo(PrimitiveArrayTypeInfo):
    label = "ObjectArrayTypeInfo"
    null_elements = True


class ListTypeInfo(_Elements):
    """Python lists; Java's ``List`` prints ``[a, b]``."""

    label = "ListTypeInfo"

    def __init__(self, element_type: TypeInformation) -> None:
        super().__init__(element_type)
        self.elem_type = element_type

    def java_str(self, value: Any) -> str:
        return "null" if value is None else _java_list(self._element_type, value)


def _java_list(element_type: TypeInformation, value: Any) -> str:
    return f"[{', '.join(element_type.java_str(v) for v in value)}]"


class MapTypeInfo(TypeInformation):
    """Python dicts; Java's ``Map`` prints ``{a=1, b=2}`` (in insertion order here; a Java
    ``HashMap`` prints in its bucket order)."""

    def __init__(self, key_type_info: TypeInformation, value_type_info: TypeInformation) -> None:
        super().__init__()
        self._key_type_info = key_type_info
        self._value_type_info = value_type_info

    def convert(self, value: Any) -> Any:
        if value is None:
            return None
        return {
            self._key_type_info.convert(k): self._value_type_info.convert(v)
            for k, v in value.items()
        }

    def holds_float(self) -> bool:
        return self._key_type_info.holds_float() or self._value_type_info.holds_float()

    def collected(self, value: Any) -> Any:
        if value is None:
            return None
        return {
            self._key_type_info.collected(k): self._value_type_info.collected(v)
            for k, v in value.items()
        }

    def java_str(self, value: Any) -> str:
        if value is None:
            return "null"
        pairs = ", ".join(
            f"{self._key_type_info.java_str(k)}={self._value_type_info.java_str(v)}"
            for k, v in value.items()
        )
        return f"{{{pairs}}}"

    def java_hash(self, value: Any) -> int:
        total = 0
        for k, v in value.items():
            kh = 0 if k is None else self._key_type_info.java_hash(k)
            vh = 0 if v is None else self._value_type_info.java_hash(v)
            total += kh ^ vh
        return _java.int32(total)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, MapTypeInfo)
            and self._key_type_info == other._key_type_info
            and self._value_type_info == other._value_type_info
        )

    def __hash__(self) -> int:
        return hash((self._key_type_info, self._value_type_info))

    def __repr__(self) -> str:
        return f"MapTypeInfo<{self._key_type_info}, {self._value_type_info}>"


class Types:
    """The type information of the common types, as PyFlink names them."""

    @staticmethod
    def STRING() -> TypeInformation:
        return BasicTypeInfo.STRING_TYPE_INFO()

    @staticmethod
    def BYTE() -> TypeInformation:
        return BasicTypeInfo.BYTE_TYPE_INFO()

    @staticmethod
    def BOOLEAN() -> TypeInformation:
        return BasicTypeInfo.BOOLEAN_TYPE_INFO()

    @staticmethod
    def SHORT() -> TypeInformation:
        return BasicTypeInfo.SHORT_TYPE_INFO()

    @staticmethod
    def INT() -> TypeInformation:
        return BasicTypeInfo.INT_TYPE_INFO()

    @staticmethod
    def LONG() -> TypeInformation:
        return BasicTypeInfo.LONG_TYPE_INFO()

    @staticmethod
    def FLOAT() -> TypeInformation:
        return BasicTypeInfo.FLOAT_TYPE_INFO()

    @staticmethod
    def DOUBLE() -> TypeInformation:
        return BasicTypeInfo.DOUBLE_TYPE_INFO()

    @staticmethod
    def CHAR() -> TypeInformation:
        return BasicTypeInfo.CHAR_TYPE_INFO()

    @staticmethod
    def BIG_INT() -> TypeInformation:
        return BasicTypeInfo.BIG_INT_TYPE_INFO()

    @staticmethod
    def BIG_DEC() -> TypeInformation:
        return BasicTypeInfo.BIG_DEC_TYPE_INFO()

    @staticmethod
    def INSTANT() -> TypeInformation:
        return BasicTypeInfo.INSTANT_TYPE_INFO()

    @staticmethod
    def SQL_DATE() -> TypeInformation:
        return SqlTimeTypeInfo.DATE()

    @staticmethod
    def SQL_TIME() -> TypeInformation:
        return SqlTimeTypeInfo.TIME()

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:
        return SqlTimeTypeInfo.TIMESTAMP()

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:
        return PickledBytesTypeInfo()

    @staticmethod
    def ROW(field_types: Sequence[TypeInformation]) -> TypeInformation:
        return RowTypeInfo(field_types)

    @staticmethod
    def ROW_NAMED(
        field_names: Sequence[str], field_types: Sequence[TypeInformation]
    ) -> TypeInformation:
        return RowTypeInfo(field_types, field_names)

    @staticmethod
    def TUPLE(field_types: Sequence[TypeInformation]) -> TypeInformation:
        return TupleTypeInfo(field_types)

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return PrimitiveArrayTypeInfo(element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return BasicArrayTypeInfo(element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return ObjectArrayTypeInfo(element_type)

    @staticmethod
    def MAP(key_type_info: TypeInformation, value_type_info: TypeInformation) -> TypeInformation:
        return MapTypeInfo(key_type_info, value_type_info)

    @staticmethod
    def LIST(element_type_info: TypeInformation) -> TypeInformation:
        return ListTypeInfo(element_type_info)


# --- what a stream's type means for ckptsim ------------------------------------------------------


def converter(type_info: TypeInformation | None) -> Any:
    """The function that turns a value into what it is after Flink's serializer of
    ``type_info`` (None when values pass unchanged)."""
    if type_info is None or type_info.identity:
        return None
    return type_info.convert


def collected(type_info: TypeInformation | None) -> Any:
    """The function that makes a record of a stream of this type what PyFlink's
    ``execute_and_collect`` returns (None when records come back as they are)."""
    if type_info is None or not type_info.holds_float():
        return None
    return type_info.collected


def printed(type_info: TypeInformation | None) -> Any:
    """How ``print()`` writes a record of a stream of this type (PyFlink's
    ``_align_output_type``): Python ``str`` for a pickled stream (a ``str`` as it is), PyFlink's
    ``+I[...]`` for rows, Java's ``toString`` otherwise."""
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return _python_str
    if isinstance(type_info, RowTypeInfo):
        return type_info.top_level_str
    if isinstance(type_info, BasicTypeInfo) and type_info.identity:
        return _python_str
    return type_info.java_str


def _python_str(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def key_order(key_type: TypeInformation | None) -> Any:
    """The order of keys in BATCH mode: Flink sorts a keyed operator's input by the key's
    serialized bytes (``Row(key)``: a header byte, then the key as ``key_type``, pickled
    bytes without one), compared as unsigned bytes."""
    of = (key_type or PickledBytesTypeInfo()).serialize

    def bytes_of_key(key: Any) -> bytes:
        if key is None:
            return _java.row_header(0, [True])
        return _java.row_header(0, [False]) + of(key)

    return bytes_of_key


def key_hash(key_type: TypeInformation | None) -> Any:
    """Java's ``hashCode`` of a key as PyFlink makes it: ``Row(key)`` with the key as
    ``key_type`` (pickled bytes without one); a None key is a null field."""
    of = (key_type or PickledBytesTypeInfo()).java_hash

    def hash_of_key(key: Any) -> int:
        return _java.row_hash(0, [None if key is None else of(key)])

    return hash_of_key


__getattr__ = missing("pyflink.common.typeinfo")

__all__ = [
    "BasicArrayTypeInfo",
    "BasicType",
    "BasicTypeInfo",
    "DateTypeInfo",
    "InstantTypeInfo",
    "ListTypeInfo",
    "LocalTimeTypeInfo",
    "MapTypeInfo",
    "ObjectArrayTypeInfo",
    "PickledBytesTypeInfo",
    "PrimitiveArrayTypeInfo",
    "RowTypeInfo",
    "SqlTimeTypeInfo",
    "TimeTypeInfo",
    "TimestampTypeInfo",
    "TupleTypeInfo",
    "TypeInformation",
    "Types",
]
