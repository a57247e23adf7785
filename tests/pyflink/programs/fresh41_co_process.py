"""Two keyed streams connected: KeyedCoProcessFunction with state, event-time timers, global job parameters."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedCoProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[-1]


class Join(KeyedCoProcessFunction):
    def open(self, ctx: RuntimeContext):
        self.order = ctx.get_state(ValueStateDescriptor("order", Types.STRING()))
        self.paid = ctx.get_state(ValueStateDescriptor("paid", Types.INT()))
        self.timeout = int(ctx.get_job_parameter("timeout", "0"))
        self.currency = ctx.get_job_parameter("currency", "?")

    def process_element1(self, value, ctx):
        oid, item, ts = value
        self.order.update(item)
        if self.paid.value() is not None:
            yield f"{oid}: {item} paid {self.paid.value()} {self.currency} (order late)"
        else:
            ctx.timer_service().register_event_time_timer(ts + self.timeout)

    def process_element2(self, value, ctx):
        oid, amount, _ts = value
        self.paid.update(amount)
        if self.order.value() is not None:
            yield f"{oid}: {self.order.value()} paid {amount} {self.currency} key={ctx.get_current_key()}"

    def on_timer(self, timestamp, ctx):
        if self.paid.value() is None:
            yield f"{ctx.get_current_key()}: {self.order.value()} unpaid at {timestamp}"


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.get_config().set_global_job_parameters({"timeout": "1000", "currency": "EUR"})
ws = WatermarkStrategy.for_bounded_out_of_orderness(
    Duration.of_millis(100)
).with_timestamp_assigner(Ts())
orders = env.from_collection(
    [(1, "book", 0), (2, "lamp", 100), (3, "desk", 300), (5, "mug", 4000)],
    Types.TUPLE([Types.INT(), Types.STRING(), Types.LONG()]),
).assign_timestamps_and_watermarks(ws)
pays = env.from_collection(
    [(1, 12, 200), (4, 99, 250), (3, 300, 2500), (4, 1, 2600)],
    Types.TUPLE([Types.INT(), Types.INT(), Types.LONG()]),
).assign_timestamps_and_watermarks(ws)
orders.connect(pays).key_by(lambda o: o[0], lambda p: p[0], key_type=Types.INT()).process(
    Join(), Types.STRING()
).print("joined")
orders.union(
    pays.map(
        lambda p: (p[0], str(p[1]), p[2]), Types.TUPLE([Types.INT(), Types.STRING(), Types.LONG()])
    )
).key_by(lambda x: x[0] % 2).count_window(2).reduce(
    lambda a, b: (a[0] + b[0], a[1] + "+" + b[1], max(a[2], b[2]))
).print("pairs")
env.execute("co_process")
