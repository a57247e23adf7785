"""AggregatingState, ReducingState, MapState iteration, ListState, StateTtlConfig."""

from pyflink.common import Time, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import AggregateFunction, KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)


class AvgAgg(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return (acc[0] + value, acc[1] + 1)

    def get_result(self, acc):
        return acc[0] / acc[1]

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class Stats(KeyedProcessFunction):
    def open(self, ctx: RuntimeContext):
        ttl = (
            StateTtlConfig.new_builder(Time.seconds(3600))
            .set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)
            .set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)
            .build()
        )
        vd = ValueStateDescriptor("seen", Types.INT())
        vd.enable_time_to_live(ttl)
        self.seen = ctx.get_state(vd)
        self.avg = ctx.get_aggregating_state(
            AggregatingStateDescriptor("avg", AvgAgg(), Types.TUPLE([Types.INT(), Types.INT()]))
        )
        self.mx = ctx.get_reducing_state(
            ReducingStateDescriptor("max", lambda a, b: max(a, b), Types.INT())  # noqa: PLW0108
        )
        self.words = ctx.get_map_state(MapStateDescriptor("words", Types.STRING(), Types.INT()))
        self.hist = ctx.get_list_state(ListStateDescriptor("hist", Types.INT()))

    def process_element(self, value, ctx):
        k, word, n = value
        self.seen.update((self.seen.value() or 0) + 1)
        self.avg.add(n)
        self.mx.add(n)
        self.words.put(word, (self.words.get(word) or 0) + n)
        self.hist.add(n)
        if word == "drop":
            self.words.remove("drop")
        if word == "reset":
            self.mx.clear()
            self.hist.update([0])
        items = sorted(self.words.items())
        yield (
            f"{k}: seen={self.seen.value()} avg={self.avg.get():.3f} max={self.mx.get()} "
            f"words={items} keys={sorted(self.words.keys())} vals={sorted(self.words.values())} "
            f"empty={self.words.is_empty()} has_x={self.words.contains('x')} hist={list(self.hist.get())}"
        )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [
    ("k1", "x", 3),
    ("k2", "y", 5),
    ("k1", "y", 4),
    ("k1", "drop", 9),
    ("k2", "reset", 1),
    ("k2", "z", 7),
    ("k1", "x", 10),
    ("k3", "drop", 2),
]
env.from_collection(data, Types.TUPLE([Types.STRING(), Types.STRING(), Types.INT()])).key_by(
    lambda v: v[0]
).process(Stats(), Types.STRING()).print()
env.execute("state_kinds")
