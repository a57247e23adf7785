"""What a subtask is deployed with: its operators, its inputs and outputs, its network
settings, and the state it restores."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.barrier.mode import GateMode
from runtime.checkpoint import TaskId
from runtime.graph import StreamNode
from runtime.network import Buffer
from runtime.partition import KeySelector, Partitioner


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputEdge:
    partitioner: Partitioner
    num_channels: int
    key_selector: KeySelector | None = None
    #: the uid of the operator the edge feeds (names its key selector in failures)
    target: str = ""
    #: the side output of the chain's last operator it carries (None: the main output)
    side_output: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkSettings:
    """Flink's network memory settings, as one task uses them."""

    #: ``taskmanager.memory.segment-size``: buffers are cut at this many bytes
    segment_size: int = 32 * 1024
    #: ``ckptsim.buffer.records``: and at this many records
    max_records: int = 4096
    #: ``execution.buffer-timeout.interval`` (ms) while ``execution.buffer-timeout.enabled``:
    #: partly filled buffers are flushed at this interval (0: after every write); None: only
    #: full buffers (and events) leave the task
    flush_interval: int | None = 100
    #: buffers of the task's result partition: subpartitions * buffers-per-channel +
    #: floating-buffers-per-gate, at least subpartitions + 1 (Flink's pool sizing)
    pool_size: int = 10
    #: ``taskmanager.network.memory.max-buffers-per-channel``: one subpartition holding this
    #: many buffers makes the pool unavailable (back-pressure)
    max_buffers_per_channel: int = 10
    #: credits of each output channel at the start: what the consumer's gate announces (its
    #: exclusive buffers and a share of its floating ones)
    initial_credits: int = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRestore:
    """What a redeployed subtask starts from."""

    checkpoint_id: int
    operator_states: dict[str, list[Any]] = field(default_factory=dict)
    #: a sink's states of its other former subtasks, which this subtask does not restore
    #: (by operator uid): a file sink keeps their lineages committed too (a rescale)
    other_sink_states: dict[str, list[Any]] = field(default_factory=dict)
    input_channels: dict[int, list[Buffer]] = field(default_factory=dict)
    output_channels: dict[int, list[Buffer]] = field(default_factory=dict)
    #: its input had ended when the checkpoint was taken: do not end the operators again
    ended_input: bool = False
    #: it had finished before the checkpoint (FLIP-147): end at once, without data
    finished: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSpec:
    task: TaskId
    #: the task's name as Flink names a chain (``Map -> Sink: Print to Std. Out``)
    name: str
    operators: list[StreamNode]
    parallelism: int
    max_parallelism: int = 128
    num_inputs: int = 0
    #: input channels from the same process (Flink's local channels: no announcements)
    local_inputs: frozenset[int] = frozenset()
    outputs: tuple[OutputEdge, ...] = ()
    gate_mode: GateMode = GateMode.ALIGNED
    checkpoints_after_tasks_finish: bool = True
    #: Flink 1.10 buffered alignment: abort past this many buffered bytes (-1: unlimited)
    max_buffered_bytes: int = -1
    #: periodic checkpoints are enabled (sinks are transactional)
    checkpointing: bool = False
    #: FLIP-147: once its data ended, the task waits for a checkpoint to complete (so the
    #: last output is committed) before it ends its partitions and finishes
    final_checkpoint: bool = False
    network: NetworkSettings = field(default_factory=NetworkSettings)
    #: the head operator is keyed by the key selector of every input edge: use shipped keys
    keyed_input: bool = False
    attempt: int = 0
    restore: TaskRestore | None = None
    #: ``pipeline.auto-watermark-interval``, ms (0: no periodic watermarks)
    auto_watermark_interval: int = 200
    #: ``pipeline.watermark-alignment.buffer-size``: an aligned source pauses when the
    #: watermark it had this many update intervals ago is above its group's allowed maximum
    #: (0: its latest watermark)
    alignment_buffer_size: int = 3
    #: buffers of the input gate: input channels * buffers-per-channel + floating buffers
    input_pool_size: int = 0
    #: the logical input of each input channel (0, or 1 for a two-input operator's second)
    channel_inputs: tuple[int, ...] = ()
    #: ``execution.runtime-mode: BATCH``
    batch: bool = False
    #: ``pipeline.global-job-parameters``
    job_parameters: tuple[tuple[str, str], ...] = ()
