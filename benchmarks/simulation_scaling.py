"""The deterministic simulation as jobs grow, and small property-test jobs per second.

    python benchmarks/simulation_scaling.py [--records 40000] [--parallelism 8,32,128]
                                            [--examples 40] [--repeat 2] [--by-kind N]

(1) µs of CPU time per scheduler step of a keyed job (source -> map -> key_by/reduce ->
    collect, checkpoints every 20 virtual ms) at each parallelism, and the ratio of the largest
    to the smallest (target: within 0.75-1.25: a step's cost does not grow with the job);
    (1b) the same with the records per subtask held constant (the largest P's share), so a
    step carries as much record work at every P;
(2) small examples per second of the property-test job (source -> map -> key_by/reduce ->
    collect, p=2, 2,000 records, one task failure, trace checked), with the checkpoints in
    files (``execution.checkpointing.storage: filesystem``, the default of a run) and in the
    JobManager's memory (``jobmanager``, the default of ``ckptsim.testing``'s simulations),
    both measured in this process (target: >= 50 examples/s in memory).

(3) with ``--by-kind N``: where an example's time goes, its deliveries by actor and message.

Machines here are noisy: every figure is the best of ``--repeat`` runs; the load average is
printed with it.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import structlog

from actors.faults import FailTask
from actors.launcher import make_runtime
from actors.simulation import SimulationRuntime
from ckptsim import StreamExecutionEnvironment
from ckptsim.testing import Simulation
from runtime.job import plan_execution


def keyed_job(parallelism: int, records: int) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment(parallelism=parallelism)
    env.enable_checkpointing(20)
    keys = 1000
    (
        env.from_generator(lambda i: (i % keys, i % 7), records, rate=records * 2.0)
        .map(lambda r: (r[0], r[1] * 2))
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .collect("out")
    )
    return env


def step_cost(parallelism: int, records: int) -> tuple[float, int, float]:
    """(µs of CPU time per step, steps, CPU seconds) of the keyed job on the simulation (CPU
    time of this process: the simulation runs on one thread, and other processes on a busy
    machine do not count)."""
    env = keyed_job(parallelism, records)
    runtime: Any = make_runtime("simulation", env.configuration, seed=1)
    assert isinstance(runtime, SimulationRuntime)
    gc.collect()
    started = time.process_time()
    result = env.execute("scaling", runtime=runtime, timeout=3600)
    elapsed = time.process_time() - started
    if not result.succeeded:
        raise SystemExit(f"the job did not finish: {result.status.value} {result.failure}")
    return elapsed / runtime.steps * 1e6, runtime.steps, elapsed


def property_job(env: StreamExecutionEnvironment) -> None:
    env.set_parallelism(2)
    env.enable_checkpointing(10)
    env.configure({"restart-strategy.type": "fixed-delay", "ckptsim.buffer.records": 50})
    (
        env.from_generator(lambda i: (i % 20, 1), 2_000, rate=20_000.0)
        .name("source")
        .map(lambda r: (r[0], r[1] * 2))
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .collect("out")
    )


def examples_per_second(storage: str, count: int) -> float:
    """Property-test examples per second: each a seed and a task failure midway."""
    return examples_per_second_both(storage, count)[0]


def examples_per_second_both(storage: str, count: int) -> tuple[float, float]:
    """Property-test examples per second of wall time and of this process's CPU time (the
    simulation runs on one thread: on a quiet machine they agree; on a busy one the CPU
    figure is what other processes do not change)."""
    settings = {"execution.checkpointing.storage": storage}
    started, started_cpu = time.perf_counter(), time.process_time()
    for seed in range(count):
        sim = Simulation(
            seed=seed, faults=(FailTask(task=_map_task(), at_record=300 + seed % 400),)
        )
        result = sim.run(property_job, settings)
        finals: dict[int, int] = {}
        for k, v in result.collected("out"):
            finals[k] = max(finals.get(k, 0), v)
        assert finals == {k: 200 for k in range(20)}, (storage, seed, finals)
    return (
        count / (time.perf_counter() - started),
        count / (time.process_time() - started_cpu),
    )


_MAP_TASK: list[str] = []


def _map_task() -> str:
    """The name of the first subtask of the job's source chain (what a failure strikes)."""
    if not _MAP_TASK:
        env = StreamExecutionEnvironment()
        property_job(env)
        plan = plan_execution(env.build_job_graph("x"), env.configuration)
        _MAP_TASK.append(sorted(str(t) for t in plan.tasks)[0])
    return _MAP_TASK[0]


def by_kind(count: int) -> None:
    """Where a property example's time goes: the deliveries of ``count`` examples (checkpoints
    in memory) by the actor and the kind of message, with their wall time each (the simulation
    runs on this thread; a wrapper around ``actors.simulation.deliver`` times them)."""
    import collections  # noqa: PLC0415

    from actors import simulation  # noqa: PLC0415

    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    spent: collections.Counter[tuple[str, str]] = collections.Counter()
    deliver = simulation.deliver

    def timed(actor: Any, envelope: Any) -> None:
        message = envelope.message
        kind = type(message).__name__
        inner = getattr(message, "key", None) if kind == "TimerFired" else None
        inner = getattr(message, "item", None) if kind == "Deliver" else inner
        if inner is not None:
            kind += ":" + type(inner).__name__
        key = (type(actor).__name__.removeprefix("Simulated"), kind)
        started = time.perf_counter()
        try:
            deliver(actor, envelope)
        finally:
            counts[key] += 1
            spent[key] += time.perf_counter() - started

    simulation.deliver = timed  # type: ignore[assignment]
    try:
        started = time.process_time()
        examples_per_second("jobmanager", count)
        cpu = (time.process_time() - started) / count
    finally:
        simulation.deliver = deliver  # type: ignore[assignment]
    print(
        f"(3) deliveries per example by actor and message ({count} examples, in memory; "
        f"{cpu * 1000:.1f} ms of CPU per example, {sum(spent.values()) / count * 1000:.1f} ms "
        f"of it in deliveries, {sum(counts.values()) / count:.0f} deliveries):"
    )
    for key, seconds in spent.most_common(15):
        n = counts[key]
        print(
            f"  {n / count:7.1f} x {seconds / n * 1e6:6.1f} us = {seconds / count * 1000:6.2f} ms"
            f"  {key[0]} {key[1]}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=40_000)
    parser.add_argument("--parallelism", default="8,32,128")
    parser.add_argument("--examples", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--skip-steps", action="store_true")
    parser.add_argument("--skip-examples", action="store_true")
    parser.add_argument(
        "--by-kind",
        type=int,
        default=0,
        metavar="N",
        help="also time N property examples' deliveries by actor and message kind",
    )
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not args.skip_steps:
        levels = [int(p) for p in args.parallelism.split(",")]
        best: dict[int, float] = {}
        print(f"(1) keyed job, {args.records:,} records, simulated, best of {args.repeat}:")
        for p in levels:
            runs = [step_cost(p, args.records) for _ in range(args.repeat)]
            us, steps, wall = min(runs)
            best[p] = us
            print(f"  P={p:<4} {us:6.1f} µs/step  ({steps:,} steps, {wall:.1f} s CPU)")
        ratio = best[levels[-1]] / best[levels[0]]
        print(
            f"  µs/step P={levels[-1]} / P={levels[0]}: {ratio:.2f} "
            f"(target 0.75-1.25: {'met' if 0.75 <= ratio <= 1.25 else 'NOT met'})"
        )
        # the same records per subtask at every P (the job grows with P): each step carries
        # about as much record work at P=8 as at P=128, so what is left is the step's own cost
        per_subtask = args.records // levels[-1]
        grown: dict[int, float] = {}
        print(f"(1b) the same, {per_subtask:,} records per subtask (the job grows with P):")
        for p in levels[:-1]:
            runs = [step_cost(p, per_subtask * p) for _ in range(args.repeat)]
            us, steps, wall = min(runs)
            grown[p] = us
            print(
                f"  P={p:<4} {us:6.1f} µs/step  ({per_subtask * p:,} records, {steps:,} steps, "
                f"{wall:.1f} s CPU)"
            )
        grown[levels[-1]] = best[levels[-1]]  # its share of (1)'s records is this share
        print(f"  P={levels[-1]:<4} {best[levels[-1]]:6.1f} µs/step  (the run of (1))")
        ratio = grown[levels[-1]] / grown[levels[0]]
        print(
            f"  µs/step P={levels[-1]} / P={levels[0]}: {ratio:.2f} (in 0.75-1.25: "
            f"{'yes' if 0.75 <= ratio <= 1.25 else 'no'}; the target is judged on (1))"
        )
    if not args.skip_examples:
        print(
            f"(2) property-test job (p=2, 2,000 records, one task failure), {args.examples} "
            f"examples, best of {args.repeat}:"
        )
        rates = {}
        for storage in ("filesystem", "jobmanager"):
            runs = [examples_per_second_both(storage, args.examples) for _ in range(args.repeat)]
            rates[storage] = max(wall for wall, _ in runs)
            cpu = max(c for _, c in runs)
            print(
                f"  checkpoints in {storage:<10} {rates[storage]:6.1f} examples/s "
                f"({cpu:.1f} per second of CPU time)"
            )
        print(
            f"  in memory / in files: {rates['jobmanager'] / rates['filesystem']:.2f}; target "
            f">= 50 examples/s: {'met' if rates['jobmanager'] >= 50 else 'NOT met'}"
        )
    if args.by_kind:
        by_kind(args.by_kind)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
