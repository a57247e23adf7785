"""Which checkpoint a restart restores, falling back past unusable ones.

The candidates are the retained completed checkpoints, newest first, then the checkpoint or
savepoint the job was started from while fewer newer ones than are retained exist (as in
Flink's store, it counts as completed until newer ones subsume it). Each is loaded in turn
(``LoadCheckpoint``); one that is missing, damaged or does not fit the job is skipped for the
one before it. When every candidate was skipped the job cannot restart; when there was none,
it restarts from scratch. Pure bookkeeping: the scheduler asks for the loading and reports
what came of it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from runtime.messages import RestoredFromCheckpoint


def restore_candidates(
    retained: Sequence[RestoredFromCheckpoint],
    started_from: RestoredFromCheckpoint | None,
    *,
    num_retained: int,
) -> list[RestoredFromCheckpoint]:
    """The checkpoints a restart may restore, the one to try first first."""
    candidates = [c for c in retained if c.external_path is not None]
    if (
        started_from is not None
        and started_from.external_path is not None
        and len(candidates) < num_retained
    ):
        candidates.append(started_from)
    return candidates


class RestoreChoice:
    """One restart's way through its candidates."""

    def __init__(self, candidates: Sequence[RestoredFromCheckpoint]) -> None:
        self._left = deque(candidates)
        #: the candidate being loaded
        self.current: RestoredFromCheckpoint | None = None
        #: why each skipped candidate was unusable, in order
        self.unusable: list[str] = []

    def next(self) -> RestoredFromCheckpoint | None:
        """The next candidate to load; None: none is left."""
        self.current = self._left.popleft() if self._left else None
        return self.current

    def skip(self, error: str) -> None:
        """The current candidate is unusable for ``error``."""
        self.unusable.append(error)

    def is_waiting_for(self, checkpoint_id: int) -> bool:
        return self.current is not None and self.current.checkpoint_id == checkpoint_id

    @property
    def exhausted(self) -> bool:
        """Every candidate was tried and found unusable (none was usable, and there was one)."""
        return self.current is None and bool(self.unusable)
