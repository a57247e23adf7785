"""``pyflink.datastream.state``: state descriptors, state kinds (broadcast states too) and
``StateTtlConfig`` (the job model's own, ``runtime.state``). The time and type names PyFlink's module imported (``Time``,
``Duration``, ``Types``, ``TypeInformation``) resolve here too (``_unsupported.missing``)."""

from __future__ import annotations

from ckptsim.pyflink._unsupported import missing
from runtime.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    BroadcastState,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReadOnlyBroadcastState,
    ReducingState,
    ReducingStateDescriptor,
    State,
    StateDescriptor,
    StateTtlConfig,
    ValueState,
    ValueStateDescriptor,
)

__getattr__ = missing("pyflink.datastream.state")

__all__ = [
    "AggregatingState",
    "AggregatingStateDescriptor",
    "BroadcastState",
    "ListState",
    "ListStateDescriptor",
    "MapState",
    "MapStateDescriptor",
    "ReadOnlyBroadcastState",
    "ReducingState",
    "ReducingStateDescriptor",
    "State",
    "StateDescriptor",
    "StateTtlConfig",
    "ValueState",
    "ValueStateDescriptor",
]
