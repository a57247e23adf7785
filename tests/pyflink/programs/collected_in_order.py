"""Orders read back into the program with execute_and_collect: Flink's collect sink runs at
parallelism 1 and keeps the order of what a parallelism-1 operator emitted, so the first
records are always the same ones, whatever the job's parallelism."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)

    squares = env.from_collection(list(range(1, 11))).map(lambda x: x * x).set_parallelism(1)
    print("first squares", squares.execute_and_collect(limit=5))

    orders = [
        ("A-101", "alice", 79.0),
        ("A-102", "bob", 12.5),
        ("A-103", "alice", 240.0),
        ("A-104", "carol", 5.25),
        ("A-105", "bob", 310.0),
        ("A-106", "alice", 18.0),
        ("A-107", "carol", 99.9),
    ]
    order_type = Types.TUPLE([Types.STRING(), Types.STRING(), Types.DOUBLE()])
    stream = env.from_collection(orders, type_info=order_type)
    big = (
        stream.filter(lambda o: o[2] >= 50.0)
        .set_parallelism(1)
        .map(lambda o: f"{o[0]} {o[1]} {o[2]:.2f}", output_type=Types.STRING())
        .set_parallelism(1)
    )
    print("big orders", big.execute_and_collect(limit=3))

    totals = (
        stream.key_by(lambda o: o[1])
        .reduce(lambda a, b: (b[0], a[1], a[2] + b[2]))
        .set_parallelism(1)
    )
    with totals.execute_and_collect() as running:
        for order_id, customer, total in running:
            print("running total", order_id, customer, total)

    amounts = stream.map(lambda o: o[2], output_type=Types.DOUBLE()).set_parallelism(1)
    print("amounts", amounts.execute_and_collect("amounts", limit=4))


if __name__ == "__main__":
    main()
