"""Union, connect with a KeyedCoProcessFunction (decisions at the end of input), a
CoMapFunction and metrics, by a new user (issue fresh30)."""

# union, connect + KeyedCoProcessFunction (state from both sides, emitted by event-time timers
# at the end of input), CoMapFunction, custom metrics (counter, gauge, meter)
from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import (
    CoMapFunction,
    KeyedCoProcessFunction,
    MapFunction,
    RuntimeContext,
)
from pyflink.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor


class Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Counted(MapFunction):
    def open(self, ctx: RuntimeContext):
        g = ctx.get_metrics_group().add_group("shop")
        self.orders = g.counter("orders")
        self.big = 0
        g.gauge("bigOrders", lambda: self.big)
        self.rate = g.meter("orderRate", time_span_in_seconds=5)

    def map(self, value):
        self.orders.inc()
        self.rate.mark_event()
        if value[2] > 90:
            self.big += 1
        return value


class Match(KeyedCoProcessFunction):
    def open(self, ctx: RuntimeContext):
        self.spent = ctx.get_state(ValueStateDescriptor("spent", Types.LONG()))
        self.paid = ctx.get_map_state(MapStateDescriptor("paid", Types.LONG(), Types.LONG()))
        self.notes = ctx.get_list_state(ListStateDescriptor("notes", Types.STRING()))

    def process_element1(self, value, ctx):  # order (cust, ts, amount, id)
        self.spent.update((self.spent.value() or 0) + value[2])
        ctx.timer_service().register_event_time_timer(10**12)

    def process_element2(self, value, ctx):  # payment (cust, ts, amount)
        self.paid.put(value[1], value[2])
        if value[2] > 95:
            self.notes.add(f"big@{value[1]}")
        ctx.timer_service().register_event_time_timer(10**12)

    def on_timer(self, timestamp, ctx):
        paid = sum(self.paid.values())
        notes = sorted(self.notes.get())
        yield f"{ctx.get_current_key()} spent={self.spent.value()} paid={paid} n_pay={len(list(self.paid.keys()))} notes={len(notes)} first={notes[:2]}"


class Tag(CoMapFunction):
    def map1(self, value):
        return f"order {value[0]}"

    def map2(self, value):
        return f"pay {value[0]}"


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
otype = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.INT()])
ptype = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()])
custs = [f"c{i}" for i in range(7)]
orders_a = [(custs[i % 7], i * 10, (i * 37) % 100, i) for i in range(0, 6000, 2)]
orders_b = [(custs[i % 7], i * 10, (i * 37) % 100, i) for i in range(1, 6000, 2)]
pays = [(custs[(i * 3) % 7], i * 25, (i * 53) % 100) for i in range(4000)]
wm = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Ts())
orders = (
    env.from_collection(orders_a, type_info=otype)
    .union(env.from_collection(orders_b, type_info=otype))
    .map(Counted(), output_type=otype)
    .assign_timestamps_and_watermarks(wm)
)
payments = env.from_collection(pays, type_info=ptype).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Ts())
)
(
    orders.connect(payments)
    .key_by(lambda o: o[0], lambda p: p[0], key_type=Types.STRING())
    .process(Match(), output_type=Types.STRING())
    .print("match")
)
tags = orders.connect(payments).map(Tag(), output_type=Types.STRING())
tags.filter(lambda s: s.endswith("c6")).map(lambda s: s.split()[0], Types.STRING()).key_by(
    lambda s: s
).map(lambda s: (s, 1), Types.TUPLE([Types.STRING(), Types.INT()])).key_by(lambda t: t[0]).reduce(
    lambda a, b: (a[0], a[1] + b[1])
).filter(lambda t: t[1] % 500 == 0 or t[1] in (857, 571)).print("count")
env.execute("joins")
