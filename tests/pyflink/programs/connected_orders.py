"""Orders joined with prices by item: two keyed streams connected into a
KeyedCoProcessFunction, with state for both inputs and an event-time timer per item."""

from pyflink.common import Types
from pyflink.datastream import KeyedCoProcessFunction, StreamExecutionEnvironment
from pyflink.datastream.state import ValueStateDescriptor

ITEMS = ["apple", "bread", "cheese", "dates", "eggs", "flour", "grapes", "honey"]


class Join(KeyedCoProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.INT()))
        self.price = runtime_context.get_state(ValueStateDescriptor("price", Types.DOUBLE()))

    def process_element1(self, value, ctx):
        self.count.update((self.count.value() or 0) + value[1])
        ctx.timer_service().register_event_time_timer(ITEMS.index(ctx.get_current_key()))

    def process_element2(self, value, ctx):
        self.price.update(value[1])

    def on_timer(self, timestamp, ctx):
        count, price = self.count.value(), self.price.value()
        yield ctx.get_current_key(), count, price, count * (price or 0.0)


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    orders = env.from_collection(
        [(ITEMS[i % 8], i % 5 + 1) for i in range(40)],
        type_info=Types.TUPLE([Types.STRING(), Types.INT()]),
    )
    prices = env.from_collection(
        [(item, 0.5 + i * 1.25) for i, item in enumerate(ITEMS)],
        type_info=Types.TUPLE([Types.STRING(), Types.DOUBLE()]),
    )
    (
        orders.connect(prices)
        .key_by(lambda order: order[0], lambda price: price[0], key_type=Types.STRING())
        .process(
            Join(),
            output_type=Types.TUPLE([Types.STRING(), Types.INT(), Types.FLOAT(), Types.DOUBLE()]),
        )
        .print("bill")
    )
    env.execute("orders")


if __name__ == "__main__":
    main()
