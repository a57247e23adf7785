"""Alerts written with add_sink: Flink's own SinkFunctions named by their Java class (print
to standard output, or discard), as PyFlink's SinkFunction wraps them."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import SinkFunction


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    temperatures = env.from_collection(
        [("oven", 231), ("fridge", 4), ("oven", 260), ("freezer", -18), ("fridge", 9)],
        type_info=Types.TUPLE([Types.STRING(), Types.INT()]),
    )
    alerts = temperatures.filter(
        lambda t: (t[0] == "oven" and t[1] > 250) or (t[0] == "fridge" and t[1] > 8)
    )
    alerts.map(lambda t: f"too hot: {t[0]} at {t[1]}", output_type=Types.STRING()).add_sink(
        SinkFunction("org.apache.flink.streaming.api.functions.sink.legacy.PrintSinkFunction")
    )
    temperatures.add_sink(
        SinkFunction("org.apache.flink.streaming.api.functions.sink.legacy.DiscardingSink")
    ).name("archive")
    temperatures.key_by(lambda t: t[0]).max(1).add_sink(
        SinkFunction("org.apache.flink.streaming.api.functions.sink.legacy.PrintSinkFunction")
    ).set_parallelism(1)
    env.execute("kitchen alerts")


if __name__ == "__main__":
    main()
