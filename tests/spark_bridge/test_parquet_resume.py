"""The Parquet sink resumed as ``sink_to_file`` is (one staging implementation,
``actors.connectors.StagedFiles``): into another folder, the checkpoint's pending files are
committed in the folder that staged them; with another parallelism or chaining, the
checkpoint's files are found by their writers wherever the job graph now puts the sink. On
the deterministic simulation; the output is compared record by record with the failure-free
output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from ckptsim import StreamExecutionEnvironment
from runtime.job import JobResult
from runtime.status import JobStatus
from runtime.storage import load_checkpoint
from spark_bridge import ParquetSink
from tests.actors.test_failover import N, count, failure_free, key, observe, record

RETAIN: dict[str, object] = {
    "execution.checkpointing.num-retained": 3,
    "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
}


def run(
    out: Path,
    root: Path,
    *,
    parquet: bool,
    seed: int,
    parallelism: int = 2,
    reduce_parallelism: int | None = None,
    start_from: str | None = None,
    kill_after: float | None = None,
) -> JobResult:
    """Source -> key_by -> reduce -> Parquet sink (or ``sink_to_file``, JSON lines) into
    ``out``, checkpoints retained under ``root``."""
    env = StreamExecutionEnvironment()
    env.set_parallelism(parallelism)
    env.enable_checkpointing(10)
    env.configure(
        {"ckptsim.buffer.records": 50, **RETAIN, "execution.checkpointing.dir": str(root)}
    )
    if start_from is not None:
        env.configure({"execution.state-recovery.path": start_from})
    stream = env.from_generator(record, N, rate=50_000).uid("numbers")
    counts = stream.key_by(key).reduce(count).uid("counts")
    if reduce_parallelism is not None:
        counts = counts.set_parallelism(reduce_parallelism)
        stream.set_parallelism(1)
    counts = counts.processing_cost(per_buffer_ms=1)
    if parquet:
        counts.sink_to(ParquetSink(out), name="files")
    else:
        counts.sink_to_file(str(out), name="files", fmt="json")
    timeout = 600.0 if kill_after is None else kill_after
    return env.execute(f"run {seed}", runtime="simulation", seed=seed, timeout=timeout)


def committed(out: Path) -> dict[str, list[Any]]:
    """The records of each committed part file, by name."""
    if not out.exists():
        return {}
    files = {}
    for part in sorted(out.glob("part-*")):
        if part.suffix == ".parquet":
            files[part.name] = [tuple(r.values()) for r in pq.read_table(part).to_pylist()]
        else:
            files[part.name] = [tuple(json.loads(line)) for line in part.read_text().splitlines()]
    return files


def records(out: Path) -> list[Any]:
    return [r for rows in committed(out).values() for r in rows]


def retained(result: JobResult) -> list[str]:
    return sorted(result.retained_checkpoints, key=lambda p: load_checkpoint(p).checkpoint_id)


def test_a_parquet_sink_resumed_into_another_folder_is_exactly_once_as_the_file_sink(
    tmp_path: Path,
) -> None:
    """Run 1 is killed with a pre-committed transaction left; the resume writes into another
    folder. The Parquet sink commits the checkpoint's pending files where they were staged,
    as ``sink_to_file`` does (before, it refused the resume: "holds no part file of it"), so
    the old folder holds the output up to the checkpoint, the new one the rest: every record
    once. Both sinks leave the same records in each folder, in files of the same names but
    for their suffixes."""
    left: dict[bool, tuple[dict[str, list[Any]], dict[str, list[Any]]]] = {}
    for parquet in (False, True):
        base = tmp_path / ("parquet" if parquet else "files")
        first = run(
            base / "out1",
            base / "chk1",
            parquet=parquet,
            seed=1,
            parallelism=1,
            reduce_parallelism=1,
            kill_after=0.03,
        )
        assert first.status is JobStatus.CANCELED
        kept = retained(first)
        staged = list((base / "out1" / ".staging").glob("*.pending"))
        assert staged, "the newest checkpoint's pre-committed transaction waits for the resume"
        newest = load_checkpoint(kept[-1]).checkpoint_id
        resumed = run(
            base / "out2",
            base / "chk2",
            parquet=parquet,
            seed=2,
            parallelism=1,
            reduce_parallelism=1,
            start_from=kept[-1],
        )
        assert resumed.status is JobStatus.FINISHED, resumed.failure
        old, new = committed(base / "out1"), committed(base / "out2")
        assert all(int(name.rsplit("-", 1)[1].split(".")[0]) <= newest for name in old)
        assert staged[0].name.removesuffix("pending") in {n.rsplit(".", 1)[0] + "." for n in old}
        assert observe([*records(base / "out1"), *records(base / "out2")]) == failure_free()
        left[parquet] = (old, new)
    for folder in (0, 1):
        by_file, by_parquet = left[False][folder], left[True][folder]
        assert sorted(n.rsplit(".", 1)[0] for n in by_file) == sorted(
            n.rsplit(".", 1)[0] for n in by_parquet
        )
        assert sorted(map(list, (r for rows in by_file.values() for r in rows))) == sorted(
            map(list, (r for rows in by_parquet.values() for r in rows))
        )


@pytest.mark.parametrize(
    ("before", "after", "which"),
    [(1, 2, -1), (2, 1, 0)],
    ids=["1-to-2-unchained-newest", "2-to-1-chained-oldest"],
)
def test_a_parquet_sink_resumed_with_another_parallelism_and_chaining_is_exactly_once(
    tmp_path: Path, before: int, after: int, which: int
) -> None:
    """The reduce at parallelism 1 and the sink at the job's: chained to the reduce at 1, a
    vertex of its own at 2. Resumed the other way round, from the newest retained checkpoint
    (its pending files committed) and from the oldest (what run 1 committed after it
    retracted): every record once."""
    out = tmp_path / "out"
    kill = 0.03 if before == 1 else 0.04
    first = run(
        out,
        tmp_path / "chk1",
        parquet=True,
        seed=1,
        parallelism=before,
        reduce_parallelism=1,
        kill_after=kill,
    )
    assert first.status is JobStatus.CANCELED
    kept = retained(first)
    assert len(kept) == 3
    resumed = run(
        out,
        tmp_path / "chk2",
        parquet=True,
        seed=2,
        parallelism=after,
        reduce_parallelism=1,
        start_from=kept[which],
    )
    assert resumed.status is JobStatus.FINISHED, resumed.failure
    assert observe(records(out)) == failure_free()
    assert not list((out / ".staging").glob("*.pending"))
