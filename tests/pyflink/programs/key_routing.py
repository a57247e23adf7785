"""Which subtask each key goes to (the print prefix), for keys of several kinds, at
parallelism 4: PyFlink hashes a key as the Java object it becomes."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(4)
    keys = [
        "apple",
        "kiwi",
        "fig",
        "pear",
        "plum",
        "lime",
        "",
        "日本",
        0,
        1,
        7,
        42,
        -3,
        10**12,
        1.5,
        -0.25,
        3.0,
        (1, "a"),
        ("x", 2.5),
        None,
        True,
        b"raw",
    ]
    source = env.from_collection(keys)
    source.key_by(lambda k: k).map(lambda k: f"pickled {k!r}").print("pickled")
    words = env.from_collection([k for k in keys if isinstance(k, str)], type_info=Types.STRING())
    words.key_by(lambda k: k, key_type=Types.STRING()).map(lambda k: f"string {k!r}").print(
        "string"
    )
    ints = env.from_collection([k for k in keys if type(k) is int], type_info=Types.LONG())
    ints.key_by(lambda k: k % 1000, key_type=Types.INT()).map(lambda k: f"int {k!r}").print("int")
    ints.key_by(lambda k: k, key_type=Types.LONG()).map(lambda k: f"long {k!r}").print("long")
    floats = env.from_collection([1.5, -0.25, 3.0, 1e10, 0.1], type_info=Types.DOUBLE())
    floats.key_by(lambda k: k, key_type=Types.DOUBLE()).map(lambda k: f"double {k!r}").print(
        "double"
    )
    env.execute("key routing")


if __name__ == "__main__":
    main()
