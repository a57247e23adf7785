"""Log lines routed to the subtask that handles their level (partition_custom with a
Partitioner), and a fan-out through rescale(): each upstream subtask deals its records
round-robin to its own subset of downstream subtasks."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import MapFunction, Partitioner, RuntimeContext


class ByLevel(Partitioner):
    def partition(self, key, num_partitions):
        return {"ERROR": 0, "WARN": 1}.get(key, 2) % num_partitions


class Hop(MapFunction):
    """Appends the index of the subtask the record passed through."""

    def open(self, runtime_context: RuntimeContext):
        self.me = runtime_context.get_index_of_this_subtask()

    def map(self, value):
        return f"{value}->{self.me}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(3)
    logs = env.from_collection(
        [
            "ERROR disk full",
            "INFO started",
            "WARN slow request",
            "ERROR timeout",
            "DEBUG cache miss",
            "WARN retry",
            "INFO stopped",
        ],
        type_info=Types.STRING(),
    )
    routed = logs.partition_custom(ByLevel(), lambda line: line.split()[0])
    routed.map(lambda line: f"handled {line}", output_type=Types.STRING()).print("level")
    logs.partition_custom(lambda key, n: len(key) % n, lambda line: line.split()[0]).print(
        "by length"
    )

    hops = env.from_collection([f"r{i}" for i in range(8)], type_info=Types.STRING())
    (
        hops.map(lambda r: "src", output_type=Types.STRING())
        .map(Hop(), output_type=Types.STRING())
        .set_parallelism(2)
        .rescale()
        .map(Hop(), output_type=Types.STRING())
        .set_parallelism(4)
        .rescale()
        .map(Hop(), output_type=Types.STRING())
        .set_parallelism(2)
        .print("path")
        .set_parallelism(2)
    )
    env.execute("log routing")


if __name__ == "__main__":
    main()
