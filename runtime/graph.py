"""The job model: the stream graph the DataStream API builds, the job graph after chaining, and
its expansion into subtasks and channels (Flink's ``StreamGraph`` -> ``JobGraph`` ->
``ExecutionGraph``).

Chaining follows Flink: an operator joins its input's chain when it has exactly one input, the
edge is forward, both have the same parallelism and chaining is enabled. A forward edge connects
subtask i to subtask i; every other partitioner connects all upstream subtasks to all
downstream ones, one channel each (a rescale edge too: each upstream subtask sends its records
only to its subset of them, but barriers and watermarks on every channel).

A side output (``get_side_output``) is an edge of its own, carrying the records the operator
emitted to that tag: channels, buffers, barriers and channel state as any other edge. An
operator whose side output is read ends its chain (it has more than one output, or its one
output is a side output; Flink would chain a forward side output too): its side outputs leave
the task from the chain's last operator, with the task's watermarks.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.checkpoint import TaskId
from runtime.descriptors import (
    KEYED,
    BroadcastProcessDescriptor,
    CoProcessDescriptor,
    OperatorDescriptor,
    SinkDescriptor,
    SourceDescriptor,
)
from runtime.partition import KeySelector, Partitioner, RescaleSubsets
from runtime.state import declared_states, declared_type_problem, default_max_parallelism


class GraphError(ValueError):
    """The topology cannot run (cycle, bad parallelism, impossible edge); says how to fix it."""


@dataclass(eq=False)
class StreamNode:
    """One operator as the user declared it."""

    node_id: int
    name: str
    uid: str
    parallelism: int | None
    operator: OperatorDescriptor
    chainable: bool = True
    #: ``start_new_chain()``: not chained to its input (but may be the head of a chain)
    chain_head: bool = False
    #: declared processing cost: (ms per buffer, ms per record)
    cost: tuple[float, float] = (0.0, 0.0)
    #: the operator's name in Flink's chain names, where Flink's job graph names it otherwise
    #: (a PyFlink program's operators as PyFlink fuses them); "": an operator ckptsim adds that
    #: Flink's graph has not. None: derived from ``name`` (``flink_operator_name``)
    flink_name: str | None = None
    #: event-time timers fire in rounds, as PyFlink's Python operators fire them: the timers
    #: due when the watermark advances fire, then (in the next round) those they registered
    #: that are due by then, and so on (a PyFlink program's operators)
    timers_in_rounds: bool = False

    @property
    def kind(self) -> str:
        """The operator's kind as a name (``map``), for uids and messages."""
        return self.operator.kind

    @property
    def is_source(self) -> bool:
        return isinstance(self.operator, SourceDescriptor)

    @property
    def is_sink(self) -> bool:
        return isinstance(self.operator, SinkDescriptor)

    @property
    def is_keyed(self) -> bool:
        """Its state is keyed (split by key group, so it can move between subtasks)."""
        op = self.operator
        if isinstance(op, CoProcessDescriptor):
            return op.key_selectors is not None
        if isinstance(op, BroadcastProcessDescriptor):
            return op.key_selector is not None
        return isinstance(op, KEYED)

    @property
    def has_broadcast_state(self) -> bool:
        """Its state is broadcast state: every subtask has (and restores) a copy."""
        return isinstance(self.operator, BroadcastProcessDescriptor)

    @property
    def label(self) -> str:
        """The operator as the user knows it: ``map 'Map' (map-2)``."""
        return f"{self.kind} {self.name!r} ({self.uid})"


@dataclass(eq=False)
class StreamEdge:
    source: int
    target: int
    partitioner: Partitioner
    key_selector: KeySelector | None = None
    explicit: bool = False
    #: which input of the target the edge feeds: 0, or 1 for a two-input operator's second
    input_index: int = 0
    #: the side output the edge carries (an ``OutputTag``'s name), None for the main output
    side_output: str | None = None


class StreamGraph:
    def __init__(self) -> None:
        self.nodes: dict[int, StreamNode] = {}
        self.edges: list[StreamEdge] = []
        self._next_id = 1

    def add_node(
        self,
        operator: OperatorDescriptor,
        name: str,
        *,
        parallelism: int | None,
        uid: str | None = None,
    ) -> StreamNode:
        node_id = self._next_id
        self._next_id += 1
        node = StreamNode(node_id, name, uid or f"{operator.kind}-{node_id}", parallelism, operator)
        self.nodes[node_id] = node
        return node

    def add_edge(
        self,
        source: int,
        target: int,
        partitioner: Partitioner,
        key_selector: KeySelector | None = None,
        *,
        explicit: bool = False,
        input_index: int = 0,
        side_output: str | None = None,
    ) -> StreamEdge:
        for end in (source, target):
            if end not in self.nodes:
                raise GraphError(f"edge {source} -> {target}: operator {end} does not exist")
        edge = StreamEdge(
            source, target, partitioner, key_selector, explicit, input_index, side_output
        )
        self.edges.append(edge)
        return edge

    def inputs(self, node_id: int) -> list[StreamEdge]:
        return [e for e in self.edges if e.target == node_id]

    def outputs(self, node_id: int) -> list[StreamEdge]:
        return [e for e in self.edges if e.source == node_id]

    def topological_order(self) -> list[StreamNode]:
        """Operators upstream first; a cycle is a ``GraphError`` naming its operators."""
        indegree = {n: 0 for n in self.nodes}
        for edge in self.edges:
            indegree[edge.target] += 1
        ready = sorted(n for n, d in indegree.items() if d == 0)
        order: list[int] = []
        while ready:
            node_id = ready.pop(0)
            order.append(node_id)
            for edge in self.outputs(node_id):
                indegree[edge.target] -= 1
                if indegree[edge.target] == 0:
                    ready.append(edge.target)
                    ready.sort()
        if len(order) != len(self.nodes):
            stuck = [self.nodes[n].name for n in sorted(set(self.nodes) - set(order))]
            raise GraphError(
                f"the topology has a cycle through {', '.join(stuck)}; ckptsim runs directed "
                "acyclic topologies (Flink's iterations are not supported)"
            )
        return [self.nodes[n] for n in order]


@dataclass(eq=False)
class JobVertex:
    """A chain of operators run by one task per subtask."""

    vertex_id: str
    name: str
    parallelism: int
    operators: list[StreamNode]

    @property
    def is_source(self) -> bool:
        return self.operators[0].is_source

    @property
    def uids(self) -> list[str]:
        return [op.uid for op in self.operators]


def flink_operator_name(node: StreamNode) -> str:
    """An operator's name in Flink's chain names: a source's is ``Source: NAME``, a sink's
    ``Sink: NAME`` (as Flink prefixes them), another's its name; ``node.flink_name`` where it
    is given ("" for an operator Flink's graph has not)."""
    if node.flink_name is not None:
        return node.flink_name
    if node.is_source and not node.name.startswith("Source: "):
        return f"Source: {node.name}"
    if node.is_sink and not node.name.startswith("Sink: ") and not node.name.endswith(": Writer"):
        return f"Sink: {node.name}"
    return node.name


def flink_operator_names(vertex: JobVertex) -> tuple[str, ...]:
    """The names of a vertex's operators in Flink's job graph; the vertex's name is them
    joined with `` -> `` (Flink's chain name)."""
    names = tuple(n for n in (flink_operator_name(op) for op in vertex.operators) if n)
    return names or (vertex.name,)


@dataclass(eq=False)
class JobEdge:
    source: JobVertex
    target: JobVertex
    partitioner: Partitioner
    key_selector: KeySelector | None
    input_index: int = 0
    #: the side output of the source's last operator the edge carries (None: its main output)
    side_output: str | None = None


@dataclass(frozen=True, slots=True)
class ChannelSpec:
    """One channel: an upstream subtask's output feeding a downstream subtask's input."""

    channel_id: int
    edge: int
    upstream: TaskId
    downstream: TaskId
    output_index: int  # among the upstream task's output channels (all its edges)
    input_index: int  # among the downstream task's input channels (all its edges)


@dataclass(eq=False)
class JobGraph:
    name: str
    vertices: list[JobVertex]
    edges: list[JobEdge]
    max_parallelism: int = 128
    #: set by the user (``pipeline.max-parallelism``), not derived from the parallelism: a
    #: restore then keeps it (else it takes the restored state's, as Flink does)
    max_parallelism_configured: bool = False

    def vertex(self, vertex_id: str) -> JobVertex:
        for v in self.vertices:
            if v.vertex_id == vertex_id:
                return v
        raise KeyError(vertex_id)

    def inputs(self, vertex: JobVertex) -> list[JobEdge]:
        return [e for e in self.edges if e.target is vertex]

    def outputs(self, vertex: JobVertex) -> list[JobEdge]:
        return [e for e in self.edges if e.source is vertex]

    def tasks(self) -> list[TaskId]:
        return [TaskId(v.vertex_id, i) for v in self.vertices for i in range(v.parallelism)]

    def unwritten_streams(self) -> list[str]:
        """The operators whose output goes nowhere: last in their chain, with no outgoing
        edge and not a sink (records computed, then dropped)."""
        return [
            v.operators[-1].name
            for v in self.vertices
            if not self.outputs(v) and not v.operators[-1].is_sink
        ]

    def source_tasks(self) -> list[TaskId]:
        return [
            TaskId(v.vertex_id, i)
            for v in self.vertices
            if v.is_source
            for i in range(v.parallelism)
        ]

    def predecessors(self) -> dict[TaskId, list[TaskId]]:
        preds: dict[TaskId, list[TaskId]] = {t: [] for t in self.tasks()}
        for channel in self.channels():
            preds[channel.downstream].append(channel.upstream)
        return preds

    def channels(self) -> list[ChannelSpec]:
        """Every channel, numbered; output and input indices per task."""
        specs: list[ChannelSpec] = []
        out_next: dict[TaskId, int] = {}
        in_next: dict[TaskId, int] = {}
        # inputs are numbered edge by edge in the order of the target's input edges
        for edge_index, edge in enumerate(self.edges):
            up_p, down_p = edge.source.parallelism, edge.target.parallelism
            for u in range(up_p):
                targets = [u] if edge.partitioner is Partitioner.FORWARD else range(down_p)
                for d in targets:
                    upstream = TaskId(edge.source.vertex_id, u)
                    downstream = TaskId(edge.target.vertex_id, d)
                    specs.append(
                        ChannelSpec(
                            channel_id=len(specs),
                            edge=edge_index,
                            upstream=upstream,
                            downstream=downstream,
                            output_index=out_next.get(upstream, 0),
                            input_index=-1,
                        )
                    )
                    out_next[upstream] = out_next.get(upstream, 0) + 1
        # number the inputs of each downstream task: by edge, then by upstream subtask
        ordered = sorted(
            specs,
            key=lambda s: (s.downstream.vertex, s.downstream.subtask, s.edge, s.upstream.subtask),
        )
        numbered: dict[int, ChannelSpec] = {}
        for spec in ordered:
            index = in_next.get(spec.downstream, 0)
            in_next[spec.downstream] = index + 1
            numbered[spec.channel_id] = ChannelSpec(
                spec.channel_id, spec.edge, spec.upstream, spec.downstream, spec.output_index, index
            )
        return [numbered[s.channel_id] for s in specs]


def effective_partitioner(edge: StreamEdge, upstream: int, downstream: int) -> Partitioner:
    """What an edge ships with between these parallelisms: an implicit forward edge between
    different parallelisms rebalances (Flink's default when the parallelism changes)."""
    if edge.partitioner is Partitioner.FORWARD and upstream != downstream and not edge.explicit:
        return Partitioner.REBALANCE
    return edge.partitioner


def _check_declared_state(name: str, operator: object) -> None:
    """A state whose declared type a checkpoint cannot hold is refused now, at submission,
    naming the operator and the state (not at the first checkpoint)."""
    descriptors = list(getattr(operator, "state_descriptors", ()))
    for attribute in ("fn", "function"):
        descriptors += declared_states(getattr(operator, attribute, None))
    for descriptor in descriptors:
        problem = declared_type_problem(descriptor)
        if problem is not None:
            raise GraphError(f"operator '{name}': {problem}")


def derived_max_parallelism(graph: StreamGraph, default_parallelism: int) -> int:
    """Flink's default max parallelism for the largest parallelism of the graph's operators
    (``pipeline.max-parallelism`` not set; ``default_parallelism`` for an operator that sets
    none, and for a graph with no operators yet)."""
    return default_max_parallelism(
        max(
            (n.parallelism if n.parallelism is not None else default_parallelism)
            for n in graph.nodes.values()
        )
        if graph.nodes
        else default_parallelism
    )


def build_job_graph(
    graph: StreamGraph,
    *,
    name: str,
    default_parallelism: int,
    chaining: bool = True,
    max_parallelism: int = -1,
) -> JobGraph:
    """Chain the stream graph into job vertices, checking what Flink checks.
    ``max_parallelism`` -1: Flink's default for the largest parallelism (``pipeline.max-
    parallelism`` not set)."""
    if default_parallelism < 1:
        raise GraphError(f"parallelism must be at least 1, got {default_parallelism}")
    order = graph.topological_order()
    if not any(n.is_source for n in order):
        raise GraphError("the topology has no source: add one, e.g. env.from_collection([...])")
    configured = max_parallelism != -1
    if not configured:
        max_parallelism = derived_max_parallelism(graph, default_parallelism)
    parallelism: dict[int, int] = {}
    for node in order:
        p = node.parallelism if node.parallelism is not None else default_parallelism
        if p < 1:
            raise GraphError(f"operator '{node.name}' has parallelism {p}; it must be at least 1")
        if p > max_parallelism:
            raise GraphError(
                f"operator '{node.name}' has parallelism {p} above the max parallelism "
                f"{max_parallelism}: lower the parallelism, or raise the max parallelism "
                "with env.set_max_parallelism(n) or -D pipeline.max-parallelism=n"
            )
        parallelism[node.node_id] = p
        inputs = graph.inputs(node.node_id)
        if node.is_source and inputs:
            raise GraphError(f"source '{node.name}' cannot have inputs")
        if not node.is_source and not inputs:
            raise GraphError(f"operator '{node.name}' has no input")
        _check_declared_state(node.name, node.operator)
    for edge in graph.edges:
        up, down = parallelism[edge.source], parallelism[edge.target]
        if edge.partitioner is Partitioner.FORWARD and up != down and edge.explicit:
            raise GraphError(
                f"forward partitioning from '{graph.nodes[edge.source].name}' (parallelism "
                f"{up}) to '{graph.nodes[edge.target].name}' (parallelism {down}) does not "
                "allow a change of parallelism; use rebalance() or give both the same parallelism"
            )
        edge.partitioner = effective_partitioner(edge, up, down)
        if edge.partitioner is Partitioner.RESCALE:  # its subsets depend on the parallelisms
            edge.key_selector = RescaleSubsets(up)
    vertex_of: dict[int, JobVertex] = {}
    vertices: list[JobVertex] = []
    for node in order:
        inputs = graph.inputs(node.node_id)
        two_inputs = isinstance(node.operator, CoProcessDescriptor | BroadcastProcessDescriptor)
        if chaining and len(inputs) == 1 and not two_inputs:
            edge = inputs[0]
            head = vertex_of[edge.source]
            if (
                edge.partitioner is Partitioner.FORWARD
                and edge.side_output is None
                and node.chainable
                and not node.chain_head
                and graph.nodes[edge.source].chainable
                and len(graph.outputs(edge.source)) == 1
                and head.operators[-1].node_id == edge.source
            ):
                head.operators.append(node)
                head.name = f"{head.name} -> {node.name}"
                vertex_of[node.node_id] = head
                continue
        vertex = JobVertex(node.uid, node.name, parallelism[node.node_id], [node])
        vertices.append(vertex)
        vertex_of[node.node_id] = vertex
    job_edges = [
        JobEdge(
            vertex_of[e.source],
            vertex_of[e.target],
            e.partitioner,
            e.key_selector,
            e.input_index,
            e.side_output,
        )
        for e in graph.edges
        if vertex_of[e.source] is not vertex_of[e.target]
    ]
    ids = [v.vertex_id for v in vertices]
    duplicates = {i for i in ids if ids.count(i) > 1}
    uids = [op.uid for v in vertices for op in v.operators]
    dup_uids = {u for u in uids if uids.count(u) > 1}
    if duplicates or dup_uids:
        raise GraphError(
            f"operator uids must be unique; repeated: {', '.join(sorted(duplicates | dup_uids))}"
        )
    return JobGraph(name, vertices, job_edges, max_parallelism, configured)
