"""State as data: Python values to JSON-safe structures and back, without pickle.

A checkpoint is data, not code: operator and keyed state, source positions and in-flight
records are written as JSON. Supported: None, bool, int, float, str, bytes, list, tuple, dict
(any supported keys), set and frozenset. Tuples, bytes, sets and non-string dict keys are
tagged so they come back as they went in.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from typing import Any

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
        "list, tuple, dict or set, or convert the value (e.g. a dataclass with "
        "dataclasses.asdict) before storing it."
    )


def decode(data: Any) -> Any:
    if isinstance(data, list):
        return [decode(v) for v in data]
    if isinstance(data, dict):
        tag = data.get(_TAG)
        if tag is None:
            return {k: decode(v) for k, v in data.items()}
        payload = data["v"]
        if tag == "tuple":
            return tuple(decode(v) for v in payload)
        if tag == "tuples":
            return [tuple(v) for v in payload]
        if tag == "set":
            return {decode(v) for v in payload}
        if tag == "frozenset":
            return frozenset(decode(v) for v in payload)
        if tag == "bytes":
            return base64.b64decode(payload)
        if tag == "dict":
            return {decode(k): decode(v) for k, v in payload}
        if tag == "float":
            return float(payload)
        raise ValueError(f"unknown tag {tag!r} in checkpoint data")
    return data


def dumps(value: Any, *, where: str = "state") -> str:
    return json.dumps(encode(value, where=where), separators=(",", ":"), sort_keys=True)


def loads(text: str) -> Any:
    return decode(json.loads(text))


def checksum(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()
