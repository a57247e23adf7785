"""Event-time tumbling windows with allowed lateness, late side output, reduce+ProcessWindowFunction, aggregate."""

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import AggregateFunction, ProcessWindowFunction
from pyflink.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows


class Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Describe(ProcessWindowFunction):
    def process(self, key, context, elements):
        w = context.window()
        els = list(elements)
        yield f"{key} [{w.start},{w.end}) wm={context.current_watermark()} n={len(els)} v={els}"


class CountAgg(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, acc):
        return acc + 1

    def get_result(self, acc):
        return acc

    def merge(self, a, b):
        return a + b


LATE = OutputTag("late", Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]))
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [
    ("x", 100, 1),
    ("x", 900, 2),
    ("y", 1200, 3),
    ("x", 2100, 4),
    ("x", 500, 5),
    ("y", 3500, 6),
    ("x", 1500, 7),
    ("x", 6000, 8),
    ("x", 700, 9),
    ("y", 2200, 10),
]
ds = env.from_collection(
    data, Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()])
).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Ts())
)
w = (
    ds.key_by(lambda v: v[0], key_type=Types.STRING())
    .window(TumblingEventTimeWindows.of(Time.seconds(1)))
    .allowed_lateness(1500)
    .side_output_late_data(LATE)
    .reduce(lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]), Describe(), Types.STRING())
)
w.print("win")
w.get_side_output(LATE).print("late")
ds.key_by(lambda v: v[0], key_type=Types.STRING()).window(
    SlidingEventTimeWindows.of(Time.seconds(2), Time.seconds(1))
).aggregate(CountAgg(), accumulator_type=Types.INT(), output_type=Types.INT()).print("count")
env.execute("window_lateness")
