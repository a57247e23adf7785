"""What the Spark bridge needs before it can run: PySpark, PyArrow, Java, a classic session.

Every check fails with ``SparkBridgeError`` saying what is missing and how to get it, instead
of an ``ImportError`` deep inside PySpark or "Java gateway process exited" from a JVM that
never started. PySpark is imported here lazily, so ``import spark_bridge`` works without it.
"""

from __future__ import annotations

import inspect
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from actors.logs import get_logger
from spark_bridge._pyspark_seam import is_classic, jvm_is_running

log = get_logger(__name__)

#: the Java release PySpark 4 needs (3.5 runs on 8, 11 or 17)
JAVA_RELEASE = 17

JAVA_HINT = (
    "  Debian/Ubuntu: sudo apt-get install -y openjdk-17-jre-headless\n"
    "  macOS:         brew install openjdk@17\n"
    "  or set JAVA_HOME to a JDK 17 installation."
)


class SparkBridgeError(RuntimeError):
    """The Spark bridge cannot run here (a missing dependency, an unsupported session)."""


class SparkConnectNotSupported(SparkBridgeError):
    """A Spark Connect session or DataFrame: the bridge needs a classic one (a SparkContext)."""


CONNECT_MESSAGE = (
    "this is a Spark Connect {what}: the Spark bridge reads every partition with its own Spark "
    "job and resumes it at a row offset after a restore (SparkContext.runJob over one "
    "partition), and Spark Connect has no SparkContext to do that with. Use a classic session "
    "(SparkSession.builder.master(...).getOrCreate(), or spark.api.mode=classic), or write "
    "the data out (df.write.parquet(path)) and read it with a classic session."
)


def require_pyspark() -> ModuleType:
    """The ``pyspark`` module, or a ``SparkBridgeError`` saying how to install it."""
    try:
        import pyspark  # noqa: PLC0415 - the bridge works without PySpark until it is used
    except ImportError as error:
        raise SparkBridgeError(
            "the Spark bridge needs PySpark, which is not installed in this Python "
            f"({sys.executable}): pip install 'pyspark>=3.5' (it also needs Java "
            f"{JAVA_RELEASE}). Cause: {error}"
        ) from None
    return pyspark


def require_pyarrow() -> ModuleType:
    """The ``pyarrow`` module, or a ``SparkBridgeError`` saying how to install it."""
    try:
        import pyarrow  # noqa: PLC0415
    except ImportError as error:
        raise SparkBridgeError(
            "the Spark bridge moves data as Arrow batches and writes Parquet with PyArrow, "
            f"which is not installed in this Python ({sys.executable}): pip install "
            f"'pyarrow>=14'. Cause: {error}"
        ) from None
    return pyarrow


def find_java(environ: Mapping[str, str] | None = None) -> str | None:
    """The ``java`` PySpark would start: ``$JAVA_HOME/bin/java``, else ``java`` on the PATH."""
    env = os.environ if environ is None else environ
    home = env.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.is_file() else None
    return shutil.which("java", path=env.get("PATH", ""))


def java_release(java: str) -> int | None:
    """The major release of ``java`` (8, 11, 17, ...), None when it cannot be told."""
    try:
        done = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def ensure_java(environ: Mapping[str, str] | None = None) -> str:
    """The path of a usable ``java``, or a ``SparkBridgeError`` saying how to install one."""
    env = os.environ if environ is None else environ
    java = find_java(env)
    if java is None:
        where = (
            f"JAVA_HOME={env['JAVA_HOME']} has no bin/java"
            if env.get("JAVA_HOME")
            else "no 'java' on the PATH and JAVA_HOME is not set"
        )
        raise SparkBridgeError(
            f"the Spark bridge starts Spark, which needs Java {JAVA_RELEASE}: {where}.\n"
            + JAVA_HINT
        )
    release = java_release(java)
    pyspark = require_pyspark()
    needed = JAVA_RELEASE if int(pyspark.__version__.split(".")[0]) >= 4 else 8
    if release is not None and release < needed:
        raise SparkBridgeError(
            f"PySpark {pyspark.__version__} needs Java {needed} or later; {java} is Java "
            f"{release}.\n" + JAVA_HINT
        )
    return java


def arrow_types() -> ModuleType:
    """``pyspark.sql.pandas.types`` (Spark <-> Arrow types), imported without PySpark's
    warning that it does not fully support pandas 3 (the bridge uses no pandas)."""
    require_pyspark()
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
        )
        from pyspark.sql.pandas import types  # noqa: PLC0415

    return types


def arrow_schema_of(struct: Any, *, large_types: bool = False) -> Any:
    """A Spark ``StructType`` as the Arrow schema Spark itself uses for it (timestamps in UTC
    microseconds), whatever this PySpark version's ``to_arrow_schema`` accepts."""
    to_arrow_schema = arrow_types().to_arrow_schema
    options: dict[str, Any] = {"timezone": "UTC", "prefers_large_types": large_types}
    accepted = inspect.signature(to_arrow_schema).parameters
    return to_arrow_schema(struct, **{k: v for k, v in options.items() if k in accepted})


def is_connect(obj: Any) -> bool:
    """Whether ``obj`` (a session or DataFrame) is Spark Connect's: no JVM behind it."""
    if type(obj).__module__.startswith("pyspark.sql.connect"):
        return True
    return not is_classic(obj)


def require_classic_session(spark: Any) -> None:
    """Refuse a Spark Connect session, or a stopped one, with a message saying what to do
    instead."""
    if is_connect(spark):
        raise SparkConnectNotSupported(CONNECT_MESSAGE.format(what="session"))
    context = getattr(spark, "sparkContext", None)
    if context is not None and getattr(context, "_jsc", None) is None:  # what stop() leaves
        raise SparkBridgeError(
            "the SparkSession is stopped (spark.stop() or its SparkContext's stop() was "
            "called): give run_topology a running session (SparkSession.builder.getOrCreate() "
            "starts a new one; DataFrames of the stopped session cannot be read again)"
        )


_LOG4J = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n
"""


def _log4j_settings(level: str) -> Path:
    """A log4j2 configuration logging ``level`` and above to stderr (Spark's default logs
    its start-up warnings before ``setLogLevel`` can be called)."""
    path = Path(tempfile.gettempdir()) / f"ckptsim-spark-log4j2-{level.lower()}.properties"
    if not path.exists():
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(_LOG4J.format(level=level.lower()))
        os.replace(temporary, path)
    return path


def local_spark(
    master: str = "local[2]",
    *,
    app_name: str = "ckptsim",
    config: Mapping[str, str] | None = None,
    log_level: str = "ERROR",
) -> Any:
    """A SparkSession for the bridge: ``master`` (``local[2]`` embeds Spark), UI off, two
    shuffle partitions for a local master, logs at ``log_level`` from the JVM's start on
    (unless ``config`` sets ``spark.driver.extraJavaOptions``), 2 GB of driver memory, and
    Spark's Python workers on this interpreter (``PYSPARK_PYTHON``, unless set). An active
    session is reused (Spark allows one per process); Java is checked before one starts."""
    require_pyspark()
    require_pyarrow()
    from pyspark.sql import SparkSession  # noqa: PLC0415

    jvm_was_running = jvm_is_running()
    if not jvm_was_running:
        ensure_java()
        # Spark's Python workers run PYSPARK_PYTHON (default: python3 on the PATH, which may
        # lack PyArrow or be another Python version): unless set, use this interpreter
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # a partition being served to the driver stays in the driver's memory (as with
        # DataFrame.toLocalIterator): leave room for one per source subtask
        "spark.driver.memory": "2g",
    }
    if master.startswith("local"):
        settings["spark.sql.shuffle.partitions"] = "2"
    if not jvm_was_running:  # quiet from the JVM's start on
        settings["spark.driver.extraJavaOptions"] = (
            f"-Dlog4j2.configurationFile=file:{_log4j_settings(log_level)}"
        )
    settings.update(config or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as error:  # the JVM did not start: say why in the bridge's terms
        if "JAVA_GATEWAY_EXITED" in str(error) or "Java gateway" in str(error):
            raise SparkBridgeError(
                f"Spark did not start (master {master!r}): the Java gateway exited. Check "
                f"that Java {JAVA_RELEASE} runs (java -version) and JAVA_HOME.\n" + JAVA_HINT
            ) from error
        raise
    spark.sparkContext.setLogLevel(log_level)
    log.info("spark_session_ready", master=master, version=spark.version)
    return spark
