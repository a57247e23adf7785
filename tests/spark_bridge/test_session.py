"""What the bridge needs, and the clear errors when it is missing: Java, PySpark, PyArrow, a
classic (not Spark Connect) session. Missing things are simulated: an empty PATH, a fake
``java``, a module made unimportable, DataFrame and session classes without a JVM."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pyspark.sql
import pytest
from pyspark import SparkContext

import spark_bridge
from ckptsim import StreamExecutionEnvironment
from spark_bridge import (
    SparkBridgeError,
    SparkConnectNotSupported,
    ensure_java,
    from_spark,
    local_spark,
    run_topology,
)
from spark_bridge.session import is_connect, require_pyarrow


class ConnectDataFrame(pyspark.sql.DataFrame):
    """What a Spark Connect DataFrame is to the bridge: a ``pyspark.sql.DataFrame`` with no
    JVM object behind it (the real class needs a Connect server and grpc)."""

    def __new__(cls) -> ConnectDataFrame:  # pyspark.sql.DataFrame.__new__ makes a classic one
        return object.__new__(cls)

    def __init__(self) -> None:
        pass


class SparkSession:
    """A Spark Connect session as the bridge sees one: no ``_jsparkSession``."""

    __module__ = "pyspark.sql.connect.session"


def test_a_spark_connect_dataframe_is_refused_with_what_to_do(spark: Any) -> None:
    env = StreamExecutionEnvironment(parallelism=2)
    with pytest.raises(SparkConnectNotSupported) as refused:
        from_spark(env, ConnectDataFrame())
    message = str(refused.value)
    assert "Spark Connect DataFrame" in message
    assert "classic session" in message and "df.write.parquet" in message
    assert not is_connect(spark.range(3))  # a classic DataFrame is taken
    assert not is_connect(spark)


def test_a_spark_connect_session_is_refused_by_run_topology(spark: Any) -> None:
    with pytest.raises(SparkConnectNotSupported, match="Spark Connect session"):
        run_topology(SparkSession(), spark.range(3), lambda stream: stream)
    assert is_connect(SparkSession())


def test_no_java_is_a_clear_error_saying_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(SparkBridgeError) as missing:
        ensure_java({"PATH": str(tmp_path)})
    assert "needs Java 17" in str(missing.value)
    assert "no 'java' on the PATH and JAVA_HOME is not set" in str(missing.value)
    assert "apt-get install -y openjdk-17-jre-headless" in str(missing.value)
    with pytest.raises(SparkBridgeError, match=r"JAVA_HOME=.* has no bin/java"):
        ensure_java({"PATH": "", "JAVA_HOME": str(tmp_path)})


def test_an_old_java_is_a_clear_error(tmp_path: Path) -> None:
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("#!/bin/sh\necho 'openjdk version \"11.0.22\" 2024-01-16' >&2\n")
    java.chmod(0o755)
    with pytest.raises(SparkBridgeError, match=r"needs Java 17 or later; .* is Java 11"):
        ensure_java({"PATH": "", "JAVA_HOME": str(tmp_path)})
    java.write_text("#!/bin/sh\necho 'openjdk version \"17.0.15\" 2025-04-15' >&2\n")
    assert ensure_java({"PATH": "", "JAVA_HOME": str(tmp_path)}) == str(java)


def test_starting_spark_without_java_fails_before_spark_tries(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)  # as if none ran yet
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(SparkBridgeError, match="needs Java 17"):
        local_spark()


def test_without_pyspark_the_bridge_imports_and_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)  # `import pyspark` fails
    assert spark_bridge.from_spark is from_spark  # importing the package needs no PySpark
    env = StreamExecutionEnvironment(parallelism=2)
    with pytest.raises(SparkBridgeError, match=r"needs PySpark.*pip install 'pyspark>=3.5'"):
        from_spark(env, object())
    with pytest.raises(SparkBridgeError, match="needs PySpark"):
        local_spark()


def test_without_pyarrow_the_message_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(SparkBridgeError, match=r"pip install 'pyarrow>=14'"):
        require_pyarrow()


def test_spark_workers_run_this_python(spark: Any) -> None:
    assert os.environ.get("PYSPARK_PYTHON") in (sys.executable, os.environ.get("PYSPARK_PYTHON"))
    versions = spark.sparkContext.parallelize([0], 1).map(lambda _: sys.version_info[:2]).collect()
    assert versions == [sys.version_info[:2]]
