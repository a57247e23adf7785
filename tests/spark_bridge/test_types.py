"""A Spark user's own data: decimals, timestamps, dates, maps, arrays and structs reach user
functions as Spark's Python values in named rows, go through checkpoints (keyed state and,
under unaligned checkpoints, in-flight records) and come back with their schema."""

from __future__ import annotations

import datetime as dt
import decimal
import zoneinfo
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from actors.faults import FailTask
from runtime.datastream import DataStream
from runtime.row import TupleRow
from spark_bridge import run_topology, run_topology_job
from tests.conftest import protocol_events

ROWS = 600
#: unaligned checkpoints, barriers overtaking the records queued on the key_by edge
UNALIGNED = {
    "execution.checkpointing.unaligned.enabled": True,
    "ckptsim.buffer.records": 20,
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.delay": "5 ms",
}


@pytest.fixture
def new_york(spark: Any) -> Iterator[Any]:
    """The session in New York time (timestamps are instants; the zone is how Spark shows
    them and how naive ones are read)."""
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        yield spark
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


def payments(spark: Any) -> Any:
    """``user`` (bigint), ``amount`` decimal(10,2), ``at`` timestamp (distinct per user),
    ``day`` date: 4 partitions, sorted within them (a stable replay)."""
    ids = spark.range(0, ROWS, 1, 4)
    return ids.select(
        (F.col("id") % 7).alias("user"),
        ((F.col("id") * 7919 % 100_000) / 100).cast("decimal(10,2)").alias("amount"),
        F.timestamp_micros(F.lit(1_700_000_000_000_000) + F.col("id") * 3_600_000_123).alias("at"),
        F.to_date(
            F.timestamp_micros(F.lit(1_700_000_000_000_000) + F.col("id") * 86_400_000_000)
        ).alias("day"),
    )


def restored_in_flight(events: list[Any]) -> int:
    return sum(
        sum(e["input"].values()) + sum(e["output"].values())
        for e in events
        if e["event"] == "task_restored"
    )


def sum_per_user(stream: DataStream) -> DataStream:
    return (
        stream.map(lambda r: TupleRow(user=r.user, total=r.amount, n=1))
        .processing_cost(per_buffer_ms=2)  # backpressure: records queue on the key_by edge
        .key_by(lambda r: r.user)
        .reduce(lambda a, b: TupleRow(user=a.user, total=a.total + b.total, n=a.n + b.n))
        .processing_cost(per_buffer_ms=2)
    )


def test_a_keyed_decimal_sum_survives_a_failure_under_unaligned_checkpoints(
    spark: Any, tmp_path: Path
) -> None:
    df = payments(spark)
    with protocol_events() as events:
        run = run_topology_job(
            spark,
            df,
            sum_per_user,
            output=str(tmp_path / "out"),
            parallelism=2,
            checkpoint_interval=15,
            config=UNALIGNED,
            faults=[FailTask(task="reduce-3#1", at_record=180)],
            runtime="simulation",
            seed=4,
        )
    assert run.result.restarts == 1
    assert restored_in_flight(events) > 0, "records with decimals were restored from channels"
    out = run.dataframe
    assert dict(out.dtypes)["user"] == "bigint"
    final = {
        r["user"]: (r["n"], r["total"])
        for r in out.groupBy("user")
        .agg(F.max_by("total", "n").alias("total"), F.max("n").alias("n"))
        .collect()
    }
    expected = {
        r["user"]: (r["n"], r["total"])
        for r in df.groupBy("user")
        .agg(F.count("*").alias("n"), F.sum("amount").alias("total"))
        .collect()
    }
    assert final == expected  # Decimal("12.30") == Decimal("12.300000000000000000")
    assert all(isinstance(total, decimal.Decimal) for _, total in final.values())


def latest_per_user(stream: DataStream) -> DataStream:
    return (
        stream.processing_cost(per_buffer_ms=2)
        .key_by(lambda r: r.user)
        .reduce(lambda a, b: b if b.at > a.at else a)  # the state holds a whole row
        .processing_cost(per_buffer_ms=2)
    )


def test_the_latest_row_per_user_keeps_its_timestamp_through_a_failure(
    new_york: Any, tmp_path: Path
) -> None:
    spark = new_york
    df = payments(spark)
    with protocol_events() as events:
        run = run_topology_job(
            spark,
            df,
            latest_per_user,
            output=str(tmp_path / "out"),
            parallelism=2,
            checkpoint_interval=15,
            config=UNALIGNED,
            faults=[FailTask(task="reduce-2#0", at_record=150)],
            runtime="simulation",
            seed=2,
        )
    assert run.result.restarts == 1
    assert restored_in_flight(events) > 0, "rows with timestamps were restored from channels"
    out = run.dataframe
    assert out.schema.simpleString() == df.schema.simpleString()  # timestamp, not _ntz
    ours = {
        r["user"]: tuple(r)
        for r in out.groupBy("user")
        .agg(F.max_by(F.struct(*df.columns), "at").alias("r"))
        .select("r.*")
        .collect()
    }
    theirs = {
        r["user"]: tuple(r)
        for r in df.groupBy("user")
        .agg(F.max_by(F.struct(*df.columns), "at").alias("r"))
        .select("r.*")
        .collect()
    }
    assert ours == theirs
    instants = out.select(F.unix_micros("at").alias("us")).collect()
    assert {r["us"] for r in instants} <= {
        r["us"] for r in df.select(F.unix_micros("at").alias("us")).collect()
    }


NESTED = (
    "id long, price decimal(12,2), at timestamp, day date, tags map<string,int>, "
    "scores array<double>, address struct<city:string,since:timestamp>, raw binary"
)


NESTED_STRUCT = (
    "id:bigint,price:decimal(12,2),at:timestamp,day:date,tags:map<string,int>,"
    "scores:array<double>,address:struct<city:string,since:timestamp>,raw:binary"
)


def nested(spark: Any) -> Any:
    rows = [
        (
            i,
            decimal.Decimal(f"{i * 1111}.{i % 100:02d}") if i % 5 else None,  # 9 digits later on
            dt.datetime(2024, 3, 10, 1, 30) + dt.timedelta(minutes=37 * i),  # across DST
            dt.date(2024, 1, 1) + dt.timedelta(days=i),
            {"a": i, "b": None} if i % 3 else {},
            [i / 2, None] if i % 4 else None,
            (f"city {i}", dt.datetime(2020, 1, 1, 12) + dt.timedelta(hours=i)) if i % 2 else None,
            bytes([i % 256, 255]),
        )
        for i in range(40)
    ]
    return spark.createDataFrame(rows, NESTED).repartition(2, "id").sortWithinPartitions("id")


def test_with_no_schema_the_output_keeps_the_input_schema_and_values(
    new_york: Any, tmp_path: Path
) -> None:
    spark = new_york
    df = nested(spark)
    seen: list[Any] = []

    def look(r: Any) -> Any:
        seen.append(r)
        return r

    back = run_topology(
        spark,
        df,
        lambda s: s.map(look),
        output=str(tmp_path / "out"),
        parallelism=2,
        config={"ckptsim.buffer.records": 3},  # a later buffer holds wider decimals
    )
    assert back.schema.simpleString() == df.schema.simpleString()
    assert sorted(back.collect()) == sorted(df.collect())
    row = next(r for r in seen if r.id == 7)
    assert row[0] == row.id == row["id"] == 7  # a row: by position and by name
    assert row.price == decimal.Decimal("7777.07")
    (micros,) = df.where("id = 7").select(F.unix_micros("at")).first()
    assert row.at == dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros)
    assert row.at.tzinfo == zoneinfo.ZoneInfo("America/New_York")  # the session's
    assert row.tags == {"a": 7, "b": None}
    assert row.address.city == "city 7" and row.address.since.tzinfo is not None
    assert row.raw == bytes([7, 255])


def test_rows_a_function_returns_name_the_output_columns(spark: Any, tmp_path: Path) -> None:
    df = nested(spark)
    back = run_topology(
        spark,
        df,
        lambda s: s.map(
            lambda r: TupleRow(
                id=r.id, first_tag=r.tags.get("a"), when=r.day, prices={"p": r.price}
            )
        ),
        output=str(tmp_path / "out"),
    )
    assert back.schema.simpleString() == (
        "struct<id:bigint,first_tag:bigint,when:date,prices:map<string,decimal(38,18)>>"
    )
    got = {r["id"]: r for r in back.collect()}
    assert got[7]["when"] == dt.date(2024, 1, 8) and got[7]["first_tag"] == 7
    assert got[6]["first_tag"] is None and got[5]["prices"] == {"p": None}


def test_an_input_row_returned_as_a_column_keeps_the_input_types(
    spark: Any, tmp_path: Path
) -> None:
    """The latest row per key kept whole (``last=r``): the struct column has the input
    columns' types (decimal(12,2), not a guessed precision; the map, the struct with a null
    field in the first buffer), not types inferred from the first records."""
    df = nested(spark)
    back = run_topology(
        spark,
        df,
        lambda s: (
            s.map(lambda r: TupleRow(key=r.id % 3, last=r))
            .key_by(lambda r: r.key)
            .reduce(lambda a, b: b if b.last.id > a.last.id else a)
        ),
        output=str(tmp_path / "out"),
        final_only=True,
        parallelism=2,
        config={"ckptsim.buffer.records": 3},
    )
    assert back.schema.simpleString() == f"struct<key:bigint,last:struct<{NESTED_STRUCT}>>"
    got = {r["key"]: tuple(r["last"]) for r in back.collect()}
    theirs = {
        r["key"]: tuple(r["last"])
        for r in df.groupBy((F.col("id") % 3).alias("key"))
        .agg(F.max_by(F.struct(*df.columns), "id").alias("last"))
        .collect()
    }
    assert got == theirs


def test_an_empty_input_keeps_its_schema(spark: Any, tmp_path: Path) -> None:
    df = nested(spark).where("id < 0")
    back = run_topology(spark, df, lambda s: s, output=str(tmp_path / "out"))
    assert back.count() == 0
    assert back.schema.simpleString() == df.schema.simpleString()


def test_plain_tuples_are_still_there_for_who_asks(spark: Any, tmp_path: Path) -> None:
    df = spark.range(0, 6, 1, 2)
    seen: list[Any] = []

    def look(r: Any) -> Any:
        seen.append(type(r))
        return r

    run_topology(
        spark,
        df,
        lambda s: s.map(look),
        batch_format="tuples",
        output=str(tmp_path / "out"),
    )
    assert set(seen) == {tuple}


@pytest.fixture
def negative_scales(spark: Any) -> Iterator[Any]:
    """The session allows decimals of negative scale (a legacy setting of Spark's)."""
    key = "spark.sql.legacy.allowNegativeScaleOfDecimal"
    spark.conf.set(key, "true")
    try:
        yield spark
    finally:
        spark.conf.unset(key)


def test_the_sessions_settings_hold_on_the_executors_that_read_the_input(
    negative_scales: Any, tmp_path: Path
) -> None:
    """The bridge's Spark jobs run with the session's SQL settings on the executors, as
    Spark's own jobs of a DataFrame do: a decimal(5,-2) column, which the executors accept
    only under the session's ``allowNegativeScaleOfDecimal``, is read."""
    from pyspark.sql import types as T  # noqa: PLC0415

    schema = T.StructType(
        [T.StructField("d", T.DecimalType(5, -2)), T.StructField("id", T.IntegerType())]
    )
    df = negative_scales.createDataFrame([(decimal.Decimal("1.23E+4"), 1), (None, 2)], schema)
    back = run_topology(
        negative_scales,
        df,
        lambda s: s.map(lambda r: (r.id, None if r.d is None else str(r.d))),
        schema="id int, d string",
        output=str(tmp_path / "out"),
        config={"restart-strategy.type": "none"},
    )
    assert sorted(tuple(row) for row in back.collect()) == [(1, "1.23E+4"), (2, None)]


def test_a_decimal_of_negative_scale_comes_back_as_the_decimal_of_scale_0_that_holds_it(
    negative_scales: Any, tmp_path: Path
) -> None:
    """Parquet has no negative scale (Spark cannot write decimal(5,-2) either): a column of
    one passed through, also inside a struct or an array, comes back as decimal(7,0), its
    values exact."""
    from pyspark.sql import types as T  # noqa: PLC0415

    schema = T.StructType(
        [
            T.StructField("d", T.DecimalType(5, -2)),
            T.StructField("id", T.IntegerType()),
            T.StructField("s", T.StructType([T.StructField("e", T.DecimalType(3, -5))])),
            T.StructField("a", T.ArrayType(T.DecimalType(4, -1))),
        ]
    )
    big = decimal.Decimal
    rows = [(big("1.23E+4"), 1, (big("1.23E+7"),), [big("1E+1"), None]), (None, 2, None, None)]
    df = negative_scales.createDataFrame(rows, schema)
    back = run_topology(negative_scales, df, lambda s: s, output=str(tmp_path / "out"))
    assert back.schema.simpleString() == (
        "struct<d:decimal(7,0),id:int,s:struct<e:decimal(8,0)>,a:array<decimal(5,0)>>"
    )
    got = sorted(back.collect(), key=lambda r: r.id)
    assert [(r.d, r.id, r.s and r.s.e, r.a) for r in got] == [
        (big(12300), 1, big(12300000), [big(10), None]),
        (None, 2, None, None),
    ]
