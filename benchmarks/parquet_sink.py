"""The exactly-once Parquet sink against PyArrow writing the same records directly, in one process.

    python benchmarks/parquet_sink.py [--records 1000000] [--repeat 5]

The records: running ``(user, amount, clicks)`` totals, as ``examples/spark_clicks.py`` writes
them (source -> map -> key_by/reduce -> sink at parallelism 2, checkpoints every 100 ms). A
first run of that job records, per sink subtask, exactly what its connector was asked: the
buffers it wrote and where the checkpoints pre-committed and committed. Every figure is the
median of ``--repeat`` interleaved runs:

- the sink alone: those calls replayed into ``spark_bridge.ParquetSink`` (exactly-once: a
  pending file per checkpoint, renamed on commit), against PyArrow writing the same buffers
  directly, each buffer converted with one ``pa.array`` call and written in row groups of the
  sink's size, into one file per subtask and, as the sink's files are laid out, into one file
  per checkpoint (issue target: the sink within 10 %, ratio >= 0.9);
- in the job: the job into the Parquet sink against the job into a connector that writes each
  buffer with PyArrow directly (one file per subtask, no transactions), both checkpointed.

Spark is not needed: the sink takes an Arrow schema and writes with PyArrow.
"""

from __future__ import annotations

import argparse
import gc
import logging
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow as pa
import pyarrow.parquet as pq
import structlog

from ckptsim import StreamExecutionEnvironment
from runtime.checkpoint import TaskId
from runtime.datastream import DataStream
from spark_bridge.sinks import ROW_GROUP_ROWS, ParquetSink

USERS = 10_000
INTERVAL_MS = 100

#: one connector call: ("write", buffer), ("pre_commit", id), ("commit", id)
Call = tuple[str, Any]


def schema() -> Any:
    return pa.schema([("user", pa.int64()), ("amount", pa.float64()), ("clicks", pa.int64())])


def totals(env: StreamExecutionEnvironment, n: int) -> DataStream:
    """Clicks -> running (user, total amount, clicks) per user."""
    return (
        env.from_generator(lambda i: (i % USERS, (i % 1000) * 0.25, 1), n)
        .map(lambda r: (r[0], r[1], r[2]))
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1], a[2] + b[2]))
    )


class Recorder:
    """A connector that keeps what it is asked (``sink_to`` factory of a recording run)."""

    def __init__(self, log: list[Call]) -> None:
        self.log = log

    def write(self, records: Any) -> None:
        self.log.append(("write", list(records)))

    def pre_commit(self, checkpoint_id: int) -> Any:
        self.log.append(("pre_commit", checkpoint_id))

    def commit(self, checkpoint_id: int) -> None:
        self.log.append(("commit", checkpoint_id))

    def restore(self, states: list[Any]) -> None:
        raise AssertionError("the recording run must not restart")

    def close(self, *, finished: bool) -> None:
        pass


def record(n: int) -> dict[int, list[Call]]:
    """Per sink subtask, the connector calls of one checkpointed run of the job."""
    logs: dict[int, list[Call]] = {}

    def factory(*, task: TaskId, parallelism: int, transactional: bool, attempt: int) -> Recorder:
        assert transactional, "the recording run is checkpointed"
        return Recorder(logs.setdefault(task.subtask, []))

    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(INTERVAL_MS)
    totals(env, n).sink_to(factory, name="out")
    result = env.execute("parquet recording", timeout=600)
    if not result.succeeded:
        raise SystemExit(f"the recording run did not finish: {result.failure}")
    return logs


class DirectParquet:
    """PyArrow directly: each buffer converted with one ``pa.array`` call, batches gathered
    into row groups of ``ROW_GROUP_ROWS``, one ``ParquetWriter``; ``roll`` closes the file and
    starts the next (one file per checkpoint, as the sink lays its files out)."""

    def __init__(self, directory: Path, name: str, arrow_schema: Any) -> None:
        self.directory, self.name, self.schema = directory, name, arrow_schema
        self.struct = pa.struct(list(arrow_schema))
        self.writer: Any = None
        self.files = 0
        self.gathered: list[Any] = []
        self.rows = 0

    def write(self, records: Any) -> None:
        batch = pa.RecordBatch.from_struct_array(pa.array(records, type=self.struct))
        self.gathered.append(batch)
        self.rows += batch.num_rows
        if self.rows >= ROW_GROUP_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.gathered:
            return
        if self.writer is None:
            self.files += 1
            path = self.directory / f"{self.name}-{self.files}.parquet"
            self.writer = pq.ParquetWriter(path, self.schema)
        self.writer.write_table(pa.Table.from_batches(self.gathered, schema=self.schema))
        self.gathered, self.rows = [], 0

    def roll(self) -> None:
        self.flush()
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    # the rest of a connector, for the job: no transactions
    def pre_commit(self, checkpoint_id: int) -> Any:
        return None

    def commit(self, checkpoint_id: int) -> None:
        pass

    def restore(self, states: list[Any]) -> None:
        pass

    def close(self, *, finished: bool) -> None:
        self.roll()


def direct(logs: dict[int, list[Call]], out: Path, *, per_checkpoint: bool) -> None:
    """The recorded buffers written with PyArrow directly (checkpoints ignored, or a new file
    at each)."""
    arrow_schema = schema()
    for subtask, calls in logs.items():
        writer = DirectParquet(out, f"part-{subtask}", arrow_schema)
        for kind, value in calls:
            if kind == "write":
                writer.write(value)
            elif kind == "pre_commit" and per_checkpoint:
                writer.roll()
        writer.roll()


def sink(logs: dict[int, list[Call]], out: Path) -> None:
    """The recorded calls replayed into the Parquet sink's connectors, as the tasks made them."""
    factory = ParquetSink(out, schema())
    for subtask, calls in logs.items():
        connector = factory(
            task=TaskId("sink-out", subtask), parallelism=len(logs), transactional=True, attempt=0
        )
        for kind, value in calls:
            if kind == "write":
                connector.write(value)
            elif kind == "pre_commit":
                connector.pre_commit(value)
            else:
                connector.commit(value)
        connector.close(finished=True)
    factory.remove_staging()


def job(n: int, out: Path, *, exactly_once: bool) -> float:
    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(INTERVAL_MS)
    arrow_schema = schema()
    stream = totals(env, n)
    if exactly_once:
        stream.sink_to(ParquetSink(out, arrow_schema), name="out")
    else:

        def factory(
            *, task: TaskId, parallelism: int, transactional: bool, attempt: int
        ) -> DirectParquet:
            return DirectParquet(out, f"part-{task.subtask}", arrow_schema)

        stream.sink_to(factory, name="out")
    gc.collect()  # no garbage of an earlier run is collected on this run's time
    started = time.perf_counter()
    result = env.execute("parquet benchmark", timeout=600)
    elapsed = time.perf_counter() - started
    if not result.succeeded:
        raise SystemExit(f"the job did not finish: {result.status.value} {result.failure}")
    return elapsed


def rows_in(out: Path) -> int:
    return sum(pq.ParquetFile(f).metadata.num_rows for f in out.glob("*.parquet"))


def timed(run: Callable[[Path], float | None]) -> tuple[float, int, int]:
    """Seconds, rows written and files written by ``run`` into a fresh folder (a job run
    returns its own time: ``execute``, without building the job)."""
    out = Path(tempfile.mkdtemp(prefix="ckptsim-bench-parquet-"))
    try:
        gc.collect()
        started = time.perf_counter()
        own = run(out)
        elapsed = time.perf_counter() - started if own is None else own
        return elapsed, rows_in(out), len(list(out.glob("*.parquet")))
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    n = args.records
    record(n // 10)  # warm-up: imports, pools (a first run takes its first checkpoint late)
    logs = record(n)
    buffers = [len(v) for calls in logs.values() for k, v in calls if k == "write"]
    checkpoints = {v for calls in logs.values() for k, v in calls if k == "pre_commit"}
    assert sum(buffers) == n, f"the recording run wrote {sum(buffers)} records, not {n}"

    variants: dict[str, Callable[[Path], float | None]] = {
        "PyArrow directly, one file per subtask": lambda out: direct(
            logs, out, per_checkpoint=False
        ),
        "PyArrow directly, one file per checkpoint": lambda out: direct(
            logs, out, per_checkpoint=True
        ),
        "ParquetSink (exactly-once)": lambda out: sink(logs, out),
        "job into PyArrow directly": lambda out: job(n, out, exactly_once=False),
        "job into ParquetSink": lambda out: job(n, out, exactly_once=True),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    files: dict[str, int] = {}
    for _ in range(args.repeat):
        for name, run in variants.items():
            elapsed, rows, count = timed(run)
            assert rows == n, f"{name} wrote {rows} rows, not {n}"
            times[name].append(elapsed)
            files[name] = count

    def median(name: str) -> float:
        return statistics.median(times[name])

    print(
        f"parquet sink: {n:,} (user, amount, clicks) running totals, parallelism 2, checkpoints "
        f"every {INTERVAL_MS} ms ({len(checkpoints)} in the recorded run), {len(buffers)} "
        f"buffers of {statistics.median(buffers):.0f} records (median); median of "
        f"{args.repeat} interleaved runs"
    )
    for name in variants:
        spread = f"{min(times[name]):.3f}-{max(times[name]):.3f}"
        print(f"  {name:<42} {median(name):>7.3f} s  ({spread} s, {files[name]} files)")
    sink_s = median("ParquetSink (exactly-once)")
    same_layout = median("PyArrow directly, one file per checkpoint") / sink_s
    one_file = median("PyArrow directly, one file per subtask") / sink_s
    in_job = median("job into PyArrow directly") / median("job into ParquetSink")
    print(
        f"  sink alone: PyArrow directly / ParquetSink = {same_layout:.2f} with the same files "
        f"(target >= 0.9), {one_file:.2f} against one file per subtask"
    )
    print(f"  in the job: PyArrow directly / ParquetSink = {in_job:.2f} (target >= 0.9)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
