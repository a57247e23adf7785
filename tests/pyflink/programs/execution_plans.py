"""The execution plans of a few everyday jobs, as get_execution_plan() returns them (Flink's
JSON: its node names, PyFlink's fused Python operators, ship strategies and parallelism)."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource
from pyflink.datastream.functions import KeyedProcessFunction


class Spike(KeyedProcessFunction):
    def process_element(self, value, ctx):
        if value[1] > 90:
            yield value


def order_totals(env):
    orders = env.from_collection(
        [("alice", 79), ("bob", 12), ("alice", 21)],
        type_info=Types.TUPLE([Types.STRING(), Types.INT()]),
    )
    orders.key_by(lambda o: o[0]).sum(1).print()


def word_count(env):
    lines = env.from_collection(["to be or not", "to be"])
    (
        lines.flat_map(lambda line: line.split())
        .map(lambda w: (w, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda pair: pair[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .print("counts")
    )


def sensor_alerts(env):
    readings = env.from_source(
        NumberSequenceSource(1, 100), WatermarkStrategy.no_watermarks(), "readings"
    )
    (
        readings.map(lambda n: (n % 7, n), output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))
        .filter(lambda r: r[1] > 3)
        .name("valid")
        .key_by(lambda r: r[0])
        .process(Spike(), output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))
        .map(lambda r: f"sensor {r[0]}: {r[1]}")
        .print("alerts")
    )


def merged_feeds(env):
    web = env.from_collection(["w1", "w2"])
    app = env.from_collection(["a1"])
    merged = web.union(app).map(lambda e: e.upper())
    merged.print()
    merged.key_by(lambda e: e[0]).map(lambda e: e + "!").set_parallelism(1).print("one")


def main():
    for build in (order_totals, word_count, sensor_alerts, merged_feeds):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        build(env)
        print(f"--- {build.__name__}")
        print(env.get_execution_plan())
    env.execute("merged feeds")


if __name__ == "__main__":
    main()
