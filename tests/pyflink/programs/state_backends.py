"""A fraud-rule job configured for production the usual ways: RocksDB (or the heap) as state
backend, incremental checkpoints, a checkpoint directory, through configuration keys and
through PyFlink's state backend and checkpoint storage classes."""

import tempfile

from pyflink.common import Configuration, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.checkpoint_storage import (
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.datastream.state_backend import (
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    PredefinedOptions,
)


class LargeAfterSmall(KeyedProcessFunction):
    """Flags a card that makes a large payment right after a small one."""

    def open(self, runtime_context: RuntimeContext):
        self.last = runtime_context.get_state(ValueStateDescriptor("last", Types.DOUBLE()))

    def process_element(self, value, ctx):
        card, amount = value
        previous = self.last.value()
        if previous is not None and previous < 1.0 and amount > 500.0:
            yield f"ALERT {card}: {previous} then {amount}"
        self.last.update(amount)


def main():
    config = Configuration()
    config.set_string("state.backend.type", "rocksdb")
    config.set_string("state.backend.incremental", "true")
    config.set_string("state.backend.rocksdb.memory.managed", "true")
    config.set_string("state.backend.rocksdb.predefined-options", "SPINNING_DISK_OPTIMIZED")
    config.set_string("state.backend.rocksdb.timer-service.factory", "ROCKSDB")
    config.set_string("execution.checkpointing.storage", "filesystem")
    config.set_string("execution.checkpointing.dir", "file://" + tempfile.mkdtemp())
    config.set_string("execution.checkpointing.interval", "100 ms")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(2)

    heap = HashMapStateBackend()
    rocks = EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True)
    rocks.set_predefined_options(PredefinedOptions.FLASH_SSD_OPTIMIZED)
    rocks.set_number_of_transfer_threads(4)
    print("heap backend", type(heap).__name__)
    print("rocksdb incremental", rocks.is_incremental_checkpoints_enabled())
    print("rocksdb predefined options", rocks.get_predefined_options())
    print("rocksdb transfer threads", rocks.get_number_of_transfer_threads())
    print(
        "rocksdb default incremental",
        EmbeddedRocksDBStateBackend().is_incremental_checkpoints_enabled(),
    )
    print("rocksdb default options", EmbeddedRocksDBStateBackend().get_predefined_options())

    files = FileSystemCheckpointStorage("file:///tmp/fraud-checkpoints")
    print("checkpoint path", files.get_checkpoint_path())
    print("savepoint path", files.get_savepoint_path())
    print("file size threshold", files.get_min_file_size_threshold())
    print("write buffer size", files.get_write_buffer_size())
    memory = JobManagerCheckpointStorage()
    print("jobmanager path", memory.get_checkpoint_path())
    print("jobmanager max state size", memory.get_max_state_size())
    print(
        "jobmanager max state size set",
        JobManagerCheckpointStorage(max_state_size=1024).get_max_state_size(),
    )

    payments = env.from_collection(
        [
            ("card-1", 0.5),
            ("card-2", 40.0),
            ("card-1", 900.0),
            ("card-3", 0.1),
            ("card-2", 650.0),
            ("card-3", 720.0),
            ("card-1", 0.2),
            ("card-1", 20.0),
        ],
        type_info=Types.TUPLE([Types.STRING(), Types.DOUBLE()]),
    )
    payments.key_by(lambda p: p[0]).process(LargeAfterSmall(), Types.STRING()).print("fraud")
    env.execute("fraud rules")


if __name__ == "__main__":
    main()
