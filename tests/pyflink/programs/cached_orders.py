"""Orders cleaned once and reused by two jobs (DataStream.cache(), a bounded stream in BATCH
mode): the per-customer totals and the big orders both read the cached result."""

from pyflink.common import Types
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment


def parse(line):
    order_id, customer, amount = line.split(",")
    return order_id.strip(), customer.strip().lower(), float(amount)


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)
    raw = env.from_collection(
        [
            "A-1, Alice, 30.5",
            "A-2, BOB, 12.0",
            "A-3, alice, 99.0",
            "A-4, Carol, 250.0",
            "A-5, bob, 7.25",
        ],
        type_info=Types.STRING(),
    )
    order_type = Types.TUPLE([Types.STRING(), Types.STRING(), Types.DOUBLE()])
    orders = raw.map(parse, output_type=order_type).cache()

    orders.key_by(lambda o: o[1]).reduce(lambda a, b: ("*", a[1], a[2] + b[2])).print("total")
    env.execute("totals per customer")

    orders.filter(lambda o: o[2] >= 50.0).map(
        lambda o: f"{o[0]} {o[1]}", output_type=Types.STRING()
    ).print("big")
    env.execute("big orders")

    print("cached", sorted(orders.execute_and_collect()))


if __name__ == "__main__":
    main()
