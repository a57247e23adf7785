"""Where PyFlink's type information changes values: between two Python operators it fuses
into one function nothing is serialized; across a key_by, a rebalance, a non-chained
operator or into a Java sink the value goes through the type's serializer."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    values = env.from_collection([1.1, 2.2, 0.1])
    as_float = values.map(lambda x: x * 3, output_type=Types.FLOAT())
    as_float.map(lambda x: repr(x)).print("fused")  # noqa: PLW0108 - as users write
    values.map(lambda x: x * 3, output_type=Types.FLOAT()).key_by(lambda x: 0).map(
        lambda x: repr(x)  # noqa: PLW0108
    ).print("keyed")
    values.map(lambda x: x * 3, output_type=Types.FLOAT()).disable_chaining().map(
        lambda x: repr(x)  # noqa: PLW0108
    ).print("unchained")
    values.map(lambda x: x * 3, output_type=Types.FLOAT()).rebalance().map(
        lambda x: repr(x)  # noqa: PLW0108
    ).print("rebalanced")
    values.map(lambda x: x * 3, output_type=Types.FLOAT()).print("java")
    values.map(lambda x: x * 3, output_type=Types.DOUBLE()).map(
        lambda x: x, output_type=Types.FLOAT()
    ).map(lambda x: repr(x)).print("two")  # noqa: PLW0108
    env.execute("fusion")


if __name__ == "__main__":
    main()
