"""Decimals a new user's topology computes (issue fresh41), written by the Parquet sink as Spark
writes them. Spark infers ``decimal(38, 18)`` for a Python ``Decimal`` column and rounds a value
of a larger scale half-up into the column's scale (``spark.createDataFrame([(Decimal(4) / 3,)])``
is ``decimal(38,18)``, ``1.333333333333333333``; ``createDataFrame([(Decimal("1.005"),)],
"x decimal(10,2)")`` is ``1.01``, checked on the PySpark 4 this project pins).
``docs/spark-cluster.md`` promises "decimal(38, 18) for a new one (what Spark infers)"."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from spark_bridge import ParquetSink, SchemaMismatch


def test_a_new_decimal_column_of_a_quotient_is_inferred_as_spark_infers_it(
    tmp_path: Path,
) -> None:
    batch = ParquetSink(tmp_path).to_batch([(1, Decimal(4) / 3)])
    assert batch.schema.field(1).type == pa.decimal128(38, 18)
    assert batch.column(1).to_pylist() == [Decimal("1.333333333333333333")]


def test_a_later_quotient_fits_the_decimal_column_the_first_records_made(
    tmp_path: Path,
) -> None:
    sink = ParquetSink(tmp_path)
    sink.to_batch([(1, Decimal("1.00"))])  # decimal(38, 18), as documented
    batch = sink.to_batch([(1, Decimal(4) / 3)])
    assert batch.column(1).to_pylist() == [Decimal("1.333333333333333333")]


def test_a_decimal_of_a_larger_scale_is_rounded_into_the_given_schema_as_spark_does(
    tmp_path: Path,
) -> None:
    sink = ParquetSink(tmp_path, pa.schema([("x", pa.decimal128(10, 2))]))
    assert sink.to_batch([(Decimal("1.005"),)]).column(0).to_pylist() == [Decimal("1.01")]


def test_a_decimal_too_large_for_the_given_schema_is_named_as_too_large(tmp_path: Path) -> None:
    sink = ParquetSink(tmp_path, pa.schema([("s", pa.decimal128(38, 18))]))
    with pytest.raises(SchemaMismatch) as refused:
        sink.to_batch([(Decimal("112345678901234567890.1"),)])
    message = str(refused.value)
    assert "112345678901234567890.1" in message
    assert "Give the sink a schema" not in message


def test_ties_round_away_from_zero_as_spark_rounds_them(tmp_path: Path) -> None:
    """Spark's HALF_UP is Java's: -1.005 is -1.01 (Arrow's own ``half_up`` would make it -1.00);
    checked with ``createDataFrame([(Decimal("-1.005"),)], "x decimal(10,2)")``."""
    sink = ParquetSink(tmp_path, pa.schema([("x", pa.decimal128(10, 2))]))
    values = [Decimal("-1.005"), None, Decimal("-2.345"), Decimal("1E+3")]
    batch = sink.to_batch([(v,) for v in values])
    assert batch.column(0).to_pylist() == [Decimal("-1.01"), None, Decimal("-2.35"), 1000]


def test_a_decimal_inside_a_struct_an_array_or_a_map_is_rounded_too(tmp_path: Path) -> None:
    money = pa.decimal128(10, 2)
    sink = ParquetSink(
        tmp_path,
        pa.schema(
            [
                ("m", pa.map_(pa.string(), money)),
                ("a", pa.list_(pa.struct([("x", money), ("n", pa.int64())]))),
            ]
        ),
    )
    batch = sink.to_batch([({"k": Decimal("1.005")}, [{"x": Decimal("2.675"), "n": 1}])])
    assert batch.to_pylist() == [
        {"m": [("k", Decimal("1.01"))], "a": [{"x": Decimal("2.68"), "n": 1}]}
    ]


def test_a_column_named_as_an_input_decimal_with_a_larger_scale_is_a_new_column(
    tmp_path: Path,
) -> None:
    """The input's decimal(10, 2) types a passed-through column only when its values fit it as
    they are; a price times a rate is a new column, decimal(38, 18), not rounded to cents."""
    sink = ParquetSink(tmp_path, input_schema=pa.schema([("price", pa.decimal128(10, 2))]))
    sink.to_batch([{"price": Decimal("1.21") * Decimal("1.075")}])  # 1.30075
    assert sink.schema.field("price").type == pa.decimal128(38, 18)


def test_a_decimal_too_large_for_an_inferred_column_says_to_give_a_schema(
    tmp_path: Path,
) -> None:
    sink = ParquetSink(tmp_path)
    sink.to_batch([(Decimal("1.5"),)])
    with pytest.raises(SchemaMismatch) as refused:
        sink.to_batch([(Decimal("1E+25"),)])
    message = str(refused.value)
    assert "column '_1'" in message
    assert "1E+25 does not fit decimal(38, 18)" in message
    assert "Give the sink a schema" in message
