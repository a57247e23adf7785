"""What print() writes for each type (Java's toString), at parallelism 1."""

import datetime
from decimal import Decimal

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    numbers = env.from_collection([1.1, 2.5, 1e10, 0.001, 0.0001, 123456789.0, -0.5, 3.0])
    numbers.map(lambda x: x, output_type=Types.FLOAT()).print("float")
    numbers.map(lambda x: x, output_type=Types.DOUBLE()).print("double")
    numbers.map(lambda x: x > 2, output_type=Types.BOOLEAN()).print("boolean")
    numbers.map(lambda x: int(x) % 7, output_type=Types.INT()).print("int")
    numbers.map(
        lambda x: (str(x), x, int(x) % 2 == 0, int(x) * 3),
        output_type=Types.TUPLE([Types.STRING(), Types.FLOAT(), Types.BOOLEAN(), Types.LONG()]),
    ).print("tuple")
    numbers.map(
        lambda x: Row(x, str(x), [int(x) % 3, 1]),
        output_type=Types.ROW([Types.DOUBLE(), Types.STRING(), Types.LIST(Types.INT())]),
    ).print("row")
    numbers.map(
        lambda x: (Row(x, None), [x]),
        output_type=Types.TUPLE(
            [Types.ROW([Types.FLOAT(), Types.STRING()]), Types.LIST(Types.DOUBLE())]
        ),
    ).print("nested")
    numbers.map(lambda x: (x, "a b", None, [1, 2], {"k": 1})).print("pickled")
    numbers.map(lambda x: str(x)).print()  # noqa: PLW0108 - a Python function, as users write
    env.from_collection(
        [(datetime.date(2024, 2, 29), datetime.datetime(2024, 2, 29, 13, 5, 7, 250000))],
        type_info=Types.TUPLE([Types.SQL_DATE(), Types.SQL_TIMESTAMP()]),
    ).print("time")
    env.from_collection(
        [Decimal("1.50"), Decimal("12345678901234567890.125")], type_info=Types.BIG_DEC()
    ).print("decimal")
    env.execute("java formats")


if __name__ == "__main__":
    main()
