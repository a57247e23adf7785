"""State as data: Python values to msgpack (encoding version 3) or JSON-safe structures
(versions 1 and 2) and back, without pickle.

A checkpoint is data, not code: operator and keyed state, source positions and in-flight
records (channel state) are written as data, in savepoints as in checkpoints. Checkpoints of
format version 3 write each value with ``pack`` (encoding version 3: msgpack written by
msgspec, typed values as msgpack extension types; its codes are the ``EXT_*`` constants and
are listed in docs/checkpoints.md) and read it with ``unpack``. ``encode``/``decode`` (and
``dumps``/``loads``) are encoding version 2, tagged JSON: checkpoints of format versions 1
and 2 are read with them, and a key's hash (``runtime.state``) is computed on ``dumps``'s
text, so that a key keeps its key group. In version 2, JSON holds
None, bool, int (any size Python's ``int(str)`` reads: up to 4,300 digits), str, lists and
dicts with string keys as they are; every other value is an object tagged with
``"$ckptsim"`` and its payload ``"v"``, so that it comes back as it went in, type and all:

==============  =============================================================================
tag             value (payload)
==============  =============================================================================
``float``       ``nan``, ``inf``, ``-inf`` (other floats are JSON numbers; ``-0.0`` too)
``tuple``       a tuple (its items); ``tuples``: a list of flat tuples (their items)
``set``         a set (its items, in a canonical order); ``frozenset`` likewise
``bytes``       bytes (base64); ``bytearray`` likewise
``dict``        a dict with a non-string key, or a ``"$ckptsim"`` key (its ``[key, value]``
                pairs)
``row``         ``runtime.row.Row``, PyFlink's row (its values, names ``f`` and kind ``k``)
``tuple_row``   ``runtime.row.TupleRow``, PySpark's row (its values and names ``f``; a
                ``pyspark.sql.Row`` is written so and comes back as a ``TupleRow``);
                ``tuple_rows``: a list of rows of the same names (their values)
``decimal``     ``decimal.Decimal`` as its string: digits and exponent kept (``"1.20"``)
``datetime``    ``datetime.datetime``: ISO 8601 (microseconds); aware: ``zone`` (an IANA
                name: ``zoneinfo.ZoneInfo``; a ``pytz`` zone comes back as ``ZoneInfo``) or
                the offset in the text (``datetime.timezone``; ``name`` if it has its own);
                ``fold`` when 1
``date``        ``datetime.date``: ISO 8601
``time``        ``datetime.time``: ISO 8601, time zone and ``fold`` as for ``datetime``
``timedelta``   ``datetime.timedelta``: ``[days, seconds, microseconds]``
``numpy``       a NumPy scalar: its dtype ``t`` and its value (bool, int, float, str,
                bytes) or its bytes ``b`` (base64: datetime64, timedelta64, complex, ...)
==============  =============================================================================

Anything else (an arbitrary object) is refused with ``StateSerializationError``, naming where
it was found (the operator, the keyed state, the position in the value). Reading refuses
what ``encode`` cannot have written (``StateFormatError``, naming the position).

Encoding versions: version 1 (ckptsim 0.1 up to commit 0d2b83f) wrote the tags up to
``row``; version 2 (up to commit ee25535) adds ``bytearray``, ``tuple_row``, ``tuple_rows``,
``decimal``, ``datetime``, ``date``, ``time``, ``timedelta`` and ``numpy``. Version 1 data is
version 2 data: every checkpoint written before still reads the same.

Version 3 (``ENCODING_VERSION``) writes the same values with msgpack's extension types
instead of tags. msgspec writes some of these types natively but not exactly (a tuple or a
set as an array, a Decimal as a string, a datetime as a UTC timestamp) and calls no hook for
them, so ``pack`` first turns them into ``msgspec.msgpack.Ext`` values (one pass over the
value, as version 2's; lists and dicts of plain values are handed to msgspec as they are) and
``unpack``'s ``ext_hook`` turns them back. The payloads are the standard library's own exact
forms (``str(Decimal)``, ISO 8601). Data ``unpack`` refuses is searched again with the
extensions left undecoded, to name the position of the one that is wrong.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import hashlib
import json
import math
import zoneinfo
from collections.abc import Callable
from typing import Any

import msgspec

from runtime.row import Row, RowKind, TupleRow, row_class

_TAG = "$ckptsim"

#: the version of the value encoding checkpoints write (``pack``; see the module documentation)
ENCODING_VERSION = 3


class StateSerializationError(TypeError):
    """A value cannot go into a checkpoint (ckptsim writes data, never pickle)."""


class _Refused(Exception):
    """Raised inside ``_encode`` for a value it cannot write (``encode`` says where)."""

    def __init__(self, value: Any, why: str = "") -> None:
        super().__init__(why)
        self.value = value
        self.why = why


_PLAIN = (str, int, bool, type(None))


def encode(value: Any, *, where: str = "state") -> Any:
    """A JSON-safe structure for ``value``; ``StateSerializationError`` naming ``where``, the
    keyed state and the position of a value that cannot be written."""
    try:
        return _encode(value)
    except _Refused as refused:
        raise StateSerializationError(_refusal(value, refused, where)) from None


def _encode(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is tuple:
        items = value
        if all(type(v) in _PLAIN for v in items):
            return {_TAG: "tuple", "v": list(items)}
        return {_TAG: "tuple", "v": [_encode(v) for v in items]}
    if kind is list:
        return _encode_list(value)
    if kind is float:
        if math.isnan(value) or math.isinf(value):
            return {_TAG: "float", "v": repr(value)}
        return value
    return _encode_other(value)


def _encode_list(value: list[Any]) -> Any:
    plain = _PLAIN
    if all(type(v) in plain for v in value):
        return list(value)
    if all(type(v) is tuple and all(type(x) in plain for x in v) for v in value):
        # a column of flat tuples: json writes tuples as arrays at C speed
        return {_TAG: "tuples", "v": list(value)}
    first = value[0]
    if isinstance(first, TupleRow) and first.__fields__ and len(value) > 1:
        row = type(first)
        if all(type(v) is row for v in value):  # a buffer of Spark rows: names once
            if all(type(x) in plain for v in value for x in v):
                rows: list[Any] = list(value)  # json writes each row as an array
            else:
                rows = [[_encode(x) for x in v] for v in value]
            return {_TAG: "tuple_rows", "f": list(row.__fields__), "v": rows}
    return [_encode(v) for v in value]


def _encode_other(value: Any) -> Any:
    kind = type(value)
    if kind is decimal.Decimal:
        return {_TAG: "decimal", "v": str(value)}
    if kind is dt.datetime:
        return _encode_datetime(value)
    if kind is dt.date:
        return {_TAG: "date", "v": value.isoformat()}
    if kind is dt.time:
        return _encode_time(value)
    if kind is dt.timedelta:
        return {_TAG: "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    if kind.__module__ == "numpy":
        return _encode_numpy(value)
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return _encode(float(value))
    if isinstance(value, tuple):
        fields = getattr(value, "__fields__", None)  # TupleRow, or a pyspark.sql.Row
        if fields is not None and all(type(name) is str for name in fields):
            return {_TAG: "tuple_row", "f": list(fields), "v": [_encode(v) for v in value]}
        return {_TAG: "tuple", "v": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, set | frozenset):
        tag = "set" if isinstance(value, set) else "frozenset"
        items = [_encode(v) for v in value]
        return {_TAG: tag, "v": sorted(items, key=lambda x: json.dumps(x, sort_keys=True))}
    if isinstance(value, bytes):
        return {_TAG: "bytes", "v": base64.b64encode(value).decode("ascii")}
    if isinstance(value, bytearray):
        return {_TAG: "bytearray", "v": base64.b64encode(value).decode("ascii")}
    if isinstance(value, Row):
        return {
            _TAG: "row",
            "v": [_encode(v) for v in value],
            "f": value.get_field_names(),
            "k": value.get_row_kind().value,
        }
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and _TAG not in value:
            return {k: _encode(v) for k, v in value.items()}
        return {_TAG: "dict", "v": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, dt.datetime | dt.date | dt.time | dt.timedelta | decimal.Decimal):
        raise _Refused(
            value,
            f"a subclass of {type(value).__mro__[1].__name__} would come back as its base "
            "class: convert it first (a pandas Timestamp: .to_pydatetime())",
        )
    raise _Refused(value)


def _zone(value: Any, tz: dt.tzinfo) -> dict[str, Any]:
    """How a datetime's or a time's ``tzinfo`` is written (beside its ISO text)."""
    if type(tz) is dt.timezone:  # the offset is in the ISO text; its own name, if any
        offset = tz.utcoffset(None)
        name = tz.tzname(None)
        return {} if name == dt.timezone(offset).tzname(None) else {"name": name}
    if isinstance(tz, zoneinfo.ZoneInfo) and tz.key is not None:
        return {"zone": tz.key}
    zone = getattr(tz, "zone", None)  # pytz
    if isinstance(zone, str):
        return {"zone": zone}
    raise _Refused(
        value,
        f"its time zone is a {type(tz).__module__}.{type(tz).__qualname__}; a checkpoint keeps "
        "zoneinfo.ZoneInfo (and pytz) zones by name and datetime.timezone offsets",
    )


def _encode_datetime(value: dt.datetime) -> dict[str, Any]:
    tz = value.tzinfo
    out: dict[str, Any]
    if tz is None:
        out = {_TAG: "datetime", "v": value.isoformat()}
    else:
        zone = _zone(value, tz)
        wall = value.replace(tzinfo=None).isoformat() if "zone" in zone else value.isoformat()
        out = {_TAG: "datetime", "v": wall, **zone}
    if value.fold:
        out["fold"] = 1
    return out


def _encode_time(value: dt.time) -> dict[str, Any]:
    tz = value.tzinfo
    out: dict[str, Any]
    if tz is None:
        out = {_TAG: "time", "v": value.isoformat()}
    else:
        zone = _zone(value, tz)
        wall = value.replace(tzinfo=None).isoformat() if "zone" in zone else value.isoformat()
        out = {_TAG: "time", "v": wall, **zone}
    if value.fold:
        out["fold"] = 1
    return out


#: NumPy kinds written as a Python value: bool, signed and unsigned ints, str, bytes (and
#: floats of 2-8 bytes)
_NUMPY_ITEMS = "biuUS"


def _encode_numpy(value: Any) -> Any:
    import numpy as np  # noqa: PLC0415 - only when a NumPy value is there (so NumPy is loaded)

    if not isinstance(value, np.generic) or value.dtype.kind in "OV":
        raise _Refused(value, "only NumPy scalars of a plain dtype go into a checkpoint")
    dtype = value.dtype
    if dtype.kind in "US":  # str()/bytes() keep trailing NULs, which .item() drops
        plain: Any = str(value) if dtype.kind == "U" else bytes(value)  # type: ignore[call-overload]
        return {_TAG: "numpy", "t": dtype.str, "v": _encode(plain)}
    if dtype.kind in _NUMPY_ITEMS or (dtype.kind == "f" and dtype.itemsize <= 8):
        return {_TAG: "numpy", "t": dtype.str, "v": _encode(value.item())}
    raw = base64.b64encode(value.tobytes()).decode("ascii")
    return {_TAG: "numpy", "t": dtype.str, "b": raw}


def _refusal(root: Any, refused: _Refused, where: str) -> str:
    bad = refused.value
    path = _path_to(root, bad) or []
    state = ""
    if len(path) >= 2 and path[0] == "['states']":  # keyed state: {"states": {name: ...}}
        state = f", keyed state {path[1][2:-2]!r}"
    at = f" at {''.join(path)}" if path else ""
    why = (
        refused.why
        or "checkpoints are data, not pickle. Keep state and records as None, bool, int, "
        "float, str, bytes, Decimal, datetime, date, time, timedelta, list, tuple, dict, set, "
        "Row or NumPy scalars, or convert the value (e.g. a dataclass with "
        "dataclasses.asdict) before storing it."
    )
    return f"cannot write a {type(bad).__name__} into a checkpoint ({where}){state}{at}: {why}"


def _path_to(value: Any, target: Any, depth: int = 0) -> list[str] | None:
    """Where ``target`` (by identity) sits inside ``value``, as ``['key']`` / ``[3]`` steps."""
    if value is target:
        return []
    if depth > 200:
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            for inside, step in ((key, f"[key {key!r}]"), (item, f"[{key!r}]")):
                found = _path_to(inside, target, depth + 1)
                if found is not None:
                    return [step, *found]
    elif isinstance(value, list | tuple | Row):
        for index, item in enumerate(value):
            found = _path_to(item, target, depth + 1)
            if found is not None:
                return [f"[{index}]", *found]
    elif isinstance(value, set | frozenset):
        for item in value:
            found = _path_to(item, target, depth + 1)
            if found is not None:
                return ["[member]", *found]
    return None


class StateFormatError(ValueError):
    """Checkpoint data ckptsim did not write (an unknown tag, a wrong shape, a value a set or a
    dict key cannot hold, nesting too deep); the message says where in the value."""


#: every tag ``encode`` writes; anything else in a checkpoint was not written by ckptsim
TAGS = (
    "tuple",
    "tuples",
    "set",
    "frozenset",
    "bytes",
    "bytearray",
    "dict",
    "float",
    "row",
    "tuple_row",
    "tuple_rows",
    "decimal",
    "datetime",
    "date",
    "time",
    "timedelta",
    "numpy",
)
#: tags of single values (no nested data): checked by decoding them
_LEAVES = ("float", "bytes", "bytearray", "decimal", "datetime", "date", "time", "timedelta")
_FLOATS = frozenset({"nan", "inf", "-inf"})


def decode(data: Any, *, where: str = "state") -> Any:
    """The value ``encode`` wrote; ``StateFormatError`` (naming ``where`` and the position in
    the value) for anything it cannot have written."""
    try:
        return _decode(data)
    except RecursionError:
        raise StateFormatError(f"{where} is nested too deeply to be checkpoint data") from None
    except (KeyError, TypeError, ValueError, ArithmeticError) as error:
        raise _format_error(where, error, lambda: _problem(data, "")) from None


def _format_error(
    where: str, error: Exception, find: Callable[[], tuple[str, str] | None]
) -> StateFormatError:
    """The error of a value that did not decode: where in it ``find`` locates the problem
    (and what it is), else the decoder's own error."""
    try:
        problem = find()
    except RecursionError:
        problem = None
    at, why = problem or ("", f"{type(error).__name__}: {error}")
    return StateFormatError(f"{where}{' at ' + at if at else ''}: {why}")


def _decode(data: Any) -> Any:
    if isinstance(data, list):
        return [_decode(v) for v in data]
    if isinstance(data, dict):
        tag = data.get(_TAG)
        if tag is None:
            return {k: _decode(v) for k, v in data.items()}
        if tag == "numpy":
            return _decode_numpy(data)
        payload = data["v"]
        if tag in _LEAVES:
            return _decode_leaf(tag, data, payload)
        if type(payload) is not list:
            raise TypeError(f"the value of a {tag!r} tag is not a list")
        if tag == "tuple":
            return tuple(_decode(v) for v in payload)
        if tag == "tuples":
            return [tuple(v) for v in payload]
        if tag == "set":
            return {_decode(v) for v in payload}
        if tag == "frozenset":
            return frozenset(_decode(v) for v in payload)
        if tag == "dict":
            return {_decode(k): _decode(v) for k, v in payload}
        if tag == "row":
            return _decode_row(data, payload)
        if tag == "tuple_row":
            return _row_class(data.get("f"), len(payload)).make(_decode(v) for v in payload)
        if tag == "tuple_rows":
            return _decode_tuple_rows(data, payload)
        raise ValueError(f"unknown tag {tag!r}")
    return data


def _decode_leaf(tag: str, data: dict[str, Any], payload: Any) -> Any:
    if tag == "float":
        if payload not in _FLOATS:
            raise ValueError(f"not a float: {payload!r}")
        return float(payload)
    if tag == "bytes":
        return base64.b64decode(payload, validate=True)
    if tag == "bytearray":
        return bytearray(base64.b64decode(payload, validate=True))
    if tag == "timedelta":
        if (
            type(payload) is not list
            or len(payload) != 3
            or not all(type(x) is int for x in payload)
        ):
            raise ValueError(f"a timedelta is [days, seconds, microseconds], got {payload!r}")
        days, seconds, micros = payload
        return dt.timedelta(days=days, seconds=seconds, microseconds=micros)
    if type(payload) is not str:
        raise TypeError(f"the value of a {tag!r} tag is not a string")
    if tag == "decimal":
        return decimal.Decimal(payload)
    if tag == "date":
        return dt.date.fromisoformat(payload)
    fold = data.get("fold", 0)
    if fold not in (0, 1) or type(fold) is not int:
        raise ValueError(f"fold is 0 or 1, got {fold!r}")
    parsed: dt.datetime | dt.time = (
        dt.datetime.fromisoformat(payload) if tag == "datetime" else dt.time.fromisoformat(payload)
    )
    zone, name = data.get("zone"), data.get("name")
    if zone is not None:
        if type(zone) is not str or parsed.tzinfo is not None:
            raise ValueError(f"a zone is an IANA name beside a local time, got {zone!r}")
        try:
            tz = zoneinfo.ZoneInfo(zone)
        except OSError as error:  # e.g. the name of a folder of zones ("America")
            raise ValueError(f"no time zone {zone!r}: {error}") from None
        parsed = parsed.replace(tzinfo=tz)
    elif name is not None:
        offset = parsed.utcoffset()
        if type(name) is not str or offset is None:
            raise ValueError(f"a time zone's name {name!r} needs an offset in the text")
        parsed = parsed.replace(tzinfo=dt.timezone(offset, name))
    return parsed.replace(fold=fold) if fold else parsed


def _decode_numpy(data: dict[str, Any]) -> Any:
    import numpy as np  # noqa: PLC0415 - only for a checkpoint that holds NumPy values

    spec = data.get("t")
    if type(spec) is not str:
        raise TypeError(f"a NumPy value's dtype is a string, got {spec!r}")
    dtype = np.dtype(spec)
    if dtype.kind in "OV":
        raise ValueError(f"a NumPy value of dtype {spec!r} is not data")
    if "v" in data:
        if not (dtype.kind in _NUMPY_ITEMS or (dtype.kind == "f" and dtype.itemsize <= 8)):
            raise ValueError(f"a NumPy {spec!r} value is written as bytes")
        item = _decode(data["v"])
        if type(item) not in (bool, int, float, str, bytes):
            raise TypeError(f"a NumPy {spec!r} value is a number, str or bytes, got {item!r}")
        return dtype.type(item)
    raw = base64.b64decode(data["b"], validate=True)
    if len(raw) != dtype.itemsize:
        raise ValueError(f"a NumPy {spec!r} value has {dtype.itemsize} bytes, got {len(raw)}")
    return np.frombuffer(raw, dtype=dtype)[0]


def _row_class(fields: Any, arity: int) -> type[TupleRow]:
    if (
        type(fields) is not list
        or not all(type(name) is str for name in fields)
        or (fields and len(fields) != arity)
    ):
        raise ValueError(f"a row's field names are {arity} strings, got {fields!r}")
    return row_class(fields)


def _decode_tuple_rows(data: dict[str, Any], payload: list[Any]) -> list[TupleRow]:
    fields = data.get("f")
    make = _row_class(fields, len(fields) if type(fields) is list else -1).make
    out = []
    if not fields:
        raise ValueError("rows written together have field names")
    for values in payload:
        if type(values) is not list or len(values) != len(fields):
            raise ValueError(f"a row of fields {fields} has {len(fields)} values")
        out.append(make(_decode(v) for v in values))
    return out


def _decode_row(data: dict[str, Any], payload: list[Any]) -> Row:
    fields, kind = data.get("f"), data.get("k", 0)
    if _row_problem(fields, kind, len(payload)) is not None:
        raise ValueError("not a row")
    row = Row(*(_decode(v) for v in payload))
    row.set_field_names(fields)
    row.set_row_kind(RowKind(kind))
    return row


def _row_problem(fields: Any, kind: Any, arity: int) -> tuple[str, str] | None:
    """What is wrong with a row's names ``f`` and kind ``k`` (None: nothing)."""
    if fields is not None and (
        type(fields) is not list
        or len(fields) != arity
        or not all(type(name) is str for name in fields)
    ):
        return "['f']", f"a row's field names are {arity} strings or null, got {fields!r}"
    if type(kind) is not int or kind not in range(len(RowKind)):
        return "['k']", f"a row's kind is 0 to {len(RowKind) - 1}, got {kind!r}"
    return None


def _problem(data: Any, at: str) -> tuple[str, str] | None:
    """Where ``_decode`` fails in ``data`` and why (the slow path, after it failed)."""
    if isinstance(data, list):
        for i, item in enumerate(data):
            found = _problem(item, f"{at}[{i}]")
            if found:
                return found
        return None
    if not isinstance(data, dict):
        return None
    tag = data.get(_TAG)
    if tag is None:
        for key, item in data.items():
            found = _problem(item, f"{at}[{key!r}]")
            if found:
                return found
        return None
    if not isinstance(tag, str) or tag not in TAGS:
        return at, (
            f"unknown tag {tag!r} (ckptsim writes only {', '.join(TAGS)}: a checkpoint holds "
            "data, never pickled objects)"
        )
    if tag == "numpy":
        try:
            _decode_numpy(data)
        except (KeyError, TypeError, ValueError, ArithmeticError) as error:
            return at, f"not a NumPy value ({type(error).__name__}: {error})"
        return None
    if "v" not in data:
        return at, f"a {tag!r} tag without its value 'v'"
    payload = data["v"]
    inside = f"{at}['v']"
    if tag == "float":
        return None if payload in _FLOATS else (inside, f"{payload!r} is not nan, inf or -inf")
    if tag in ("bytes", "bytearray"):
        try:
            base64.b64decode(payload, validate=True)
        except (TypeError, ValueError):
            return inside, "the bytes are not base64 text"
        return None
    if tag in _LEAVES:
        try:
            _decode_leaf(tag, data, payload)
        except (KeyError, TypeError, ValueError, ArithmeticError) as error:
            return at, f"not a {tag} ({type(error).__name__}: {error})"
        return None
    if type(payload) is not list:
        return inside, f"the value of a {tag!r} tag is a {type(payload).__name__}, not a list"
    if tag == "row":
        wrong = _row_problem(data.get("f"), data.get("k", 0), len(payload))
        if wrong is not None:
            return f"{at}{wrong[0]}", wrong[1]
    if tag in ("tuple_row", "tuple_rows"):
        fields = data.get("f")
        arity = len(payload) if tag == "tuple_row" else len(fields) if type(fields) is list else 0
        try:
            _row_class(fields, arity)
        except ValueError as error:
            return f"{at}['f']", str(error)
    for i, item in enumerate(payload):
        if tag in ("tuples", "dict", "tuple_rows") and (
            type(item) is not list or (tag == "dict" and len(item) != 2)
        ):
            return f"{inside}[{i}]", "not a [key, value] pair" if tag == "dict" else "not a list"
        if tag == "tuples":
            continue
        if tag == "tuple_rows" and len(item) != len(data["f"]):
            return f"{inside}[{i}]", f"a row of fields {data['f']} has {len(data['f'])} values"
        for j, member in enumerate(item if tag in ("dict", "tuple_rows") else [item]):
            here = f"{inside}[{i}][{j}]" if tag == "tuple_rows" else f"{inside}[{i}]"
            found = _problem(member, here)
            if found:
                return found
        if tag in ("set", "frozenset", "dict"):
            try:
                hash(_decode(item[0] if tag == "dict" else item))
            except TypeError:
                what = "a dict key" if tag == "dict" else f"a member of a {tag}"
                return f"{inside}[{i}]", f"an unhashable value cannot be {what}"
    return None


def dumps(value: Any, *, where: str = "state") -> str:
    return json.dumps(encode(value, where=where), separators=(",", ":"), sort_keys=True)


def loads(text: str) -> Any:
    return decode(json.loads(text))


def checksum(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


# --- encoding version 3: msgpack with extension types (msgspec) ------------------------------

#: the extension codes of encoding version 3 (``msgspec.msgpack.Ext``); the payload of each
#: is msgpack (an array) or raw bytes, as listed in the module documentation
EXT_TUPLE = 1
EXT_TUPLES = 2
EXT_SET = 3
EXT_FROZENSET = 4
EXT_BYTEARRAY = 5
EXT_DICT = 6
EXT_ROW = 7
EXT_TUPLE_ROW = 8
EXT_TUPLE_ROWS = 9
EXT_DECIMAL = 10
EXT_DATETIME = 11
EXT_DATE = 12
EXT_TIME = 13
EXT_TIMEDELTA = 14
EXT_NUMPY = 15
EXT_BIG_INT = 16
EXT_NAMES = {
    EXT_TUPLE: "tuple",
    EXT_TUPLES: "tuples",
    EXT_SET: "set",
    EXT_FROZENSET: "frozenset",
    EXT_BYTEARRAY: "bytearray",
    EXT_DICT: "dict",
    EXT_ROW: "row",
    EXT_TUPLE_ROW: "tuple_row",
    EXT_TUPLE_ROWS: "tuple_rows",
    EXT_DECIMAL: "decimal",
    EXT_DATETIME: "datetime",
    EXT_DATE: "date",
    EXT_TIME: "time",
    EXT_TIMEDELTA: "timedelta",
    EXT_NUMPY: "numpy",
    EXT_BIG_INT: "big int",
}
#: the extensions that hold other values (a forged one is searched for the wrong value inside)
_EXT_CONTAINERS = frozenset(
    {EXT_TUPLE, EXT_SET, EXT_FROZENSET, EXT_DICT, EXT_ROW, EXT_TUPLE_ROW, EXT_TUPLE_ROWS}
)

_ENCODER = msgspec.msgpack.Encoder()
_enc = _ENCODER.encode
#: what msgpack holds as it is (ints: those of 64 bits; the fast paths let msgspec check that)
_FAST = (str, int, float, bool, type(None), bytes)
#: the same, ints checked one by one (after an int beyond 64 bits made the fast paths fail)
_STRICT = (str, float, bool, type(None), bytes)
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def pack(value: Any, *, where: str = "state") -> bytes:
    """``value`` as encoding version 3 (msgpack with extension types, written by msgspec);
    ``StateSerializationError`` naming ``where``, the keyed state and the position of a value
    that cannot be written."""
    try:
        try:
            return _enc(_pack(value, _FAST))
        except OverflowError:  # an int beyond 64 bits went through a fast path
            return _enc(_pack(value, _STRICT))
    except _Refused as refused:
        raise StateSerializationError(_refusal(value, refused, where)) from None


def _pack(value: Any, plain: tuple[type, ...]) -> Any:
    kind = type(value)
    if kind is str or kind is float or kind is bool or value is None or kind is bytes:
        return value
    if kind is int:
        if plain is _FAST or _INT_MIN <= value <= _INT_MAX:
            return value
        return msgspec.msgpack.Ext(EXT_BIG_INT, value.to_bytes(_int_size(value), signed=True))
    if kind is list:
        return _pack_list(value, plain)
    if kind is tuple:
        if all(type(v) in plain for v in value):
            return msgspec.msgpack.Ext(EXT_TUPLE, _enc(value))
        return msgspec.msgpack.Ext(EXT_TUPLE, _enc([_pack(v, plain) for v in value]))
    if kind is dict:
        return _pack_dict(value, plain)
    return _pack_other(value, plain)


def _int_size(value: int) -> int:
    return (value + (value < 0)).bit_length() // 8 + 1


def _pack_list(value: list[Any], plain: tuple[type, ...]) -> Any:
    if all(type(v) in plain for v in value):
        return value
    if all(type(v) is tuple and all(type(x) in plain for x in v) for v in value):
        return msgspec.msgpack.Ext(EXT_TUPLES, _enc(value))  # msgspec writes tuples as arrays
    first = value[0]
    if isinstance(first, TupleRow) and first.__fields__ and len(value) > 1:
        row = type(first)
        if all(type(v) is row for v in value):  # a buffer of Spark rows: names once
            if all(type(x) in plain for v in value for x in v):
                rows: list[Any] = list(value)
            else:
                rows = [[_pack(x, plain) for x in v] for v in value]
            return msgspec.msgpack.Ext(EXT_TUPLE_ROWS, _enc([list(row.__fields__), *rows]))
    return [_pack(v, plain) for v in value]


def _pack_dict(value: dict[Any, Any], plain: tuple[type, ...]) -> Any:
    if all(type(k) is str for k in value):
        return {k: v if type(v) in plain else _pack(v, plain) for k, v in value.items()}
    pairs = [x for k, v in value.items() for x in (_pack(k, plain), _pack(v, plain))]
    return msgspec.msgpack.Ext(EXT_DICT, _enc(pairs))


def _pack_other(value: Any, plain: tuple[type, ...]) -> Any:
    Ext = msgspec.msgpack.Ext
    kind = type(value)
    if kind is decimal.Decimal:
        return Ext(EXT_DECIMAL, str(value).encode())
    if kind is dt.datetime or kind is dt.time:
        tz = value.tzinfo
        zone = {} if tz is None else _zone(value, tz)
        text = value.replace(tzinfo=None).isoformat() if "zone" in zone else value.isoformat()
        payload = [text, zone.get("zone"), zone.get("name"), value.fold]
        return Ext(EXT_DATETIME if kind is dt.datetime else EXT_TIME, _enc(payload))
    if kind is dt.date:
        return Ext(EXT_DATE, value.isoformat().encode())
    if kind is dt.timedelta:
        return Ext(EXT_TIMEDELTA, _enc([value.days, value.seconds, value.microseconds]))
    if kind.__module__ == "numpy":
        return _pack_numpy(value, plain)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return _pack(int(value), plain)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, tuple):
        fields = getattr(value, "__fields__", None)  # TupleRow, or a pyspark.sql.Row
        if fields is not None and all(type(name) is str for name in fields):
            items = [_pack(v, plain) for v in value]
            return Ext(EXT_TUPLE_ROW, _enc([list(fields), *items]))
        return Ext(EXT_TUPLE, _enc([_pack(v, plain) for v in value]))
    if isinstance(value, list):
        return [_pack(v, plain) for v in value]
    if isinstance(value, set | frozenset):
        code = EXT_SET if isinstance(value, set) else EXT_FROZENSET
        return Ext(code, _enc([_pack(v, plain) for v in value]))
    if isinstance(value, bytearray):
        return Ext(EXT_BYTEARRAY, bytes(value))
    if isinstance(value, Row):
        items = [_pack(v, plain) for v in value]
        payload = [value.get_row_kind().value, value.get_field_names(), *items]
        return Ext(EXT_ROW, _enc(payload))
    if isinstance(value, dict):
        return _pack_dict(dict(value), plain)
    return _encode_other(value)  # refuses it, saying why


def _pack_numpy(value: Any, plain: tuple[type, ...]) -> Any:
    import numpy as np  # noqa: PLC0415 - only when a NumPy value is there (so NumPy is loaded)

    if not isinstance(value, np.generic) or value.dtype.kind in "OV":
        raise _Refused(value, "only NumPy scalars of a plain dtype go into a checkpoint")
    dtype = value.dtype
    if dtype.kind in "US":  # str()/bytes() keep trailing NULs, which .item() drops
        item: Any = str(value) if dtype.kind == "U" else bytes(value)  # type: ignore[call-overload]
    elif dtype.kind in _NUMPY_ITEMS or (dtype.kind == "f" and dtype.itemsize <= 8):
        item = _pack(value.item(), plain)
    else:
        return msgspec.msgpack.Ext(EXT_NUMPY, _enc([dtype.str, 1, value.tobytes()]))
    return msgspec.msgpack.Ext(EXT_NUMPY, _enc([dtype.str, 0, item]))


def _listed(data: memoryview, what: str) -> list[Any]:
    items = _DECODER.decode(data)
    if type(items) is not list:
        raise TypeError(f"the payload of a {what} is not an array")
    return items


def _ext_hook(code: int, data: memoryview) -> Any:
    """An extension value of encoding version 3 (nested ones are decoded by the same
    decoder); anything ``pack`` cannot have written raises."""
    if code == EXT_TUPLE:
        return tuple(_listed(data, "tuple"))
    if code == EXT_TUPLES:
        rows = _listed(data, "tuples")
        if not all(type(row) is list for row in rows):
            raise TypeError("the payload of tuples is not an array of arrays")
        return [tuple(row) for row in rows]
    if code == EXT_SET:
        return set(_listed(data, "set"))
    if code == EXT_FROZENSET:
        return frozenset(_listed(data, "frozenset"))
    if code == EXT_BYTEARRAY:
        return bytearray(data)
    if code == EXT_DICT:
        pairs = _listed(data, "dict")
        if len(pairs) % 2:
            raise ValueError("a dict's payload holds keys and values in pairs")
        items = iter(pairs)
        return dict(zip(items, items, strict=True))
    if code == EXT_ROW:
        payload = _listed(data, "row")
        if len(payload) < 2:
            raise ValueError("a row's payload is [kind, names, values...]")
        kind, fields, values = payload[0], payload[1], payload[2:]
        wrong = _row_problem(fields, kind, len(values))
        if wrong is not None:
            raise ValueError(wrong[1])
        row = Row(*values)
        row.set_field_names(fields)
        row.set_row_kind(RowKind(kind))
        return row
    if code == EXT_TUPLE_ROW:
        payload = _listed(data, "tuple_row")
        if not payload:
            raise ValueError("a row's payload is [names, values...]")
        return _row_class(payload[0], len(payload) - 1).make(payload[1:])
    if code == EXT_TUPLE_ROWS:
        payload = _listed(data, "tuple_rows")
        fields = payload[0] if payload else None
        if type(fields) is not list or not fields:
            raise ValueError("rows written together have field names")
        make = _row_class(fields, len(fields)).make
        out = []
        for values in payload[1:]:
            if type(values) is not list or len(values) != len(fields):
                raise ValueError(f"a row of fields {fields} has {len(fields)} values")
            out.append(make(values))
        return out
    return _ext_leaf(code, data)


def _ext_leaf(code: int, data: memoryview) -> Any:
    if code == EXT_DECIMAL:
        return decimal.Decimal(bytes(data).decode("ascii"))
    if code == EXT_DATE:
        return dt.date.fromisoformat(bytes(data).decode("ascii"))
    if code in (EXT_DATETIME, EXT_TIME):
        payload = _listed(data, EXT_NAMES[code])
        if len(payload) != 4 or type(payload[0]) is not str:
            raise ValueError(f"a {EXT_NAMES[code]}'s payload is [text, zone, name, fold]")
        text, zone, name, fold = payload
        spec = {"fold": fold} | ({} if zone is None else {"zone": zone})
        spec |= {} if name is None else {"name": name}
        return _decode_leaf(EXT_NAMES[code], spec, text)
    if code == EXT_TIMEDELTA:
        return _decode_leaf("timedelta", {}, _listed(data, "timedelta"))
    if code == EXT_NUMPY:
        return _unpack_numpy(_listed(data, "numpy"))
    if code == EXT_BIG_INT:
        if not data:
            raise ValueError("a big int has at least one byte")
        return int.from_bytes(data, signed=True)
    raise ValueError(f"unknown extension code {code}")


def _unpack_numpy(payload: list[Any]) -> Any:

    if len(payload) != 3 or type(payload[0]) is not str or payload[1] not in (0, 1):
        raise ValueError("a NumPy value's payload is [dtype, 0 or 1, value or bytes]")
    spec, raw, item = payload
    if raw:
        if type(item) is not bytes:
            raise TypeError("a NumPy value's bytes are msgpack bin")
        return _decode_numpy(
            {"t": spec, "b": base64.b64encode(item).decode("ascii")}
        )  # checks dtype and size
    return _decode_numpy({"t": spec, "v": item})


_DECODER = msgspec.msgpack.Decoder(ext_hook=_ext_hook)


class _RawExt:
    """An extension value left undecoded (the slow path that looks for a forged one)."""

    __slots__ = ("code", "data")

    def __init__(self, code: int, data: memoryview) -> None:
        self.code = code
        self.data = bytes(data)


_RAW_DECODER = msgspec.msgpack.Decoder(ext_hook=_RawExt)


def unpack(data: bytes, *, where: str = "state") -> Any:
    """The value ``pack`` wrote; ``StateFormatError`` (naming ``where`` and the position in
    the value) for anything it cannot have written."""
    try:
        return _DECODER.decode(data)
    except RecursionError:
        raise StateFormatError(f"{where} is nested too deeply to be checkpoint data") from None
    except (msgspec.MsgspecError, KeyError, TypeError, ValueError, ArithmeticError) as error:
        try:
            raw = _RAW_DECODER.decode(data)
        except (msgspec.MsgspecError, RecursionError) as broken:
            raise StateFormatError(f"{where} is not msgpack data: {broken}") from None
        raise _format_error(where, error, lambda: _ext_problem(raw, "")) from None


def _ext_problem(data: Any, at: str) -> tuple[str, str] | None:
    """Where ``unpack`` fails in ``data`` (decoded with extensions left raw) and why."""
    if isinstance(data, list):
        items: Any = enumerate(data)
    elif isinstance(data, dict):
        items = data.items()
    elif isinstance(data, _RawExt):
        name = EXT_NAMES.get(data.code)
        if name is None:
            return at, (
                f"unknown extension code {data.code} (ckptsim writes only codes 1 to "
                f"{len(EXT_NAMES)}: a checkpoint holds data, never pickled objects)"
            )
        try:
            _ext_hook(data.code, memoryview(data.data))
        except (msgspec.MsgspecError, KeyError, TypeError, ValueError, ArithmeticError) as error:
            if data.code in _EXT_CONTAINERS:
                try:
                    inside = _ext_problem(_RAW_DECODER.decode(data.data), f"{at}<{name}>")
                except msgspec.MsgspecError:
                    inside = None
                if inside is not None:
                    return inside
            return at, f"not a {name} ({type(error).__name__}: {error})"
        return None
    else:
        return None
    for key, item in items:
        found = _ext_problem(item, f"{at}[{key!r}]")
        if found:
            return found
    return None
