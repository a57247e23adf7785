"""``pyflink.datastream.externalized_checkpoint_retention``: ``ExternalizedCheckpointRetention``
(the job model's own: ``execution.checkpointing.externalized-checkpoint-retention``)."""

from __future__ import annotations

from runtime.checkpoint import ExternalizedCheckpointRetention

__all__ = ["ExternalizedCheckpointRetention"]
