"""Sinks with a lineage: a restore from any retained checkpoint, of this run or another, makes
the committed output exactly that checkpoint's, whatever other runs did to the folder since
(issue 22, item 1).

The counting job of ``test_failover`` writes part files; a run is "killed" by cancelling it
(the simulation's timeout) with its checkpoints retained, and resumed with
``execution.state-recovery.path`` (``ckptsim run --from-checkpoint``). Everything runs on the
deterministic simulation.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.connectors import RETRACTED, TransactionalFileConnector, writer_id
from ckptsim import StreamExecutionEnvironment
from runtime.checkpoint import TaskId
from runtime.job import JobResult
from runtime.status import JobStatus
from runtime.storage import load_checkpoint
from tests.actors.test_failover import PART, counting, failure_free, observe, read_part_files

RETAIN: dict[str, object] = {
    "execution.checkpointing.num-retained": 3,
    "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
}


def run(
    out: Path | None,
    root: Path,
    *,
    seed: int,
    start_from: str | None = None,
    kill_after: float | None = None,
) -> JobResult:
    """One run of the counting job into ``out`` (None: a collect sink; checkpoints under
    ``root``), resumed from ``start_from`` if given, cancelled after ``kill_after`` virtual
    seconds if given."""
    env = StreamExecutionEnvironment()
    counting(env, out=out)
    env.configure({**RETAIN, "execution.checkpointing.dir": str(root)})
    if start_from is not None:
        env.configure({"execution.state-recovery.path": start_from})
    timeout = 600.0 if kill_after is None else kill_after
    return env.execute(f"run {seed}", runtime="simulation", seed=seed, timeout=timeout)


def retained(result: JobResult) -> list[str]:
    """The run's retained checkpoints, oldest first."""
    return sorted(result.retained_checkpoints, key=lambda p: load_checkpoint(p).checkpoint_id)


def test_resuming_a_killed_run_again_after_another_resume_finished_loses_nothing(
    tmp_path: Path,
) -> None:
    """Issue 22's branching resume: run 1 is killed keeping three checkpoints; run 2 resumes
    from the oldest and finishes (it retracts run 1's part files of the later two and commits
    its own for those ids); run 3 resumes from run 1's newest. The folder must then hold
    exactly run 3's lineage: run 1 up to its newest checkpoint, then run 3 (it lost hundreds
    of records: run 1's files after the oldest were gone, and run 2's stayed)."""
    out = tmp_path / "out"
    first = run(out, tmp_path / "chk1", seed=1, kill_after=0.03)
    assert first.status is JobStatus.CANCELED
    kept = retained(first)
    assert len(kept) == 3
    second = run(out, tmp_path / "chk2", seed=2, start_from=kept[0])
    assert second.status is JobStatus.FINISHED
    assert observe(read_part_files(out)) == failure_free()
    third = run(out, tmp_path / "chk3", seed=3, start_from=kept[-1])
    assert third.status is JobStatus.FINISHED
    assert observe(read_part_files(out)) == failure_free()


def test_a_branching_resume_on_one_seed_keeps_the_other_runs_files_aside(tmp_path: Path) -> None:
    """The branching resume above with every run on the same seed (``ckptsim run --simulate
    --seed 1`` each time, which the docs allow: a seed's names already in the folder are
    skipped). Run 2's restore of run 1's oldest checkpoint must keep run 1's later part files
    aside, not delete them, so that run 3 can restore run 1's newest checkpoint."""
    out = tmp_path / "out"
    first = run(out, tmp_path / "chk1", seed=1, kill_after=0.03)
    kept = retained(first)
    assert len(kept) == 3
    second = run(out, tmp_path / "chk2", seed=1, start_from=kept[0])
    assert second.status is JobStatus.FINISHED
    assert observe(read_part_files(out)) == failure_free()
    third = run(out, tmp_path / "chk3", seed=1, start_from=kept[-1])
    assert third.status is JobStatus.FINISHED
    assert observe(read_part_files(out)) == failure_free()


def test_a_collect_sink_returns_what_its_run_committed_whatever_another_branch_did(
    tmp_path: Path,
) -> None:
    """The same history into a collect sink: each run returns what it committed, so run 1's
    result up to its newest checkpoint and run 3's (resumed from it) are the failure-free
    output together, whatever run 2 (resumed from run 1's oldest) returned."""
    first = run(None, tmp_path / "chk1", seed=1, kill_after=0.03)
    kept = retained(first)
    assert first.status is JobStatus.CANCELED and len(kept) == 3
    assert load_checkpoint(kept[-1]).checkpoint_id == max(first.completed_checkpoint_ids)
    second = run(None, tmp_path / "chk2", seed=2, start_from=kept[0])
    third = run(None, tmp_path / "chk3", seed=3, start_from=kept[-1])
    assert second.status is third.status is JobStatus.FINISHED
    assert (
        observe([*first.collected("counts"), *second.collected("counts")])[0] != (failure_free()[0])
    ), "run 2 branched off before run 1's end: together they repeat records"
    assert observe([*first.collected("counts"), *third.collected("counts")]) == failure_free()


# --- one sink subtask's files: what a restore of a lineage leaves committed -----------------------


def writer(job: str, attempt: int = 0) -> str:
    return writer_id(job, TASK, attempt, "sink-out", deterministic=True)


TASK = TaskId("out", 0)


def attempt(out: Path, job: str, number: int = 0) -> TransactionalFileConnector:
    return TransactionalFileConnector(str(out), TASK, "json", writer(job, number))


def write_transactions(
    connector: TransactionalFileConnector, first: int, last: int, *, committed_to: int
) -> dict[int, dict[str, object]]:
    """Checkpoints ``first``..``last``, one record each (the record is its id), committed up
    to ``committed_to``; returns each checkpoint's sink state with its lineage (as the task
    core records it)."""
    states = {}
    for k in range(first, last + 1):
        connector.write([k])
        state = dict(connector.pre_commit(k))
        state["lineage"] = [[connector.writer_id, k]]
        states[k] = state
        if k <= committed_to:
            connector.commit(k)
    return states


def visible(out: Path) -> list[int]:
    return sorted(json.loads(line) for p in out.glob("part-*") for line in p.read_text().split())


def test_a_restore_brings_back_its_lineage_whatever_another_restore_retracted(
    tmp_path: Path,
) -> None:
    """Run 1 committed 1-4 and pre-committed 5, then died; run 2 restored 2 (its files of
    3-5 left the committed output: to .retracted, since they are another job's) and
    committed 3 again; run 3 restores run 1's checkpoint 5: run 1's files come back (5
    committed now), run 2's go, and .staging is empty."""
    out = tmp_path / "out"
    first = attempt(out, "job-1")
    states = write_transactions(first, 1, 5, committed_to=4)
    first.close(finished=False)
    second = attempt(out, "job-2")
    second.restore([states[2]])
    assert second.retract_after(2) == [first.final_path(k).name for k in (3, 4)]
    assert visible(out) == [1, 2]
    assert sorted(p.name for p in (out / RETRACTED).iterdir()) == sorted(
        [first.final_path(3).name, first.final_path(4).name, f"{first._pending_path(5).name}"]
    )
    second.write([30])
    second.pre_commit(3)
    second.commit(3)
    second.close(finished=True)
    assert visible(out) == [1, 2, 30]
    third = attempt(out, "job-3")
    third.restore([states[5]])
    assert third.retract_after(5) == [second.final_path(3).name]
    assert visible(out) == [1, 2, 3, 4, 5]
    assert list((out / ".staging").iterdir()) == []
    fourth = attempt(out, "job-4")  # run 2's lineage again
    fourth.restore([{"pending": [3], "lineage": [[first.writer_id, 2], [second.writer_id, 3]]}])
    fourth.retract_after(3)
    assert visible(out) == [1, 2, 30]


def test_what_an_earlier_attempt_of_the_same_job_wrote_after_the_restored_checkpoint_is_deleted(
    tmp_path: Path,
) -> None:
    """A failover: no checkpoint of another run can stand for the failed attempt's files
    after the restored checkpoint, so they are deleted, not kept in .retracted."""
    out = tmp_path / "out"
    first = attempt(out, "job-1")
    states = write_transactions(first, 1, 3, committed_to=2)
    first.write([4])  # in progress
    first.close(finished=False)
    again = attempt(out, "job-1", 1)
    again.restore([states[1]])
    assert again.retract_after(1) == [first.final_path(2).name]
    assert visible(out) == [1]
    assert not (out / RETRACTED).exists()
    assert list((out / ".staging").iterdir()) == []


def test_a_restored_pending_transaction_that_is_nowhere_is_an_error_naming_it(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    first = attempt(out, "job-1")
    states = write_transactions(first, 1, 2, committed_to=1)
    first.close(finished=False)
    first._pending_path(2).unlink()
    with pytest.raises(FileNotFoundError, match="cannot commit checkpoint 2 of part-out-0"):
        attempt(out, "job-2").restore([states[2]])


def test_writers_of_one_job_share_their_first_group_and_each_has_an_id_of_its_own() -> None:
    ids = {writer("job-1", a) for a in range(3)} | {writer("job-2", a) for a in range(3)}
    assert len(ids) == 6
    assert len({w[:8] for w in ids}) == 2
    threaded = {writer_id("job-1", TASK, 0, "sink-out", deterministic=False) for _ in range(3)}
    assert len(threaded) == 3 and {w[:8] for w in threaded} == {writer("job-1")[:8]}


def test_resuming_into_other_folders_branches_exactly_once_as_flinks_file_sink(
    tmp_path: Path,
) -> None:
    """A Flink user resumes a stopped job with a new output path (``flink run -s`` with other
    arguments), twice from the same checkpoint: each branch's new folder holds what came after
    the checkpoint, and with the first run's part files up to it (whose pending ones the resume
    commits where they were written) it is the failure-free output, once per record."""
    first_out = tmp_path / "out1"
    first = run(first_out, tmp_path / "chk1", seed=1, kill_after=0.03)
    kept = retained(first)
    assert first.status is JobStatus.CANCELED and len(kept) == 3
    upto = load_checkpoint(kept[0]).checkpoint_id
    for branch, seed in (("out2", 2), ("out3", 3)):
        resumed = run(tmp_path / branch, tmp_path / f"chk{seed}", seed=seed, start_from=kept[0])
        assert resumed.status is JobStatus.FINISHED
        before = [
            json.loads(line)
            for part in sorted(first_out.glob("part-*"))
            if (m := PART.fullmatch(part.name)) and m["txn"] != "end" and int(m["txn"]) <= upto
            for line in part.read_text().splitlines()
        ]
        assert observe(before + read_part_files(tmp_path / branch)) == failure_free()


def test_resuming_back_into_the_first_folder_commits_the_checkpoint_where_it_was_staged(
    tmp_path: Path,
) -> None:
    """Run 1 writes into out1 and is killed; run 2 resumes from it into out2 and is killed;
    run 3 resumes from run 2's newest checkpoint with out1 as its output path again. Run 2's
    checkpoint names out2 as its sink's folder (its pending transaction was staged there);
    out1 only holds run 1's files, which the lineage names too. As Flink's FileSink, run 3
    commits the checkpoint's transactions at their paths (out2) and writes after it into
    out1: run 1's files up to its checkpoint, run 2's up to its own and run 3's are the
    failure-free output, once per record."""
    out1, out2 = tmp_path / "out1", tmp_path / "out2"
    first = run(out1, tmp_path / "chk1", seed=1, kill_after=0.03)
    kept1 = retained(first)
    upto1 = load_checkpoint(kept1[-1]).checkpoint_id
    assert all(int(m["txn"]) <= upto1 for p in out1.glob("part-*") if (m := PART.fullmatch(p.name)))
    second = run(out2, tmp_path / "chk2", seed=2, start_from=kept1[-1], kill_after=0.02)
    assert second.status is JobStatus.CANCELED
    kept2 = retained(second)
    upto2 = load_checkpoint(kept2[-1]).checkpoint_id
    third = run(out1, tmp_path / "chk3", seed=3, start_from=kept2[-1])
    assert third.status is JobStatus.FINISHED
    before = [
        json.loads(line)
        for part in sorted(out2.glob("part-*"))
        if (m := PART.fullmatch(part.name)) and m["txn"] != "end" and int(m["txn"]) <= upto2
        for line in part.read_text().splitlines()
    ]
    assert observe(before + read_part_files(out1)) == failure_free()
