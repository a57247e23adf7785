"""A nightly sales report in BATCH mode: where the program does not set an operator's
parallelism, Flink's adaptive batch scheduler decides it from the data (a few records: one
subtask); an operator whose parallelism the program set keeps it, unless PyFlink fused it with
the next Python operator; a sink's set parallelism holds for the operators chained to it."""

from pyflink.common import Types
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, MapFunction, RuntimeContext


class Tagged(MapFunction):
    """The record with where it was computed: subtask/parallelism."""

    def __init__(self, step):
        self.step = step

    def open(self, runtime_context: RuntimeContext):
        self.where = (
            f"{self.step}@{runtime_context.get_index_of_this_subtask()}"
            f"/{runtime_context.get_number_of_parallel_subtasks()}"
        )

    def map(self, value):
        return f"{value} {self.where}"


class Flag(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.where = f"flag@/{runtime_context.get_number_of_parallel_subtasks()}"

    def process_element(self, value, ctx):
        yield f"{value} {self.where}"


SALES = [("north", 120.0), ("south", 80.5), ("north", 42.0), ("east", 300.0), ("south", 19.5)]
SALE = Types.TUPLE([Types.STRING(), Types.DOUBLE()])


def env_for_batch():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)
    return env


def main():
    env = env_for_batch()
    sales = env.from_collection(SALES, type_info=SALE)
    sales.key_by(lambda s: s[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).print("net")
    env.execute("revenue per region")

    env = env_for_batch()
    sales = env.from_collection(SALES, type_info=SALE)
    tagged = sales.map(Tagged("tag")).set_parallelism(2)  # fused with key_by's operator
    tagged.key_by(lambda line: line.split("'")[1]).process(Flag()).print("flags")
    env.execute("flags")

    env = env_for_batch()
    sales = env.from_collection(SALES, type_info=SALE)
    (
        sales.key_by(lambda s: s[0])
        .process(Flag())
        .set_parallelism(2)  # fused with the map after it
        .map(Tagged("after"))
        .print("after")
    )
    env.execute("process then map")

    env = env_for_batch()
    sales = env.from_collection(SALES, type_info=SALE)
    sales.map(Tagged("pinned"), output_type=Types.STRING()).set_parallelism(2).key_by(
        lambda line: line
    ).map(lambda line: len(line), output_type=Types.INT()).print("lengths")  # noqa: PLW0108
    env.execute("pinned map")

    env = env_for_batch()
    sales = env.from_collection(SALES, type_info=SALE)
    sales.key_by(lambda s: s[0]).process(Flag(), output_type=Types.STRING()).set_parallelism(
        2
    ).print("kept")
    env.execute("pinned process")


if __name__ == "__main__":
    main()
