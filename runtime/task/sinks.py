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

A file sink's state also records its *lineage*, the committed output the checkpoint stands
for: ``"lineage": [[writer, up_to], ...]``, the writers (attempts of the sink subtask, of this
run and the runs it was resumed from) whose part files up to checkpoint ``up_to`` make up its
output, oldest first, the last one this writer up to the checkpoint itself. A restore hands it
to the connector, which makes the committed files exactly those (``actors.connectors``),
whatever other runs committed into the folder since. It records its ``folder`` (as the job
named it) too: a job resumed with another folder commits the restored pending part files in
the folder that staged them, and writes on in its own.

Without checkpointing (and for the print sink) records are written directly; a collect sink
publishes everything when the task ends.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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
    Traced,
)
from runtime.operators import Operator

#: a lineage: (writer, up to checkpoint) pairs, oldest first; a writer's part files with a
#: checkpoint id up to its bound are committed output. The writer ``"*"`` stands for any
#: writer (a checkpoint written before sinks recorded their lineage)
Lineage = list[tuple[str, int]]
ANY_WRITER = "*"


def restored_lineage(states: Sequence[Any], checkpoint_id: int) -> Lineage:
    """The lineage a restore of checkpoint ``checkpoint_id`` gives a file sink subtask, from
    its restored states: the one its snapshot recorded; none after a restart with no
    checkpoint. Any writer's files up to the checkpoint when the state recorded none (an older
    checkpoint), or the checkpoint holds no state of this subtask's sink (the task had
    finished before it, or the sink is new): what it committed for later checkpoints goes."""
    found = [s for s in states if isinstance(s, dict)]
    if not found:
        return [] if checkpoint_id == 0 else [(ANY_WRITER, checkpoint_id)]
    lineage: Lineage = []
    for state in found:
        recorded = state.get("lineage")
        if recorded is None:
            return [(ANY_WRITER, checkpoint_id)]
        lineage.extend((str(writer), int(up_to)) for writer, up_to in recorded)
    return lineage


#: a part file as a file sink lists it: (writer, transaction: a checkpoint id as text, "end"
#: or None)
PartFile = tuple[str, str | None]


def missing_pending(
    states: Sequence[Any],
    staged: Iterable[PartFile],
    committed: Iterable[PartFile],
    retracted: Iterable[PartFile],
) -> int | None:
    """Before a file sink subtask restores ``states``: the first restored pending transaction
    whose part file the restore could not commit, given the sink's pending files in
    ``.staging``, its committed files and those in ``.retracted`` (None: each is there). With
    a recorded lineage the pending transactions of a state are the last writer its lineage
    names (each state its own: a subtask restores several after a rescale to fewer), found
    committed, or staged or set aside under that writer; without one (an older checkpoint),
    any writer's file of that checkpoint commits it."""
    staged, committed, retracted = list(staged), list(committed), list(retracted)
    found = set(committed) | set(staged) | set(retracted)
    there = {t for _, t in [*staged, *committed]}
    missing: list[int] = []
    for state in states:
        if not isinstance(state, dict):
            continue
        keep = sorted({int(k) for k in state.get("pending", [])})
        recorded = state.get("lineage")
        if recorded is None:
            missing += [k for k in keep if str(k) not in there]
            continue
        last = str(recorded[-1][0]) if recorded else None
        missing += [k for k in keep if (last, str(k)) not in found]
    return min(missing, default=None)


def output_lineage(states: Sequence[Any], others: Sequence[Any], checkpoint_id: int) -> Lineage:
    """The committed output a restore of checkpoint ``checkpoint_id`` stands for, as far as one
    subtask of a file sink must know it to retract what is not in it: the lineages of its own
    restored ``states`` and of the ``others`` (those its sink's other former subtasks recorded,
    restored by other subtasks, or by none: a rescale, a re-chaining), as part files are not
    each subtask's own any more after a rescale. ``restored_lineage`` of them all."""
    every = [*states, *others]
    if not any(isinstance(s, dict) for s in every):
        return restored_lineage(states, checkpoint_id)
    return restored_lineage(every, checkpoint_id)


def lineage_holds(
    lineage: Lineage | None, writer: str, txn: str | None, *, explicit_only: bool = False
) -> bool:
    """Whether ``lineage`` holds part file ``txn`` (a checkpoint id as text; None or
    ``"end"``: no checkpoint's) of ``writer`` (``explicit_only``: only a lineage entry that
    names the writer counts; else an ``ANY_WRITER`` entry does too)."""
    if lineage is None or txn is None or txn == "end":
        return False
    number = int(txn)
    return any(
        number <= up_to and (w == writer or (w == ANY_WRITER and not explicit_only))
        for w, up_to in lineage
    )


class SinkOperator(Operator):
    def __init__(
        self,
        uid: str,
        name: str,
        descriptor: SinkDescriptor,
        *,
        checkpointing: bool,
        writer: str = "",
        writer_id: str | None = None,
    ) -> None:
        super().__init__(uid, name)
        #: the subtask this sink runs in (a collect sink's transactions are named by it)
        self.writer = writer
        #: the id of this writer (this attempt of the subtask) its part files are named by
        #: (None: a connector that names none); with it, snapshots record the lineage
        self.writer_id = writer_id
        #: the committed output before this writer's: the restored lineage
        self.lineage: Lineage = []
        #: this writer pre-committed a transaction (it has part files of its own)
        self._precommitted = False
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
                self._precommitted = True
            self.pending[checkpoint_id] = self._staged
            self._staged, self._written = [], False
        if self.collect:
            return {"writer": self.writer, "pending": sorted(self.pending)}
        state: dict[str, Any] = {"pending": sorted(self.pending)}
        if self.writer_id is not None:
            own = [(self.writer_id, checkpoint_id)] if self._precommitted else []
            state["lineage"] = [[w, k] for w, k in [*self.lineage, *own]]
        folder = self._folder()
        if folder is not None:
            # where its pending part files are: a resume into another folder commits them
            # there, as Flink's FileSink committables carry their files' paths
            state["folder"] = folder
        return state

    def _folder(self) -> str | None:
        """The folder a file sink stages its part files in: ``sink_to_file``'s path, or the
        ``folder`` a ``sink_to`` factory names (``ParquetSink``)."""
        if self.descriptor.sink is SinkKind.FILE:
            return self.descriptor.path
        folder = getattr(self.descriptor.factory, "folder", None)
        return folder if isinstance(folder, str) and folder else None

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
            self._trace_commit(checkpoint_id, len(ids))

    def _trace_commit(self, checkpoint_id: int | None, files: int) -> None:
        """``sink_committed``: this sink subtask committed ``files`` transactions (part files)
        for checkpoints up to ``checkpoint_id`` (None: at the end of its input, with no
        final checkpoint), which a restore from an earlier checkpoint must retract."""
        self.effects.append(
            Traced(
                event="sink_committed",
                fields={"sink": self.uid, "checkpoint_id": checkpoint_id, "files": files},
            )
        )

    def restore_state(self, states: list[Any]) -> None:
        self.restore_sink(states, 0)

    def restore_sink(
        self, states: list[Any], checkpoint_id: int, others: Sequence[Any] = ()
    ) -> None:
        """Restore from checkpoint ``checkpoint_id``: commit the restored pending transactions;
        a file sink also retracts what it committed after that checkpoint (replayed): what
        no restored lineage holds, its own (``states``) nor those of the sink's other former
        subtasks (``others``: after a rescale or a re-chaining a part file is not one
        subtask's)."""
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
            recorded = any(isinstance(s, dict) and "lineage" in s for s in [*states, *others])
            if states or not recorded:
                self.lineage = restored_lineage(states, checkpoint_id)
            else:  # a subtask new after a rescale: the others' lineages hold the output
                self.lineage = []
            # (its own lineage is the output when no other subtask's state is restored)
            shared = recorded and any(isinstance(s, dict) for s in others)
            output = output_lineage(states, others, checkpoint_id) if shared else None
            self.effects.append(
                SinkRecover(
                    sink=self.uid,
                    states=tuple(states),
                    checkpoint_id=checkpoint_id,
                    output=None if output is None else tuple(output),
                )
            )

    # --- the end --------------------------------------------------------------------------------

    def close(self, *, commit: bool, keep_collected: bool) -> None:
        """The task ends. ``commit``: it finished normally, and what no checkpoint committed
        is committed now (nothing, after a FLIP-147 final checkpoint). ``keep_collected``: a
        collect sink without transactions publishes what it collected (the task finished, was
        cancelled or stopped; not when it failed)."""
        if not self.collect:
            rest = len(self.pending) + self._written
            self.effects.append(SinkClose(sink=self.uid, finished=commit))
            if commit and self.transactional and rest:
                self._trace_commit(None, rest)
            self.pending, self._written = {}, False
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
