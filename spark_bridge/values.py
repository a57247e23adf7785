"""Spark's values in Python and back: Arrow record batches to records, records to Arrow.

What a user function gets for a DataFrame's columns (``RecordConverter``), and what the
Parquet sink makes of what it returns (``to_arrow_columns``, ``infer_type``):

==========================  ===============================  =================================
Spark type                  Python value                     written back as
==========================  ===============================  =================================
boolean, tinyint ... long   bool, int                        the same
float, double               float                            the same
decimal(p, s)               ``Decimal`` (scale s)            decimal(p, s) of the input, or
                                                             decimal(38, 18) inferred (Spark's)
string, binary              str, bytes                       the same
date                        ``date``                         date
timestamp                   aware ``datetime`` in the        timestamp (the instant; a naive
                            session time zone                datetime is wall-clock time in
                            (``spark.sql.session.timeZone``)  the session time zone)
timestamp_ntz               naive ``datetime``               timestamp_ntz (input columns)
array<T>                    list                             array
map<K, V>                   dict                             map (a dict is a map, as Spark
                                                             infers it, not a struct)
struct<...>                 ``TupleRow`` (fields by name)    struct
a row                       ``TupleRow`` (or a tuple with    the output's columns, named
                            ``batch_format="tuples"``)       after the row's fields
==========================  ===============================  =================================
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import operator
import re
import zoneinfo
from collections.abc import Callable, Sequence
from typing import Any

from runtime.row import Row, TupleRow, row_class

UTC = dt.UTC
_AS_UTC = operator.methodcaller("replace", tzinfo=UTC)

#: the type Spark infers for a Python ``Decimal`` (``DecimalType()``)
DECIMAL_PRECISION, DECIMAL_SCALE = 38, 18

_OFFSET = re.compile(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?")


def time_zone(name: str) -> dt.tzinfo:
    """A Spark time zone id (``America/New_York``, ``UTC``, ``+09:00``, ``GMT+9``) as a
    Python time zone: a ``zoneinfo.ZoneInfo`` for a region, a ``datetime.timezone`` for an
    offset."""
    if name in ("Z", "UTC", "GMT", "UT"):
        return UTC
    match = _OFFSET.fullmatch(name)
    if match:
        sign, hours, minutes, seconds = match.groups()
        offset = dt.timedelta(
            hours=int(hours), minutes=int(minutes or 0), seconds=int(seconds or 0)
        )
        return dt.timezone(-offset if sign == "-" else offset)
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError) as error:
        raise ValueError(f"unknown time zone {name!r}: {error}") from None


def session_time_zone(spark: Any) -> dt.tzinfo:
    """The session time zone of a Spark session (``spark.sql.session.timeZone``)."""
    return time_zone(str(spark.conf.get("spark.sql.session.timeZone")))


# --- Arrow to Python ---------------------------------------------------------------------------


def _nested(pa: Any, kind: Any) -> bool:
    return bool(
        pa.types.is_struct(kind)
        or pa.types.is_map(kind)
        or pa.types.is_list(kind)
        or pa.types.is_large_list(kind)
        or pa.types.is_fixed_size_list(kind)
    )


def _value_converter(pa: Any, kind: Any, zone: dt.tzinfo) -> Callable[[Any], Any] | None:
    """What turns one value of Arrow type ``kind`` (as ``to_pylist`` gives it, not None) into
    Spark's Python value; None: nothing to do."""
    if pa.types.is_timestamp(kind):
        if kind.tz is None:
            return None
        return lambda value: value.astimezone(zone)
    if pa.types.is_struct(kind):
        names = [kind.field(i).name for i in range(kind.num_fields)]
        make = row_class(names).make
        parts = [_value_converter(pa, kind.field(i).type, zone) for i in range(kind.num_fields)]
        pairs = list(zip(names, parts, strict=True))

        def struct(value: dict[str, Any]) -> TupleRow:
            return make(
                value[name] if part is None or value[name] is None else part(value[name])
                for name, part in pairs
            )

        return struct
    if pa.types.is_map(kind):
        key = _value_converter(pa, kind.key_type, zone)
        item = _value_converter(pa, kind.item_type, zone)

        def mapping(value: list[tuple[Any, Any]]) -> dict[Any, Any]:
            return {
                k if key is None else key(k): v if item is None or v is None else item(v)
                for k, v in value
            }

        return mapping
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        element = _value_converter(pa, kind.value_type, zone)
        if element is None:
            return None
        part = element
        return lambda value: [v if v is None else part(v) for v in value]
    return None


class RecordConverter:
    """Arrow record batches of one schema as lists of records: ``TupleRow``s named after the
    columns (``rows=True``) or plain tuples, holding Spark's Python values (see the module
    documentation). Timestamps and dates go through NumPy, 30 times faster than Arrow's own
    conversion (which builds a time zone per value)."""

    def __init__(self, schema: Any, *, time_zone: dt.tzinfo = UTC, rows: bool = True) -> None:
        import pyarrow as pa  # noqa: PLC0415 - the caller made sure it is there

        self.pa = pa
        self.zone = time_zone
        self.names = list(schema.names)
        self.make: Callable[[Any], Any] = (
            functools.partial(tuple.__new__, row_class(self.names)) if rows else tuple
        )
        self.rows = rows
        self.columns = [self._column(field.type) for field in schema]

    def _column(self, kind: Any) -> Callable[[Any], list[Any]]:
        pa, zone = self.pa, self.zone
        if pa.types.is_timestamp(kind):
            if kind.tz is None:
                return self._timestamps
            return self._instants
        if pa.types.is_date32(kind):
            return lambda column: list(column.to_numpy(zero_copy_only=False).tolist())
        convert = _value_converter(pa, kind, zone) if _nested(pa, kind) else None
        if convert is None:
            return lambda column: list(column.to_pylist())
        part = convert
        return lambda column: [v if v is None else part(v) for v in column.to_pylist()]

    def _instants(self, column: Any) -> list[Any]:
        """Aware datetimes in the session time zone (the C-level ``map`` where no value is
        null: a Python loop per value costs as much again)."""
        naive = self._timestamps(column)
        if column.null_count:
            zone = self.zone
            return [v if v is None else v.replace(tzinfo=UTC).astimezone(zone) for v in naive]
        aware = map(_AS_UTC, naive)
        if self.zone is UTC:
            return list(aware)
        return list(map(operator.methodcaller("astimezone", self.zone), aware))

    def _timestamps(self, column: Any) -> list[Any]:
        """Naive datetimes holding the column's wall-clock (no zone) or UTC time."""
        micros = column.cast(self.pa.timestamp("us"))
        return list(micros.to_numpy(zero_copy_only=False).tolist())

    def __call__(self, batch: Any) -> list[Any]:
        if batch.num_columns == 0:
            return [self.make(())] * batch.num_rows
        values = [
            convert(column) for convert, column in zip(self.columns, batch.columns, strict=True)
        ]
        return list(map(self.make, zip(*values, strict=True)))


# --- Python to Arrow ---------------------------------------------------------------------------


def field_names(record: Any) -> list[str] | None:
    """The names of a record's fields: a ``TupleRow`` / ``pyspark.sql.Row``'s, a named
    tuple's, a PyFlink ``Row``'s, a dict's keys; None when it has none."""
    if isinstance(record, Row):
        return record.get_field_names()
    if isinstance(record, dict):
        return list(record)
    fields = getattr(record, "__fields__", None) or getattr(record, "_fields", None)
    return list(fields) if fields else None


def infer_type(pa: Any, values: Sequence[Any]) -> Any:
    """The Arrow type Spark would give a column of these Python values (``createDataFrame``'s
    inference): a dict is a map, a row or a tuple a struct, a list an array, a datetime a
    timestamp (UTC instants), a Decimal decimal(38, 18) (whatever its scale, as Spark's
    ``_infer_type``: a value of a larger scale is rounded into it); otherwise what Arrow
    infers."""
    present = [v for v in values if v is not None]
    if not present:
        return pa.null()
    first = present[0]
    if isinstance(first, Row | tuple):
        names = field_names(first) or [f"_{i + 1}" for i in range(len(first))]
        width = max(len(v) for v in present)
        return pa.struct(
            [
                (
                    names[i] if i < len(names) else f"_{i + 1}",
                    infer_type(pa, [_at(v, i) for v in present]),
                )
                for i in range(width)
            ]
        )
    if isinstance(first, dict):
        keys = [k for v in present for k in v]
        items = [x for v in present for x in v.values()]
        key_type = infer_type(pa, keys)
        return pa.map_(
            pa.string() if pa.types.is_null(key_type) else key_type, infer_type(pa, items)
        )
    if isinstance(first, list):
        return pa.list_(infer_type(pa, [x for v in present for x in v]))
    if isinstance(first, dt.datetime):
        return pa.timestamp("us", tz="UTC")
    if isinstance(first, decimal.Decimal):  # whatever the scale: a larger one is rounded
        return pa.decimal128(DECIMAL_PRECISION, DECIMAL_SCALE)
    return pa.array(present).type


def _at(record: Any, index: int) -> Any:
    values = list(record) if isinstance(record, Row) else record
    return values[index] if index < len(values) else None


class Unrepresentable(ValueError):
    """A value its column's type cannot hold (a Decimal with too many digits before the point
    for its decimal(p, s)); the message names the value and the type."""


#: where Decimals are rounded into a column's scale: half up, ties away from zero (Spark's
#: ``Decimal.changePrecision``, Java's ``ROUND_HALF_UP``); every digit kept; an infinity raises
#: ``InvalidOperation`` (the caller reports what Arrow said of it)
_ROUNDING = decimal.Context(
    prec=decimal.MAX_PREC, rounding=decimal.ROUND_HALF_UP, traps=[decimal.InvalidOperation]
)


@functools.cache
def _step(scale: int) -> decimal.Decimal:
    """``1E-scale``: what ``quantize`` rounds to for ``scale`` digits after the point."""
    return decimal.Decimal(1).scaleb(-scale)


def _rounder(scale: int) -> Callable[[Any], Any]:
    """A Decimal rounded half up to ``scale`` digits after the point (other values as they
    are: Arrow takes or refuses them)."""
    quantize, step, kind = _ROUNDING.quantize, _step(scale), decimal.Decimal
    return lambda value: quantize(value, step) if isinstance(value, kind) else value


def _arrow_value(
    pa: Any, kind: Any, zone: dt.tzinfo, rounding: bool = False
) -> Callable[[Any], Any] | None:
    """What turns one Python value (not None) into what Arrow takes for ``kind``; None: it
    takes the value as it is. A naive datetime bound for a zoned timestamp is wall-clock time
    in ``zone`` (the Spark session's); a row becomes a tuple, positionally; with ``rounding``
    a Decimal is rounded into its decimal's scale."""
    if pa.types.is_decimal(kind):
        return _rounder(kind.scale) if rounding else None
    if pa.types.is_timestamp(kind):
        if kind.tz is None:  # timestamp_ntz: an aware datetime's wall clock in the session zone

            def wall_clock(value: Any) -> Any:
                if isinstance(value, dt.datetime) and value.tzinfo is not None:
                    return value.astimezone(zone).replace(tzinfo=None)
                return value

            return wall_clock

        def instant(value: Any) -> Any:
            if isinstance(value, dt.datetime) and value.tzinfo is None:
                return value.replace(tzinfo=zone)
            return value

        return instant
    if pa.types.is_struct(kind):
        parts = [
            _arrow_value(pa, kind.field(i).type, zone, rounding) for i in range(kind.num_fields)
        ]
        names = [kind.field(i).name for i in range(kind.num_fields)]

        def struct(value: Any) -> Any:
            if isinstance(value, dict):
                value = [value.get(name) for name in names]
            return tuple(
                v if part is None or v is None else part(v)
                for v, part in zip(value, parts, strict=False)
            )

        return struct
    if pa.types.is_map(kind):
        key = _arrow_value(pa, kind.key_type, zone, rounding)
        item = _arrow_value(pa, kind.item_type, zone, rounding)
        if key is None and item is None:
            return None
        return lambda value: [
            (k if key is None else key(k), v if item is None or v is None else item(v))
            for k, v in (value.items() if isinstance(value, dict) else value)
        ]
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        element = _arrow_value(pa, kind.value_type, zone, rounding)
        if element is None:
            return None
        part = element
        return lambda value: [v if v is None else part(v) for v in value]
    return None


def to_arrow_column(
    pa: Any, values: Sequence[Any], kind: Any, zone: dt.tzinfo, *, rounding: bool = True
) -> Any:
    """``values`` as an Arrow array of type ``kind``. A Decimal of a larger scale than its
    decimal(p, s) (also in a struct, an array or a map) is rounded half up into scale s, as
    Spark's ``createDataFrame`` does (``rounding=False``: refused); one with more than p - s
    digits before the point of a decimal column raises ``Unrepresentable``; Arrow's other
    errors propagate. What fits as it is costs nothing more: the rounding is a second pass,
    after Arrow refused."""
    given = values
    convert = _arrow_value(pa, kind, zone)
    if convert is not None:
        if pa.types.is_timestamp(kind) and all(
            v is None or (type(v) is dt.datetime and (v.tzinfo is None) == (kind.tz is None))
            for v in values
        ):
            pass  # nothing to change: the common case costs one scan
        else:
            part = convert
            values = [v if v is None else part(v) for v in values]
    try:
        return pa.array(values, type=kind)
    except pa.ArrowInvalid as error:
        refused = error
    if rounding and _holds_decimal(pa, kind):
        rounded = _arrow_value(pa, kind, zone, rounding=True)
        assert rounded is not None  # a decimal inside: it rounds
        try:
            return pa.array([v if v is None else rounded(v) for v in given], type=kind)
        except decimal.InvalidOperation:  # an infinity (or sNaN): what Arrow said of it
            raise refused from None
        except pa.ArrowInvalid as error:
            refused = error
    misfit = _misfit(given, kind, rounding) if pa.types.is_decimal(kind) else None
    if misfit is None:
        raise refused
    raise Unrepresentable(misfit) from None


def _misfit(values: Sequence[Any], kind: Any, rounding: bool) -> str | None:
    """What is wrong with the first finite Decimal in ``values`` that decimal ``kind`` cannot
    hold (rounded into its scale, with ``rounding``); None if there is none."""
    room = kind.precision - kind.scale
    name = f"decimal({kind.precision}, {kind.scale})"
    for value in values:
        if not isinstance(value, decimal.Decimal) or not value.is_finite():
            continue
        exponent = value.as_tuple().exponent
        assert isinstance(exponent, int)  # finite
        if not rounding and -exponent > kind.scale:
            return f"the value {value} has more digits after the point than {name} holds"
        made = _ROUNDING.quantize(value, _step(kind.scale)) if rounding else value
        if made and made.adjusted() >= room:
            rounded = f" (rounded half up: {made})" if rounding and made != value else ""
            return (
                f"the value {value}{rounded} does not fit {name}, which holds {room} digits "
                f"before the point (Spark: cannot be represented as Decimal({kind.precision}, "
                f"{kind.scale}))"
            )
    return None


def _holds_decimal(pa: Any, kind: Any) -> bool:
    """Whether a decimal is part of ``kind`` (a struct's field, an array's or a map's)."""
    if pa.types.is_decimal(kind):
        return True
    if pa.types.is_struct(kind):
        return any(_holds_decimal(pa, kind.field(i).type) for i in range(kind.num_fields))
    if pa.types.is_map(kind):
        return _holds_decimal(pa, kind.key_type) or _holds_decimal(pa, kind.item_type)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _holds_decimal(pa, kind.value_type)
    return False
