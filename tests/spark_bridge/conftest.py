"""One SparkSession for every Spark test of the session: ``local[2]``, two shuffle
partitions, UI off (``spark_bridge.local_spark``). Starting Spark takes seconds; the tests
keep their DataFrames small."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from spark_bridge import SparkBridgeError, local_spark


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    try:
        session = local_spark(
            "local[2]",
            app_name="ckptsim tests",
            config={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"},
        )
    except SparkBridgeError as error:  # no Java or PySpark here: say so, do not fail obscurely
        pytest.skip(f"Spark is not available: {error}")
    yield session
    session.stop()
