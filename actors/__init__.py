"""The actor runtime: Pykka actors that run ckptsim jobs (JobMaster, CheckpointCoordinator,
StreamTask, InputChannel), the threaded and the simulated runtimes, and fault injection.

The shells here only route messages, run timers and carry out the effects of the pure cores
in ``runtime``. Users import from ``ckptsim``; this package is the layer below it.
"""

from __future__ import annotations

from actors.actor_runtime import ActorRuntime
from actors.execution import ThreadedRuntime
from actors.launcher import execute, execute_environment
from actors.simulation import SimulationRuntime

__all__ = [
    "ActorRuntime",
    "SimulationRuntime",
    "ThreadedRuntime",
    "execute",
    "execute_environment",
]
