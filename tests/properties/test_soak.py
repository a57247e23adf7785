"""The soak properties: recovery on the **threaded** runtime, where every actor has its own
thread and the operating system interleaves them (``test_recovery.py`` states the same on the
deterministic simulation).

Random topologies (``ckptsim.testing.topologies``), one to three faults of every kind
(``threaded_runs``: lost and late acknowledgements, stalled channels, failed snapshots, a task
failing at a record or while it takes a checkpoint, a crashing task actor), in every
checkpointing mode (aligned, unaligned, aligned with a timeout, Flink 1.10's buffered
alignment, at-least-once), and the two restores that do not take the latest checkpoint: a
fallback past a damaged newest checkpoint, and a run resumed from an older retained
checkpoint. The committed output must equal the failure-free output (at-least-once: nothing
lost), and every run's trace must pass the trace checker.

Nothing here depends on timing: the invariants hold for any interleaving of the threads, so
the properties hold on a loaded machine too (the jobs' ``timeout`` only guards against a hang).
In the ``ci`` profile they run a few examples (seconds); ``HYPOTHESIS_PROFILE=soak`` runs
hundreds, randomly. A failure prints the drawn topology, mode and ``ThreadedRun(faults=...)``
and Hypothesis's ``@reproduce_failure`` blob, which draw the same job and faults again.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from ckptsim.testing import Record, ThreadedRun, Topology, read_files, threaded_runs, topologies
from runtime.job import JobResult
from runtime.status import JobStatus
from runtime.storage import load_checkpoint
from tests.conftest import threaded_examples
from tests.crafted_checkpoints import DAMAGE, completed_checkpoints
from tests.properties.test_recovery import RESTARTS
from tests.properties.test_system import MODES as EXACTLY_ONCE

MODES: dict[str, dict[str, object]] = {
    **EXACTLY_ONCE,
    "at_least_once": {"execution.checkpointing.mode": "AT_LEAST_ONCE"},
}

#: the recovery settings of the simulation's properties, with a checkpoint timeout that a
#: loaded machine does not hit every time (a lost acknowledgement still expires soon)
THREADED: dict[str, object] = {**RESTARTS, "execution.checkpointing.timeout": "500 ms"}

#: wall seconds after which a job is cancelled: a guard against a hang, not a measure
HANG_GUARD = 120.0


@st.composite
def modes_and_topologies(draw: st.DrawFn) -> tuple[str, Topology]:
    """A mode, and a topology for it (without the keyed sum for at-least-once: a replayed
    record changes every later sum, so only the records show that nothing was lost)."""
    mode = draw(st.sampled_from(sorted(MODES)))
    return mode, draw(topologies(reduce=False if mode == "at_least_once" else None))


def checkpointing(mode: str, interval: int, root: Path, retained: int) -> dict[str, object]:
    return {
        **THREADED,
        "execution.checkpointing.interval": f"{interval} ms",
        "execution.checkpointing.dir": str(root),
        "execution.checkpointing.num-retained": retained,
        **MODES[mode],
    }


def assert_output(mode: str, topology: Topology, observed: Counter[Any]) -> None:
    expected = topology.expected()
    if mode == "at_least_once":
        assert not expected - observed, f"records lost: {expected - observed}"
        event("duplicates after a restore" if observed != expected else "no duplicates")
    else:
        assert observed == expected


def finished(result: JobResult, run: ThreadedRun, mode: str) -> None:
    assert result.status is JobStatus.FINISHED, (result.status, result.failure, result.failures)
    assert run.report is not None and run.report.ok  # run() raised at a violation
    event(f"mode: {mode}")
    event(f"restarts: {min(result.restarts, 3)}{'+' if result.restarts > 3 else ''}")
    for struck in {_kind(e["fault"]) for e in run.events if e["event"] == "fault_injected"}:
        event(f"struck: {struck}")


def _kind(fault: str) -> str:
    """A struck fault's kind, from its repr in the trace (the seven of README "Faults")."""
    if fault.startswith("FailTask(") and "during_checkpoint=None" not in fault:
        return "FailTask during a checkpoint"
    if fault.startswith("FailTask"):
        return "FailTask at a record"
    return fault.partition("(")[0]


class Sabotage:
    """A tap on the source records: once ``newest`` checkpoints have their metadata written
    (looked at every few records), ``act`` on the newest, then fail, once (a restart meets it
    no more). The newest may still be finalizing: the failure can reach the coordinator
    before its completion does, and it is discarded; every older one completed.
    Thread-safe: source subtasks run it at once."""

    def __init__(self, root: Path, act: Callable[[Path], object], *, newest: int = 2) -> None:
        self.root, self.act, self.newest = root, act, newest
        self.lock = threading.Lock()
        self.seen = 0
        self.struck: Path | None = None

    def __call__(self, record: Record) -> Record:
        with self.lock:
            self.seen += 1
            if self.struck is not None or self.seen % 8:
                return record
            done = completed_checkpoints(self.root)
            if len(done) < self.newest:
                return record
            self.struck = done[-1]
            with contextlib.suppress(OSError):  # subsumed and deleted meanwhile: fail anyway
                self.act(done[-1])
        raise RuntimeError(f"sabotage after checkpoint {done[-1].name}")


def _unchanged(record: Record) -> Record:
    return record


@settings(max_examples=threaded_examples(ci=8))
@given(
    drawn=modes_and_topologies(),
    run=threaded_runs(),
    interval=st.integers(10, 25),
    damage=st.sampled_from([None, *sorted(DAMAGE)]),
    files=st.booleans(),
)
def test_on_threads_the_committed_output_after_faults_and_fallbacks_is_the_failure_free_one(
    drawn: tuple[str, Topology], run: ThreadedRun, interval: int, damage: str | None, files: bool
) -> None:
    """Whatever faults strike, wherever the threads interleave, and when the newest
    checkpoint is damaged before a failure (the restore falls back to an older one and the
    sink retracts what it committed after that one), the committed output (of the collect
    sink, or the part files of a file sink, which leaves no staged file behind) is the
    failure-free output (at-least-once: a superset)."""
    mode, topology = drawn
    note(f"mode: {mode}; topology: {topology!r}; run: {run!r}; damage: {damage}; files: {files}")
    with tempfile.TemporaryDirectory(prefix="ckptsim-soak-") as tmp:
        root, out = Path(tmp) / "checkpoints", Path(tmp) / "out"
        tap = Sabotage(root, DAMAGE[damage][0]) if damage is not None else None
        result = run.run(
            functools.partial(topology.build, tap=tap, files=str(out) if files else None),
            checkpointing(mode, interval, root, retained=2),
            timeout=HANG_GUARD,
        )
        finished(result, run, mode)
        observed = topology.observe_records(read_files(out)) if files else None
        assert not files or not list((out / ".staging").iterdir()), "staged files left behind"
    fallbacks = [e for e in run.events if e["event"] == "checkpoint_unusable"]
    event(f"damage: {damage}; {'fell back' if fallbacks else 'no fallback'}")
    if fallbacks:
        assert tap is not None and tap.struck is not None
        assert {e["checkpoint_id"] for e in fallbacks} == {int(tap.struck.name[4:])}
    assert_output(mode, topology, topology.observe(result) if observed is None else observed)


@settings(max_examples=threaded_examples(ci=4))
@given(
    drawn=modes_and_topologies(),
    run=threaded_runs(max_faults=2),
    interval=st.integers(10, 25),
)
def test_on_threads_a_run_resumed_from_an_older_retained_checkpoint_completes_the_output(
    drawn: tuple[str, Topology], run: ThreadedRun, interval: int
) -> None:
    """A run into a file sink stops (fails for good) once two checkpoints completed, keeping
    them; a second run resumes from the older one (not the latest) into the same folder
    and checkpoint directory, and meets the faults. Its restore retracts the part files the
    first run committed after that checkpoint, its checkpoint ids (which repeat the first
    run's) go into a directory of their own, and the folder ends with the failure-free
    output (at-least-once: a superset)."""
    mode, topology = drawn
    note(f"mode: {mode}; topology: {topology!r}; run: {run!r}")
    with tempfile.TemporaryDirectory(prefix="ckptsim-soak-") as tmp:
        root, out = Path(tmp) / "checkpoints", Path(tmp) / "out"
        keep = {
            **checkpointing(mode, interval, root, retained=3),
            "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        }
        # the newest checkpoint with its metadata written may still be finalizing (the failure
        # can beat the coordinator's completion and discard it); those before it completed
        stop = Sabotage(root, lambda chk: None, newest=3)
        first = ThreadedRun().run(
            functools.partial(topology.build, tap=stop, files=str(out)),
            {**keep, "restart-strategy.type": "none"},
            timeout=HANG_GUARD,
        )
        if first.status is JobStatus.FINISHED:  # it ended before its third checkpoint
            event("the first run finished")
            assert_output(mode, topology, topology.observe_records(read_files(out)))
            return
        assert first.status is JobStatus.FAILED and stop.struck is not None, first.failures
        kept = {path: load_checkpoint(path).checkpoint_id for path in first.retained_checkpoints}
        retained = sorted(kept, key=kept.__getitem__)
        assert len(retained) >= 2, retained
        oldest = kept[retained[0]]
        second = run.run(  # the same job (the tap left in, so each operator has its uid)
            functools.partial(topology.build, tap=_unchanged, files=str(out)),
            {**keep, "execution.state-recovery.path": retained[0]},
            timeout=HANG_GUARD,
        )
        finished(second, run, mode)
        assert not list((out / ".staging").iterdir()), "staged files left behind"
        event("resumed from an older retained checkpoint")
        ids = second.completed_checkpoint_ids
        assert ids and min(ids) > oldest, "ids go on from the restored checkpoint"
        # ids repeat the first run's, but never name one of its checkpoints: each still loads
        # (checksums verified) as what it was
        assert {path: load_checkpoint(path).checkpoint_id for path in kept} == kept
        assert_output(mode, topology, topology.observe_records(read_files(out)))
