"""``runtime.collected``: the JobMaster's side of the collect sinks' two-phase commit."""

from __future__ import annotations

from runtime.collected import CollectedOutput

A, B = "reduce-2#0", "reduce-2#1"


def test_a_transaction_is_precommitted_by_reference_then_committed_once_by_id() -> None:
    out = CollectedOutput(["s"])
    first, second = [1, 2], [3]
    out.precommit("s", (A, 1), (first, second), attempt=0)
    assert out.result(last_completed=0) == {"s": []}, "pre-committed is not output yet"
    out.commit("s", (A, 1), (), attempt=0)
    out.commit("s", (A, 1), (), attempt=0)  # a restore commits the restored ones again
    assert out.committed["s"][(A, 1)][0] is first, "no copy per record"
    assert out.result(last_completed=1) == {"s": [1, 2, 3]}


def test_a_restore_from_n_drops_what_was_committed_or_precommitted_after_n() -> None:
    """...but not what tasks that had finished before n committed (they are not restarted),
    and what the sinks commit again after the restore counts."""
    out = CollectedOutput(["s"])
    for txn, records in (((A, 1), [1]), ((A, 2), [2]), ((B, 2), [20])):
        out.precommit("s", txn, (records,), attempt=0)
        out.commit("s", txn, (), attempt=0)
    out.commit("s", (A, "end"), ([3],), attempt=0)  # at its end, without a final checkpoint
    out.precommit("s", (A, 3), ([9],), attempt=0)
    assert out.restored(attempt=1, checkpoint_id=1, finished={B}) == {"s": 2}
    assert out.result(last_completed=3) == {"s": [1, 20]}, "A's 2, 3 and end are replayed"
    out.commit("s", (A, "end"), ([2, 3],), attempt=1)
    assert sorted(out.result(last_completed=3)["s"]) == [1, 2, 3, 20]


def test_late_news_of_a_replaced_attempt_counts_only_for_what_the_restore_kept() -> None:
    out = CollectedOutput(["s"])
    out.restored(attempt=1, checkpoint_id=4, finished=set())
    out.precommit("s", (A, 4), ([4],), attempt=0)  # sent before the failure, arriving after
    out.precommit("s", (A, 5), ([5],), attempt=0)  # after the restored checkpoint: replayed
    out.commit("s", (A, "end"), ([6],), attempt=0)
    out.publish("s", ([7],), attempt=0)
    out.commit("s", (A, 4), (), attempt=1)  # the restore commits the restored transaction
    assert out.result(last_completed=4) == {"s": [4]}


def test_a_checkpoints_completion_commits_its_transactions_even_unheard() -> None:
    out = CollectedOutput(["s"])
    out.precommit("s", (A, 1), ([1],), attempt=0)
    out.precommit("s", (A, 2), ([2],), attempt=0)
    assert out.result(last_completed=1) == {"s": [1]}
