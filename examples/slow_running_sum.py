"""A keyed running sum behind a deliberately slow operator: back-pressure, and what it does to
aligned and unaligned checkpoints.

The source produces faster than the "Slow" operator consumes, so buffers queue up in the
sources' result partitions (their buffer pools) and in the Slow tasks' input gates, and
barriers wait behind them: aligned checkpoints take long (start delay, alignment), unaligned
ones overtake the queued data and persist it as channel state instead (output state at the
sources, input state at the Slow tasks; `python benchmarks/unaligned.py` measures both ways).

    ckptsim run examples/slow_running_sum.py                                              # aligned
    ckptsim run examples/slow_running_sum.py -D execution.checkpointing.unaligned.enabled=true
    ckptsim run examples/slow_running_sum.py --simulate --seed 7          # virtual time, replayable
    python examples/slow_running_sum.py                                                  # both, compared

The slow operator declares its cost (``processing_cost``): on threads the task spends it for
real, in the simulation it passes in virtual time.
"""

RECORDS = 60_000
KEYS = 100


def build(env):
    env.enable_checkpointing("50 ms")
    env.configure({"ckptsim.buffer.records": 100})
    (
        env.from_generator(lambda i: (i % KEYS, 1), RECORDS, name="Events")
        .rebalance()
        .map_batch(lambda batch: batch, name="Slow")
        .processing_cost(per_buffer_ms=2)  # 2 ms per buffer of 100 records
        .key_by(lambda event: event[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]), name="RunningSum")
        .collect("sums")
    )


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from ckptsim import StreamExecutionEnvironment, configure_logging

    configure_logging(level="warning")

    for unaligned in (False, True):
        env = StreamExecutionEnvironment(parallelism=2)
        build(env)
        env.configure({"execution.checkpointing.unaligned.enabled": unaligned})
        result = env.execute("slow running sum")
        e2e = result.checkpoints["summary"]["end_to_end_duration"]
        persisted = result.checkpoints["summary"]["persisted_data"]
        print(
            f"{'unaligned' if unaligned else 'aligned':>9}: {result.checkpoints['counts']['completed']} "
            f"checkpoints, duration avg {e2e['avg']} ms (max {e2e['max']} ms), "
            f"in-flight data persisted avg {persisted['avg']} bytes"
        )
