"""Order validation with Flink's metrics: each customer's orders are checked against a credit
limit; rejected orders are counted (a counter in a group of its own, and per reason a
key-value group), the largest order seen is a gauge, the checks per second a meter and the
order amounts a distribution. Accepted orders are printed, rejected ones go to a side output
with their reason."""

from pyflink.common import Types
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor

LIMIT = 500
CUSTOMERS = ["acme", "globex", "initech", "umbrella", "hooli"]


def order_type():
    return Types.TUPLE([Types.STRING(), Types.INT(), Types.INT()])


class CreditCheck(KeyedProcessFunction):
    def __init__(self, rejected_tag):
        self.rejected_tag = rejected_tag

    def open(self, runtime_context: RuntimeContext):
        self.spent = runtime_context.get_state(ValueStateDescriptor("spent", Types.INT()))
        metrics = runtime_context.get_metrics_group()
        orders = metrics.add_group("orders")
        self.rejected = orders.counter("rejected")
        self.over_limit = metrics.add_group("reason", "over_limit").counter("rejected")
        self.invalid = metrics.add_group("reason", "invalid").counter("rejected")
        self.largest = 0
        metrics.gauge("largestOrder", lambda: self.largest)
        self.checks = metrics.meter("checksPerSecond", time_span_in_seconds=60)
        self.amounts = metrics.distribution("orderAmount")

    def process_element(self, value, ctx):
        customer, order_id, amount = value
        self.checks.mark_event()
        self.amounts.update(amount)
        self.largest = max(self.largest, amount)
        spent = self.spent.value() or 0
        if amount <= 0:
            self.rejected.inc()
            self.invalid.inc()
            yield self.rejected_tag, f"order {order_id} of {customer}: invalid amount {amount}"
        elif spent + amount > LIMIT:
            self.rejected.inc()
            self.over_limit.inc()
            yield (
                self.rejected_tag,
                (f"order {order_id} of {customer}: {amount} over the limit ({spent} spent)"),
            )
        else:
            self.spent.update(spent + amount)
            yield f"order {order_id} of {customer}: {amount} accepted, {spent + amount} spent"


def orders():
    out = []
    for n in range(60):
        amount = (n * 37) % 160 - 10 if n % 11 else 0
        out.append((CUSTOMERS[n % len(CUSTOMERS)], 1000 + n, amount))
    return out


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    rejected = OutputTag("rejected", Types.STRING())
    checked = (
        env.from_collection(orders(), type_info=order_type())
        .key_by(lambda order: order[0])
        .process(CreditCheck(rejected), Types.STRING())
    )
    checked.print("accepted")
    checked.get_side_output(rejected).print("rejected")
    env.execute("rejected orders")


if __name__ == "__main__":
    main()
