"""The sinks' two-phase commit as the task core keeps it: one transaction per checkpoint id,
pre-committed by the snapshot, committed on completion, recovered on restore; the I/O is
effects for the connectors. The collect sink stages whole buffers by reference."""

from __future__ import annotations

from runtime.descriptors import SinkDescriptor, SinkKind
from runtime.effects import (
    PrecommitCollected,
    PublishCollected,
    SinkClose,
    SinkCommit,
    SinkPreCommit,
    SinkRecover,
    SinkWrite,
    Traced,
)
from runtime.task.sinks import ANY_WRITER, SinkOperator, missing_pending, restored_lineage
from tests.runtime.task.helpers import only


def collect(*, checkpointing: bool = True) -> SinkOperator:
    return SinkOperator(
        "sink-out",
        "out",
        SinkDescriptor(sink=SinkKind.COLLECT),
        checkpointing=checkpointing,
        writer="reduce-2#1",
    )


def files(*, checkpointing: bool = True, writer_id: str | None = None) -> SinkOperator:
    descriptor = SinkDescriptor(sink=SinkKind.FILE, path="/tmp/x")
    return SinkOperator("sink-f", "f", descriptor, checkpointing=checkpointing, writer_id=writer_id)


def test_a_collect_sink_precommits_its_buffers_by_reference_and_commits_by_id() -> None:
    """The snapshot hands the staged buffers (the very objects: no copy per record) to the
    JobMaster as pre-committed transaction 5; the checkpoint's state names the transaction and
    its writer only; the completion commits it by id."""
    sink = collect()
    first, second = [1, 2], [3]
    sink.process_batch(first)
    sink.process_batch(second)
    state = sink.snapshot_state(5)
    assert state == {"writer": "reduce-2#1", "pending": [5]}
    (precommit,) = sink.take_effects()
    assert isinstance(precommit, PrecommitCollected) and precommit.txn == 5
    assert precommit.buffers[0] is first and precommit.buffers[1] is second, "no copy per record"
    sink.notify_checkpoint_complete(5)
    assert sink.take_effects() == [PublishCollected(name="out", txn=5, buffers=())]


def test_a_restored_collect_sink_commits_the_restored_transactions_of_their_writer() -> None:
    sink = collect()
    sink.restore_state([{"writer": "reduce-2#0", "pending": [3, 4]}, None])
    assert sink.take_effects() == [
        PublishCollected(name="out", txn=3, buffers=(), writer="reduce-2#0"),
        PublishCollected(name="out", txn=4, buffers=(), writer="reduce-2#0"),
    ]
    sink.restore_state([{"pending": [[2, [7, 8]]]}])  # a checkpoint of an older ckptsim
    assert sink.take_effects() == [PublishCollected(name="out", txn=2, buffers=([7, 8],))]


def test_an_empty_transaction_is_not_pending_and_an_aborted_one_commits_with_a_later_one() -> None:
    sink = files()
    assert sink.snapshot_state(1) == {"pending": [], "folder": "/tmp/x"}
    sink.process_batch(["a"])
    sink.snapshot_state(2)  # checkpoint 2 is aborted later
    sink.process_batch(["b"])
    assert sink.snapshot_state(3) == {"pending": [2, 3], "folder": "/tmp/x"}
    sink.notify_checkpoint_aborted(2)
    sink.notify_checkpoint_complete(3)
    effects = sink.take_effects()
    assert [type(e) for e in effects] == [
        SinkWrite,
        SinkPreCommit,
        SinkWrite,
        SinkPreCommit,
        SinkCommit,
        Traced,
    ]
    assert effects[-2] == SinkCommit(sink="sink-f", checkpoint_ids=(2, 3))
    assert effects[-1] == Traced(
        event="sink_committed", fields={"sink": "sink-f", "checkpoint_id": 3, "files": 2}
    )
    assert sink.snapshot_state(4) == {"pending": [], "folder": "/tmp/x"}


def test_a_restore_recovers_the_restored_transactions() -> None:
    sink = files()
    sink.restore_state([{"pending": [7]}])
    assert sink.take_effects() == [SinkRecover(sink="sink-f", states=({"pending": [7]},))]
    sink = collect()
    sink.restore_state([{"pending": [[7, [1, 2]]]}])
    (published,) = sink.take_effects()
    assert isinstance(published, PublishCollected) and published.txn == 7
    assert list(published.buffers[0]) == [1, 2]


def test_without_checkpointing_a_collect_sink_publishes_everything_at_the_end() -> None:
    sink = collect(checkpointing=False)
    sink.process_batch([1])
    assert sink.snapshot_state(1) is None
    sink.close(commit=True, keep_collected=True)
    (published,) = sink.take_effects()
    assert isinstance(published, PublishCollected) and published.txn is None
    assert [list(b) for b in published.buffers] == [[1]]


def test_a_failed_task_publishes_nothing_a_cancelled_one_what_it_collected() -> None:
    sink = collect(checkpointing=False)
    sink.process_batch([1])
    sink.close(commit=False, keep_collected=False)
    assert sink.take_effects() == []
    sink = collect(checkpointing=True)
    sink.process_batch([1])
    sink.close(commit=False, keep_collected=True)
    assert sink.take_effects() == [], "uncommitted transactions are dropped"


def test_at_the_end_without_a_final_checkpoint_what_is_left_is_committed() -> None:
    sink = collect()
    sink.process_batch([1])
    sink.snapshot_state(1)
    sink.process_batch([2])
    sink.close(commit=True, keep_collected=True)
    published = only(sink.take_effects(), PublishCollected)
    assert [(e.txn, [list(b) for b in e.buffers]) for e in published] == [
        (1, []),  # pre-committed at the JobMaster already
        ("end", [[2]]),
    ]
    sink = files()
    sink.close(commit=True, keep_collected=True)
    assert sink.take_effects() == [SinkClose(sink="sink-f", finished=True)]


def test_a_print_sink_is_never_transactional_it_flushes_on_snapshots() -> None:
    sink = SinkOperator("sink-p", "p", SinkDescriptor(sink=SinkKind.PRINT), checkpointing=True)
    sink.process_batch([1])
    assert sink.snapshot_state(1) is None
    assert [type(e) for e in sink.take_effects()] == [SinkWrite, SinkPreCommit]


# --- the lineage: the committed output a checkpoint stands for ------------------------------------


def test_a_file_sink_state_records_its_lineage_from_its_first_transaction_on() -> None:
    """Per writer, its part files up to a checkpoint: this writer's entry appears with its
    first transaction and moves with each snapshot."""
    sink = files(writer_id="w1")
    folder = {"folder": "/tmp/x"}  # where its part files are (a resume elsewhere commits there)
    assert sink.snapshot_state(1) == {"pending": [], "lineage": [], **folder}
    sink.process_batch(["a"])
    assert sink.snapshot_state(2) == {"pending": [2], "lineage": [["w1", 2]], **folder}
    sink.notify_checkpoint_complete(2)
    assert sink.snapshot_state(3) == {"pending": [], "lineage": [["w1", 3]], **folder}


def test_a_restored_file_sink_extends_the_restored_lineage() -> None:
    sink = files(writer_id="w2")
    restored = {"pending": [5], "lineage": [["w0", 3], ["w1", 5]]}
    sink.restore_sink([restored], 5)
    assert sink.take_effects() == [SinkRecover(sink="sink-f", states=(restored,), checkpoint_id=5)]
    assert sink.snapshot_state(6) == {
        "pending": [],
        "lineage": [["w0", 3], ["w1", 5]],
        "folder": "/tmp/x",
    }
    sink.process_batch(["a"])
    assert sink.snapshot_state(7)["lineage"] == [["w0", 3], ["w1", 5], ["w2", 7]]


def test_the_restored_lineage_of_a_restart_from_scratch_an_older_checkpoint_or_none() -> None:
    assert restored_lineage([], 0) == []  # a restart with no checkpoint: nothing committed
    assert restored_lineage([{"pending": [4]}], 4) == [(ANY_WRITER, 4)]  # no lineage recorded
    assert restored_lineage([], 4) == [(ANY_WRITER, 4)]  # no state: the task had finished
    assert restored_lineage([{"pending": [], "lineage": [["w", 2]]}], 4) == [("w", 2)]


def test_a_file_sink_commit_is_a_traced_fact_also_at_the_end_without_a_final_checkpoint() -> None:
    sink = files(writer_id="w1")
    sink.process_batch(["a"])
    sink.snapshot_state(1)  # never completes
    sink.process_batch(["b"])
    sink.close(commit=True, keep_collected=True)
    effects = sink.take_effects()
    assert effects[-2:] == [
        SinkClose(sink="sink-f", finished=True),
        Traced(
            event="sink_committed", fields={"sink": "sink-f", "checkpoint_id": None, "files": 2}
        ),
    ]
    cancelled = files(writer_id="w1")
    cancelled.process_batch(["a"])
    cancelled.close(commit=False, keep_collected=True)
    assert cancelled.take_effects()[-1] == SinkClose(sink="sink-f", finished=False)


A = "aaaaaaaa-0000-0000-0000-000000000001"
B = "bbbbbbbb-0000-0000-0000-000000000002"


def test_missing_pending_finds_a_transaction_no_file_of_the_named_writer_holds() -> None:
    """Before a restore commits pending transaction 3, its part file must be there: committed
    or staged by the last writer of the lineage (or set aside under it); a file of another
    writer does not count, so a lineage naming a writer that never wrote here is found."""
    state = {"pending": [3], "lineage": [[A, 2], [B, 3]]}
    assert missing_pending([state], [], [(B, "3")], []) is None, "committed already"
    assert missing_pending([state], [(B, "3")], [], []) is None, "staged by B"
    assert missing_pending([state], [], [], [(B, "3")]) is None, "set aside by a restore"
    assert missing_pending([state], [(A, "3")], [(A, "3")], []) == 3, "A's file is not B's"
    assert missing_pending([state], [], [], []) == 3
    forged = {"pending": [3], "lineage": [["0badc0de-0000-0000-0000-000000000003", 3]]}
    assert missing_pending([forged], [(B, "3")], [(B, "3")], []) == 3


def test_missing_pending_without_a_lineage_takes_any_writers_file() -> None:
    """An older checkpoint recorded no lineage: any writer's file of the transaction commits it."""
    assert missing_pending([{"pending": [4, 5]}], [(A, "4")], [(B, "5")], []) is None
    assert missing_pending([{"pending": [4, 5]}], [(A, "4")], [], []) == 5
    assert missing_pending([None, {"pending": []}], [], [], []) is None
