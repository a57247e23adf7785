"""Orders printed straight from a keyed stream: PyFlink's KeyedStream.print() takes the
records out of the keyed stream and prints them without the sink identifier it was given
(the prefix is the subtask the key went to)."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    orders = env.from_collection(
        [("A-101", 79.0), ("B-202", 12.5), ("A-101", 21.0), ("C-303", 240.0), ("B-202", 7.5)],
        type_info=Types.TUPLE([Types.STRING(), Types.DOUBLE()]),
    )
    orders.key_by(lambda o: o[0]).print("pair")

    events = env.from_collection(["login alice", "click bob", "logout alice", "click carol"])
    events.key_by(lambda e: e.split()[1]).print("events")

    # a keyed stream's records after an operator still print with the identifier
    orders.key_by(lambda o: o[0]).sum(1).print("total")
    env.execute("keyed print")


if __name__ == "__main__":
    main()
