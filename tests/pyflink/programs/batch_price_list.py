"""A nightly BATCH job prices the day's orders with the price list broadcast to every subtask
(broadcast(MapStateDescriptor), BroadcastProcessFunction and, per customer, a
KeyedBroadcastProcessFunction). In BATCH mode Flink reads the broadcast input to its end
first, so every order sees the whole price list, whichever source is faster."""

from pyflink.common import Types
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.functions import (
    BroadcastProcessFunction,
    KeyedBroadcastProcessFunction,
    RuntimeContext,
)
from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor

PRICES = MapStateDescriptor("prices", Types.STRING(), Types.DOUBLE())


class PriceOrder(BroadcastProcessFunction):
    def process_element(self, value, ctx):
        customer, item, quantity = value
        price = ctx.get_broadcast_state(PRICES).get(item)
        if price is None:
            yield f"{customer}: no price for {item}"
        else:
            yield f"{customer}: {quantity} x {item} = {quantity * price:.2f}"

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(PRICES).put(value[0], value[1])


class CustomerTotal(KeyedBroadcastProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.DOUBLE()))

    def process_element(self, value, ctx):
        price = ctx.get_broadcast_state(PRICES).get(value[1]) or 0.0
        total = (self.total.value() or 0.0) + value[2] * price
        self.total.update(total)
        yield f"{ctx.get_current_key()} spent {total:.2f} so far"

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(PRICES).put(value[0], value[1])


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)
    prices = env.from_collection(
        [("apple", 0.5), ("bread", 2.25), ("cheese", 7.8), ("dates", 4.1)],
        type_info=Types.TUPLE([Types.STRING(), Types.DOUBLE()]),
    ).broadcast(PRICES)
    orders = env.from_collection(
        [
            ("ann", "apple", 6),
            ("bob", "cheese", 1),
            ("ann", "bread", 2),
            ("cid", "eggs", 12),
            ("bob", "dates", 3),
            ("ann", "cheese", 2),
            ("cid", "apple", 4),
        ],
        type_info=Types.TUPLE([Types.STRING(), Types.STRING(), Types.INT()]),
    )
    orders.connect(prices).process(PriceOrder(), Types.STRING()).print("priced")
    orders.key_by(lambda o: o[0]).connect(prices).process(CustomerTotal(), Types.STRING()).print(
        "totals"
    )
    env.execute("price list")


if __name__ == "__main__":
    main()
