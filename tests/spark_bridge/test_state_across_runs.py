"""Keyed state carried from one batch run to the next (``run_topology_job(..., state=PATH,
run_id=...)``): a nightly job processes each day's input with the state of every earlier day,
exactly once, through failures and unaligned checkpoints; a rerun of a day is refused."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from actors.faults import FailTask
from runtime.datastream import DataStream
from runtime.row import TupleRow
from spark_bridge import SparkBridgeError, TopologyFailed, run_topology_job


def per_user(stream: DataStream) -> DataStream:
    return (
        stream.map(lambda r: TupleRow(user=r.user, total=r.amount, n=1), name="Payment")
        .uid("payment")
        .key_by(lambda r: r.user)
        .reduce(
            lambda a, b: TupleRow(user=a.user, total=a.total + b.total, n=a.n + b.n),
            name="Per user",
        )
        .uid("per-user")
    )


def day_rows(day: int) -> list[tuple[int, Decimal]]:
    return [(i % 5, Decimal(f"{day}.{i % 100:02d}")) for i in range(300)]


def run_day(spark: Any, tmp_path: Path, day: int, **options: Any) -> Any:
    df = spark.createDataFrame(day_rows(day), "user long, amount decimal(10,2)").repartition(3)
    return run_topology_job(
        spark,
        df,
        per_user,
        output=str(tmp_path / f"out-{day}"),
        parallelism=2,
        checkpoint_interval=10,
        config={
            "ckptsim.buffer.records": 20,
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.delay": "5 ms",
            **options.pop("config", {}),
        },
        final_only=True,
        state=str(tmp_path / "state"),
        run_id=f"day-{day}",
        runtime="simulation",
        **options,
    )


def test_each_day_runs_with_the_state_of_every_earlier_day_exactly_once(
    spark: Any, tmp_path: Path
) -> None:
    expected: dict[int, tuple[Decimal, int]] = {}
    # unaligned: a task's final state is in the checkpoint taken after its input ended
    config = {"execution.checkpointing.unaligned.enabled": True}
    for day in range(3):
        for user, amount in day_rows(day):
            total, n = expected.get(user, (Decimal(0), 0))
            expected[user] = (total + amount, n + 1)
        # day 1 fails over once: what it had read before the failure counts once
        faults = [FailTask(task="Per user#1", at_record=60)] if day == 1 else []
        run = run_day(spark, tmp_path, day, seed=day, faults=faults, config=config)
        assert run.result.restarts == (1 if day == 1 else 0)
        got = {r.user: (r.total, r.n) for r in run.dataframe.collect()}
        assert got == expected, f"day {day}"
    records = sorted((tmp_path / "state" / "runs").iterdir())
    assert [json.loads(p.read_text())["run_id"] for p in records] == ["day-0", "day-1", "day-2"]
    # only the newest two runs' states are kept, no checkpoints of finished runs
    attempts = list((tmp_path / "state" / "attempts").iterdir())
    assert len(attempts) == 2
    assert all(sorted(p.name for p in a.iterdir()) == ["state"] for a in attempts)


def test_a_rerun_of_a_day_is_refused_and_a_failed_day_counts_nothing(
    spark: Any, tmp_path: Path
) -> None:
    run_day(spark, tmp_path, 0, seed=1)
    with pytest.raises(SparkBridgeError, match=r"run 'day-0' ran already .* count them twice"):
        run_day(spark, tmp_path, 0, seed=1)
    # day 1 fails for good (no restart allowed): its state is not committed, its attempt goes
    with pytest.raises(TopologyFailed):
        run_day(
            spark,
            tmp_path,
            1,
            seed=1,
            faults=[FailTask(task="Per user#0", at_record=30)],
            config={"restart-strategy.type": "none"},
        )
    assert len(list((tmp_path / "state" / "attempts").iterdir())) == 1
    # run again into a new output folder, day 1 has day 0's state and its own once
    (tmp_path / "out-1").rename(tmp_path / "out-1-failed")
    run = run_day(spark, tmp_path, 1, seed=2)
    got = {r.user: r.n for r in run.dataframe.collect()}
    assert got == dict.fromkeys(range(5), 120)


def test_state_needs_a_run_id_and_a_folder_of_the_driver(spark: Any, tmp_path: Path) -> None:
    df = spark.createDataFrame([(1, Decimal("1.00"))], "user long, amount decimal(10,2)")
    with pytest.raises(ValueError, match="state= needs run_id="):
        run_topology_job(spark, df, per_user, state=str(tmp_path / "s"))
    with pytest.raises(ValueError, match="run_id= names a run of a state folder"):
        run_topology_job(spark, df, per_user, run_id="day-0")
    with pytest.raises(
        SparkBridgeError, match=r"state='s3a://b/s': the state folder is the driver"
    ):
        run_topology_job(spark, df, per_user, state="s3a://b/s", run_id="day-0")
    with pytest.raises(SparkBridgeError, match=r"execution\.checkpointing\.dir= and state="):
        run_topology_job(
            spark,
            df,
            per_user,
            state=str(tmp_path / "s"),
            run_id="day-0",
            config={"execution.checkpointing.dir": str(tmp_path / "c")},
        )
