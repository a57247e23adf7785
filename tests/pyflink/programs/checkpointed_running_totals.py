"""Running totals per account, checkpointed: written the way a PyFlink user writes a job."""

from pyflink.common import Duration, Row, Types
from pyflink.datastream import (
    CheckpointingMode,
    ExternalizedCheckpointRetention,
    KeyedProcessFunction,
    RuntimeContext,
    StreamExecutionEnvironment,
)
from pyflink.datastream.state import ValueStateDescriptor


class RunningTotal(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.DOUBLE()))
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.INT()))

    def process_element(self, value, ctx: "KeyedProcessFunction.Context"):
        total = (self.total.value() or 0.0) + value[1]
        count = (self.count.value() or 0) + 1
        self.total.update(total)
        self.count.update(count)
        yield Row(account=value[0], payments=count, total=total)


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(50, CheckpointingMode.EXACTLY_ONCE)
    config = env.get_checkpoint_config()
    config.set_checkpoint_timeout(60_000)
    config.set_min_pause_between_checkpoints(10)
    config.set_max_concurrent_checkpoints(1)
    config.set_tolerable_checkpoint_failure_number(3)
    config.enable_unaligned_checkpoints()
    config.set_aligned_checkpoint_timeout(Duration.of_millis(20))
    config.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION
    )
    print(
        config.is_checkpointing_enabled(),
        config.get_checkpoint_interval(),
        config.get_checkpointing_mode(),
        config.get_checkpoint_timeout(),
        config.get_min_pause_between_checkpoints(),
        config.get_max_concurrent_checkpoints(),
        config.get_tolerable_checkpoint_failure_number(),
        config.is_unaligned_checkpoints_enabled(),
        config.get_externalized_checkpoint_retention(),
    )

    accounts = ["alice", "bob", "carol", "dave", "erin"]
    payments = [(accounts[i % 5], (i * 7) % 13 + 0.25) for i in range(200)]
    (
        env.from_collection(payments, type_info=Types.TUPLE([Types.STRING(), Types.DOUBLE()]))
        .key_by(lambda payment: payment[0], key_type=Types.STRING())
        .process(
            RunningTotal(),
            output_type=Types.ROW_NAMED(
                ["account", "payments", "total"], [Types.STRING(), Types.INT(), Types.DOUBLE()]
            ),
        )
        .filter(lambda row: row.payments % 10 == 0)
        .print("totals")
    )
    env.execute("running totals")


if __name__ == "__main__":
    main()
