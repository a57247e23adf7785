"""A file sink resumed with another parallelism or chaining commits its checkpoint's pending
part files and retracts what was committed after the checkpoint, wherever the job graph now
puts the sink: its part files are named by the sink operator's uid (not by the job vertex,
which a change of chaining renames), and a restore finds the checkpoint's files by their
writers, as Flink's FileSink committables carry their files' paths.

The counting job's reduce runs at parallelism 1 and its sink at the job's parallelism: at 1
the sink is chained to the reduce (vertex ``counts``), at 2 it is a vertex of its own. A run
is killed (cancelled by the simulation's timeout) with its checkpoints retained and resumed
with ``execution.state-recovery.path``; everything runs on the deterministic simulation, and
the folder's committed output is compared with the failure-free output, record by record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ckptsim import StreamExecutionEnvironment
from runtime.job import JobResult
from runtime.status import JobStatus
from runtime.storage import load_checkpoint
from tests.actors.test_failover import N, count, failure_free, key, observe, record

RETAIN: dict[str, object] = {
    "execution.checkpointing.num-retained": 3,
    "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
}


def build(env: StreamExecutionEnvironment, out: Path, *, chaining: bool = True) -> None:
    """Source (1) -> key_by -> reduce (1) -> file sink (the job's parallelism)."""
    env.enable_checkpointing(10)
    env.configure({"ckptsim.buffer.records": 50})
    if not chaining:
        env.disable_operator_chaining()
    stream = env.from_generator(record, N, rate=50_000).uid("numbers").set_parallelism(1)
    counts = stream.key_by(key).reduce(count).uid("counts").set_parallelism(1)
    counts.processing_cost(per_buffer_ms=1).sink_to_file(str(out), name="files", fmt="json")


def run(
    out: Path,
    root: Path,
    *,
    parallelism: int,
    seed: int,
    chaining: bool = True,
    start_from: str | None = None,
    kill_after: float | None = None,
) -> JobResult:
    env = StreamExecutionEnvironment()
    env.set_parallelism(parallelism)
    build(env, out, chaining=chaining)
    env.configure({**RETAIN, "execution.checkpointing.dir": str(root)})
    if start_from is not None:
        env.configure({"execution.state-recovery.path": start_from})
    timeout = 600.0 if kill_after is None else kill_after
    return env.execute(f"run {seed}", runtime="simulation", seed=seed, timeout=timeout)


def committed(out: Path) -> list[list[int]]:
    return [
        json.loads(line)
        for part in sorted(out.glob("part-*"))
        for line in part.read_text().splitlines()
    ]


def sink_vertices(result: JobResult) -> set[str]:
    """The vertices the reduce and the sink ran in."""
    vertices = {task.rsplit("#", 1)[0] for task in result.task_metrics}
    return vertices & {"counts", "sink-files"}


def killed(out: Path, root: Path, *, parallelism: int, chaining: bool = True) -> list[str]:
    """Run 1, killed with three checkpoints retained (oldest first) and part files both
    committed and pending (at parallelism 1 the newest checkpoint's own: killed before its
    completion was notified; at 2 a later checkpoint's)."""
    kill = 0.03 if parallelism == 1 else 0.04
    first = run(out, root, parallelism=parallelism, seed=1, chaining=chaining, kill_after=kill)
    assert first.status is JobStatus.CANCELED
    kept = sorted(first.retained_checkpoints, key=lambda p: load_checkpoint(p).checkpoint_id)
    assert len(kept) == 3
    assert list((out / ".staging").glob("*.pending")), "a pre-committed transaction is left"
    return kept


@pytest.mark.parametrize(
    ("before", "after"), [(1, 2), (2, 1)], ids=["1-to-2-unchained", "2-to-1-chained"]
)
@pytest.mark.parametrize("which", [-1, 0], ids=["newest", "oldest"])
def test_a_resume_with_another_parallelism_and_chaining_is_exactly_once(
    tmp_path: Path, before: int, after: int, which: int
) -> None:
    """From the newest retained checkpoint (its pending part files committed by the resumed
    sink, under whatever vertex runs it now) and from the oldest (the files run 1 committed
    after it are retracted too): the folder holds every record exactly once."""
    out = tmp_path / "out"
    kept = killed(out, tmp_path / "chk1", parallelism=before)
    resumed = run(out, tmp_path / "chk2", parallelism=after, seed=2, start_from=kept[which])
    assert resumed.status is JobStatus.FINISHED, resumed.failure
    assert sink_vertices(resumed) == ({"counts"} if after == 1 else {"counts", "sink-files"})
    assert observe(committed(out)) == failure_free()
    assert not list((out / ".staging").glob("*.pending"))


def test_a_resume_with_chaining_disabled_is_exactly_once(tmp_path: Path) -> None:
    """The same parallelism, the sink no longer chained (``disable_operator_chaining``), then
    chained again: each resume commits the checkpoint's pending files."""
    out = tmp_path / "out"
    kept = killed(out, tmp_path / "chk1", parallelism=1)
    second = run(
        out,
        tmp_path / "chk2",
        parallelism=1,
        seed=2,
        chaining=False,
        start_from=kept[0],
        kill_after=0.02,
    )
    assert second.status is JobStatus.CANCELED
    assert sink_vertices(second) == {"counts", "sink-files"}
    again = sorted(second.retained_checkpoints, key=lambda p: load_checkpoint(p).checkpoint_id)
    third = run(out, tmp_path / "chk3", parallelism=1, seed=3, start_from=again[-1])
    assert third.status is JobStatus.FINISHED, third.failure
    assert observe(committed(out)) == failure_free()


def test_a_checkpoint_of_a_folder_named_by_the_vertex_resumes_rechained(tmp_path: Path) -> None:
    """Part files named by the job vertex (``part-counts-0-...``, ckptsim's names before they
    named the sink) and the checkpoint that stands for them resume at another parallelism:
    the pending files are found by their writer, and what the writers the checkpoint names
    committed after it is retracted."""
    out = tmp_path / "out"
    kept = killed(out, tmp_path / "chk1", parallelism=1)
    for folder in (out, out / ".staging"):
        for part in folder.glob("part-sink-files-*"):
            part.rename(folder / part.name.replace("part-sink-files-", "part-counts-"))
    resumed = run(out, tmp_path / "chk2", parallelism=2, seed=2, start_from=kept[0])
    assert resumed.status is JobStatus.FINISHED, resumed.failure
    assert observe(committed(out)) == failure_free()


def uneven(env: StreamExecutionEnvironment, out: Path, *, chaining: bool) -> None:
    """Source (2) -> map -> file sink (2): source subtask 0 has 50 records, subtask 1 the rest,
    so sink subtask 0 (chained to its source) finishes long before subtask 1."""
    from runtime.operators import GeneratorReader  # noqa: PLC0415 - the test's own source

    env.enable_checkpointing(50)
    env.configure({"ckptsim.buffer.records": 20})
    if not chaining:
        env.disable_operator_chaining()

    def reader(ctx: Any) -> GeneratorReader:
        count = 100 if ctx.subtask == 0 else 6000
        return GeneratorReader(lambda i: i, count, ctx.subtask, ctx.parallelism, 2000)

    stream = env.from_source(reader, name="Src", parallelism=2).uid("src")
    stream.map(lambda i: [i]).uid("m").sink_to_file(str(out), fmt="json")


def test_a_finished_sink_subtask_resumed_rechained_at_the_same_parallelism_keeps_its_output(
    tmp_path: Path,
) -> None:
    """Run 1 (chained) is killed after sink subtask 0 finished; the resume, at the same
    parallelism with chaining disabled, puts the sink in a vertex of its own, whose subtask 0
    the checkpoint does not list as finished. Its part files up to the checkpoint must stay
    committed, as they do after a rescale (2 -> 1, 2 -> 3) or without the re-chaining."""
    out = tmp_path / "out"
    runs: list[JobResult] = []
    for seed, chaining, start in ((1, True, None), (2, False, "")):
        env = StreamExecutionEnvironment()
        env.set_parallelism(2)
        uneven(env, out, chaining=chaining)
        env.configure({**RETAIN, "execution.checkpointing.dir": str(tmp_path / f"chk{seed}")})
        if start is not None:
            newest = max(
                runs[0].retained_checkpoints, key=lambda p: load_checkpoint(p).checkpoint_id
            )
            env.configure({"execution.state-recovery.path": newest})
        runs.append(
            env.execute(
                f"run {seed}",
                runtime="simulation",
                seed=seed,
                timeout=1.0 if start is None else 600.0,
            )
        )
    assert runs[0].status is JobStatus.CANCELED
    assert runs[1].status is JobStatus.FINISHED
    assert sorted(i for [i] in committed(out)) == sorted([*range(0, 100, 2), *range(1, 6000, 2)])
