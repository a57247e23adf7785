"""Failure and recovery: a task fails, another one's actor crashes; the job restarts from its
latest completed checkpoint and still writes exactly the failure-free output.

A keyed running total of purchases per user is written by the transactional file sink: each
subtask stages its records per checkpoint and commits them (renames them into
``part-<vertex>-<subtask>-<writer>-<n>.jsonl``) only when the checkpoint completes, so a
reader never sees records that a restore will replay. Two faults strike mid-run (once each):

- ``fail-task`` on the running-total task at its 3,000th record (its user code "throws");
- ``crash-task`` on a source subtask at its 5,000th record after that restart (the actor
  dies; the JobMaster, its supervisor, notices).

Each failure moves the job RUNNING -> RESTARTING (pending checkpoints abort with
``TASK_FAILURE``), tears down every task and channel, and redeploys them restored from the
latest completed checkpoint: keyed state, source positions and, with unaligned checkpoints,
the in-flight data. ``restart-strategy.type: fixed-delay`` decides whether and when.

    ckptsim run examples/failure_recovery.py                    # summary with restarts
    ckptsim run examples/failure_recovery.py --simulate --seed 3
    python examples/failure_recovery.py [--seed N | --threads]   # exactly-once vs at-least-once,
                                                                 # output verified

Run directly, the script runs the job twice on the deterministic simulation (seed 7 unless
``--seed`` says otherwise; ``--threads`` uses the threaded runtime) and checks the committed
files against a plain Python computation: with exactly-once checkpoints every running total is
written once and the final totals are exact; with at-least-once checkpoints no record is lost,
but records that reached the running total after a barrier on one input channel (the tracker
does not align) are in the restored state and are replayed as well, so some totals may count
them twice. That needs skewed barriers: on the simulation both sources get the trigger at the
same virtual instant and the running total keeps up, so there are none at the default seed;
``--threads`` skews them (the duplicates vary from run to run).
"""

import json
import tempfile
from pathlib import Path

RECORDS = 20_000
USERS = 40

FAULTS = [
    # task names as in traces: "<vertex>#<subtask>"
    "fail-task:task=reduce-2#0,at-record=3000",
    "crash-task:task=source-1#0,at-record=5000",
]


def purchase(i):
    return (f"user-{i % USERS:02d}", i % 7 + 1)


def expected_totals():
    totals = {}
    for i in range(RECORDS):
        user, amount = purchase(i)
        totals[user] = totals.get(user, 0) + amount
    return totals


def build(env):
    """Under ``ckptsim run``: the totals go to a temporary folder, removed after the job (run
    the script directly to have them checked)."""
    with tempfile.TemporaryDirectory(prefix="ckptsim-totals-") as output:
        pipeline(env, output)
        env.execute("failure_recovery")


def pipeline(env, output):
    env.enable_checkpointing("20 ms")
    env.configure(
        {
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": 3,
            "restart-strategy.fixed-delay.delay": "50 ms",
            "ckptsim.faults": "; ".join(FAULTS),
            "ckptsim.buffer.records": 100,
        }
    )
    (
        env.from_generator(purchase, RECORDS, rate=100_000, name="Purchases")
        .key_by(lambda p: p[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]), name="RunningTotal")
        .sink_to_file(output, fmt="json")
    )


def committed_totals(directory):
    """What a reader sees: the committed part files (the last total per user wins)."""
    totals, lines = {}, 0
    for part in sorted(Path(directory).glob("part-*")):
        for line in part.read_text().splitlines():
            user, total = json.loads(line)
            totals[user] = max(totals.get(user, 0), total)
            lines += 1
    return totals, lines


if __name__ == "__main__":
    import argparse
    import sys

    parser = argparse.ArgumentParser(description="failure and recovery, output verified")
    parser.add_argument("--seed", type=int, default=7, help="simulation seed (default 7)")
    parser.add_argument("--threads", action="store_true", help="run on the threaded runtime")
    args = parser.parse_args()
    options = {} if args.threads else {"runtime": "simulation", "seed": args.seed}

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from ckptsim import StreamExecutionEnvironment, configure_logging

    configure_logging(level="error")  # the injected failures' warnings are expected
    expected = expected_totals()
    failed = False
    for mode in ("EXACTLY_ONCE", "AT_LEAST_ONCE"):
        with tempfile.TemporaryDirectory(prefix="ckptsim-recovery-") as out:
            env = StreamExecutionEnvironment(parallelism=2)
            pipeline(env, out)
            env.configure({"execution.checkpointing.mode": mode})
            result = env.execute(f"failure recovery ({mode})", **options)
            totals, lines = committed_totals(out)
        print(
            f"{mode}: job {result.status.value} after {result.restarts} restart(s); "
            f"{result.checkpoints['counts']['completed']} checkpoints completed, "
            f"{result.checkpoints['counts']['failed']} failed"
        )
        for n, failure in enumerate(result.failures, 1):
            print(f"  failure {n}: {failure}")
        if mode == "EXACTLY_ONCE":
            # one running total per record, each exactly once, and the right final totals
            ok = result.succeeded and lines == RECORDS and totals == expected
            print(
                f"  exactly-once: {lines} committed records for {RECORDS} inputs, "
                f"{sum(t == expected[u] for u, t in totals.items())}/{len(expected)} final "
                f"totals match plain Python" + ("" if ok else "  <-- MISMATCH")
            )
        else:
            # every record arrives; replayed ones may arrive twice and count twice
            ok = result.succeeded and lines >= RECORDS and set(totals) == set(expected)
            print(
                f"  at-least-once: {lines} records for {RECORDS} inputs "
                f"({lines - RECORDS} duplicates after restores); "
                f"{sum(t > expected[u] for u, t in totals.items())} totals over-counted"
                + ("" if ok else "  <-- LOST RECORDS")
            )
        failed |= not ok
    sys.exit(1 if failed else 0)
