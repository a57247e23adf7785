"""Clicks per ten seconds over the whole site (window_all): PyFlink keys the stream by
NullByteKeySelector, so the window operator's one busy subtask is the one the key group of
that key belongs to; the print prefix shows which."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessAllWindowFunction
from pyflink.datastream.window import Time, TumblingEventTimeWindows


class ClickTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class CountClicks(ProcessAllWindowFunction):
    def process(self, context, elements):
        pages = sorted(e[0] for e in elements)
        window = context.window()
        yield f"[{window.start}, {window.end}) {len(pages)} clicks: {' '.join(pages)}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    clicks = env.from_collection(
        [
            ("/home", 1_000),
            ("/cart", 3_500),
            ("/home", 9_999),
            ("/pay", 10_000),
            ("/home", 14_200),
            ("/cart", 27_000),
            ("/home", 21_000),
        ],
        type_info=Types.TUPLE([Types.STRING(), Types.LONG()]),
    )
    stamped = clicks.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_seconds(10)
        ).with_timestamp_assigner(ClickTime())
    )
    stamped.window_all(TumblingEventTimeWindows.of(Time.seconds(10))).process(
        CountClicks(), Types.STRING()
    ).print("site")
    stamped.map(lambda c: c[0], output_type=Types.STRING()).window_all(
        TumblingEventTimeWindows.of(Time.seconds(20))
    ).reduce(lambda a, b: a if a <= b else b).print("first page")
    env.execute("clicks per window")


if __name__ == "__main__":
    main()
