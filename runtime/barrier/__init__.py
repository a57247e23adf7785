"""Task input side: barrier handlers (Flink's ``io/checkpointing`` package), channels, gates."""

from runtime.barrier.channel import InputChannelQueue
from runtime.barrier.gate import (
    ChannelInputs,
    CheckpointedInputGate,
    GatePoll,
    LegacyCheckpointedInputGate,
    make_gate,
)
from runtime.barrier.handler import AlignmentTimer, SingleCheckpointBarrierHandler
from runtime.barrier.legacy import CheckpointBarrierAligner
from runtime.barrier.mode import GATE_MODES, GateMode
from runtime.barrier.states import ProtocolError
from runtime.barrier.tracker import CheckpointBarrierTracker

__all__ = [
    "GATE_MODES",
    "AlignmentTimer",
    "ChannelInputs",
    "CheckpointBarrierAligner",
    "CheckpointBarrierTracker",
    "CheckpointedInputGate",
    "GateMode",
    "GatePoll",
    "InputChannelQueue",
    "LegacyCheckpointedInputGate",
    "ProtocolError",
    "SingleCheckpointBarrierHandler",
    "make_gate",
]
