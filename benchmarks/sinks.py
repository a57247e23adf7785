"""What exactly-once output costs, per sink, as ratios against baselines run in the same process.

    python benchmarks/sinks.py [--records 1000000] [--keys 1000] [--repeat 5]

source -> map -> key_by/reduce -> sink on actors at parallelism 2 (every record reaches the
sink: a running sum per key), each sink run without checkpoints and with checkpoints every
100 ms, runs interleaved; every figure is the median of ``--repeat`` runs:

- collect (transactional: staged per checkpoint, handed over on completion): checkpointed /
  not checkpointed (issue target >= 0.95);
- a filter that drops every record, then collect: the same ratio, the protocol's own cost;
- ``sink_to_file`` text and JSON lines: checkpointed / not (target >= 0.95 each), and JSON's
  speed against text's, both checkpointed (target >= 0.7).

Each ratio is printed twice: of wall times (the target), and of the process's CPU time over
the same runs (every thread's), which a machine shared with other work disturbs much less: it
says whether checkpoints cost work, where the wall ratio also shows how the threads were
scheduled.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import structlog

from ckptsim import StreamExecutionEnvironment
from runtime.datastream import DataStream

Sink = Callable[[DataStream, str], None]


def _collect(stream: DataStream, _out: str) -> None:
    stream.collect("out")


def _drop_all(stream: DataStream, _out: str) -> None:
    stream.filter(lambda r: False).collect("out")


def _text(stream: DataStream, out: str) -> None:
    stream.sink_to_file(out, fmt="text")


def _json(stream: DataStream, out: str) -> None:
    stream.sink_to_file(out, fmt="json")


SINKS: dict[str, Sink] = {
    "collect": _collect,
    "filter all, then collect": _drop_all,
    "sink_to_file text": _text,
    "sink_to_file json": _json,
}


def run(sink: Sink, n: int, keys: int, interval: int | None) -> tuple[float, float]:
    """Wall and CPU seconds of one run of the job into ``sink``."""
    env = StreamExecutionEnvironment(parallelism=2)
    if interval is not None:
        env.enable_checkpointing(interval)
    out = tempfile.mkdtemp(prefix="ckptsim-bench-sink-")
    shutil.rmtree(out)  # the sink makes it: a folder must not hold an earlier run's files
    stream = (
        env.from_generator(lambda i: (i % keys, i % 7), n)
        .map(lambda r: (r[0], r[1] * 2))
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    sink(stream, out)
    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    result = env.execute("sink benchmark", timeout=600)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    shutil.rmtree(out, ignore_errors=True)
    if not result.succeeded:
        raise SystemExit(f"the job did not finish: {result.status.value} {result.failure}")
    return elapsed, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    n = args.records
    times: dict[tuple[str, bool], list[float]] = {}
    cpu: dict[tuple[str, bool], list[float]] = {}
    run(_collect, n // 10, args.keys, 100)  # warm-up: imports, pools
    for _ in range(args.repeat):
        for name, sink in SINKS.items():
            for checkpointed in (False, True):
                elapsed, used = run(sink, n, args.keys, 100 if checkpointed else None)
                times.setdefault((name, checkpointed), []).append(elapsed)
                cpu.setdefault((name, checkpointed), []).append(used)

    def median(name: str, checkpointed: bool) -> float:
        return statistics.median(times[(name, checkpointed)])

    print(
        f"sinks: {n:,} records, {args.keys} keys, parallelism 2, checkpoints every 100 ms; "
        f"median of {args.repeat} interleaved runs"
    )
    print(
        f"  {'sink':<26} {'no checkpoints':>15} {'checkpointed':>13} {'ratio':>6}  "
        f"{'target':<8} {'CPU ratio':>9}"
    )
    for name in SINKS:
        plain, checked = median(name, False), median(name, True)
        work = statistics.median(cpu[(name, False)]) / statistics.median(cpu[(name, True)])
        target = "" if name.startswith("filter") else ">= 0.95"
        print(
            f"  {name:<26} {plain:>13.2f} s {checked:>11.2f} s {plain / checked:>6.2f}  "
            f"{target:<8} {work:>9.2f}"
        )
    text, json_ = median("sink_to_file text", True), median("sink_to_file json", True)
    print(f"  JSON lines / text speed, checkpointed: {text / json_:.2f} (target >= 0.7)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
