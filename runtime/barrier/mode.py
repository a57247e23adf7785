"""How a task's input gate handles barriers: the one vocabulary of conformance scenarios
(``@mode``), the gate factory, the barrier handlers and the jobs' configuration."""

from __future__ import annotations

import enum


class GateMode(enum.Enum):
    #: exactly-once, unaligned checkpoints disabled: ``SingleCheckpointBarrierHandler.aligned``
    ALIGNED = "aligned"
    #: Flink's pure unaligned handler (``SingleCheckpointBarrierHandler.unaligned``)
    UNALIGNED = "unaligned"
    #: unaligned checkpoints enabled (``SingleCheckpointBarrierHandler.alternating``): a barrier
    #: with an aligned-checkpoint timeout starts aligned and switches on timeout; an unaligned
    #: barrier, or one without a timeout, is unaligned at once; savepoints stay aligned
    ALIGNED_WITH_TIMEOUT = "aligned_with_timeout"
    #: ``CheckpointBarrierTracker``: never blocks
    AT_LEAST_ONCE = "at_least_once"
    #: Flink 1.10's ``CheckpointBarrierAligner``: the gate buffers what blocked channels deliver
    LEGACY_BUFFERED = "legacy_buffered"

    @classmethod
    def parse(cls, value: GateMode | str) -> GateMode:
        if isinstance(value, GateMode):
            return value
        try:
            return cls(value)
        except ValueError:
            names = ", ".join(m.value for m in cls)
            raise ValueError(f"unknown gate mode {value!r}; one of: {names}") from None


GATE_MODES = tuple(m.value for m in GateMode)
