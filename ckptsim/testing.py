"""Property-based testing of jobs on the deterministic simulation, with Hypothesis.

Write a property of your own topology in a few lines::

    from hypothesis import given
    from ckptsim.testing import simulations

    def build(env):
        env.enable_checkpointing("20 ms")
        env.from_collection(lines).flat_map(str.split).map(lambda w: (w, 1)) \\
           .key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).collect("counts")

    @given(sim=simulations(faults=True))
    def test_every_word_is_counted_once(sim):
        result = sim.run(build, {"execution.checkpointing.unaligned.enabled": True})
        assert final_counts(result.collected("counts")) == expected

``simulations()`` draws a seed, the first scheduling choices and (with ``faults=True``)
faults: lost or late acknowledgements, stalled channels, failed snapshots; with
``failures=n``, one to ``n`` task failures or actor crashes, after which the job restarts from
its latest completed checkpoint (set a restart strategy, e.g. ``restart-strategy.type:
fixed-delay``). ``sim.run`` runs
the job on the simulation runtime, checks its trace against the protocol's invariants
(``ckptsim.check_trace``; a violation fails the test with the events that show it) and returns
the ``JobResult``. Its checkpoints are kept in the JobManager's memory (Flink's
``JobManagerCheckpointStorage``: no files, no fsync) unless the job's settings choose a storage
or a checkpoint directory. Hypothesis shrinks a failure to a small schedule and prints it as
``Simulation(seed=..., schedule=(...), faults=(...))``, which replays it:
``Simulation(seed=..., ...).run(build, settings)``.

``topologies()`` draws small random jobs (sources, map/filter/flat_map stages over forward,
rebalance, hash and broadcast edges, an optional keyed reduce, slow operators) with their
failure-free result computed in plain Python, as the project's own system properties use.

``threaded_runs()`` draws faults of every kind for a run on the threaded runtime instead
(``ThreadedRun(faults=...).run(build, settings)``, its trace checked the same way): the
operating system interleaves the threads, so such a property must hold for any interleaving,
and a failure replays its job and faults, not its schedule.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.control import cleanup, current_build_context, currently_in_test_context
from hypothesis.errors import HypothesisException

from actors.faults import (
    CrashTask,
    DelayAcknowledgement,
    DropAcknowledgement,
    FailSnapshot,
    FailTask,
    Fault,
    StallChannel,
)
from actors.trace import TraceCollector
from ckptsim._environment import StreamExecutionEnvironment
from runtime.job import JobResult, plan_execution
from runtime.tracecheck import TraceReport, check_trace

Build = Callable[[StreamExecutionEnvironment], Any]


#: the settings that choose where checkpoints go: a job that sets one keeps its choice
_STORAGE_KEYS = ("execution.checkpointing.storage", "execution.checkpointing.dir")


class TraceViolation(AssertionError):
    """A simulated run broke a protocol invariant."""


@dataclass(frozen=True)
class FaultSpec:
    """A fault drawn without knowing the job: tasks and channels are picked by index, modulo
    the job's own (so one spec means something for any topology)."""

    #: drop_ack | delay_ack | stall | fail_snapshot | fail_task | fail_checkpoint | crash_task
    kind: str
    target: int = 0
    checkpoint_id: int = 1
    at_ms: int = 0
    duration_ms: int = 0
    #: fail_task / crash_task: after this many records (fail_task with 0, and
    #: fail_checkpoint: while taking checkpoint ``checkpoint_id``)
    at_record: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ALL_FAULTS:
            near = difflib.get_close_matches(str(self.kind), ALL_FAULTS, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ValueError(
                f"FaultSpec kind {self.kind!r} is not a fault{hint}: one of {', '.join(ALL_FAULTS)}"
            )

    def resolve(self, tasks: list[str], channels: list[tuple[str, str]]) -> Fault:
        task = tasks[self.target % len(tasks)]
        if self.kind == "drop_ack":
            return DropAcknowledgement(task=task, checkpoint_id=self.checkpoint_id)
        if self.kind == "delay_ack":
            return DelayAcknowledgement(
                task=task, checkpoint_id=self.checkpoint_id, delay_ms=self.duration_ms
            )
        if self.kind == "fail_snapshot":
            return FailSnapshot(task=task, checkpoint_id=self.checkpoint_id)
        if self.kind == "fail_task" and self.at_record:
            return FailTask(task=task, at_record=self.at_record)
        if self.kind in ("fail_task", "fail_checkpoint"):
            return FailTask(task=task, during_checkpoint=self.checkpoint_id)
        if self.kind == "crash_task":
            return CrashTask(task=task, at_record=max(1, self.at_record))
        if self.kind == "stall" and channels:
            producer, consumer = channels[self.target % len(channels)]
            return StallChannel(
                producer=producer, consumer=consumer, at_ms=self.at_ms, for_ms=self.duration_ms
            )
        return DropAcknowledgement(task=task, checkpoint_id=self.checkpoint_id)


class _CheckedRun:
    """A job run with its faults, its trace captured and checked: ``Simulation`` and
    ``ThreadedRun``."""

    faults: tuple[FaultSpec | Fault, ...]
    events: list[MutableMapping[str, Any]]
    report: TraceReport | None

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """How Hypothesis prints a falsifying example: the run's own repr, only what replays
        it (its pretty-printer would show every dataclass field, the last run's trace too)."""
        printer.text(repr(self))

    def _run(
        self,
        build: Build,
        settings: Mapping[str, object] | None,
        *,
        check: bool,
        name: str,
        shrink_seconds: float | None,
        storage: str | None = None,
        **execute: Any,
    ) -> JobResult:
        env = StreamExecutionEnvironment()
        build(env)
        if settings:
            env.configure(dict(settings))
        conf = env.configuration
        if storage is not None and not any(map(conf.is_set, _STORAGE_KEYS)):
            env.configure({"execution.checkpointing.storage": storage})
        faults = self.resolve_faults(env, name)
        _shrink_budget(repr(self), SHRINK_SECONDS if shrink_seconds is None else shrink_seconds)
        trace = TraceCollector()
        result = env.execute(name, faults=faults, trace=trace, **execute)
        self.events = trace.events
        self.report = check_trace(trace.events)
        if check and self.report.violation is not None:
            raise TraceViolation(
                f"{self.report.violation.render()}\nreplay: {self!r}.run(build, settings)"
            )
        return result

    def resolve_faults(self, env: StreamExecutionEnvironment, name: str) -> list[Fault]:
        specs = [f for f in self.faults if isinstance(f, FaultSpec)]
        faults: list[Fault] = [f for f in self.faults if not isinstance(f, FaultSpec)]
        if specs:
            plan = plan_execution(env.build_job_graph(name), env.configuration)
            tasks = sorted(str(t) for t in plan.tasks)
            channels = [(str(c.upstream), str(c.downstream)) for c in plan.channels]
            faults += [spec.resolve(tasks, channels) for spec in specs]
        return faults


@dataclass
class Simulation(_CheckedRun):
    """One simulated run's randomness: replay a failure by constructing it again."""

    seed: int = 0
    schedule: tuple[int, ...] = ()
    faults: tuple[FaultSpec | Fault, ...] = ()
    #: the protocol events of the last ``run`` (its trace)
    events: list[MutableMapping[str, Any]] = field(default_factory=list, repr=False, compare=False)
    report: TraceReport | None = field(default=None, repr=False, compare=False)
    #: where checkpoints go unless the job's settings say (``execution.checkpointing.storage``
    #: or ``.dir``): in the JobManager's memory, as Flink's ``JobManagerCheckpointStorage``
    #: (no files, no fsync: many more examples per second; a restore reads them back through
    #: the same checks). ``"filesystem"``: files in a temporary directory, as a run's default.
    storage: str = field(default="jobmanager", repr=False, compare=False)

    def run(
        self,
        build: Build,
        settings: Mapping[str, object] | None = None,
        *,
        check: bool = True,
        timeout: float = 600.0,
        name: str = "simulated job",
        shrink_seconds: float | None = None,
    ) -> JobResult:
        """Build the job with ``build(env)``, apply ``settings`` (Flink keys), run it on the
        simulation and check its trace (raising ``TraceViolation``); returns the result.
        Checkpoints go to ``storage`` (default: the JobManager's memory) unless the job's
        settings name a checkpoint storage or directory.

        Inside a Hypothesis test, ``shrink_seconds`` (None: ``SHRINK_SECONDS``) bounds how long
        the property shrinks after its first failure (``math.inf``: Hypothesis's own limit,
        five minutes)."""
        return self._run(
            build,
            settings,
            check=check,
            name=name,
            shrink_seconds=shrink_seconds,
            storage=self.storage,
            runtime="simulation",
            seed=self.seed,
            schedule=self.schedule,
            timeout=timeout,
        )


@dataclass
class ThreadedRun(_CheckedRun):
    """A run on the threaded runtime (every actor on its own thread, the wall clock) with
    faults drawn as a simulation's (``threaded_runs()``). The operating system interleaves
    the threads, so a run does not replay message for message: what a failure prints and a
    new ``ThreadedRun(faults=...)`` replays is the job and its faults, and a property must hold
    for any interleaving (exactly-once output does). The trace is checked as a simulated
    run's."""

    faults: tuple[FaultSpec | Fault, ...] = ()
    events: list[MutableMapping[str, Any]] = field(default_factory=list, repr=False, compare=False)
    report: TraceReport | None = field(default=None, repr=False, compare=False)

    def run(
        self,
        build: Build,
        settings: Mapping[str, object] | None = None,
        *,
        check: bool = True,
        timeout: float = 120.0,
        name: str = "threaded job",
        shrink_seconds: float | None = None,
    ) -> JobResult:
        """As ``Simulation.run``, on threads; ``timeout`` (wall seconds) only guards against a
        hang: a job still running then is cancelled."""
        return self._run(
            build,
            settings,
            check=check,
            name=name,
            shrink_seconds=shrink_seconds,
            runtime="threaded",
            timeout=timeout,
        )


# --- what a failing property costs: its output, its shrinking ------------------------------------

#: how long (seconds) a property that runs simulations may shrink after its first failure;
#: then only examples that failed already are run again (the final report replays the smallest
#: of them) and new candidates are rejected. Hypothesis has no setting for this (its own limit is
#: five minutes); override here, or per call with ``Simulation.run(shrink_seconds=...)``
#: (``math.inf``: no bound of ckptsim's). Shrinking runs a simulated job per candidate, and one
#: property's first failure took four minutes to shrink.
SHRINK_SECONDS: float = 60.0


@dataclass
class _Budget:
    first_failure: float | None = None
    failed: set[str] = field(default_factory=set)


#: per property (the test function and the pytest item running it): its shrink budget
_BUDGETS: dict[tuple[object, str], _Budget] = {}


def _shrink_budget(example: str, seconds: float) -> None:
    """Inside a Hypothesis test: reject a new example once the property has shrunk for
    ``seconds`` since its first failure (an example that failed before runs again), and note
    whether this one fails."""
    if seconds == math.inf or not currently_in_test_context():
        return
    context = current_build_context()
    key = (context.wrapped_test, os.environ.get("PYTEST_CURRENT_TEST", ""))
    budget = _BUDGETS.setdefault(key, _Budget())
    spent = budget.first_failure is not None and (
        time.monotonic() - budget.first_failure >= seconds
    )
    if spent and not context.is_final and example not in budget.failed:
        reject()  # the shrink budget is spent: Hypothesis reports the smallest failure so far

    def after() -> None:
        error = sys.exc_info()[1]
        if isinstance(error, Exception) and not isinstance(error, HypothesisException):
            budget.failed.add(example)
            if budget.first_failure is None:
                budget.first_failure = time.monotonic()
        if context.is_final:  # the report's replay: the property is done
            _BUDGETS.pop(key, None)

    cleanup(after)


CHECKPOINT_FAULTS = ("drop_ack", "delay_ack", "stall", "fail_snapshot")
TASK_FAILURES = ("fail_task", "crash_task")
#: every kind of fault, failing a task while it takes a checkpoint as a kind of its own
ALL_FAULTS = (*CHECKPOINT_FAULTS, "fail_task", "fail_checkpoint", "crash_task")


def fault_specs(kinds: tuple[str, ...] = CHECKPOINT_FAULTS) -> st.SearchStrategy[FaultSpec]:
    """Faults of the given kinds (default: those that make checkpoints fail but no task)."""
    return st.builds(
        FaultSpec,
        kind=st.sampled_from(kinds),
        target=st.integers(0, 63),
        checkpoint_id=st.integers(1, 6),
        at_ms=st.integers(0, 100),
        duration_ms=st.integers(1, 80),
        at_record=st.integers(0, 800),
    )


@st.composite
def simulations(
    draw: st.DrawFn,
    *,
    faults: bool = False,
    failures: int = 0,
    max_choices: int = 200,
) -> Simulation:
    """A seed, up to ``max_choices`` leading scheduling choices, (with ``faults``) up to
    three checkpoint faults and (with ``failures=n``) one to ``n`` task failures or actor
    crashes at random records or checkpoints. Hypothesis shrinks the choices towards 0 (the
    first ready actor). Each fault strikes once per run, so a restarted job meets it no more."""
    drawn: list[FaultSpec] = []
    if faults:
        drawn += draw(st.lists(fault_specs(), max_size=3))
    if failures:
        drawn += draw(st.lists(fault_specs(TASK_FAILURES), min_size=1, max_size=failures))
    return Simulation(
        seed=draw(st.integers(0, 2**32 - 1)),
        schedule=tuple(draw(st.lists(st.integers(0, 15), max_size=max_choices))),
        faults=tuple(drawn),
    )


@st.composite
def threaded_runs(draw: st.DrawFn, *, max_faults: int = 3) -> ThreadedRun:
    """Runs on threads with up to ``max_faults`` faults of every kind (``ALL_FAULTS``: lost
    and late acknowledgements, stalled channels, failed snapshots, a task failing at a record
    or while it takes a checkpoint, a crashing task actor), at least one of them."""
    return ThreadedRun(
        faults=tuple(draw(st.lists(fault_specs(ALL_FAULTS), min_size=1, max_size=max_faults)))
    )


# --- random topologies ------------------------------------------------------------------------

Record = tuple[int, int]
PARTITIONS = ("forward", "rebalance", "key_by", "broadcast")


@dataclass(frozen=True)
class Stage:
    kind: str  # map | filter | flat_map
    param: int
    partition: str
    parallelism: int
    cost_ms: float = 0.0

    def apply(self, record: Record) -> list[Record]:
        k, v = record
        if self.kind == "map":
            return [(k, v * self.param % 101 + 1)]
        if self.kind == "filter":
            return [record] if (v + self.param) % 3 else []
        return [(k, v), (k, v + self.param)] if v % 2 == 0 else [(k, v)]

    def map_one(self, record: Record) -> Record:
        return self.apply(record)[0]

    def keep(self, record: Record) -> bool:
        return bool(self.apply(record))


def _key(record: Record) -> int:
    return record[0]


def _add(a: Record, b: Record) -> Record:
    return (a[0], a[1] + b[1])


@dataclass(frozen=True)
class Topology:
    """A small job: 1-2 sources -> stages -> optional keyed sum -> collect("out")."""

    sources: int
    source_parallelism: int
    records: int
    keys: int
    #: how long the sources take to emit their records (virtual ms): sets their rate
    duration_ms: int
    stages: tuple[Stage, ...]
    reduce: bool
    reduce_parallelism: int
    buffer_records: int
    #: ``execution.buffer-timeout.interval`` in ms (None: the flusher disabled, only full
    #: buffers and events leave a task)
    buffer_timeout_ms: int | None = 100

    @property
    def rate(self) -> float:
        return self.records * 1000 / self.duration_ms

    def source_record(self, source: int) -> Callable[[int], Record]:
        keys = self.keys

        def record(i: int) -> Record:
            return ((i * 7 + source) % keys, i % 13 + 1)

        return record

    def build(
        self,
        env: StreamExecutionEnvironment,
        *,
        tap: Callable[[Record], Record] | None = None,
        files: str | None = None,
    ) -> None:
        """The job. ``tap``: a function every source record passes through (chained to the
        sources: no task more), to act at some point of the run; ``files``: the output goes to
        ``sink_to_file(files, fmt="json")`` (``read_files``) instead of ``collect("out")``."""
        env.configure(
            {
                "ckptsim.buffer.records": self.buffer_records,
                "execution.buffer-timeout.enabled": self.buffer_timeout_ms is not None,
                "execution.buffer-timeout.interval": self.buffer_timeout_ms or 0,
            }
        )
        streams = [
            env.from_generator(self.source_record(s), self.records, rate=self.rate)
            .set_parallelism(self.source_parallelism)
            .name(f"source {s}")
            for s in range(self.sources)
        ]
        if tap is not None:
            streams = [stream.map(tap).name(f"tap {s}") for s, stream in enumerate(streams)]
        stream = streams[0] if len(streams) == 1 else streams[0].union(*streams[1:])
        upstream = self.source_parallelism
        for index, stage in enumerate(self.stages):
            partition = stage.partition
            if partition == "forward" and stage.parallelism != upstream:
                partition = "rebalance"
            if partition == "rebalance":
                stream = stream.rebalance()
            elif partition == "key_by":
                stream = stream.key_by(_key)
            elif partition == "broadcast":
                stream = stream.broadcast()
            if stage.kind == "map":
                stream = stream.map(stage.map_one)
            elif stage.kind == "filter":
                stream = stream.filter(stage.keep)
            else:
                stream = stream.flat_map(stage.apply)
            stream = stream.set_parallelism(stage.parallelism).name(f"stage {index}")
            if stage.cost_ms:
                stream = stream.processing_cost(per_buffer_ms=stage.cost_ms)
            upstream = stage.parallelism
        if self.reduce:
            stream = stream.key_by(_key).reduce(_add).set_parallelism(self.reduce_parallelism)
        if files is None:
            stream.collect("out")
        else:
            stream.sink_to_file(files, name="out", fmt="json")

    def expected(self) -> Counter[Any]:
        """The failure-free result, in plain Python, as ``observe`` reports a run."""
        records: Counter[Record] = Counter()
        for s in range(self.sources):
            make = self.source_record(s)
            for i in range(self.records):
                records[make(i)] += 1  # a generator's subtasks split its records
        for stage in self.stages:
            copies = stage.parallelism if stage.partition == "broadcast" else 1
            out: Counter[Record] = Counter()
            for record, count in records.items():
                for produced in stage.apply(record):
                    out[produced] += count * copies
            records = out
        return self._summarise(records.elements()) if self.reduce else records

    def observe(self, result: JobResult) -> Counter[Any]:
        """What a run produced, independent of the schedule: the records (as a multiset), or
        with the keyed sum, per key how many sums it emitted and the final one."""
        return self.observe_records(result.collected("out"))

    def observe_records(self, out: Iterable[Record]) -> Counter[Any]:
        """``observe`` of the records a run committed (e.g. ``read_files(path)``)."""
        if not self.reduce:
            return Counter(out)
        counts: Counter[Any] = Counter()
        finals: dict[int, int] = {}
        for k, v in out:
            counts[k] += 1
            finals[k] = max(finals.get(k, 0), v)
        return Counter({(k, n, finals[k]): 1 for k, n in counts.items()})

    @staticmethod
    def _summarise(records: Any) -> Counter[Any]:
        counts: Counter[int] = Counter()
        sums: dict[int, int] = {}
        for k, v in records:
            counts[k] += 1
            sums[k] = sums.get(k, 0) + v
        return Counter({(k, n, sums[k]): 1 for k, n in counts.items()})


def read_files(path: str | os.PathLike[str]) -> list[Record]:
    """The records in the part files a ``Topology.build(env, files=path)`` job committed."""
    return [
        tuple(json.loads(line))
        for part in sorted(Path(path).glob("part-*"))
        for line in part.read_text().splitlines()
    ]


@st.composite
def topologies(
    draw: st.DrawFn, *, max_parallelism: int = 3, reduce: bool | None = None
) -> Topology:
    """Small random jobs; their ``expected()`` is the failure-free result. ``reduce``: with
    or without the keyed sum (None: either)."""
    parallelism = st.integers(1, max_parallelism)
    stages = draw(
        st.lists(
            st.builds(
                Stage,
                kind=st.sampled_from(["map", "filter", "flat_map"]),
                param=st.integers(1, 9),
                partition=st.sampled_from(PARTITIONS),
                parallelism=parallelism,
                cost_ms=st.sampled_from([0.0, 0.0, 0.0, 0.5, 2.0]),
            ),
            max_size=3,
        )
    )
    return Topology(
        sources=draw(st.integers(1, 2)),
        source_parallelism=draw(parallelism),
        records=draw(st.integers(50, 1_500)),
        keys=draw(st.integers(1, 20)),
        duration_ms=draw(st.integers(40, 250)),
        stages=tuple(stages),
        reduce=draw(st.booleans()) if reduce is None else reduce,
        reduce_parallelism=draw(parallelism),
        buffer_records=draw(st.sampled_from([10, 50, 200])),
        buffer_timeout_ms=draw(st.sampled_from([100, 100, 0, 5, None])),
    )
