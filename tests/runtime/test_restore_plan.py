"""``runtime.job.restore_plan``: what each task of a job restores from a checkpoint."""

from __future__ import annotations

from ckptsim import StreamExecutionEnvironment
from runtime.checkpoint import TaskId
from runtime.job import ExecutionPlan, plan_execution, restore_plan
from runtime.network import Buffer
from runtime.snapshot import LoadedCheckpoint, LoadedTaskState

REDUCE = TaskId("reduce-2", 0)


def _checkpoint(checkpoint_id: int) -> LoadedCheckpoint:
    """An unaligned checkpoint whose reduce task persisted in-flight data on both sides."""
    return LoadedCheckpoint(
        path=f"/chk-{checkpoint_id}",
        checkpoint_id=checkpoint_id,
        timestamp=0,
        is_savepoint=False,
        job_name="j",
        operator_uids=[],
        tasks={
            REDUCE: LoadedTaskState(
                operator_states={},
                input_channels={0: [Buffer(records=[(1, 1)], size=8)]},
                output_channels={0: [Buffer(records=[(1, 2)], size=8)]},
            )
        },
    )


def _plan(settings: dict[str, object]) -> ExecutionPlan:
    env = StreamExecutionEnvironment(parallelism=1)
    env.configure(settings)
    env.from_collection([(1, 1)]).key_by(lambda r: r[0]).reduce(lambda a, b: a).collect()
    return plan_execution(env.build_job_graph("j"), env.configuration)


def test_in_flight_data_is_restored_unless_that_checkpoint_is_to_be_restored_without_it() -> None:
    """Flink's ``execution.state-recovery.without-channel-state.checkpoint-id``: a restore from
    that checkpoint takes its operator state but not its in-flight data; any other checkpoint
    restores both."""
    key = "execution.state-recovery.without-channel-state.checkpoint-id"
    restored = restore_plan(_plan({key: 3}), _checkpoint(4))[REDUCE]
    assert restored.input_channels and restored.output_channels
    restored = restore_plan(_plan({key: 4}), _checkpoint(4))[REDUCE]
    assert restored.input_channels == {} and restored.output_channels == {}
    assert restored.checkpoint_id == 4
