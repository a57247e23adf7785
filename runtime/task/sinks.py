"""A sink at the end of a task's chain: Flink's ``SinkWriterOperator`` and ``CommitterOperator``
as bookkeeping, with the I/O left to the sink's connector (``actors.connectors``), driven by
effects.

With checkpointing (two-phase commit) a sink keeps one transaction per checkpoint id:

- ``write``: records go into the open transaction (``SinkWrite`` to the connector; a collect
  sink stages the buffers themselves, by reference, no copy per record);
- the snapshot of checkpoint *n* (``prepareCommit``): the open transaction, if anything was
  written into it, becomes pending transaction *n* (``SinkPreCommit``; a collect sink hands
  its buffers to the JobMaster, ``PrecommitCollected``, which holds them as the external
  system holds a pre-committed transaction); the ids of the pending transactions (and, for a
  collect sink, the subtask that wrote them) are the sink's state in the snapshot;
- notify-checkpoint-complete *n* (``Committer.commit``): every pending transaction up to *n*
  is committed (``SinkCommit``; a collect sink's ``PublishCollected`` commits it at the
  JobMaster); an aborted checkpoint's transaction stays pending and is committed with a
  later one;
- a restore commits the restored pending transactions (commits are idempotent) and discards
  whatever else was staged (``SinkRecover``; a collect sink commits them at the JobMaster,
  which keeps each transaction once and, on a restore from checkpoint *n*, drops what was
  committed or pre-committed for later checkpoints: it is replayed).

Without checkpointing (and for the print sink) records are written directly; a collect sink
publishes everything when the task ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime.descriptors import SinkDescriptor, SinkKind
from runtime.effects import (
    PrecommitCollected,
    PublishCollected,
    SinkClose,
    SinkCommit,
    SinkPreCommit,
    SinkRecover,
    SinkWrite,
    TaskEffect,
)
from runtime.operators import Operator


class SinkOperator(Operator):
    def __init__(
        self,
        uid: str,
        name: str,
        descriptor: SinkDescriptor,
        *,
        checkpointing: bool,
        writer: str = "",
    ) -> None:
        super().__init__(uid, name)
        #: the subtask this sink runs in (a collect sink's transactions are named by it)
        self.writer = writer
        self.descriptor = descriptor
        self.collect = descriptor.sink is SinkKind.COLLECT
        self.transactional = checkpointing and descriptor.sink.transactional
        #: the open transaction: a collect sink's staged buffers; for the others, whether
        #: anything was written into it
        self._staged: list[Sequence[Any]] = []
        self._written = False
        #: pre-committed transactions by checkpoint id (buffers: a collect sink's, held at the
        #: JobMaster until committed; kept here only for a commit at the end of input)
        self.pending: dict[int, list[Sequence[Any]]] = {}
        self.effects: list[TaskEffect] = []

    # --- SinkWriter -----------------------------------------------------------------------------

    def process_batch(self, records: Sequence[Any]) -> Sequence[Any]:
        if len(records):
            if self.collect:
                self._staged.append(records)
            else:
                self.effects.append(SinkWrite(sink=self.uid, records=records))
                self._written = True
        return ()

    def snapshot_state(self, checkpoint_id: int) -> Any:
        """``prepareCommit`` and the committer's state: the pending transactions."""
        if not self.transactional:
            if not self.collect:  # a plain connector flushes
                self.effects.append(SinkPreCommit(sink=self.uid, checkpoint_id=checkpoint_id))
            return None
        if self._staged or self._written:
            if self.collect:
                self.effects.append(
                    PrecommitCollected(
                        name=self.name, txn=checkpoint_id, buffers=tuple(self._staged)
                    )
                )
            else:
                self.effects.append(SinkPreCommit(sink=self.uid, checkpoint_id=checkpoint_id))
            self.pending[checkpoint_id] = self._staged
            self._staged, self._written = [], False
        if self.collect:
            return {"writer": self.writer, "pending": sorted(self.pending)}
        return {"pending": sorted(self.pending)}

    # --- Committer ------------------------------------------------------------------------------

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        ids = sorted(k for k in self.pending if k <= checkpoint_id)
        if not ids:
            return
        for k in ids:
            del self.pending[k]
        if self.collect:
            for k in ids:  # pre-committed at the JobMaster: commit it there
                self.effects.append(PublishCollected(name=self.name, txn=k, buffers=()))
        else:
            self.effects.append(SinkCommit(sink=self.uid, checkpoint_ids=tuple(ids)))

    def restore_state(self, states: list[Any]) -> None:
        self.restore_sink(states, 0)

    def restore_sink(self, states: list[Any], checkpoint_id: int) -> None:
        """Restore from checkpoint ``checkpoint_id``: commit the restored pending transactions;
        a file sink also retracts what it committed after that checkpoint (replayed)."""
        if not self.transactional:
            return
        if self.collect:
            for state in states:
                writer = (state or {}).get("writer")
                for entry in (state or {}).get("pending", []):
                    if writer is None:  # an older checkpoint held the records themselves
                        k, records = entry
                        effect = PublishCollected(name=self.name, txn=int(k), buffers=(records,))
                    else:
                        effect = PublishCollected(
                            name=self.name, txn=int(entry), buffers=(), writer=str(writer)
                        )
                    self.effects.append(effect)
        else:
            self.effects.append(
                SinkRecover(sink=self.uid, states=tuple(states), checkpoint_id=checkpoint_id)
            )

    # --- the end --------------------------------------------------------------------------------

    def close(self, *, commit: bool, keep_collected: bool) -> None:
        """The task ends. ``commit``: it finished normally, and what no checkpoint committed
        is committed now (nothing, after a FLIP-147 final checkpoint). ``keep_collected``: a
        collect sink without transactions publishes what it collected (the task finished, was
        cancelled or stopped; not when it failed)."""
        if not self.collect:
            self.effects.append(SinkClose(sink=self.uid, finished=commit))
            return
        if not self.transactional:
            if keep_collected:
                self.effects.append(
                    PublishCollected(name=self.name, txn=None, buffers=tuple(self._staged))
                )
        elif commit:
            for k in sorted(self.pending):  # pre-committed at the JobMaster
                self.effects.append(PublishCollected(name=self.name, txn=k, buffers=()))
            if self._staged:
                self.effects.append(
                    PublishCollected(name=self.name, txn="end", buffers=tuple(self._staged))
                )
        self.pending, self._staged = {}, []

    def take_effects(self) -> list[TaskEffect]:
        effects, self.effects = self.effects, []
        return effects
