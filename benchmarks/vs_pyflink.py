"""The same keyed-sum job on ckptsim and on Apache Flink (PyFlink), when PyFlink is installed.

    python benchmarks/vs_pyflink.py [--pyflink-python PATH] [--records 2000000]
                                    [--pyflink-records 50000] [--modes thread,process]

numbers 0..N-1 -> map (i % 1000, 1) -> key_by -> reduce (sum) -> a discarding sink, parallelism
2, exactly-once checkpoints every 200 ms. ckptsim runs in this process (threaded runtime);
PyFlink runs in a child process of ``--pyflink-python`` (default: ``$CKPTSIM_PYFLINK_PYTHON``;
a Python with ``apache-flink`` installed, never a dependency of ckptsim), once per
``python.execution-mode``. Printed: records/s while RUNNING, the time from submission to
RUNNING, and ckptsim's rate over PyFlink's. Without PyFlink the comparison is skipped with a
message (ckptsim's own figures are still printed).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import structlog

from actors.connectors import NoTransactions
from ckptsim import StreamExecutionEnvironment

PYFLINK_JOB = textwrap.dedent(
    """
    import json, sys, time
    from pyflink.common import Configuration, Types, WatermarkStrategy
    from pyflink.common.job_status import JobStatus
    from pyflink.datastream import CheckpointingMode, StreamExecutionEnvironment
    from pyflink.datastream.connectors.base import Sink
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource
    from pyflink.java_gateway import get_gateway

    records, mode = int(sys.argv[1]), sys.argv[2]
    started = time.perf_counter()
    config = Configuration()
    config.set_string("python.execution-mode", mode)
    config.set_string("python.executable", sys.executable)
    config.set_string("python.client.executable", sys.executable)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(2)
    env.enable_checkpointing(200, CheckpointingMode.EXACTLY_ONCE)
    pair = Types.TUPLE([Types.LONG(), Types.LONG()])
    discard = get_gateway().jvm.org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink()
    (
        env.from_source(NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "seq")
        .map(lambda i: (i % 1000, 1), output_type=pair)
        .key_by(lambda r: r[0], key_type=Types.LONG())
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .sink_to(Sink(discard))
    )
    client = env.execute_async("keyed sum")
    while client.get_job_status().result() != JobStatus.RUNNING:
        time.sleep(0.01)
    running = time.perf_counter()
    client.get_job_execution_result().result()
    ended = time.perf_counter()
    print(json.dumps({"startup_s": running - started, "run_s": ended - running}))
    """
)


class _Discard(NoTransactions):
    def write(self, records: Any) -> None:
        pass

    def pre_commit(self, checkpoint_id: int) -> Any:
        return None

    def close(self, *, finished: bool) -> list[Any] | None:
        return None


def _discarding_sink(**_: Any) -> _Discard:
    return _Discard()


def ckptsim_run(records: int) -> tuple[float, float]:
    """(seconds from execute() to RUNNING, seconds RUNNING)."""
    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(200)
    (
        env.from_generator(lambda i: i, records, name="seq")
        .map(lambda i: (i % 1000, 1))
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .sink_to(_discarding_sink, name="discard")
    )
    running: list[float] = []

    def seen(snapshot: dict[str, Any]) -> None:
        if not running and snapshot.get("status") == "RUNNING":
            running.append(time.perf_counter())

    started = time.perf_counter()
    result = env.execute("keyed sum", progress=seen, progress_interval=0.005)
    ended = time.perf_counter()
    if not result.succeeded:
        raise SystemExit(f"ckptsim's job did not finish: {result.failure}")
    at = running[0] if running else started
    return at - started, ended - at


def pyflink_run(python: str, records: int, mode: str) -> tuple[float, float] | str:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(PYFLINK_JOB)
    env = {**os.environ, "PATH": f"{Path(python).parent}{os.pathsep}{os.environ['PATH']}"}
    try:
        done = subprocess.run(
            [python, script.name, str(records), mode],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
            check=False,
        )
    finally:
        os.unlink(script.name)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return f"PyFlink ({mode}) failed: {done.stderr.strip().splitlines()[-1:]}"
    figures = json.loads(lines[-1])
    return figures["startup_s"], figures["run_s"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pyflink-python", default=os.environ.get("CKPTSIM_PYFLINK_PYTHON"))
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--pyflink-records", type=int, default=50_000)
    parser.add_argument("--modes", default="thread,process")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    startup, run = ckptsim_run(args.records)
    ours = args.records / run
    print(
        "keyed sum, parallelism 2, exactly-once checkpoints every 200 ms, discarding sink "
        "(rates while RUNNING; start-up: submission to RUNNING)"
    )
    print(f"  ckptsim (threads)        {ours:12,.0f} records/s   start-up {startup:6.2f} s")
    python = args.pyflink_python
    if not python:
        print(
            "  PyFlink: skipped (give --pyflink-python PATH or set CKPTSIM_PYFLINK_PYTHON to a "
            "Python with apache-flink installed, e.g. a separate venv)"
        )
        return 0
    probe = subprocess.run([python, "-c", "import pyflink"], capture_output=True, check=False)
    if probe.returncode != 0:
        print(f"  PyFlink: skipped ({python} cannot import pyflink)")
        return 0
    for mode in args.modes.split(","):
        figures = pyflink_run(python, args.pyflink_records, mode)
        if isinstance(figures, str):
            print(f"  {figures}")
            continue
        their_startup, their_run = figures
        theirs = args.pyflink_records / their_run
        print(
            f"  PyFlink ({mode:<7})        {theirs:12,.0f} records/s   start-up "
            f"{their_startup:6.2f} s   ckptsim is {ours / theirs:,.0f}x faster"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
