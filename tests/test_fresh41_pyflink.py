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


@pytest.mark.xfail(
    strict=True,
    reason="fresh41: a None record of a typed stream is printed ('str> None', 'long> null'); "
    "Flink's print sink fails the job on the null record",
)
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


@pytest.mark.xfail(
    strict=True,
    reason="fresh41: a None element of a Types.LIST(Types.STRING()) passes ('list> [a, null]'); "
    "Flink's coder fails the job",
)
def test_a_none_element_of_a_string_list_fails_the_job_as_in_flink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "nones.py"
    script.write_text(NONE_IN_A_STRING_LIST)
    code = main(["run", str(script), "--simulate", "-q"])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
