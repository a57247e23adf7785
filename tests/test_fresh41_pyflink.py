"""PyFlink programs a new user wrote (issue fresh41) that Flink 2.3 and ckptsim treat
differently. Each was run first on ``apache-flink==2.3.0`` (MiniCluster, Java 17)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckptsim._cli import main

# Flink 2.3: execute() raises java.lang.UnsupportedOperationException: Forward partitioning
# does not allow change of parallelism. Upstream operation: Map-3 parallelism: 3, downstream
# operation: _stream_key_by_map_operator-5 parallelism: 2 You must use another partitioning
# strategy, such as broadcast, rebalance, shuffle or global.
UNION_THEN_KEY_BY = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(3)
src = env.from_collection(list(range(6)), Types.INT())
m = src.map(lambda v: v + 1, Types.INT()).set_parallelism(2)
n = src.map(lambda v: v * 10, Types.INT())
m.union(n).key_by(lambda v: v % 2).reduce(lambda a, b: a + b).print()
env.execute("fwd_b")
"""

# Flink 2.3 refuses this one too (Map-9, the rescale map at parallelism 2, forward into
# _stream_key_by_map_operator-13 at parallelism 3).
REBALANCED_UNION_THEN_KEY_BY = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(3)
src = env.from_collection(list(range(12)), Types.INT())
s = src.shuffle().map(lambda v: ("shuffle", v), Types.TUPLE([Types.STRING(), Types.INT()]))
r = src.rescale().map(lambda v: ("rescale", v), Types.TUPLE([Types.STRING(), Types.INT()]))
r = r.set_parallelism(2)
s.union(r).key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).print()
env.execute("rebalanced")
"""


@pytest.mark.parametrize(
    "program",
    [UNION_THEN_KEY_BY, REBALANCED_UNION_THEN_KEY_BY],
    ids=["first input narrower", "later input narrower"],
)
def test_key_by_after_a_union_of_different_parallelisms_is_refused_as_flink_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], program: str
) -> None:
    script = tmp_path / "job.py"
    script.write_text(program)
    code = main(["run", str(script), "--simulate", "-q"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1
    assert "forward partitioning" in captured.err.lower()


# Flink 2.3 refuses PyFlink's partition_custom after such a union as well (Map-3 at
# parallelism 2 forward into _partition_custom_map_operator-5 at parallelism 3)
UNION_THEN_PARTITION_CUSTOM = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(3)
src = env.from_collection(list(range(6)), Types.INT())
m = src.map(lambda v: v + 1, Types.INT())
n = src.map(lambda v: v * 10, Types.INT()).set_parallelism(2)
m.union(n).partition_custom(lambda k, n: k % n, lambda v: v).map(lambda v: v).print()
env.execute("u_pc")
"""


def test_partition_custom_after_a_union_of_different_parallelisms_is_refused_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "job.py"
    script.write_text(UNION_THEN_PARTITION_CUSTOM)
    code = main(["run", str(script), "--simulate", "-q"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert "_partition_custom_map_operator" in captured.err


# Flink 2.3 runs these: PyFlink's key-by operator takes the parallelism of what it follows
# (the map at 2; a union whose inputs all run at 2), so its FORWARD edges keep it
NARROW_MAP_THEN_KEY_BY = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(3)
src = env.from_collection(list(range(6)), Types.INT())
m = src.map(lambda v: v + 1, Types.INT()).set_parallelism(2)
{stream}.key_by(lambda v: v % 2).reduce(lambda a, b: a + b).print()
env.execute("fwd_a")
"""


@pytest.mark.parametrize(
    ("stream", "sums"),
    [
        ("m", {9, 12}),
        ("m.union(src.map(lambda v: v * 10, Types.INT()).set_parallelism(2))", {9, 162}),
    ],
    ids=["no union", "union of equal parallelisms"],
)
def test_key_by_after_a_narrower_operator_runs_as_on_flink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stream: str, sums: set[int]
) -> None:
    script = tmp_path / "job.py"
    script.write_text(NARROW_MAP_THEN_KEY_BY.format(stream=stream))
    code = main(["run", str(script), "--simulate", "-q"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert sums <= {int(line.split("> ")[1]) for line in captured.out.splitlines()}


# Flink 2.3 prints ``date> 0001-01-03``: PyFlink hands the date to Java as days since
# 1970-01-01 (proleptic Gregorian) and java.sql.Date.toString shows them in the Julian
# calendar before 1582-10-15. (2024-02-29 prints the same on both.)
OLD_DATE = """\
import datetime as dt
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection([dt.date(2024, 2, 29), dt.date(1, 1, 1)], Types.SQL_DATE()).print("date")
env.execute("dates")
"""


def test_a_date_before_the_gregorian_reform_prints_as_javas_sql_date_prints_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "dates.py"
    script.write_text(OLD_DATE)
    code = main(["run", str(script), "--simulate", "-q"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.splitlines() == ["date> 2024-02-29", "date> 0001-01-03"]


# Flink 2.3's output of these (checked): a day before 1582-10-15 in the Julian calendar, for
# an SQL_TIMESTAMP's day as well; the day of the reform and later as they are
REFORM_DAYS = """\
import datetime as dt
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection(
    [dt.datetime(2024, 2, 29, 1, 2, 3, 4000), dt.datetime(1, 1, 1), dt.datetime(1582, 10, 4, 12),
     dt.datetime(1582, 10, 15, 12), dt.datetime(1000, 3, 1)],
    Types.SQL_TIMESTAMP(),
).print("ts")
env.execute("ts")
env.from_collection(
    [dt.date(1582, 10, 4), dt.date(1582, 10, 10), dt.date(1582, 10, 15), dt.date(1000, 3, 1),
     dt.date(1000, 2, 28), dt.date(200, 2, 28), dt.date(9999, 12, 31)],
    Types.SQL_DATE(),
).print("date")
env.execute("dates")
"""


def test_dates_and_timestamps_around_the_gregorian_reform_print_as_in_flink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "dates.py"
    script.write_text(REFORM_DAYS)
    code = main(["run", str(script), "--simulate", "-q"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.splitlines() == [
        "ts> 2024-02-29 01:02:03.004",
        "ts> 0001-01-03 00:00:00.0",
        "ts> 1582-09-24 12:00:00.0",
        "ts> 1582-10-15 12:00:00.0",
        "ts> 1000-02-24 00:00:00.0",
        "date> 1582-09-24",
        "date> 1582-09-30",
        "date> 1582-10-15",
        "date> 1000-02-24",
        "date> 1000-02-23",
        "date> 0200-02-29",
        "date> 9999-12-31",
    ]


# Flink 2.3 prints ``str> a`` (``long> 1``), then the job fails: Java's print sink gets a null
# record (``NullPointerException: Cannot invoke "Object.toString()" because "record" is
# null``). A ROW's or MAP's None fields print there as here (``+I[None,None]``, ``{a=null}``).
NONE_RECORD = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
s = env.from_collection(["a", "", "c"], Types.STRING())
s.map(lambda v: {expr}, {type_info}).print("{name}")
env.execute("nones")
"""


@pytest.mark.parametrize(
    ("name", "expr", "type_info"),
    [("str", "v or None", "Types.STRING()"), ("long", "len(v) or None", "Types.LONG()")],
    ids=["STRING", "LONG"],
)
def test_a_none_record_of_a_typed_stream_fails_the_print_sink_as_in_flink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, expr: str, type_info: str
) -> None:
    script = tmp_path / "nones.py"
    script.write_text(NONE_RECORD.format(name=name, expr=expr, type_info=type_info))
    code = main(["run", str(script), "--simulate", "-q"])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out.splitlines()[0] in ("str> a", "long> 1")
    assert f"{name}> None" not in captured.out
    assert f"{name}> null" not in captured.out


# Flink 2.3 fails the job in PyFlink's coder before anything is printed
# (``PrimitiveArrayCoderImpl`` -> ``CharCoderImpl.encode_to_stream``: ``AttributeError:
# 'NoneType' object has no attribute 'encode'``), as its tuple serializer fails a TUPLE with a
# None field (which ckptsim already refuses, docs/pyflink.md).
NONE_IN_A_STRING_LIST = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
s = env.from_collection(["a", "", "c"], Types.STRING())
s.map(lambda v: [v, None], Types.LIST(Types.STRING())).print("list")
env.execute("nones")
"""


def test_a_none_element_of_a_string_list_fails_the_job_as_in_flink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "nones.py"
    script.write_text(NONE_IN_A_STRING_LIST)
    code = main(["run", str(script), "--simulate", "-q"])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""


# Flink 2.3 runs these (checked): PyFlink's coder of a BASIC_ARRAY or OBJECT_ARRAY writes a null
# flag per element, and a None in a LIST of pickled values pickles (Java prints the arrays as
# identity hashes, ``[Ljava.lang.String;@4fa626f6``, where ckptsim prints their elements)
@pytest.mark.parametrize(
    "type_info",
    [
        "Types.BASIC_ARRAY(Types.STRING())",
        "Types.OBJECT_ARRAY(Types.STRING())",
        "Types.LIST(Types.PICKLED_BYTE_ARRAY())",
    ],
    ids=["BASIC_ARRAY", "OBJECT_ARRAY", "LIST of PICKLED_BYTE_ARRAY"],
)
def test_a_none_element_where_pyflinks_coder_writes_it_runs_as_in_flink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], type_info: str
) -> None:
    script = tmp_path / "nones.py"
    script.write_text(NONE_IN_A_STRING_LIST.replace("Types.LIST(Types.STRING())", type_info))
    code = main(["run", str(script), "--simulate", "-q"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert len(captured.out.splitlines()) == 3
