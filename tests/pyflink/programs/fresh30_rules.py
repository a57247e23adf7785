"""Broadcast state by a new user (issue fresh30): decisions at the end of input, so that they
do not depend on which input comes first."""

# broadcast state: thresholds per category broadcast to a keyed stream; decisions taken at the
# end of input (event-time timer), so they do not depend on which input arrives first
from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedBroadcastProcessFunction, RuntimeContext
from pyflink.datastream.state import ListStateDescriptor, MapStateDescriptor

RULES = MapStateDescriptor("rules", Types.STRING(), Types.INT())
audit = OutputTag("audit", Types.STRING())


class Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Check(KeyedBroadcastProcessFunction):
    def open(self, ctx: RuntimeContext):
        self.seen = ctx.get_list_state(
            ListStateDescriptor("seen", Types.TUPLE([Types.STRING(), Types.INT()]))
        )

    def process_element(self, value, ctx):
        self.seen.add((value[2], value[3]))
        ctx.timer_service().register_event_time_timer(10**12)

    def process_broadcast_element(self, value, ctx):
        state = ctx.get_broadcast_state(RULES)
        old = state.get(value[0]) if state.contains(value[0]) else None
        if value[1] < 0:
            state.remove(value[0])
        else:
            state.put(value[0], value[1])
        yield audit, f"rule {value[0]}: {old} -> {value[1]}"

    def on_timer(self, timestamp, ctx):
        rules = ctx.get_broadcast_state(RULES)
        flagged = [(c, a) for c, a in self.seen.get() if rules.contains(c) and a > rules.get(c)]
        yield f"{ctx.get_current_key()}: {len(flagged)} of {len(list(self.seen.get()))} flagged, max={max([a for _, a in flagged], default=None)}"


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(3)
cats = ["food", "toys", "cars", "art"]
events = [(f"u{i % 11}", i, cats[i % 4], (i * 7919) % 1000) for i in range(5000)]
rules = [("food", 900), ("toys", 500), ("cars", 100), ("food", 990), ("art", 10), ("art", -1)]
ev = env.from_collection(
    events, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.STRING(), Types.INT()])
).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Ts())
)
bc = env.from_collection(rules, type_info=Types.TUPLE([Types.STRING(), Types.INT()])).broadcast(
    RULES
)
out = (
    ev.key_by(lambda e: e[0], key_type=Types.STRING())
    .connect(bc)
    .process(Check(), output_type=Types.STRING())
)
out.print("flag")
out.get_side_output(audit).print("audit")
env.execute("rules")
