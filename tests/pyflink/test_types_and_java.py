"""Types, rows, and Java's view of values: the numbers here were measured on Flink 2.3's JVM
(Java 17) through PyFlink's gateway."""

from __future__ import annotations

import datetime
import io
import math
import pickle
from decimal import Decimal
from typing import Any

import pytest

from actors.connectors import PrintConnector
from ckptsim.pyflink import _java
from ckptsim.pyflink.common import Row, RowKind, Types
from ckptsim.pyflink.common.typeinfo import (
    LocalTimeTypeInfo,
    collected,
    key_hash,
    key_order,
    printed,
)
from runtime import serde
from runtime.checkpoint import TaskId
from runtime.serde import StateFormatError

# value -> (Double.toString, Float.toString of the value as a float), from Java 17
JAVA_17 = [
    (123456789.0, "1.23456789E8", "1.23456792E8"),
    (1e10, "1.0E10", "1.0E10"),
    (2.0**31, "2.147483648E9", "2.14748365E9"),
    (2.0**60, "1.15292150460684698E18", "1.1529215E18"),
    (100.0, "100.0", "100.0"),
    (12345678.0, "1.2345678E7", "1.2345678E7"),
    (0.1, "0.1", "0.1"),
    (9007199254740992.0, "9.007199254740992E15", "9.0071993E15"),
    (1e17, "1.0E17", "9.9999998E16"),
    (3.4e38, "3.4E38", "3.4E38"),
    (16777217.0, "1.6777217E7", "1.6777216E7"),
    (1e-05, "1.0E-5", "1.0E-5"),
    (0.001, "0.001", "0.001"),
    (0.0001, "1.0E-4", "1.0E-4"),
    (0.3, "0.3", "0.3"),
    (-0.5, "-0.5", "-0.5"),
    (110.1, "110.1", "110.1"),
]


@pytest.mark.parametrize(("value", "double", "float_"), JAVA_17)
def test_floating_point_prints_as_java_17(value: float, double: str, float_: str) -> None:
    assert _java.double_to_string(value) == double
    assert _java.float_to_string(value) == float_


def test_special_floating_point_values() -> None:
    assert _java.double_to_string(math.nan) == "NaN"
    assert _java.double_to_string(-math.inf) == "-Infinity"
    assert _java.double_to_string(-0.0) == "-0.0"
    assert _java.float_to_string(1e39) == "Infinity"  # beyond float's range


def test_hash_codes_as_java() -> None:
    # Row.hashCode: 31 * kind + the fields' deep hash, each non-null field counting 31 + hash
    assert _java.row_hash(0, [97]) == 159  # Row.of("a")
    assert _java.row_hash(0, [None]) == 31  # Row.of(null)
    assert _java.row_hash(0, [97, 98]) == 5058  # Row.of("a", "b")
    assert _java.row_hash(0, [97, None]) == 4929
    assert _java.row_hash(0, [None, 98]) == 1090
    assert _java.row_hash(RowKind.DELETE.value, [97]) == 252
    assert _java.tuple_hash([97, 1]) == 3008  # Tuple2.of("a", 1)
    assert _java.tuple_hash([97, 0, 99]) == 93316  # Tuple3.of("a", null, "c")
    assert _java.double_hash(1.5) == 1073217536
    assert _java.float_hash(1.5) == 1069547520
    assert _java.bytes_hash(b"\x80\x05N.") == -2882458
    assert _java.string_hash("hello") == 99162322


def test_key_hash_is_pyflinks_row_of_the_key() -> None:
    # measured: Row.of(pickled "hello") hashes to -177558165; Row.of("hello") to 99162384
    assert key_hash(None)("hello") == -177558165
    assert key_hash(None)("hello") == 62 + _java.bytes_hash(pickle.dumps("hello", protocol=5))
    assert key_hash(Types.STRING())("hello") == 99162384
    assert key_hash(Types.INT())(7) == 62 + 7
    assert key_hash(Types.LONG())(2**40 + 3) == 62 + _java.long_hash(2**40 + 3)
    assert key_hash(None)(None) == 31  # a None key is a null field
    assert key_hash(Types.ROW([Types.STRING()]))(Row("hello")) == 62 + 99162384


def test_batch_key_order_is_flinks_serialized_key_bytes() -> None:
    # Row(pickled bytes): a header byte, the length, the bytes: shorter pickles first
    words = ["to", "a", "The", "be", "'tis", "And"]
    assert sorted(words, key=key_order(None)) == ["a", "be", "to", "And", "The", "'tis"]
    assert sorted(["b", None, "a"], key=key_order(None)) == ["a", "b", None]  # null: 0x20 header
    # Row(String): StringValue's length + 1 first; chars as 7-bit groups
    assert key_order(Types.STRING())("ab") == b"\x00\x03ab"
    assert key_order(Types.STRING())("é") == b"\x00\x02\xe9\x01"
    # Row(Integer): big-endian two's complement, compared unsigned: negatives after positives
    assert sorted([-1, 2, 0, -5], key=key_order(Types.INT())) == [0, 2, -5, -1]
    assert key_order(Types.TUPLE([Types.INT(), Types.STRING()]))((1, "a")) == (
        b"\x00\x00\x00\x00\x01\x02a"
    )


def test_values_become_what_the_type_makes_them() -> None:
    assert Types.FLOAT().convert(110.1) == 110.0999984741211
    assert Types.DOUBLE().convert(5) == 5.0 and isinstance(Types.DOUBLE().convert(5), float)
    assert Types.INT().convert(True) == 1
    with pytest.raises(TypeError):
        Types.INT().convert(1.5)
    with pytest.raises(OverflowError):
        Types.INT().convert(2**31)
    assert Types.TUPLE([Types.STRING(), Types.FLOAT()]).convert(["a", 0.1]) == (
        "a",
        0.10000000149011612,
    )
    row = Types.ROW([Types.INT(), Types.STRING()]).convert((1, "x"))
    assert isinstance(row, Row) and row.f0 == 1 and row.f1 == "x"
    named = Types.ROW_NAMED(["id", "info"], [Types.INT(), Types.STRING()])
    assert named.convert({"info": "y", "id": 2}) == Row(id=2, info="y")
    assert named.convert(Row(info="z", id=3)).as_dict() == {"id": 3, "info": "z"}
    assert Types.LIST(Types.FLOAT()).convert([0.1]) == [0.10000000149011612]
    assert Types.MAP(Types.STRING(), Types.DOUBLE()).convert({"a": 1}) == {"a": 1.0}
    assert Types.BIG_DEC().convert(1.5) == Decimal("1.5")


def test_collected_floats_read_back_as_java_prints_them() -> None:
    """PyFlink's ``execute_and_collect`` parses Java's ``Float.toString`` of a ``FLOAT``
    (``programs/collected_floats.py`` against Flink 2.3 shows it in every type)."""
    as_float = Types.FLOAT().convert  # what the stream holds: the 32-bit float's value
    assert as_float(0.1) == 0.10000000149011612
    back = collected(Types.FLOAT())
    assert [back(as_float(v)) for v in (0.1, 1e-05, 1 / 3, 123456789.0)] == [
        0.1,
        1e-05,
        0.33333334,
        123456792.0,
    ]
    assert back(math.inf) == math.inf and math.isnan(back(math.nan))  # PyFlink raises here
    record = collected(Types.ROW_NAMED(["f", "d"], [Types.FLOAT(), Types.DOUBLE()]))
    assert record(Row(f=as_float(0.1), d=as_float(0.1))) == Row(f=0.1, d=0.10000000149011612)
    nested = collected(Types.TUPLE([Types.MAP(Types.STRING(), Types.LIST(Types.FLOAT()))]))
    assert nested(({"k": [as_float(0.3), None]},)) == ({"k": [0.3, None]},)
    for without_float in (None, Types.DOUBLE(), Types.TUPLE([Types.STRING(), Types.INT()])):
        assert collected(without_float) is None  # records come back as they are
    # print() writes Java's Float.toString whichever of the two a value is
    assert printed(Types.FLOAT())(as_float(0.1)) == printed(Types.FLOAT())(0.1) == "0.1"


def test_types_has_the_methods_of_pyflinks_types_and_no_others() -> None:
    """PyFlink 2.3's ``Types`` has no ``LOCAL_DATE``/``LOCAL_TIME``/``LOCAL_DATE_TIME`` (its
    ``LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_DATE)`` is the way): a program that
    ran here with them failed on Flink with ``AttributeError``."""
    pyflinks = [
        "BASIC_ARRAY",
        "BIG_DEC",
        "BIG_INT",
        "BOOLEAN",
        "BYTE",
        "CHAR",
        "DOUBLE",
        "FLOAT",
        "INSTANT",
        "INT",
        "LIST",
        "LONG",
        "MAP",
        "OBJECT_ARRAY",
        "PICKLED_BYTE_ARRAY",
        "PRIMITIVE_ARRAY",
        "ROW",
        "ROW_NAMED",
        "SHORT",
        "SQL_DATE",
        "SQL_TIME",
        "SQL_TIMESTAMP",
        "STRING",
        "TUPLE",
    ]  # dir(pyflink.common.Types) of apache-flink 2.3.0
    assert [n for n in dir(Types) if not n.startswith("_")] == pyflinks


def test_a_tuple_with_a_none_field_is_refused_as_flinks_serializers_refuse_it() -> None:
    """Flink 2.3 fails a job whose ``TUPLE`` record has a None field (Java's
    ``NullFieldException`` in ``from_collection``, ``TypeError: an integer is required`` from
    PyFlink's coder after a ``map``); ckptsim printed ``(null,x)``. A ``ROW``'s fields may be
    None."""
    pair = Types.TUPLE([Types.LONG(), Types.STRING()])
    with pytest.raises(TypeError, match=r"field 0 of the TUPLE \(None, 'x'\) is None"):
        pair.convert((None, "x"))
    assert pair.convert((1, "x")) == (1, "x")
    assert pair.convert(None) is None  # a None record is not a tuple with a None field
    row = Types.ROW([Types.LONG(), Types.STRING()])
    assert tuple(row.convert(Row(None, "x"))) == (None, "x")


def test_collected_big_decimals_read_back_as_plain_numbers() -> None:
    """PyFlink 2.3's ``execute_and_collect`` gives a ``BIG_DEC`` back as the plain number of
    Java's ``BigDecimal`` (``from_collection([Decimal("1E+5")], Types.BIG_DEC())`` collects
    ``Decimal('100000')`` there; ckptsim gave ``Decimal('1E+5')``), also inside a ``TUPLE``;
    the scale of the others stays (``1.10``), and ``print()`` writes Java's ``toString``."""
    back = collected(Types.BIG_DEC())
    values = [Decimal("1E+5"), Decimal("1.10"), Decimal("-0.0001"), Decimal("1E-10")]
    assert [repr(back(v)) for v in values] == [
        "Decimal('100000')",
        "Decimal('1.10')",
        "Decimal('-0.0001')",
        "Decimal('1E-10')",
    ]
    assert back(None) is None
    pair = collected(Types.TUPLE([Types.STRING(), Types.BIG_DEC()]))
    assert repr(pair(("a", Decimal("2.5E+2")))) == "('a', Decimal('250'))"
    assert printed(Types.BIG_DEC())(Decimal("1E+5")) == "1E+5"


PRINTED: list[tuple[Any, Any, str]] = [
    (None, "text", "text"),
    (None, ("a", 1), "('a', 1)"),
    (Types.STRING(), "text", "text"),
    (Types.BOOLEAN(), True, "true"),
    (
        Types.TUPLE([Types.STRING(), Types.INT(), Types.INT(), Types.INT()]),
        ("hi", 0, 5, 4),
        "(hi,0,5,4)",
    ),
    (Types.TUPLE([Types.STRING(), Types.DOUBLE()]), ("a", 1e10), "(a,1.0E10)"),
    (Types.ROW([Types.STRING(), Types.DOUBLE()]), Row("ANN", 1e10), "+I[ANN,10000000000.0]"),
    (
        Types.TUPLE([Types.ROW([Types.FLOAT(), Types.STRING()])]),
        (Row(1.1, None),),
        "(+I[1.1, null])",
    ),
    (Types.LIST(Types.INT()), [1, 2], "[1, 2]"),
    (Types.SQL_DATE(), datetime.date(2024, 2, 29), "2024-02-29"),
    (
        Types.SQL_TIMESTAMP(),
        datetime.datetime(2024, 2, 29, 13, 5, 7, 250000),
        "2024-02-29 13:05:07.25",
    ),
    (LocalTimeTypeInfo(LocalTimeTypeInfo.TimeType.LOCAL_TIME), datetime.time(13, 5), "13:05"),
    (Types.BIG_DEC(), Decimal("1.50"), "1.50"),
]


@pytest.mark.parametrize(("type_info", "value", "text"), PRINTED)
def test_print_writes_what_pyflinks_print_writes(type_info: Any, value: Any, text: str) -> None:
    assert printed(type_info)(value) == text


def test_row_by_position_name_and_kind() -> None:
    row = Row(name="Alice", age=11)
    assert (row[0], row["age"], row.name) == ("Alice", 11, "Alice")
    assert "name" in row and "wrong" not in row
    assert repr(row) == "Row(name='Alice', age=11)"
    assert repr(Row(1, "a")) == "<Row(1, 'a')>"
    person = Row("name", "age")
    assert person("Bob", 3) == Row(name="Bob", age=3)
    assert Row(1, 2) != Row.of_kind(RowKind.DELETE, 1, 2)
    assert str(RowKind.UPDATE_BEFORE) == "-U"
    with pytest.raises(AttributeError):
        row.missing  # noqa: B018
    with pytest.raises(AttributeError):
        row.other = 1
    assert pickle.loads(pickle.dumps(row)) == row


def test_a_row_round_trips_through_a_checkpoint() -> None:
    row = Row.of_kind(RowKind.UPDATE_AFTER, "a", (1, 2.5), None, Row(x=b"raw"))
    row.set_field_names(["k", "t", "n", "nested"])
    state = {"rows": [row], "by_row": {Row(1): "one"}}
    back = serde.loads(serde.dumps(state))
    assert back == state
    assert back["rows"][0].get_row_kind() is RowKind.UPDATE_AFTER
    assert back["rows"][0].nested.x == b"raw"


@pytest.mark.parametrize(
    "text",
    [
        '{"$ckptsim":"row","v":[1],"f":["a","b"],"k":0}',  # names for two fields, one value
        '{"$ckptsim":"row","v":[1],"f":null,"k":4}',  # no such kind
        '{"$ckptsim":"row","v":[1],"f":[1],"k":0}',  # a name that is not a string
        '{"$ckptsim":"row","v":{"a":1},"f":null,"k":0}',  # values not a list
    ],
)
def test_a_row_ckptsim_did_not_write_is_refused(text: str) -> None:
    with pytest.raises(StateFormatError):
        serde.loads(text)


@pytest.mark.parametrize(
    ("identifier", "parallelism", "prefix"),
    [(None, 1, ""), (None, 4, "3> "), ("out", 1, "out> "), ("out", 4, "out:3> "), ("", 4, "3> ")],
)
def test_print_sink_prefixes_as_flinks_print_sink_output_writer(
    identifier: str | None, parallelism: int, prefix: str
) -> None:
    stream = io.StringIO()
    connector = PrintConnector(TaskId("sink-1", 2), parallelism, stream, identifier=identifier)
    connector.write(["a", "b"])
    assert stream.getvalue() == f"{prefix}a\n{prefix}b\n"
