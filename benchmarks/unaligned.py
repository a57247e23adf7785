"""Aligned against unaligned checkpoints on the back-pressured example job, and where the
in-flight data an unaligned checkpoint persists sits.

    python benchmarks/unaligned.py [--runs 3] [--simulate]

Runs ``examples/slow_running_sum.py`` at parallelism 2 (a source faster than its "Slow"
consumer, so buffers queue in the sources' result partitions and in the Slow tasks' input
gates), with aligned and with unaligned checkpoints, and prints per mode the checkpoints
completed and failed, their average end-to-end duration, and for unaligned checkpoints the
average in-flight data persisted per checkpoint, split into the output channel state of the
sources, the input and output channel state of the Slow tasks and the input channel state of
the reduce tasks (bytes from the checkpoint statistics; the Slow tasks' input/output split by
the records the trace counts).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import slow_running_sum  # noqa: E402
import structlog  # noqa: E402

from ckptsim import StreamExecutionEnvironment, TraceCollector  # noqa: E402


def run(unaligned: bool, simulate: bool) -> tuple[Any, list[Any]]:
    env = StreamExecutionEnvironment(parallelism=2)
    slow_running_sum.build(env)
    env.configure({"execution.checkpointing.unaligned.enabled": unaligned})
    options: dict[str, Any] = {"runtime": "simulation", "seed": 7} if simulate else {}
    trace = TraceCollector()
    result = env.execute("slow running sum", timeout=120, trace=trace, **options)
    events = trace.events
    if not result.succeeded:
        raise SystemExit(f"the job did not finish: {result.status.value} {result.failure}")
    return result, list(events)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--simulate", action="store_true", help="on the simulation (seed 7)")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    where = "the simulation (virtual time)" if args.simulate else "threads"
    print(f"examples/slow_running_sum.py, parallelism 2, on {where}, {args.runs} run(s) each")
    durations: dict[bool, list[float]] = {False: [], True: []}
    for unaligned in (False, True):
        completed = failed = 0
        persisted: dict[str, list[int]] = defaultdict(list)
        for _ in range(args.runs):
            result, events = run(unaligned, args.simulate)
            counts = result.checkpoints["counts"]
            completed += counts["completed"]
            failed += counts["failed"]
            split = _slow_split(events)
            for details in result.checkpoint_details.values():
                if details["status"] != "COMPLETED":
                    continue
                durations[unaligned].append(details["end_to_end_duration"])
                tasks = details["tasks"]
                slow = _vertex(tasks, "map_batch")
                persisted["sources' output"].append(_vertex(tasks, "source"))
                persisted["Slow input"].append(round(slow * split))
                persisted["Slow output"].append(round(slow * (1 - split)))
                persisted["reduce input"].append(_vertex(tasks, "reduce"))
        mode = "unaligned" if unaligned else "aligned"
        print(
            f"  {mode:>9}: {completed} completed, {failed} failed; end-to-end duration avg "
            f"{statistics.mean(durations[unaligned]):.0f} ms, median "
            f"{statistics.median(durations[unaligned]):.0f} ms"
        )
        if unaligned:
            total = sum(statistics.mean(v) for v in persisted.values())
            parts = ", ".join(
                f"{name} {statistics.mean(v) / 1024:.1f} KB ({statistics.mean(v) / total:.0%})"
                for name, v in persisted.items()
            )
            print(
                f"             in-flight data persisted per checkpoint: {total / 1024:.1f} KB: {parts}"
            )
    ratio = statistics.mean(durations[False]) / statistics.mean(durations[True])
    print(f"  unaligned checkpoints complete {ratio:.1f}x faster than aligned ones")
    return 0


def _vertex(tasks: dict[str, Any], kind: str) -> int:
    return sum(int(t["persisted_data"]) for name, t in tasks.items() if name.startswith(kind))


def _slow_split(events: list[Any]) -> float:
    """The share of the Slow tasks' persisted records that is input channel state."""
    inputs = outputs = 0
    for e in events:
        if e["event"] == "channel_state_captured" and str(e["task"]).startswith("map_batch"):
            inputs += sum(e["input"].values())
            outputs += sum(e["output"].values())
    return inputs / (inputs + outputs) if inputs + outputs else 0.0


if __name__ == "__main__":
    sys.exit(main())
