"""The deterministic simulation against the threaded runtime, as ratios measured in one run.

    python benchmarks/simulation.py [--repeat 3] [--examples 60]

(1) the back-pressure example (examples/slow_running_sum.py: a slow operator, 2 ms per buffer),
    wall time on threads divided by wall time simulated (target: the simulation >= 3x faster),
    and the simulation's messages per second;
(2) the CPU-bound throughput job (2M records, no pacing): the same ratio, for honesty: where
    every millisecond is Python work, virtual time saves nothing;
(3) Hypothesis examples per second of a whole-system property (random topology, schedule and
    faults, output compared with the failure-free one, trace checked).
"""

from __future__ import annotations

import argparse
import gc
import logging
import runpy
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import structlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.launcher import make_runtime
from actors.simulation import SimulationRuntime
from ckptsim import StreamExecutionEnvironment
from ckptsim.testing import Simulation, Topology, simulations, topologies

ROOT = Path(__file__).resolve().parent.parent


def slow_job() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment(parallelism=2)
    runpy.run_path(str(ROOT / "examples" / "slow_running_sum.py"))["build"](env)
    return env


def cpu_job() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(100)
    keys = 1000
    (
        env.from_generator(lambda i: (i % keys, i % 7), 2_000_000)
        .map(lambda r: (r[0], r[1] * 2))
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .collect("out")
    )
    return env


def timed(env: StreamExecutionEnvironment, simulated: bool) -> tuple[float, Any, int]:
    runtime: Any = (
        make_runtime("simulation", env.configuration, seed=1) if simulated else "threaded"
    )
    gc.collect()
    started = time.perf_counter()
    result = env.execute("bench", runtime=runtime, timeout=600)
    elapsed = time.perf_counter() - started
    if not result.succeeded:
        raise SystemExit(f"the job did not finish: {result.status.value} {result.failure}")
    steps = runtime.steps if isinstance(runtime, SimulationRuntime) else 0
    return elapsed, result, steps


def compare(name: str, make: Any, repeat: int) -> None:
    threaded, simulated, steps = [], [], 0
    results = {}
    for _ in range(repeat):
        elapsed, results["threaded"], _ = timed(make(), simulated=False)
        threaded.append(elapsed)
        elapsed, results["simulation"], steps = timed(make(), simulated=True)
        simulated.append(elapsed)
    t, s = min(threaded), min(simulated)
    job_ms = {k: r.duration_ms for k, r in results.items()}
    print(f"{name}: best of {repeat}")
    print(f"  threaded   {t * 1000:8.0f} ms wall (job time {job_ms['threaded']} ms)")
    print(
        f"  simulation {s * 1000:8.0f} ms wall (virtual job time {job_ms['simulation']} ms), "
        f"{steps:,} messages, {steps / s:,.0f} messages/s"
    )
    print(f"  simulation is {t / s:.1f}x faster than threads")


def examples_per_second(count: int) -> None:
    executed = 0
    tolerant = {
        "execution.checkpointing.interval": "15 ms",
        "execution.checkpointing.tolerable-failed-checkpoints": 1000,
        "execution.checkpointing.timeout": "60 ms",
        "execution.checkpointing.unaligned.enabled": True,
    }

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(topology=topologies(), sim=simulations(faults=True), mode=st.booleans())
    def prop(topology: Topology, sim: Simulation, mode: bool) -> None:
        nonlocal executed
        executed += 1
        result = sim.run(
            topology.build, {**tolerant, "execution.checkpointing.unaligned.enabled": mode}
        )
        assert topology.observe(result) == topology.expected()

    started = time.perf_counter()
    prop()
    elapsed = time.perf_counter() - started
    print(
        f"whole-system property: {executed} examples in {elapsed:.1f} s = "
        f"{executed / elapsed:.1f} examples/s (random topology, schedule and faults; trace checked)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--examples", type=int, default=60)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    compare("(1) back-pressure example (slow operator, 60k records)", slow_job, args.repeat)
    compare("(2) CPU-bound job (2M records, checkpoints every 100 ms)", cpu_job, args.repeat)
    examples_per_second(args.examples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
