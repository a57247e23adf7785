"""The max parallelism as Flink derives and restores it.

Unset (``pipeline.max-parallelism: -1``), Flink gives an operator
``KeyGroupRangeAssignment.computeDefaultMaxParallelism`` of its parallelism: 128 up to
parallelism 85, then the power of two at or above 1.5 x the parallelism, at most 32768. On
restore, a max parallelism the user did not set is taken from the restored state
(``StateAssignmentOperation.checkParallelismPreconditions``), and refused when it is below the
new parallelism. ckptsim has one max parallelism per job: the default of its largest
parallelism.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ckptsim import StreamExecutionEnvironment
from runtime.job import RestoreError
from runtime.state import default_max_parallelism
from runtime.status import JobStatus
from tests.actors.test_failover import KEYS, N, counting

RETAIN = {
    "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    "execution.checkpointing.num-retained": 1,
}


@pytest.mark.parametrize(
    ("parallelism", "expected"),
    [
        (1, 128),
        (2, 128),
        (85, 128),
        (86, 256),
        (170, 256),
        (171, 256),
        (172, 512),
        (21845, 32768),
        (21846, 32768),
        (32768, 32768),
    ],
)
def test_the_default_max_parallelism_is_flinks(parallelism: int, expected: int) -> None:
    """128 up to 85; the power of two at or above parallelism + parallelism / 2 (integer
    division); never above 32768."""
    assert default_max_parallelism(parallelism) == expected


def test_an_unset_max_parallelism_follows_the_largest_parallelism() -> None:
    """Parallelism 200 runs without a max parallelism set (it was refused: 'above the max
    parallelism 128'), with 512 key groups; a set one is kept, and refuses what exceeds it."""
    env = StreamExecutionEnvironment(parallelism=2)
    env.from_collection(range(4)).key_by(lambda n: n % 2).reduce(
        lambda a, b: a + b
    ).set_parallelism(200).collect("s")
    graph = env.build_job_graph()
    assert (graph.max_parallelism, graph.max_parallelism_configured) == (512, False)
    assert env.max_parallelism == 512
    env.set_parallelism(90)
    assert env.build_job_graph().max_parallelism == 512  # the largest: the reduce's 200
    env.set_max_parallelism(300)
    graph = env.build_job_graph()
    assert (graph.max_parallelism, graph.max_parallelism_configured) == (300, True)
    env.set_max_parallelism(128)
    with pytest.raises(ValueError, match="parallelism 200 above the max parallelism 128"):
        env.build_job_graph()


def _retained(root: Path, max_parallelism: int) -> str:
    """A retained checkpoint of the counting job (parallelism 2) with ``max_parallelism`` set,
    cancelled midway."""
    env = StreamExecutionEnvironment()
    counting(env)
    env.set_max_parallelism(max_parallelism)
    env.configure({**RETAIN, "execution.checkpointing.dir": str(root)})
    result = env.execute("first", runtime="simulation", seed=1, timeout=0.03)
    assert result.status is JobStatus.CANCELED
    (path,) = result.retained_checkpoints
    return path


def test_a_resume_takes_the_restored_max_parallelism_when_none_is_set(tmp_path: Path) -> None:
    """Keyed state written with 256 key groups restores into the same job with no max
    parallelism set (its own default: 128), as Flink takes the restored max parallelism when
    the user set none (it was refused: 'max_parallelism' is 256, but the job's max parallelism
    is 128'). The counts go on from the restored ones: every key ends at its full count."""
    path = _retained(tmp_path / "first", 256)
    env = StreamExecutionEnvironment()
    counting(env)
    env.configure({"execution.state-recovery.path": path})
    assert env.build_job_graph().max_parallelism == 128
    result = env.execute("resumed", runtime="simulation", seed=2)
    assert result.succeeded, result.failure
    finals: dict[int, int] = {}
    for k, _, c in result.collected("counts"):
        finals[k] = max(finals.get(k, 0), c)
    assert finals == {k: len(range(k, N, KEYS)) for k in range(KEYS)}
    assert min(c for _, _, c in result.collected("counts")) > 1  # restored, not from zero


def test_a_restored_max_parallelism_below_the_new_parallelism_is_refused(tmp_path: Path) -> None:
    """Two key groups cannot be spread over three subtasks: Flink's message, before anything
    runs."""
    path = _retained(tmp_path / "first", 2)
    env = StreamExecutionEnvironment()
    counting(env, source_parallelism=2)
    env.set_parallelism(3)
    env.configure({"execution.state-recovery.path": path})
    with pytest.raises(
        RestoreError,
        match=r"The maximum parallelism \(2\) of the restored state is lower than the "
        r"configured parallelism \(3\)\. Please reduce the parallelism",
    ):
        env.execute("resumed", runtime="simulation", seed=2)


def test_a_set_max_parallelism_that_differs_from_the_restored_one_is_refused(
    tmp_path: Path,
) -> None:
    """Flink refuses a restore whose max parallelism the user set to another value; so does
    ckptsim, naming the state file's field."""
    path = _retained(tmp_path / "first", 256)
    env = StreamExecutionEnvironment()
    counting(env)
    env.set_max_parallelism(128)
    env.configure({"execution.state-recovery.path": path})
    with pytest.raises(
        RestoreError, match=r"max_parallelism' is 256, but the job's max parallelism is 128"
    ):
        env.execute("resumed", runtime="simulation", seed=2)
