"""What collect sinks return: the JobMaster's side of their two-phase commit, per transaction.

The JobMaster plays the external system of a collect sink's transactions. A sink subtask's
snapshot for checkpoint *n* pre-commits transaction *n* here (its buffers, by reference); the
completion of *n* commits it by id; each commits once, however often a commit repeats (a
restore commits the restored pending transactions again). A restore from checkpoint *n* drops
what was committed or pre-committed for later checkpoints (and at an end without a final
checkpoint): the replay writes it again. Messages of an attempt that a restore has since
replaced count only for transactions that restore kept. Pure bookkeeping: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

#: a transaction: the subtask that wrote it (``str(TaskId)``) and its checkpoint id, or "end"
#: for what a sink committed at the end of its input without a final checkpoint
Txn = tuple[str, int | str]
Buffers = tuple[Sequence[Any], ...]


class CollectedOutput:
    def __init__(self, sinks: Collection[str] = ()) -> None:
        #: without checkpointing: the buffers each sink published when its task ended (by
        #: reference: ``result`` flattens them once)
        self.plain: dict[str, list[Sequence[Any]]] = {name: [] for name in sinks}
        self.precommitted: dict[str, dict[Txn, Buffers]] = {}
        #: the job's output, per sink, in commit order
        self.committed: dict[str, dict[Txn, Buffers]] = {}
        #: attempt -> the checkpoint it restored (0: none)
        self.restore_points: dict[int, int] = {}

    def publish(self, sink: str, buffers: Buffers, *, attempt: int) -> None:
        """Without checkpointing: a sink's records, once, when its task ends (an attempt
        that a restart replaced publishes nothing)."""
        if attempt != max(self.restore_points, default=0):
            return
        self.plain.setdefault(sink, []).extend(buffers)

    def precommit(self, sink: str, txn: Txn, buffers: Buffers, *, attempt: int) -> None:
        if self._survives_restores(attempt, txn[1]):
            self.precommitted.setdefault(sink, {})[txn] = buffers

    def commit(self, sink: str, txn: Txn, buffers: Buffers, *, attempt: int) -> None:
        """Commit ``txn``: its pre-committed buffers, or ``buffers`` (a sink that sends its
        records with the commit: at its end, or from an older checkpoint)."""
        if not self._survives_restores(attempt, txn[1]):
            return  # late news of an attempt whose transaction a restore since dropped
        committed = self.committed.setdefault(sink, {})
        if txn in committed:
            return
        staged = self.precommitted.get(sink, {}).pop(txn, ())
        committed[txn] = buffers if any(len(b) for b in buffers) else staged

    def restored(
        self, attempt: int, checkpoint_id: int, finished: Collection[str]
    ) -> dict[str, int]:
        """Attempt ``attempt`` restores checkpoint ``checkpoint_id`` (0: none): drop what was
        committed or pre-committed after it, but for tasks that had finished before it (they
        are not restarted). Returns the number of committed transactions dropped per sink."""
        self.restore_points[attempt] = checkpoint_id

        def later(txn: Txn) -> bool:
            writer, number = txn
            return writer not in finished and (
                not isinstance(number, int) or number > checkpoint_id
            )

        for staged in self.precommitted.values():
            for txn in [t for t in staged if later(t)]:
                del staged[txn]
        dropped: dict[str, int] = {}
        for sink, committed in self.committed.items():
            gone = [t for t in committed if later(t)]
            for txn in gone:
                del committed[txn]
            if gone:
                dropped[sink] = len(gone)
        return dropped

    def result(self, last_completed: int) -> dict[str, list[Any]]:
        """``JobResult.output``. A transaction pre-committed for a checkpoint that completed
        is committed by that completion, even if the job ended before its sink heard of it (a
        job resumed from that checkpoint does not return it again)."""
        for sink, staged in self.precommitted.items():
            committed = self.committed.setdefault(sink, {})
            for txn, buffers in staged.items():
                number = txn[1]
                if isinstance(number, int) and number <= last_completed and txn not in committed:
                    committed[txn] = buffers
        # every record is copied into its output list once (no list in between: each copy of
        # millions of references touches every record, and a new list that size costs a young
        # GC pass over it)
        output: dict[str, list[Any]] = {}
        for sink, published in self.plain.items():
            records = output[sink] = []
            for buffer in published:
                records.extend(buffer)
        for sink, committed in self.committed.items():
            records = output.setdefault(sink, [])
            for buffers in committed.values():
                for buffer in buffers:
                    records.extend(buffer)
        return output

    def _survives_restores(self, attempt: int, number: int | str) -> bool:
        since = [n for later, n in self.restore_points.items() if later > attempt]
        return not since or (isinstance(number, int) and number <= min(since))
