"""One subtask, as Flink builds it: a mailbox, an operator chain, an input processor over the
input gate, a subtask checkpoint coordinator with the sinks' transactions, and a result
partition; ``StreamTaskCore`` composes them behind ``handle(msg, now) -> effects``."""

from runtime.task.chain import OperatorChain
from runtime.task.checkpointing import SubtaskCheckpointCoordinator
from runtime.task.core import SourceWakeUp, StreamTaskCore
from runtime.task.input import StreamInputProcessor
from runtime.task.mailbox import MailboxProcessor
from runtime.task.result_partition import RecordWriter, ResultPartition
from runtime.task.spec import NetworkSettings, OutputEdge, TaskRestore, TaskSpec
from runtime.task.status import IllegalTaskTransition, TaskEvent, TaskStatus

__all__ = [
    "IllegalTaskTransition",
    "MailboxProcessor",
    "NetworkSettings",
    "OperatorChain",
    "OutputEdge",
    "RecordWriter",
    "ResultPartition",
    "SourceWakeUp",
    "StreamInputProcessor",
    "StreamTaskCore",
    "SubtaskCheckpointCoordinator",
    "TaskEvent",
    "TaskRestore",
    "TaskSpec",
    "TaskStatus",
]
