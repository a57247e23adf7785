"""Windows of a new user (issue fresh30): tumbling, sliding and session windows with allowed
lateness and late side outputs. Late records sit 3,000 and 15,000 records behind, so that
the watermark has passed their windows in Flink and on the simulation."""

# tumbling / sliding / session windows, allowed lateness, late side outputs
from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import AggregateFunction, ProcessWindowFunction
from pyflink.datastream.window import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    Time,
    TumblingEventTimeWindows,
)


def rec_type():
    return Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()])


class Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Describe(ProcessWindowFunction):
    def __init__(self, kind):
        self.kind = kind

    def process(self, key, context, elements):
        els = list(elements)
        w = context.window()
        yield f"{self.kind} {key} [{w.start},{w.end}) n={len(els)} sum={sum(e[2] for e in els)}"


class SumAgg(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return (acc[0] + 1, acc[1] + value[2])

    def get_result(self, acc):
        return acc

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class WithWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        ((n, s),) = list(elements)
        w = context.window()
        yield f"slide {key} [{w.start},{w.end}) n={n} sum={s}"


def events():
    out = []
    for i in range(30000):
        k = f"k{i % 4}"
        if k == "k3" and (i // 2000) % 3 == 2:
            continue
        out.append((k, i * 100, i % 10))
        if i in (12000, 24000):  # 3000 records after their window: late, within lateness
            out.append(("k1", i * 100 - 300_000, 1000))
        if i in (15000, 27000):  # far behind: beyond lateness, to the side output
            out.append(("k2", i * 100 - 1_500_000, 5000))
    return out


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.get_config().set_auto_watermark_interval(1)
ds = env.from_collection(events(), type_info=rec_type()).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1)).with_timestamp_assigner(
        Ts()
    )
)
keyed = ds.key_by(lambda e: e[0], key_type=Types.STRING())

late1 = OutputTag("late-tumble", rec_type())
tumble = (
    keyed.window(TumblingEventTimeWindows.of(Time.seconds(60)))
    .allowed_lateness(600_000)
    .side_output_late_data(late1)
    .process(Describe("tumble"), Types.STRING())
)
tumble.filter(
    lambda s: "[1140000," in s or "[2340000," in s or "k1 [900000," in s or "k1 [2100000," in s
).print("tumble")
tumble.get_side_output(late1).map(lambda e: f"late-tumble {e}", Types.STRING()).print("late")

late2 = OutputTag("late-slide", rec_type())
slide = (
    keyed.window(SlidingEventTimeWindows.of(Time.seconds(120), Time.seconds(60)))
    .allowed_lateness(600_000)
    .side_output_late_data(late2)
    .aggregate(
        SumAgg(),
        WithWindow(),
        accumulator_type=Types.TUPLE([Types.INT(), Types.LONG()]),
        output_type=Types.STRING(),
    )
)
slide.filter(lambda s: s.startswith("slide k1") and ("[840000," in s or "[900000," in s)).print(
    "slide"
)
slide.get_side_output(late2).map(lambda e: f"late-slide {e}", Types.STRING()).print("late")

session = keyed.window(EventTimeSessionWindows.with_gap(Time.seconds(30))).process(
    Describe("session"), Types.STRING()
)
session.filter(lambda s: "k3" in s or "k2" in s).print("session")
env.execute("windows")
