"""The stream graph PyFlink makes of a program, derived from ckptsim's: what
``get_execution_plan()`` shows and what BATCH mode's parallelism is decided on.

ckptsim's graph holds the operators that run; PyFlink's has a few more and a few less, and
fuses Python operators:

- a ``key_by`` is a Python operator of its own (``_stream_key_by_map_operator``, at the
  parallelism of its input, which it forwards from) before the hash edge, made when the
  program called ``key_by``;
- a record's conversion to its declared type (a chained operator here) is part of the
  operator that declared it, and the watermark strategy of ``from_source`` part of the source;
- a Python timestamp assigner is three operators (``Extract-Timestamp``, Java's
  ``Timestamps/Watermarks``, ``Remove-Timestamp``), the first two one operator here and the
  last one its own;
- a file sink's making of its lines (an operator here) is part of the sink;
- sources are named ``Source: <name>``, sinks ``Sink: <name>``;
- PyFlink's ``PythonOperatorChainingOptimizer`` fuses a non-keyed Python operator into the
  Python operator before it when the edge forwards, the parallelisms are equal, that operator
  feeds only it and chaining allows it: one operator named ``<first>, <second>``, a new
  transformation whose parallelism was not set by the user.

Transformation ids are numbered here from 1 in the order the program made them (fused
operators after all others); Flink's ids go on across the program's environments and count
transformations that are no node of the graph, so they are larger.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from runtime.graph import StreamEdge, StreamGraph, StreamNode
from runtime.partition import Partitioner

KEY_BY_OPERATOR = "_stream_key_by_map_operator"

#: Flink's names of the ship strategies (its partitioners' ``toString``)
SHIP_STRATEGIES = {
    Partitioner.FORWARD: "FORWARD",
    Partitioner.REBALANCE: "REBALANCE",
    Partitioner.RESCALE: "RESCALE",
    Partitioner.HASH: "HASH",
    Partitioner.BROADCAST: "BROADCAST",
    Partitioner.SHUFFLE: "SHUFFLE",
    Partitioner.CUSTOM: "CUSTOM",
}


class PlanAnnotations(Protocol):
    """What the PyFlink environment knows of its operators beyond ckptsim's graph."""

    _python_nodes: set[int]
    _converters: dict[int, Any]
    _source_watermarks: set[int]
    _timestamp_nodes: dict[int, bool]
    _timestamp_removers: set[int]
    _sink_lines: dict[int, Any]
    _pinned: set[int]
    _sink_bases: dict[str, str]
    _key_by_ranks: dict[int, float]

    def _cache_sinks(self) -> set[int]: ...

    def _reads_cache(self, node_id: int) -> bool: ...


@dataclass(eq=False)
class PlanEdge:
    source: PlanNode
    partitioner: Partitioner
    explicit: bool = False


@dataclass(eq=False)
class PlanNode:
    """One node of PyFlink's stream graph."""

    #: creation order (renumbered from 1 when the plan is written)
    rank: float
    name: str
    pact: str  # "Data Source", "Operator" or "Data Sink"
    parallelism: int
    #: a Python operator, and one that may be fused into the Python operator before it (a
    #: non-keyed process operator: map, flat_map, filter, process, ...)
    python: bool = False
    fusible: bool = False
    chainable: bool = True
    chain_head: bool = False
    #: the parallelism was set by the program (``set_parallelism``, a parallelism-1 source)
    configured: bool = False
    #: a source that is Flink's own (``from_source``), not ``from_collection``'s
    java_source: bool = False
    #: the ckptsim operators this node stands for
    members: list[int] = field(default_factory=list)
    inputs: list[PlanEdge] = field(default_factory=list)


class PyFlinkGraph:
    """PyFlink's stream graph of ckptsim's ``graph`` (see the module's documentation)."""

    def __init__(
        self, graph: StreamGraph, annotations: PlanAnnotations, default_parallelism: int
    ) -> None:
        self.default = default_parallelism
        self.nodes: list[PlanNode] = []
        self._build(graph, annotations)
        self._fuse()

    # --- building ------------------------------------------------------------------------------

    def _parallelism(self, node: StreamNode) -> int:
        return node.parallelism if node.parallelism is not None else self.default

    def _build(self, graph: StreamGraph, notes: PlanAnnotations) -> None:
        skipped = notes._cache_sinks()
        of: dict[int, PlanNode] = {}  # ckptsim node id -> the node that stands for it
        key_by: dict[tuple[int, int], PlanNode] = {}
        lines = {n.node_id for n in notes._sink_lines.values()}
        passed: dict[int, StreamEdge] = {}  # a file sink's lines -> the edge into them
        for node in graph.topological_order():
            node_id = node.node_id
            if node_id in skipped:
                continue
            inputs = graph.inputs(node_id)
            merged = node_id in notes._converters or node_id in notes._source_watermarks
            if merged and len(inputs) == 1:  # part of the operator before it
                of[node_id] = of[inputs[0].source]
                of[node_id].members.append(node_id)
                continue
            if node_id in lines and len(inputs) == 1:  # part of the sink after it
                passed[node_id] = inputs[0]
                continue
            p = self._parallelism(node)
            configured = node_id in notes._pinned
            if node.is_source and notes._reads_cache(node_id):
                # a cached stream read back, at the parallelism it was kept at
                first = last = self._add(node_id, node.name, "Operator", p, configured=True)
            elif node.is_source:
                java = not node.name.endswith("Collection Source") or node.parallelism != 1
                first = last = self._add(
                    node_id,
                    f"Source: {node.name}",
                    "Data Source",
                    p,
                    configured=configured or not java,
                    java_source=java,
                )
            elif node.is_sink:
                name = notes._sink_bases.get(node.name, node.name)
                first = last = self._add(
                    node_id, f"Sink: {name}", "Data Sink", p, configured=configured
                )
            elif node_id in notes._timestamp_nodes:
                first, last = self._timestamps(node, p, configured, notes._timestamp_nodes[node_id])
            elif node_id in notes._timestamp_removers:  # Java's map
                first = last = self._add(node_id, node.name, "Operator", p, configured=configured)
            else:
                first = last = self._add(
                    node_id,
                    node.name,
                    "Operator",
                    p,
                    configured=configured,
                    python=True,
                    fusible=node_id in notes._python_nodes,
                )
            for made in {id(first): first, id(last): last}.values():
                made.chainable = node.chainable
                made.members.append(node_id)
            first.chain_head = node.chain_head
            for given in inputs:
                edge = passed.get(given.source, given)
                if edge is not given:
                    first.members.append(given.source)
                source = of[edge.source]
                if edge.partitioner is Partitioner.HASH:
                    selector = (id(source), id(edge.key_selector))
                    keying = key_by.get(selector)
                    if keying is None:
                        keying = self._add(
                            notes._key_by_ranks.get(id(edge.key_selector), node_id - 0.5),
                            KEY_BY_OPERATOR,
                            "Operator",
                            source.parallelism,
                            python=True,
                            fusible=True,
                        )
                        keying.inputs.append(PlanEdge(source, Partitioner.FORWARD))
                        key_by[selector] = keying
                    source = keying
                first.inputs.append(PlanEdge(source, edge.partitioner, edge.explicit))
            of[node_id] = last

    def _add(self, rank: float, name: str, pact: str, parallelism: int, **flags: Any) -> PlanNode:
        node = PlanNode(rank, name, pact, parallelism, **flags)
        self.nodes.append(node)
        return node

    def _timestamps(
        self, node: StreamNode, p: int, configured: bool, python_assigner: bool
    ) -> tuple[PlanNode, PlanNode]:
        """``assign_timestamps_and_watermarks``: Java's operator, after ``Extract-Timestamp``
        when the timestamps come from a Python assigner (then ``Remove-Timestamp``, the
        operator after this one, is the last of the three)."""
        rank = node.node_id
        if not python_assigner:
            assign = self._add(rank, node.name, "Operator", p, configured=configured)
            return assign, assign
        extract = self._add(
            rank - 0.3, "Extract-Timestamp", "Operator", p, python=True, fusible=True
        )
        assign = self._add(rank - 0.2, "Timestamps/Watermarks", "Operator", p)
        assign.inputs.append(PlanEdge(extract, Partitioner.FORWARD))
        return extract, assign

    # --- PyFlink's chaining of Python operators ---------------------------------------------

    def outputs(self, node: PlanNode) -> list[PlanNode]:
        return [n for n in self.nodes if any(e.source is node for e in n.inputs)]

    def ship(self, edge: PlanEdge, target: PlanNode) -> Partitioner:
        """What the edge ships with (an implicit forward edge across a change of parallelism
        rebalances)."""
        if (
            edge.partitioner is Partitioner.FORWARD
            and not edge.explicit
            and edge.source.parallelism != target.parallelism
        ):
            return Partitioner.REBALANCE
        return edge.partitioner

    def _fusible(self, up: PlanNode, down: PlanNode) -> bool:
        return (
            up.python
            and up.parallelism == down.parallelism
            and up.chainable
            and down.chainable
            and not down.chain_head
            and len(self.outputs(up)) == 1
        )

    def _fuse(self) -> None:
        """PyFlink's ``PythonOperatorChainingOptimizer``: each operator in the order the
        program made them, then each fused one (and its inputs) again."""
        next_rank = max((n.rank for n in self.nodes), default=0) + 1
        queue = sorted((n for n in self.nodes if n.pact != "Data Source"), key=lambda n: n.rank)
        done: set[int] = set()
        while queue:
            down = queue.pop(0)
            if id(down) in done or down not in self.nodes:
                continue
            done.add(id(down))
            if not down.fusible or len(down.inputs) != 1:
                continue
            edge = down.inputs[0]
            up = edge.source
            if self.ship(edge, down) is not Partitioner.FORWARD or not self._fusible(up, down):
                continue
            fused = PlanNode(
                next_rank,
                f"{up.name}, {down.name}",
                "Operator",
                up.parallelism,
                python=True,
                fusible=up.fusible,
                chainable=up.chainable,
                chain_head=up.chain_head,
                members=[*up.members, *down.members],
                inputs=list(up.inputs),
            )
            next_rank += 1
            for node in self.nodes:
                for e in node.inputs:
                    if e.source is down:
                        e.source = fused
            self.nodes = [n for n in self.nodes if n is not up and n is not down]
            self.nodes.append(fused)
            done.add(id(up))
            queue.append(fused)
            queue.extend(e.source for e in fused.inputs)

    # --- the plan ------------------------------------------------------------------------------

    def plan(self) -> dict[str, Any]:
        """Flink's JSON plan: the nodes by id, sinks last; each with its predecessors."""
        order = sorted(self.nodes, key=lambda n: (n.pact == "Data Sink", n.rank))
        ids = {id(n): i for i, n in enumerate(sorted(self.nodes, key=lambda n: n.rank), 1)}
        nodes: list[dict[str, Any]] = []
        for node in order:
            entry: dict[str, Any] = {
                "id": ids[id(node)],
                "type": node.name,
                "pact": node.pact,
                "contents": node.name,
                "parallelism": node.parallelism,
            }
            if node.pact != "Data Source":
                entry["predecessors"] = [
                    {
                        "id": ids[id(edge.source)],
                        "ship_strategy": SHIP_STRATEGIES[self.ship(edge, node)],
                        "side": "second",
                    }
                    for edge in node.inputs
                ]
            nodes.append(entry)
        return {"nodes": nodes}


def jackson(value: Any, level: int = 0) -> str:
    """JSON as Flink writes it (Jackson's default pretty printer): objects one field a line,
    indented by two spaces per enclosing object, ``"key" : value``; arrays on the line,
    ``[ a, b ]``."""
    if isinstance(value, dict):
        if not value:
            return "{ }"
        pad = "  " * (level + 1)
        fields = ",\n".join(
            f"{pad}{json.dumps(k)} : {jackson(v, level + 1)}" for k, v in value.items()
        )
        return "{\n" + fields + "\n" + "  " * level + "}"
    if isinstance(value, list):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(jackson(v, level) for v in value) + " ]"
    return json.dumps(value)


def members(nodes: Iterable[PlanNode]) -> dict[int, PlanNode]:
    """ckptsim node id -> the plan node it is part of."""
    return {m: n for n in nodes for m in n.members}


def batch_parallelism(graph: PyFlinkGraph) -> dict[int, int]:
    """The parallelism Flink 2.3's adaptive batch scheduler gives each ckptsim operator of a
    BATCH job (what was captured from Flink for the programs ``tests/pyflink`` pins):

    - operators joined by forward edges (a chain, a forward group) run at one parallelism;
    - a group with an operator whose parallelism the program set runs at that parallelism
      (``from_collection`` is a parallelism-1 source); an operator PyFlink fused with another
      is a new one, whose parallelism nobody set;
    - a group with a source of Flink's own (``from_source``) whose parallelism was not set
      runs at the default parallelism (the adaptive scheduler's default for sources);
    - any other group runs at the parallelism the volume of its input asks for: 1 for less
      than ``execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task`` (16 MiB),
      which is what the bounded programs ckptsim runs read (larger inputs: a difference).
    """
    group: dict[int, PlanNode] = {id(n): n for n in graph.nodes}

    def root(node: PlanNode) -> PlanNode:
        while group[id(node)] is not node:
            node = group[id(node)]
        return node

    for node in graph.nodes:
        for edge in node.inputs:
            if graph.ship(edge, node) is Partitioner.FORWARD:
                group[id(root(edge.source))] = root(node)
    members_of: dict[int, list[PlanNode]] = {}
    for node in graph.nodes:
        members_of.setdefault(id(root(node)), []).append(node)
    decided: dict[int, int] = {}
    for nodes in members_of.values():
        configured = [n.parallelism for n in nodes if n.configured]
        if configured:
            p = max(configured)
        elif any(n.java_source for n in nodes):
            p = graph.default
        else:
            p = 1
        for node in nodes:
            for member in node.members:
                decided[member] = p
    return decided
