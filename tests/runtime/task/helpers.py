"""Building blocks for driving the task core and its parts directly (no actors, no threads)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from runtime.barrier.mode import GateMode
from runtime.checkpoint import AlignmentType, CheckpointOptions, TaskId
from runtime.descriptors import (
    FlatMapDescriptor,
    MapBatchDescriptor,
    MapDescriptor,
    OperatorDescriptor,
    ReduceDescriptor,
    SinkDescriptor,
    SinkKind,
    SourceDescriptor,
)
from runtime.effects import RequestDefaultAction, TaskEffect
from runtime.graph import StreamNode
from runtime.messages import RunDefaultAction, TaskMessage
from runtime.network import CheckpointBarrier
from runtime.operators import CollectionReader, OperatorContext, SourceReader
from runtime.partition import Partitioner
from runtime.task import NetworkSettings, OutputEdge, StreamTaskCore, TaskSpec

T = TypeVar("T")

TASK = TaskId("task", 0)
ALIGNED = CheckpointOptions()
UNALIGNED = CheckpointOptions(alignment=AlignmentType.UNALIGNED)


def node(node_id: int, operator: OperatorDescriptor, name: str | None = None) -> StreamNode:
    return StreamNode(
        node_id, name or operator.kind.title(), f"{operator.kind}-{node_id}", None, operator
    )


def source(items: Sequence[Any], node_id: int = 1) -> StreamNode:
    def reader(ctx: OperatorContext) -> SourceReader:
        return CollectionReader(items, ctx.subtask, ctx.parallelism)

    return node(node_id, SourceDescriptor(reader=reader), "Source")


def mapper(fn: Callable[[Any], Any], node_id: int = 2, name: str = "Map") -> StreamNode:
    return node(node_id, MapDescriptor(fn=fn), name)


def batch_mapper(
    fn: Callable[[Sequence[Any]], Any], node_id: int = 2, name: str = "MapBatch"
) -> StreamNode:
    return node(node_id, MapBatchDescriptor(fn=fn), name)


def flat_mapper(
    fn: Callable[[Any], Iterable[Any] | None], node_id: int = 2, name: str = "FlatMap"
) -> StreamNode:
    return node(node_id, FlatMapDescriptor(fn=fn), name)


def reducer(
    key: Callable[[Any], Any], fn: Callable[[Any, Any], Any], node_id: int = 3
) -> StreamNode:
    return node(node_id, ReduceDescriptor(key_selector=key, fn=fn), "Reduce")


def collect(name: str = "out", node_id: int = 9) -> StreamNode:
    return StreamNode(node_id, name, f"sink-{name}", None, SinkDescriptor(sink=SinkKind.COLLECT))


def spec(
    operators: list[StreamNode],
    *,
    inputs: int = 0,
    outputs: int = 0,
    mode: GateMode = GateMode.ALIGNED,
    final_checkpoint: bool = False,
    checkpointing: bool = False,
    network: NetworkSettings | None = None,
    task: TaskId = TASK,
) -> TaskSpec:
    edges: tuple[OutputEdge, ...] = ()
    if outputs:
        partitioner = Partitioner.REBALANCE if outputs > 1 else Partitioner.FORWARD
        edges = (OutputEdge(partitioner=partitioner, num_channels=outputs, target="next-9"),)
    return TaskSpec(
        task=task,
        name=str(task),
        operators=operators,
        parallelism=1,
        num_inputs=inputs,
        outputs=edges,
        gate_mode=mode,
        checkpointing=checkpointing or final_checkpoint,
        final_checkpoint=final_checkpoint,
        # flushed after every write (execution.buffer-timeout.interval: 0): a step's output is
        # in its effects
        network=network or NetworkSettings(pool_size=max(outputs + 1, 10), flush_interval=0),
    )


def barrier(cid: int, options: CheckpointOptions = ALIGNED, ts: int = 0) -> CheckpointBarrier:
    return CheckpointBarrier(checkpoint_id=cid, timestamp=ts, options=options)


class Driver:
    """A task core with its mailbox run as the actor shell runs it (to quiescence)."""

    def __init__(self, task_spec: TaskSpec) -> None:
        self.core = StreamTaskCore(task_spec)
        self.requested = False
        self.now = 0

    def send(self, msg: TaskMessage, *, run: bool = True) -> list[TaskEffect]:
        """Deliver a mail, then (``run``) the mailbox steps it asked for; all effects."""
        effects = self._handle(msg)
        if run:
            effects += self.run()
        return effects

    def step(self) -> list[TaskEffect]:
        assert self.requested, "the task asked for no mailbox step"
        self.requested = False
        return self._handle(RunDefaultAction())

    def run(self, limit: int = 10_000) -> list[TaskEffect]:
        effects: list[TaskEffect] = []
        while self.requested and limit:
            limit -= 1
            effects += self.step()
        return effects

    def _handle(self, msg: TaskMessage) -> list[TaskEffect]:
        effects = self.core.handle(msg, self.now)
        if any(isinstance(e, RequestDefaultAction) for e in effects):
            self.requested = True
        return [e for e in effects if not isinstance(e, RequestDefaultAction)]


def only(effects: Iterable[object], kind: type[T]) -> list[T]:
    return [e for e in effects if isinstance(e, kind)]
