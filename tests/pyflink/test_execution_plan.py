"""``get_execution_plan()`` names each edge's ship strategy as Flink's plan does."""

from __future__ import annotations

import json

from ckptsim.pyflink.common import Types
from ckptsim.pyflink.datastream import StreamExecutionEnvironment


def test_an_implicit_forward_edge_across_a_parallelism_change_ships_rebalance() -> None:
    """from_collection is a parallelism-1 source: into a parallelism-2 map the edge rebalances
    (as the job runs it), a key_by hashes, and a map after it at the same parallelism forwards."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    (
        env.from_collection([1, 2, 3], type_info=Types.INT())
        .map(lambda x: x + 1, output_type=Types.INT())
        .key_by(lambda x: x % 2)
        .map(lambda x: x * 2, output_type=Types.INT())
        .print()
    )
    nodes = json.loads(env.get_execution_plan())["nodes"]
    edges = [
        (node["type"], node["parallelism"], [p["ship_strategy"] for p in node["predecessors"]])
        for node in nodes
        if node["pact"] != "Data Source"
    ]
    assert nodes[0]["parallelism"] == 1
    # the first map and key_by's operator are one fused Python operator, as in PyFlink (a new
    # transformation: listed after the others, sinks last)
    assert edges == [
        ("Map", 2, ["HASH"]),
        ("Map, _stream_key_by_map_operator", 2, ["REBALANCE"]),
        ("Sink: Print to Std. Out", 2, ["FORWARD"]),
    ]
