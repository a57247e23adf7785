"""State as data: every supported value goes into JSON and comes back as it went in (the
version-1 values, and the Spark and PyFlink values of version 2: Decimal, datetime, rows, NumPy
scalars ...); anything else is a clear error naming where it was found."""

from __future__ import annotations

import copy
import datetime as dt
import decimal
import json
import math
import pickle
import tempfile
import zoneinfo
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

from runtime import serde
from runtime.checkpoint import (
    CheckpointProperties,
    CompletedCheckpoint,
    ExternalizedCheckpointRetention,
    TaskId,
)
from runtime.network import Buffer
from runtime.row import Row, TupleRow, row_class
from runtime.snapshot import TaskSnapshot
from runtime.storage import FileSystemCheckpointStorage, load_checkpoint

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


# --- every value a Spark or PyFlink user brings (encoding version 2) ---------------------------

NY = zoneinfo.ZoneInfo("America/New_York")
JST = dt.timezone(dt.timedelta(hours=9), "JST")
UserRow = row_class(["user", "amount", "at"])

TYPED: list[Any] = [
    decimal.Decimal("1.20"),  # precision kept: not 1.2
    decimal.Decimal("-0"),
    decimal.Decimal("1E+3"),
    decimal.Decimal("12345678901234567890.123456789012345678"),
    decimal.Decimal("Infinity"),
    dt.datetime(2024, 5, 1, 12, 30, 7, 250_001),
    dt.datetime(2024, 5, 1, 12, 30, 7, 1, tzinfo=dt.UTC),
    dt.datetime(2024, 11, 3, 1, 30, tzinfo=NY),  # ambiguous: the first 1:30 (EDT)
    dt.datetime(2024, 11, 3, 1, 30, tzinfo=NY, fold=1),  # the second one (EST)
    dt.datetime(1, 1, 1, tzinfo=zoneinfo.ZoneInfo("Asia/Tokyo")),  # no arithmetic: no overflow
    dt.datetime(2024, 1, 1, tzinfo=JST),  # a fixed offset with its own name
    dt.datetime(2024, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=-3, seconds=-7))),
    dt.date(2024, 2, 29),
    dt.time(23, 59, 59, 999_999),
    dt.time(8, 0, tzinfo=JST),
    dt.time(8, 0, tzinfo=NY, fold=1),
    dt.timedelta(days=-3, seconds=5, microseconds=7),
    bytearray(b"\x00mutable"),
    UserRow.make((7, decimal.Decimal("9.99"), dt.datetime(2024, 1, 1, tzinfo=NY))),
    TupleRow(a=1, b=(2, 3)),
    TupleRow(),
    [UserRow.make((1, 2.5, None)), UserRow.make((2, 3.5, "x"))],  # a buffer of Spark rows
    [UserRow.make((1, decimal.Decimal("2.50"), None)), UserRow.make((2, None, None))],
    {dt.date(2024, 1, 1): decimal.Decimal("3.10"), decimal.Decimal("2"): {dt.timedelta(1)}},
    np.int64(-(2**63)),
    np.uint64(2**64 - 1),
    np.float32(1.1),
    np.float64("nan"),
    np.float16(-0.0),
    np.bool_(True),
    np.datetime64("2024-01-01T12:00:00.123456789", "ns"),
    np.timedelta64(5, "s"),
    np.complex128(1 - 2j),
    np.str_("numpy text"),
    np.str_(""),  # dtype <U0
    np.bytes_(b"ab\x00"),  # its NUL too (.item() drops it)
    np.longdouble("1.1"),
]


def same(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same value of the same type, all the way down: NaN equals NaN,
    -0.0 is not 0.0, a Decimal keeps its digits, a datetime its wall clock, zone and fold, a
    row its names and kind, a NumPy scalar its dtype and bytes."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, decimal.Decimal):
        return str(a) == str(b)
    if isinstance(a, dt.datetime | dt.time):
        return (
            a.isoformat() == b.isoformat()
            and a.fold == b.fold
            and getattr(a.tzinfo, "key", None) == getattr(b.tzinfo, "key", None)
            and (a.tzinfo is None or a.tzname() == b.tzname())
        )
    if isinstance(a, np.generic):
        if a.dtype != b.dtype:
            return False
        if a.dtype.kind in "fc" and np.isnan(a) and np.isnan(b):
            return True
        return bool(a.tobytes() == b.tobytes())
    if isinstance(a, Row):
        return (
            a.get_row_kind() == b.get_row_kind()
            and a.get_field_names() == b.get_field_names()
            and same(list(a), list(b))
        )
    if isinstance(a, list | tuple):
        return (
            getattr(a, "__fields__", None) == getattr(b, "__fields__", None)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            any(same(k, k2) and same(v, v2) for k2, v2 in b.items()) for k, v in a.items()
        )
    if isinstance(a, set | frozenset):
        return len(a) == len(b) and all(any(same(x, y) for y in b) for x in a)
    return bool(a == b)


@pytest.mark.parametrize("value", TYPED, ids=repr)
def test_spark_and_pyflink_values_come_back_exactly(value: Any) -> None:
    text = serde.dumps(value)
    json.loads(text)  # plain JSON
    back = serde.loads(text)
    assert same(back, value), (back, value)


def test_a_pyspark_row_comes_back_as_a_tuple_row_with_its_names() -> None:
    from pyspark.sql import Row as SparkRow  # noqa: PLC0415

    back = serde.loads(serde.dumps([SparkRow(user=1, at=dt.date(2024, 1, 2))]))
    assert isinstance(back[0], TupleRow)
    assert back[0].user == 1 and back[0]["at"] == dt.date(2024, 1, 2)
    assert back == [(1, dt.date(2024, 1, 2))]


def test_a_tuple_row_is_a_tuple_with_names() -> None:
    row = UserRow(1, decimal.Decimal("2.50"), None)
    assert tuple(row) == (1, decimal.Decimal("2.50"), None) and hash(row) == hash(tuple(row))
    equal_to_its_tuple = row == (1, decimal.Decimal("2.50"), None)
    assert equal_to_its_tuple
    assert row[0] == row.user == row["user"] == 1
    assert row[1:] == (decimal.Decimal("2.50"), None)
    assert "amount" in row and 1 not in row  # names, as PySpark's Row
    assert (
        row.asDict() == row.as_dict() == {"user": 1, "amount": decimal.Decimal("2.50"), "at": None}
    )
    user, amount, at = row
    assert (user, amount, at) == (1, decimal.Decimal("2.50"), None)
    assert repr(row) == "Row(user=1, amount=Decimal('2.50'), at=None)"
    assert TupleRow(user=1, amount=2).__fields__ == ("user", "amount")
    assert type(TupleRow(user=1, amount=2)) is type(TupleRow(user=3, amount=4))
    with pytest.raises(AttributeError, match="no field 'missing'"):
        row.missing  # noqa: B018
    with pytest.raises(KeyError):
        row["missing"]
    with pytest.raises(ValueError, match="takes 3 values"):
        UserRow(1, 2)
    assert pickle.loads(pickle.dumps(row)) == row
    assert copy.deepcopy(row).__fields__ == row.__fields__


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"$ckptsim": "decimal", "v": "one"}, "not a decimal"),
        ({"$ckptsim": "datetime", "v": "2024-13-01"}, "not a datetime"),
        ({"$ckptsim": "datetime", "v": "2024-01-01", "zone": "America"}, "no time zone"),
        ({"$ckptsim": "datetime", "v": "2024-01-01", "zone": "../../etc/passwd"}, "datetime"),
        ({"$ckptsim": "timedelta", "v": [1, 2]}, "days, seconds, microseconds"),
        ({"$ckptsim": "numpy", "t": "O", "v": 1}, "not data"),
        ({"$ckptsim": "numpy", "t": "<i8", "b": "AAAA"}, "written as bytes|has 8 bytes"),
        ({"$ckptsim": "tuple_row", "f": ["a"], "v": [1, 2]}, "field names are 2 strings"),
        ({"$ckptsim": "tuple_rows", "f": ["a"], "v": [[1, 2]]}, "has 1 values"),
    ],
)
def test_typed_data_ckptsim_did_not_write_is_refused_saying_where(value: Any, message: str) -> None:
    with pytest.raises(serde.StateFormatError, match=message):
        serde.decode({"state": [value]}, where="the state")


def test_a_refused_value_is_named_with_its_operator_keyed_state_and_position() -> None:
    class Point:
        pass

    snapshot = {
        "max_parallelism": 128,
        "states": {
            "total": {"kind": "value", "key_groups": {"3": {"keys": ["u"], "values": [Point()]}}}
        },
    }
    with pytest.raises(serde.StateSerializationError) as caught:
        serde.encode(snapshot, where="state of operator 'Sum' (sum-1)")
    text = str(caught.value)
    assert "cannot write a Point into a checkpoint (state of operator 'Sum' (sum-1)), " in text
    assert "keyed state 'total' at ['states']['total']['key_groups']['3']['values'][0]" in text


def test_a_datetime_with_a_time_zone_ckptsim_cannot_name_is_refused() -> None:
    class Odd(dt.tzinfo):
        def utcoffset(self, when: Any) -> dt.timedelta:
            return dt.timedelta(0)

        def dst(self, when: Any) -> dt.timedelta:
            return dt.timedelta(0)

        def tzname(self, when: Any) -> str:
            return "odd"

    with pytest.raises(serde.StateSerializationError, match=r"its time zone is a .*Odd"):
        serde.dumps([dt.datetime(2024, 1, 1, tzinfo=Odd())])


# --- the property ------------------------------------------------------------------------------

_HASHABLE_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**200), max_value=2**200)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=8)
    | st.decimals(allow_nan=False, places=None)
    | st.datetimes(timezones=st.none() | st.timezones() | st.just(JST))
    | st.dates()
    | st.times(timezones=st.none() | st.just(dt.UTC) | st.just(JST))
    | st.timedeltas()
)
_NUMPY = st.sampled_from(
    [
        "bool",
        "int8",
        "int64",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex128",
        "datetime64[ns]",
        "timedelta64[s]",
        "longdouble",
        "U3",
        "S2",
    ]
).flatmap(lambda name: npst.from_dtype(np.dtype(name)))
_LEAVES = (
    _HASHABLE_LEAVES
    | st.floats()  # NaN and infinities
    | st.decimals(places=None)  # NaN, sNaN, infinities
    | st.binary(max_size=8).map(bytearray)
    | _NUMPY
)
_ROW = row_class(["k", "v"])


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = _HASHABLE_LEAVES | st.tuples(_HASHABLE_LEAVES, _HASHABLE_LEAVES)
    return (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=4).map(tuple)
        | st.dictionaries(keys, children, max_size=4)
        | st.dictionaries(st.text(max_size=4), children, max_size=4)
        | st.sets(keys, max_size=4)
        | st.frozensets(_HASHABLE_LEAVES, max_size=3)
        | st.tuples(children, children).map(_ROW.make)
        | st.lists(st.tuples(children, children).map(_ROW.make), min_size=2, max_size=3)
        | st.builds(TupleRow, a=children)
        | st.lists(children, max_size=3).map(lambda values: Row(*values))
        | st.tuples(children, children).map(lambda kv: Row(k=kv[0], v=kv[1]))
    )


SUPPORTED_VALUES = st.recursive(_LEAVES, _containers, max_leaves=12)


@given(SUPPORTED_VALUES)
def test_property_every_supported_value_round_trips_exactly_through_a_checkpoint(
    value: Any,
) -> None:
    """Property: any value built of the supported types (None, bool, big ints, floats with
    NaN and infinities, str, bytes, bytearray, Decimal, naive and aware datetime, date, time,
    timedelta, NumPy scalars, lists, tuples, dicts with any hashable keys, sets, frozensets,
    PySpark-style TupleRows and PyFlink Rows, nested) comes back from its checkpoint
    encoding as the same value of the same type, all the way down."""
    text = serde.dumps(value, where="a generated value")
    assert same(serde.loads(text), value)


@settings(max_examples=40, deadline=None)
@given(SUPPORTED_VALUES, st.booleans())
def test_property_every_supported_value_round_trips_through_state_channels_and_savepoints(
    value: Any, savepoint: bool
) -> None:
    """Property: the same values written by the checkpoint storage as a task's keyed state and
    operator state and as in-flight records of its input and output channels, in a
    checkpoint or a savepoint, and read back by ``load_checkpoint`` (what a restore reads),
    come back the same, of the same types."""
    with tempfile.TemporaryDirectory(prefix="ckptsim-serde-") as folder:
        storage = FileSystemCheckpointStorage(folder, "job", job_name="property")
        props = (
            CheckpointProperties.for_savepoint(forced=True)
            if savepoint
            else CheckpointProperties.for_checkpoint(
                ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
            )
        )
        location = storage.initialize_location(1, props, None)
        task = TaskId("reduce-2", 0)
        in_flight = Buffer(records=[value, (value,)], size=2)
        snapshot = TaskSnapshot(
            checkpoint_id=1,
            task=task,
            operator_states={"per-user": {"keyed": {"total": [value]}, "list": [value]}},
            input_channels={0: [in_flight]},
            output_channels={1: [Buffer(records=[value], size=1)]},
        )
        handle = storage.write_task_state(location, snapshot, {"per-user": "Per user"})
        storage.finalize(
            CompletedCheckpoint(
                checkpoint_id=1,
                timestamp=0,
                completion_timestamp=0,
                props=props,
                task_states={task: handle},
            )
        )
        assert location is not None
        loaded = load_checkpoint(location)
        assert loaded.is_savepoint is savepoint
        state = loaded.tasks[task]
        assert same(state.operator_states["per-user"], snapshot.operator_states["per-user"])
        (back,) = state.input_channels[0]
        assert same(list(back.records), [value, (value,)])
        (out,) = state.output_channels[1]
        assert same(list(out.records), [value])


# --- encoding version 3: msgpack with extension types ------------------------------------------


@pytest.mark.parametrize("value", ROUND_TRIPS + TYPED, ids=repr)
def test_version_3_values_come_back_exactly(value: Any) -> None:
    data = serde.pack(value)
    msgspec.msgpack.decode(data, ext_hook=lambda code, payload: None)  # plain msgpack
    assert same(serde.unpack(data), value)


@pytest.mark.parametrize(
    "value",
    [2**64 - 1, 2**64, -(2**63), -(2**63) - 1, -(2**700), [1, 2**70], {"a": (2**65,)}, {2**90: 1}],
)
def test_version_3_ints_of_any_size_come_back(value: Any) -> None:
    assert same(serde.unpack(serde.pack(value)), value)


@given(SUPPORTED_VALUES)
def test_property_every_supported_value_round_trips_exactly_through_version_3(
    value: Any,
) -> None:
    """Property: the values of the version-2 property come back the same through encoding
    version 3 (what checkpoints write)."""
    assert same(serde.unpack(serde.pack(value, where="a generated value")), value)


def test_version_3_refuses_a_value_naming_operator_keyed_state_and_position() -> None:
    class Point:
        pass

    snapshot = {"states": {"total": {"key_groups": {"3": {"values": [(1, Point())]}}}}}
    with pytest.raises(serde.StateSerializationError) as caught:
        serde.pack(snapshot, where="state of operator 'Sum' (sum-1)")
    text = str(caught.value)
    assert "cannot write a Point into a checkpoint (state of operator 'Sum' (sum-1)), " in text
    assert "keyed state 'total' at ['states']['total']['key_groups']['3']['values'][0][1]" in text


def _ext(code: int, payload: Any) -> msgspec.msgpack.Ext:
    data = payload if isinstance(payload, bytes) else msgspec.msgpack.encode(payload)
    return msgspec.msgpack.Ext(code, data)


@pytest.mark.parametrize(
    ("forged", "message"),
    [
        ({"a": [1, _ext(99, b"")]}, r"at \['a'\]\[1\]: unknown extension code 99"),
        ({"a": _ext(serde.EXT_DECIMAL, b"one")}, r"at \['a'\]: not a decimal"),
        ([_ext(serde.EXT_DATETIME, ["2024-13-01", None, None, 0])], r"at \[0\]: not a datetime"),
        ([_ext(serde.EXT_DATETIME, ["2024-01-01", "America", None, 0])], "no time zone"),
        ([_ext(serde.EXT_TIMEDELTA, [1, 2])], "days, seconds, microseconds"),
        ([_ext(serde.EXT_NUMPY, ["O", 0, 1])], "not data"),
        ([_ext(serde.EXT_NUMPY, ["<i8", 1, b"\x00"])], "has 8 bytes"),
        ([_ext(serde.EXT_TUPLE_ROW, [["a"], 1, 2])], "field names are 2 strings"),
        ([_ext(serde.EXT_TUPLE_ROWS, [["a"], [1, 2]])], "has 1 values"),
        ([_ext(serde.EXT_ROW, [9, None, 1])], "a row's kind is 0 to"),
        ([_ext(serde.EXT_SET, [[1]])], r"at \[0\]: not a set \(TypeError: unhashable"),
        (
            [_ext(serde.EXT_TUPLE, [1, _ext(serde.EXT_DATE, b"never")])],
            r"at \[0\]<tuple>\[1\]: not a date",
        ),
        ([_ext(serde.EXT_TUPLE, {"not": "an array"})], "not a tuple"),
        ([_ext(serde.EXT_DICT, [1])], "in pairs"),
    ],
)
def test_version_3_data_ckptsim_did_not_write_is_refused_saying_where(
    forged: Any, message: str
) -> None:
    with pytest.raises(serde.StateFormatError, match=message) as caught:
        serde.unpack(msgspec.msgpack.encode(forged), where="the state")
    assert str(caught.value).startswith("the state")
    assert "\n" not in str(caught.value)


def test_version_3_bytes_that_are_not_msgpack_are_refused() -> None:
    with pytest.raises(serde.StateFormatError, match="the state is not msgpack data"):
        serde.unpack(b"\xc1", where="the state")
