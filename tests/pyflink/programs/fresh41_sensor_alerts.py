"""KeyedProcessFunction: side outputs, event-time and processing-time timers together."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor

HOT = OutputTag("hot", Types.TUPLE([Types.STRING(), Types.INT()]))
SILENT = OutputTag("silent", Types.STRING())


class Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class Monitor(KeyedProcessFunction):
    def open(self, ctx: RuntimeContext):
        self.last = ctx.get_state(ValueStateDescriptor("last", Types.INT()))
        self.timer = ctx.get_state(ValueStateDescriptor("timer", Types.LONG()))

    def process_element(self, value, ctx):
        sensor, temp, ts = value
        if temp > 30:
            yield HOT, (sensor, temp)
        prev = self.last.value()
        self.last.update(temp)
        old = self.timer.value()
        if old is not None:
            ctx.timer_service().delete_event_time_timer(old)
        t = ts + 1000
        ctx.timer_service().register_event_time_timer(t)
        self.timer.update(t)
        # a processing-time timer far in the future: must never fire on a bounded job
        ctx.timer_service().register_processing_time_timer(
            ctx.timer_service().current_processing_time() + 3_600_000
        )
        yield f"{sensor} {prev}->{temp} at {ts} wm={ctx.timer_service().current_watermark()}"

    def on_timer(self, timestamp, ctx):
        if ctx.time_domain().name == "PROCESSING_TIME":
            yield "processing timer fired?!"
            return
        yield SILENT, f"{ctx.get_current_key()} silent since {timestamp - 1000} (timer {timestamp})"
        self.timer.clear()


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [
    ("a", 20, 0),
    ("b", 31, 100),
    ("a", 35, 500),
    ("a", 21, 2000),
    ("b", 29, 2100),
    ("c", 40, 2500),
    ("a", 22, 5000),
    ("b", 33, 5200),
    ("c", 10, 9000),
]
ds = env.from_collection(data, Types.TUPLE([Types.STRING(), Types.INT(), Types.LONG()]))
ds = ds.assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(
        Ts()
    )
)
main = ds.key_by(lambda v: v[0], key_type=Types.STRING()).process(Monitor(), Types.STRING())
main.print("main")
main.get_side_output(HOT).print("hot")
main.get_side_output(SILENT).print("silent")
env.execute("sensor_alerts")
