"""State as data: Python values to JSON-safe structures and back, without pickle.

A checkpoint is data, not code: operator and keyed state, source positions and in-flight
records are written as JSON. Supported: None, bool, int, float, str, bytes, list, tuple, dict
(any supported keys), set, frozenset and ``runtime.row.Row`` (PyFlink's row record: its values,
field names and kind). Tuples, bytes, sets, rows and non-string dict keys are tagged so they
come back as they went in.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from typing import Any

from runtime.row import Row, RowKind

_TAG = "$ckptsim"


class StateSerializationError(TypeError):
    """A value cannot go into a checkpoint (ckptsim writes JSON data, never pickle)."""


_PLAIN = (str, int, bool, type(None))


def encode(value: Any, *, where: str = "state") -> Any:
    """A JSON-safe structure for ``value``."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is tuple:
        items = value
        if all(type(v) in _PLAIN for v in items):
            return {_TAG: "tuple", "v": list(items)}
        return {_TAG: "tuple", "v": [encode(v, where=where) for v in items]}
    if kind is list:
        plain = _PLAIN
        if all(type(v) in plain for v in value):
            return list(value)
        if all(type(v) is tuple and all(type(x) in plain for x in v) for v in value):
            # a column of flat tuples: json writes tuples as arrays at C speed
            return {_TAG: "tuples", "v": list(value)}
        return [encode(v, where=where) for v in value]
    if kind is float:
        if math.isnan(value) or math.isinf(value):
            return {_TAG: "float", "v": repr(value)}
        return value
    return _encode_other(value, where)


def _encode_other(value: Any, where: str) -> Any:
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return encode(float(value), where=where)
    if isinstance(value, tuple):
        return {_TAG: "tuple", "v": [encode(v, where=where) for v in value]}
    if isinstance(value, list):
        return [encode(v, where=where) for v in value]
    if isinstance(value, (set, frozenset)):
        kind = "set" if isinstance(value, set) else "frozenset"
        items = [encode(v, where=where) for v in value]
        return {_TAG: kind, "v": sorted(items, key=lambda x: json.dumps(x, sort_keys=True))}
    if isinstance(value, bytes):
        return {_TAG: "bytes", "v": base64.b64encode(value).decode("ascii")}
    if isinstance(value, Row):
        return {
            _TAG: "row",
            "v": [encode(v, where=where) for v in value],
            "f": value.get_field_names(),
            "k": value.get_row_kind().value,
        }
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and _TAG not in value:
            return {k: encode(v, where=where) for k, v in value.items()}
        return {
            _TAG: "dict",
            "v": [[encode(k, where=where), encode(v, where=where)] for k, v in value.items()],
        }
    raise StateSerializationError(
        f"cannot write a {type(value).__name__} into a checkpoint ({where}): checkpoints are "
        "JSON data, not pickle. Keep state and records as None, bool, int, float, str, bytes, "
        "list, tuple, dict, set or Row, or convert the value (e.g. a dataclass with "
        "dataclasses.asdict) before storing it."
    )


class StateFormatError(ValueError):
    """Checkpoint data ckptsim did not write (an unknown tag, a wrong shape, a value a set or a
    dict key cannot hold, nesting too deep); the message says where in the value."""


#: every tag ``encode`` writes; anything else in a checkpoint was not written by ckptsim
TAGS = ("tuple", "tuples", "set", "frozenset", "bytes", "dict", "float", "row")
_FLOATS = frozenset({"nan", "inf", "-inf"})


def decode(data: Any, *, where: str = "state") -> Any:
    """The value ``encode`` wrote; ``StateFormatError`` (naming ``where`` and the position in
    the value) for anything it cannot have written."""
    try:
        return _decode(data)
    except RecursionError:
        raise StateFormatError(f"{where} is nested too deeply to be checkpoint data") from None
    except (KeyError, TypeError, ValueError) as error:
        try:
            problem = _problem(data, "")
        except RecursionError:
            problem = None
        at, why = problem or ("", f"{type(error).__name__}: {error}")
        raise StateFormatError(f"{where}{' at ' + at if at else ''}: {why}") from None


def _decode(data: Any) -> Any:
    if isinstance(data, list):
        return [_decode(v) for v in data]
    if isinstance(data, dict):
        tag = data.get(_TAG)
        if tag is None:
            return {k: _decode(v) for k, v in data.items()}
        payload = data["v"]
        if tag == "float":
            if payload not in _FLOATS:
                raise ValueError(f"not a float: {payload!r}")
            return float(payload)
        if tag == "bytes":
            return base64.b64decode(payload, validate=True)
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
        raise ValueError(f"unknown tag {tag!r}")
    return data


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
    if "v" not in data:
        return at, f"a {tag!r} tag without its value 'v'"
    payload = data["v"]
    inside = f"{at}['v']"
    if tag == "float":
        return None if payload in _FLOATS else (inside, f"{payload!r} is not nan, inf or -inf")
    if tag == "bytes":
        try:
            base64.b64decode(payload, validate=True)
        except (TypeError, ValueError):
            return inside, "the bytes are not base64 text"
        return None
    if type(payload) is not list:
        return inside, f"the value of a {tag!r} tag is a {type(payload).__name__}, not a list"
    if tag == "row":
        wrong = _row_problem(data.get("f"), data.get("k", 0), len(payload))
        if wrong is not None:
            return f"{at}{wrong[0]}", wrong[1]
    for i, item in enumerate(payload):
        if tag in ("tuples", "dict") and (
            type(item) is not list or (tag == "dict" and len(item) != 2)
        ):
            return f"{inside}[{i}]", "not a [key, value] pair" if tag == "dict" else "not a list"
        if tag == "tuples":
            continue
        for member in item if tag == "dict" else [item]:
            found = _problem(member, f"{inside}[{i}]")
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
