"""``pyflink.datastream.externalized_checkpoint_retention``: ``ExternalizedCheckpointRetention``
(the job model's own: ``execution.checkpointing.externalized-checkpoint-retention``)."""

from __future__ import annotations

from ckptsim.pyflink._unsupported import missing
from runtime.checkpoint import ExternalizedCheckpointRetention

__getattr__ = missing("pyflink.datastream.externalized_checkpoint_retention")

__all__ = ["ExternalizedCheckpointRetention"]
