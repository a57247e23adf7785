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
