"""The lineage property on the deterministic simulation: branching histories of runs into one
output folder. A run is killed at a random point (cancelled with its checkpoints retained, or it
finishes first), the next resumes from any retained checkpoint of any earlier run, and so on a
few times; a task may fail inside a run (a failover of its own). The last run goes to its end,
and the committed part files must then be exactly the failure-free output: whatever the other
branches committed, retracted or left staged, a restore makes the committed output exactly its
checkpoint's (issue 22, item 1). Every run's trace is checked by the trace checker.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import event, example, given, note, settings
from hypothesis import strategies as st

from actors.faults import FailTask, Fault
from ckptsim import StreamExecutionEnvironment
from ckptsim.testing import Simulation
from runtime.job import JobResult
from runtime.status import JobStatus
from runtime.storage import load_checkpoint
from tests.actors.test_failover import (
    REDUCERS,
    SOURCES,
    counting,
    failure_free,
    observe,
    read_part_files,
)
from tests.conftest import system_examples

N = 1_000
#: the virtual milliseconds a run of N records takes (about 45, with three checkpoints): kills
#: fall inside it, or just after (the run finishes)
RUN_MS = 50
MODES: dict[str, dict[str, object]] = {
    "aligned": {},
    "unaligned": {"execution.checkpointing.unaligned.enabled": True},
}


@dataclass(frozen=True)
class Step:
    """One run: where it resumes from (an index into the checkpoints retained so far, modulo
    their number; None: the first run), when it is killed (virtual ms; None: it runs to its
    end), and a task failure inside it (a record count), if any."""

    resume: int | None
    kill_ms: int | None
    fail_at: int | None
    fail_task: int


@st.composite
def histories(draw: st.DrawFn) -> list[Step]:
    """Two to four runs; the last one runs to its end."""
    runs = draw(st.integers(2, 4))
    steps = []
    for i in range(runs):
        last = i == runs - 1
        steps.append(
            Step(
                resume=None if i == 0 else draw(st.integers(0, 30)),
                kill_ms=None if last else draw(st.integers(8, RUN_MS)),
                fail_at=draw(st.one_of(st.none(), st.integers(100, N // 2))),
                fail_task=draw(st.integers(0, 3)),
            )
        )
    return steps


def _run(
    step: Step, index: int, tmp: Path, mode: str, start_from: str | None
) -> tuple[JobResult, list[str]]:
    """Run ``step`` (the ``index``-th run); returns its result and the checkpoints it kept."""
    faults: list[Fault] = []
    if step.fail_at is not None:
        task = (*SOURCES, *REDUCERS)[step.fail_task]
        faults.append(FailTask(task=task, at_record=step.fail_at))

    def build(env: StreamExecutionEnvironment) -> None:
        counting(env, n=N, out=tmp / "out")
        env.configure(
            {
                "execution.checkpointing.dir": str(tmp / f"chk-{index}"),
                "execution.checkpointing.num-retained": 3,
                "execution.checkpointing.externalized-checkpoint-retention": (
                    "RETAIN_ON_CANCELLATION"
                ),
                **MODES[mode],
            }
        )
        if start_from is not None:
            env.configure({"execution.state-recovery.path": start_from})

    sim = Simulation(seed=index + 1, faults=tuple(faults))
    timeout = 600.0 if step.kill_ms is None else step.kill_ms / 1000
    result = sim.run(build, timeout=timeout, name=f"run {index}")
    kept = sorted(result.retained_checkpoints, key=lambda p: load_checkpoint(p).checkpoint_id)
    return result, kept


#: issue 22's history: run 0 is killed keeping checkpoints 1 and 2; run 1 resumes from 1 and
#: finishes; run 2 resumes from run 0's 2 (records were lost)
ISSUE_22 = [
    Step(resume=None, kill_ms=40, fail_at=None, fail_task=0),
    Step(resume=0, kill_ms=None, fail_at=None, fail_task=0),
    Step(resume=1, kill_ms=None, fail_at=None, fail_task=0),
]


@settings(max_examples=system_examples() // 4)
@example(history=ISSUE_22, mode="aligned")
@given(history=histories(), mode=st.sampled_from(sorted(MODES)))
def test_after_branching_resumes_the_committed_output_is_the_last_lineages_failure_free_one(
    history: list[Step], mode: str
) -> None:
    note(f"mode: {mode}; history: {history!r}")
    #: the checkpoints kept so far, oldest run first, each with its run and whether it is
    #: that run's newest
    retained: list[tuple[str, int, bool]] = []
    branches = 0
    with tempfile.TemporaryDirectory(prefix="ckptsim-lineage-") as tmp:
        out = Path(tmp) / "out"
        for index, step in enumerate(history):
            start_from = None
            if step.resume is not None and retained:
                start_from, run, newest = retained[step.resume % len(retained)]
                # a branch: other runs went on from this checkpoint of its run
                branches += run != index - 1 or not newest
            elif index:  # no run kept a checkpoint: start afresh, into a new folder
                shutil.rmtree(out)
            note(f"run {index} from {start_from}")
            result, kept = _run(step, index, Path(tmp), mode, start_from)
            retained += [(path, index, path == kept[-1]) for path in kept]
            note(f"run {index}: {result.status.value}, kept {kept}")
            if result.status is JobStatus.FINISHED:
                # a run that ends commits its lineage's output, all of it, and stages nothing
                assert observe(read_part_files(out)) == failure_free(N)
                assert not list((out / ".staging").iterdir())
            else:
                assert result.status is JobStatus.CANCELED, (result.failure, result.failures)
        assert result.status is JobStatus.FINISHED
        event(f"runs: {len(history)}")
        event(f"branching resumes: {min(branches, 2)}{'+' if branches > 2 else ''}")
        assert observe(read_part_files(Path(tmp) / "out")) == failure_free(N)
