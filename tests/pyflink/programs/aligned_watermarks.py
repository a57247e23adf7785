"""Two sensor feeds read with watermark alignment (with_watermark_alignment: a source that
runs ahead of its group by more than the allowed drift pauses until the others catch up);
readings counted per sensor and ten-second window."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource
from pyflink.datastream.window import Time, TumblingEventTimeWindows


class EveryHalfSecond(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1] * 500


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    aligned = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "sensors", Duration.of_seconds(5), Duration.of_millis(100)
    )
    default_interval = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "sensors", Duration.of_seconds(5)
    )
    pair = Types.TUPLE([Types.STRING(), Types.LONG()])
    north = env.from_source(NumberSequenceSource(0, 59), aligned, "north").map(
        lambda n: ("north", n), output_type=pair
    )
    south = env.from_source(NumberSequenceSource(0, 39), default_interval, "south").map(
        lambda n: ("south", n), output_type=pair
    )
    readings = north.union(south).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_hours(1)
        ).with_timestamp_assigner(EveryHalfSecond())
    )
    readings.map(
        lambda r: (r[0], 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()])
    ).key_by(lambda r: r[0]).window(TumblingEventTimeWindows.of(Time.seconds(10))).reduce(
        lambda a, b: (a[0], a[1] + b[1])
    ).print("per window")
    env.execute("aligned sensors")


if __name__ == "__main__":
    main()
