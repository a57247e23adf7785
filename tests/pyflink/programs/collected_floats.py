"""FLOAT values as execute_and_collect returns them (PyFlink reads Java's Float back as the
shortest decimal Java prints: 0.1, not 0.10000000149011612), in every type that holds them;
a DOUBLE keeps the float's exact value; print() writes Java's Float.toString. (An infinite or
NaN FLOAT is not collected: PyFlink 2.3 raises ValueError reading Java's "Infinity". The
smallest floats, 1.4E-45 and 1.17549435E-38 among them, are left out: Java 17 prints some with
more digits than the shortest, which ckptsim prints.)"""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
values = [
    0.1,
    1e-05,
    0.3,
    1 / 3,
    2.5,
    -0.1,
    0.0,
    -0.0,
    123456789.0,
    16777217.0,
    3.4028235e38,
    1.5e-39,
    2.25629286e17,
    1.20630595e33,
    8.589973e9,
    9999999.0,
    0.0009999999,
]
floats = env.from_collection(values, type_info=Types.FLOAT())
print("float", floats.execute_and_collect(limit=len(values)))
with floats.execute_and_collect() as collected:
    print("iterated", list(collected))

pair = Types.TUPLE([Types.STRING(), Types.FLOAT()])
pairs = env.from_collection([("a", v) for v in values[:4]], type_info=pair)
print("tuple", pairs.execute_and_collect(limit=4))
doubled = pairs.map(lambda p: (p[0] * 2, p[1] * 2), output_type=pair)
print("mapped", doubled.execute_and_collect(limit=4))
print(
    "as double", pairs.map(lambda p: p[1], output_type=Types.DOUBLE()).execute_and_collect(limit=4)
)

row = Types.ROW_NAMED(["f", "d"], [Types.FLOAT(), Types.DOUBLE()])
print(
    "row",
    env.from_collection([Row(f=v, d=v) for v in values[:3]], type_info=row).execute_and_collect(
        limit=3
    ),
)
nested = Types.TUPLE([Types.ROW([Types.FLOAT(), Types.STRING()]), Types.INT()])
print(
    "nested",
    env.from_collection([(Row(0.1, "x"), 1)], type_info=nested).execute_and_collect(limit=1),
)
for name, array in [
    ("primitive array", Types.PRIMITIVE_ARRAY(Types.FLOAT())),
    ("basic array", Types.BASIC_ARRAY(Types.FLOAT())),
]:
    print(name, env.from_collection([values[:3]], type_info=array).execute_and_collect(limit=1))
mapping = Types.MAP(Types.STRING(), Types.FLOAT())
print("map", env.from_collection([{"k": 0.1}], type_info=mapping).execute_and_collect(limit=1))

floats.print()
env.execute("print floats")
