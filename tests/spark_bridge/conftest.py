"""One SparkSession for every Spark test of the session: ``local[2]``, two shuffle
partitions, UI off (``spark_bridge.local_spark``). Starting Spark takes seconds; the tests
keep their DataFrames small, and the JVM compiles with its quick compiler only and collects
on one thread (``JVM_OPTIONS``): a JVM that lives for minutes on two shared cores otherwise
spends much of its CPU in the optimizing compiler's threads. Without Java or PySpark the
Spark tests are skipped, saying why; under CI (``CI=true``) that fails the run instead: CI
must test the Spark bridge."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from spark_bridge import SparkBridgeError, local_spark
from tests.conftest import skip_unless_ci
from tests.spark_bridge import JVM_OPTIONS


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    try:
        session = local_spark(
            "local[2]",
            app_name="ckptsim tests",
            config={
                "spark.sql.shuffle.partitions": "2",
                "spark.ui.enabled": "false",
                "spark.driver.defaultJavaOptions": JVM_OPTIONS,
            },
        )
    except SparkBridgeError as error:  # no Java or PySpark here: say so, do not fail obscurely
        skip_unless_ci(f"Spark is not available: {error}")
    yield session
    session.stop()
