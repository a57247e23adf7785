"""State as data: every supported value goes into JSON and comes back as it went in; anything
else is a clear error naming where it was found."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from runtime import serde

ROUND_TRIPS: list[Any] = [
    None,
    True,
    0,
    -(2**70),
    1.5,
    -0.0,
    "text",
    "",
    b"\x00\xffbytes",
    (),
    (1, "a", None, True),
    (1, (2, (3,))),
    [1, "a", None],
    [(1, "a"), (2, "b")],  # a column of flat tuples
    [(1, [2]), (3, [4])],
    [1, (2, 3), [4]],
    {"a": 1, "b": [2, 3]},
    {1: "int key", (2, "t"): "tuple key", None: "none key"},
    {"$ckptsim": "a key that looks like the tag"},
    {1, 2, 3},
    frozenset({"x", "y"}),
    {"nested": [{"set": {(1, 2)}}, frozenset({b"b"})]},
    math.inf,
    -math.inf,
]


@pytest.mark.parametrize("value", ROUND_TRIPS, ids=repr)
def test_supported_values_come_back_as_they_went_in(value: Any) -> None:
    text = serde.dumps(value)
    json.loads(text)  # plain JSON
    back = serde.loads(text)
    assert back == value
    assert type(back) is type(value)
    if isinstance(value, list | tuple | dict):
        assert repr(back) == repr(value)  # element types too (tuples stay tuples, 1 stays 1)


def test_nan_comes_back_as_nan() -> None:
    assert math.isnan(serde.loads(serde.dumps(math.nan)))


def test_bool_and_int_stay_apart() -> None:
    back = serde.loads(serde.dumps([True, 1, (False, 0)]))
    assert [type(x) for x in back] == [bool, int, tuple]
    assert [type(x) for x in back[2]] == [bool, int]


def test_sets_encode_the_same_whatever_their_iteration_order() -> None:
    a = {"pear", "apple", "fig", 3, (1, 2)}
    b = set(reversed(list(a)))
    assert serde.dumps(a) == serde.dumps(b)


def test_a_value_json_cannot_hold_is_an_error_naming_where_and_how_to_fix_it() -> None:
    class Point:
        pass

    with pytest.raises(serde.StateSerializationError) as caught:
        serde.dumps({"p": [Point()]}, where="state of operator 'reduce'")
    text = str(caught.value)
    assert "cannot write a Point into a checkpoint (state of operator 'reduce')" in text
    assert "dataclasses.asdict" in text


def test_data_with_an_unknown_tag_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown tag 'pickle'"):
        serde.decode({"$ckptsim": "pickle", "v": "..."})


def test_checksum_is_a_labelled_sha256() -> None:
    digest = serde.checksum(b"abc")
    assert digest == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
