"""A sink at the end of a task's chain: Flink's ``SinkWriterOperator`` and ``CommitterOperator``
as bookkeeping, with the I/O left to the sink's connector (``actors.connectors``), driven by
effects.

With checkpointing (two-phase commit) a sink keeps one transaction per checkpoint id:

- ``write``: records go into the open transaction (``SinkWrite`` to the connector; a collect
  sink stages the buffers themselves, by reference, no copy per record);
- the snapshot of checkpoint *n* (``prepareCommit``): the open transaction, if anything was
  written into it, becomes pending transaction *n* (``SinkPreCommit``); the ids of the pending
  transactions are the sink's state in the snapshot (a collect sink's state also holds their
  records, so that a restore can publish them);
- notify-checkpoint-complete *n* (``Committer.commit``): every pending transaction up to *n*
  is committed (``SinkCommit``; a collect sink publishes the staged buffers of each,
  ``PublishCollected``); an aborted checkpoint's transaction stays pending and is committed
  with a later one;
- a restore commits the restored pending transactions (commits are idempotent) and discards
  whatever else was staged (``SinkRecover``; a collect sink publishes them again, and the job
  keeps each transaction once).

Without checkpointing (and for the print sink) records are written directly; a collect sink
publishes everything when the task ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime.descriptors import SinkDescriptor, SinkKind
from runtime.effects import (
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
        self, uid: str, name: str, descriptor: SinkDescriptor, *, checkpointing: bool
    ) -> None:
        super().__init__(uid, name)
        self.descriptor = descriptor
        self.collect = descriptor.sink is SinkKind.COLLECT
        self.transactional = checkpointing and descriptor.sink.transactional
        #: the open transaction: a collect sink's staged buffers; for the others, whether
        #: anything was written into it
        self._staged: list[Sequence[Any]] = []
        self._written = False
        #: pre-committed transactions by checkpoint id (a collect sink's staged buffers)
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
            self.pending[checkpoint_id] = self._staged
            self._staged, self._written = [], False
            if not self.collect:
                self.effects.append(SinkPreCommit(sink=self.uid, checkpoint_id=checkpoint_id))
        if self.collect:
            return {
                "pending": [
                    [k, [r for buffer in buffers for r in buffer]]
                    for k, buffers in sorted(self.pending.items())
                ]
            }
        return {"pending": sorted(self.pending)}

    # --- Committer ------------------------------------------------------------------------------

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        ids = sorted(k for k in self.pending if k <= checkpoint_id)
        if not ids:
            return
        buffers = [self.pending.pop(k) for k in ids]
        if self.collect:
            for k, staged in zip(ids, buffers, strict=True):
                self.effects.append(PublishCollected(name=self.name, txn=k, buffers=tuple(staged)))
        else:
            self.effects.append(SinkCommit(sink=self.uid, checkpoint_ids=tuple(ids)))

    def restore_state(self, states: list[Any]) -> None:
        if not self.transactional:
            return
        if self.collect:
            for state in states:
                for k, records in (state or {}).get("pending", []):
                    self.effects.append(
                        PublishCollected(name=self.name, txn=int(k), buffers=(list(records),))
                    )
        else:
            self.effects.append(SinkRecover(sink=self.uid, states=tuple(states)))

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
            for k in sorted(self.pending):
                self.effects.append(
                    PublishCollected(name=self.name, txn=k, buffers=tuple(self.pending[k]))
                )
            if self._staged:
                self.effects.append(
                    PublishCollected(name=self.name, txn="end", buffers=tuple(self._staged))
                )
        self.pending, self._staged = {}, []

    def take_effects(self) -> list[TaskEffect]:
        effects, self.effects = self.effects, []
        return effects
