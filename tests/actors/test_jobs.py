"""Jobs end to end on Pykka actors (threaded runtime), in every checkpointing mode."""

from __future__ import annotations

import gc
import json
import threading
import weakref
from collections import Counter
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import Any

import pykka
import pytest

from ckptsim import KeyedProcessFunction, RuntimeContext, StreamExecutionEnvironment
from runtime.graph import GraphError
from runtime.job import JobResult
from runtime.reasons import CheckpointFailureReason
from runtime.state import key_group_for
from runtime.status import JobStatus
from runtime.storage import load_checkpoint
from tests.conftest import protocol_events

MODES: dict[str, dict[str, object]] = {
    "aligned": {},
    "unaligned": {"execution.checkpointing.unaligned.enabled": True},
    "aligned_with_timeout": {
        "execution.checkpointing.unaligned.enabled": True,
        "execution.checkpointing.aligned-checkpoint-timeout": "2 ms",
    },
    "at_least_once": {"execution.checkpointing.mode": "AT_LEAST_ONCE"},
}

N = 30_000
KEYS = 50
#: wall seconds a threaded job may run before it is cancelled: a guard against a hang, not a
#: measure (a busy machine may take many times what a quiet one does)
GUARD_S = 600


def record(i: int) -> tuple[int, int]:
    return (i % KEYS, i % 11)


def expected_sums() -> dict[int, int]:
    sums: dict[int, int] = {}
    for i in range(N):
        k, v = record(i)
        sums[k] = sums.get(k, 0) + v * 3
    return sums


def running_sum_job(
    settings: dict[str, object], *, parallelism: int = 2, rate: float | None = 300_000
) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment(parallelism=parallelism)
    env.enable_checkpointing(15)
    env.configure({"ckptsim.buffer.records": 200, **settings})
    (
        env.from_generator(record, N, rate=rate)
        .map(lambda kv: (kv[0], kv[1] * 3))
        .key_by(lambda kv: kv[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .collect("sums")
    )
    return env


def final(result: JobResult) -> dict[int, int]:
    sums: dict[int, int] = {}
    for key, value in result.collected("sums"):
        sums[key] = max(sums.get(key, 0), value)
    return sums


@pytest.mark.parametrize("mode", list(MODES))
def test_job_finishes_with_the_plain_python_result_and_increasing_checkpoints(mode: str) -> None:
    result = running_sum_job(MODES[mode]).execute(f"running sum {mode}", timeout=GUARD_S)
    assert result.status is JobStatus.FINISHED, result.failure
    assert final(result) == expected_sums()
    assert len(result.collected("sums")) == N  # a reduce emits once per record
    ids = result.completed_checkpoint_ids
    assert ids, "no checkpoint completed"
    assert ids == sorted(set(ids))
    counts = result.checkpoints["counts"]
    assert counts["total"] == counts["completed"] + counts["failed"] + counts["in_progress"]
    assert counts["completed"] == len(ids)
    assert counts["in_progress"] == 0


@pytest.mark.parametrize("mode", ["aligned", "unaligned"])
def test_channels_on_their_own_threads_give_the_same_result(mode: str) -> None:
    """``ckptsim.channel.threads``: every channel actor on its own Pykka thread (seen from the
    reduce task while it processes what they deliver, when they certainly run)."""
    before = set(threading.enumerate())  # a thread of an earlier test may still be ending
    channel_threads: set[str] = set()

    def watch(batch: Sequence[Any]) -> Sequence[Any]:
        channel_threads.update(
            t.name for t in threading.enumerate() if t.name.startswith("InputChannel")
        )
        return batch

    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(15)
    env.configure({"ckptsim.buffer.records": 200, **MODES[mode], "ckptsim.channel.threads": True})
    (
        env.from_generator(record, N, rate=300_000)
        .map(lambda kv: (kv[0], kv[1] * 3))
        .key_by(lambda kv: kv[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .map_batch(watch)
        .collect("sums")
    )
    result = env.execute(f"threaded channels {mode}", timeout=GUARD_S)
    assert result.status is JobStatus.FINISHED, result.failure
    assert len(channel_threads) == 4  # 2 x 2 channels on the key_by edge
    assert final(result) == expected_sums()
    assert result.completed_checkpoint_ids
    assert not set(threading.enumerate()) - before, "threads left behind"


def test_unaligned_checkpoints_report_their_type_and_persisted_data() -> None:
    result = running_sum_job(MODES["unaligned"]).execute("unaligned", timeout=GUARD_S)
    completed = [h for h in result.checkpoints["history"] if h["status"] == "COMPLETED"]
    assert completed
    assert all(h["checkpoint_type"] == "UNALIGNED_CHECKPOINT" for h in completed)


def _events(logs: list[MutableMapping[str, Any]], name: str) -> list[MutableMapping[str, Any]]:
    return [e for e in logs if e["event"] == name]


def _assert_trace_orders(
    logs: list[MutableMapping[str, Any]], result: JobResult, *, one_thread: bool
) -> None:
    """A checkpoint's trigger, barriers, snapshots, acknowledgements and completion in the
    order of the logged events. On threads only the orders every interleaving keeps: those of
    one thread, and those a message carries (the coordinator logs a trigger and a completion
    before it sends them on; a task logs its acknowledgement after sending it, so the
    completion can be logged first); ``one_thread`` (the simulation) asserts them all."""
    position = {id(e): i for i, e in enumerate(logs)}
    completed = {e["checkpoint_id"] for e in _events(logs, "checkpoint_completed")}
    assert completed == set(result.completed_checkpoint_ids)
    reduce_tasks = {
        e["task"] for e in _events(logs, "checkpoint_taken") if e["task"].startswith("reduce")
    }
    assert len(reduce_tasks) == 2
    for cid in completed:
        (triggered,) = [
            e for e in _events(logs, "checkpoint_triggered") if e["checkpoint_id"] == cid
        ]
        (done,) = [e for e in _events(logs, "checkpoint_completed") if e["checkpoint_id"] == cid]
        acks = [e for e in _events(logs, "checkpoint_acknowledged") if e["checkpoint_id"] == cid]
        if len(acks) < 4:
            # after the final checkpoint, tasks that finished are no longer in a checkpoint
            assert cid > min(completed) and _events(logs, "task_finished")
            continue
        for task in reduce_tasks:
            barriers = [
                e
                for e in _events(logs, "barrier_received")
                if e["checkpoint_id"] == cid and e["task"] == task
            ]
            (taken,) = [
                e
                for e in _events(logs, "checkpoint_taken")
                if e["checkpoint_id"] == cid and e["task"] == task
            ]
            (ack,) = [e for e in acks if e["task"] == task]
            assert sorted(b["channel"] for b in barriers) == [0, 1], (
                "aligned: one barrier per channel"
            )
            assert all(position[id(b)] < position[id(taken)] for b in barriers), (
                "snapshot after all barriers"
            )
            assert position[id(taken)] < position[id(ack)]
            aligned = [
                e
                for e in _events(logs, "alignment_completed")
                if e["checkpoint_id"] == cid and e["task"] == task
            ]
            assert len(aligned) == 1 and position[id(aligned[0])] < position[id(ack)]
        assert position[id(triggered)] < min(position[id(a)] for a in acks)
        if one_thread:
            assert max(position[id(a)] for a in acks) < position[id(done)]

    # FLIP-147: a task ends its data, takes a checkpoint after it, and finishes once that one
    # completed (its notification makes it finish); nothing is declined, before it or after
    finished = _events(logs, "task_finished")
    assert len(finished) == 4
    for end in finished:
        task = end["task"]
        (waiting,) = [e for e in _events(logs, "waiting_for_final_checkpoint") if e["task"] == task]
        finals = [
            e["checkpoint_id"]
            for e in _events(logs, "checkpoint_taken")
            if e["task"] == task and position[id(waiting)] < position[id(e)]
        ]
        assert any(
            position[id(done)] < position[id(end)]
            for done in _events(logs, "checkpoint_completed")
            if done["checkpoint_id"] in finals
        ), f"{task} finished before a checkpoint it took after its end of data completed"
    assert not _events(logs, "checkpoint_declined")
    if not one_thread:
        return

    # on the simulation: every task ends its data, then one checkpoint over all of them (the
    # final one) completes, then they finish
    def ended_before(task: str, cid: int) -> bool:
        ended = [e for e in _events(logs, "end_of_data_received") if e["task"] == task]
        (taken,) = [
            e
            for e in _events(logs, "checkpoint_taken")
            if e["checkpoint_id"] == cid and e["task"] == task
        ]
        return len(ended) == 2 and all(position[id(e)] < position[id(taken)] for e in ended)

    def acks_of(cid: int) -> int:
        return sum(1 for e in _events(logs, "checkpoint_acknowledged") if e["checkpoint_id"] == cid)

    final = min(
        c for c in completed if acks_of(c) == 4 and all(ended_before(t, c) for t in reduce_tasks)
    )
    (final_done,) = [
        e for e in _events(logs, "checkpoint_completed") if e["checkpoint_id"] == final
    ]
    assert all(position[id(e)] > position[id(final_done)] for e in finished)


def test_trace_orders_trigger_barriers_snapshot_ack_and_completion_on_threads() -> None:
    env = running_sum_job(MODES["aligned"])
    with protocol_events() as logs:
        result = env.execute("traced", timeout=GUARD_S)
    assert result.succeeded
    _assert_trace_orders(logs, result, one_thread=False)


@pytest.mark.parametrize("seed", [1, 2])
def test_trace_orders_trigger_barriers_snapshot_ack_and_completion(seed: int) -> None:
    env = running_sum_job(MODES["aligned"])
    with protocol_events() as logs:
        result = env.execute("traced", runtime="simulation", seed=seed)
    assert result.succeeded
    _assert_trace_orders(logs, result, one_thread=True)


class CountPerKey(KeyedProcessFunction):
    """Keyed ValueState and ListState through a process function."""

    def open(self, ctx: RuntimeContext) -> None:
        self.count = ctx.get_state("count")
        self.seen = ctx.get_list_state("seen")

    def process_element(
        self, value: tuple[str, int], ctx: RuntimeContext
    ) -> list[tuple[str, int, int]]:
        self.count.update((self.count.value() or 0) + 1)
        if len(self.seen.get()) < 3:
            self.seen.add(value[1])
        return [(ctx.get_current_key(), self.count.value(), len(self.seen.get()))]


def test_keyed_process_function_with_value_and_list_state() -> None:
    env = StreamExecutionEnvironment(parallelism=3)
    env.enable_checkpointing(10)
    words = [("ab"[i % 2] + str(i % 5), i) for i in range(2_000)]
    env.from_collection(words).key_by(lambda w: w[0]).process(CountPerKey()).collect()
    result = env.execute("process", timeout=GUARD_S)
    assert result.succeeded
    last: dict[str, tuple[int, int]] = {}
    for key, count, seen in result.collected():
        last[key] = (max(count, last.get(key, (0, 0))[0]), seen)
    assert last == {k: (200, 3) for k in Counter(w for w, _ in words)}


def test_partitioners_parallelism_and_chaining() -> None:
    env = StreamExecutionEnvironment(parallelism=2)
    source = env.from_collection(range(1_000)).set_parallelism(1)
    source.rebalance().map(lambda x: x * 2).set_parallelism(4).forward().filter(
        lambda x: x % 4 == 0
    ).set_parallelism(4).collect("rebalanced").set_parallelism(4)
    source.broadcast().map(lambda x: x).set_parallelism(3).collect("broadcast").set_parallelism(3)
    job = env.build_job_graph("shape")
    names = [v.name for v in job.vertices]
    assert names == ["Collection Source", "Map -> Filter -> rebalanced", "Map -> broadcast"], names
    result = env.execute("shape", timeout=GUARD_S)
    assert sorted(result.collected("rebalanced")) == [
        x * 2 for x in range(1_000) if (x * 2) % 4 == 0
    ]
    assert sorted(result.collected("broadcast")) == sorted(list(range(1_000)) * 3)


def test_union_of_two_sources() -> None:
    env = StreamExecutionEnvironment(parallelism=2)
    a = env.from_collection(range(0, 100))
    b = env.from_collection(range(100, 250))
    a.union(b).map(lambda x: x + 1).collect()
    assert sorted(env.execute("union", timeout=GUARD_S).collected()) == list(range(1, 251))


def test_file_sink_writes_one_part_file_per_subtask(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment(parallelism=2)
    env.from_collection([f"line {i}" for i in range(100)]).sink_to_file(str(tmp_path / "out"))
    assert env.execute("file", timeout=GUARD_S).succeeded
    parts = sorted((tmp_path / "out").iterdir())
    assert len(parts) == 2
    lines = [line for p in parts for line in p.read_text().splitlines()]
    assert sorted(lines) == sorted(f"line {i}" for i in range(100))


def test_a_failing_user_function_fails_the_job_with_its_cause() -> None:
    env = StreamExecutionEnvironment(parallelism=2)

    def boom(x: int) -> int:
        if x == 500:
            raise ValueError("bad record 500")
        return x

    env.from_collection(range(1_000)).map(boom).collect()
    result = env.execute("failing", timeout=GUARD_S)
    assert result.status is JobStatus.FAILED
    assert result.failure is not None and "bad record 500" in result.failure


def test_no_actor_or_thread_is_left_after_a_job() -> None:
    before = set(threading.enumerate())  # a thread of an earlier test may still be ending
    result = running_sum_job(MODES["aligned"]).execute("cleanup", timeout=GUARD_S)
    assert result.succeeded
    assert pykka.ActorRegistry.get_all() == []
    assert not set(threading.enumerate()) - before, "threads left behind"


def test_a_second_run_into_the_same_file_sink_folder_is_refused_and_loses_nothing(
    tmp_path: Path,
) -> None:
    """The files in a sink's folder are one job's output: a job starting afresh refuses a
    folder that holds files (a second run's output would mix with the first's: 224,763
    records in a folder where one run writes 149,822), before anything runs or is written."""

    def job() -> StreamExecutionEnvironment:
        env = StreamExecutionEnvironment(parallelism=2)
        env.enable_checkpointing(10)
        env.from_collection(list(range(500))).sink_to_file(str(tmp_path / "out"), name="out")
        return env

    assert job().execute("first", runtime="simulation", seed=1).succeeded
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    with pytest.raises(FileExistsError, match="is not an empty folder; its files are an earlier"):
        job().execute("second", runtime="simulation", seed=2)
    after = {p.name: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    assert after == before
    (tmp_path / "empty").mkdir()
    env = StreamExecutionEnvironment(parallelism=1)
    env.from_collection([1]).sink_to_file(str(tmp_path / "empty"))
    assert env.execute("into an empty folder", runtime="simulation", seed=1).succeeded


def test_cancelled_job_keeps_its_retained_checkpoints_as_verified_files(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(10)
    env.configure(
        {
            "execution.checkpointing.dir": str(tmp_path),
            "execution.checkpointing.num-retained": 2,
            "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        }
    )
    env.from_generator(record, 10**9, rate=20_000).key_by(lambda kv: kv[0]).reduce(
        lambda a, b: (a[0], a[1] + b[1])
    ).collect()
    result = env.execute("cancelled", runtime="simulation", seed=1, timeout=0.5)  # virtual s
    assert result.status is JobStatus.CANCELED
    kept = sorted(p for p in (tmp_path / result.job_id).iterdir() if p.name.startswith("chk-"))
    assert 1 <= len(kept) <= 2, [p.name for p in kept]
    for directory in kept:
        loaded = load_checkpoint(str(directory))
        assert loaded.checkpoint_id == int(directory.name.split("-")[1])
        assert len(loaded.tasks) == 4
        reduce_state = [t for task, t in loaded.tasks.items() if task.vertex.startswith("reduce")]
        assert all("states" in next(iter(t.operator_states.values())) for t in reduce_state)
        text = (directory / "_metadata").read_text()
        assert "pickle" not in text
        assert json.loads(text)["checksum"].startswith("sha256:")


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda env: env.set_parallelism(0), "parallelism must be"),
        (lambda env: env.configure({"execution.checkpointing.intervall": "1 s"}), "Did you mean"),
        (lambda env: env.build_job_graph(), "built no job"),
    ],
)
def test_bad_topologies_are_clear_errors(build: Any, message: str) -> None:
    env = StreamExecutionEnvironment()
    with pytest.raises((GraphError, ValueError), match=message):
        build(env)


def test_a_cycle_is_refused_with_the_operators_named() -> None:
    env = StreamExecutionEnvironment()
    first = env.from_collection([1]).map(lambda x: x, name="A")
    second = first.map(lambda x: x, name="B")
    env.graph.add_edge(second.nodes[0].node_id, first.nodes[0].node_id, first._partitioner)
    with pytest.raises(GraphError, match="cycle through A, B"):
        env.build_job_graph()


class KeepsAnObject(KeyedProcessFunction):
    """Keeps a value that JSON cannot hold: the asynchronous part must fail, not the task."""

    def open(self, ctx: RuntimeContext) -> None:
        self.last = ctx.get_state("last")

    def process_element(self, value: tuple[int, int], ctx: RuntimeContext) -> list[int]:
        self.last.update(threading.Lock())
        return [value[1]]


@pytest.mark.parametrize(
    ("tolerable", "runtime"),
    [(0, "threaded"), (3, "threaded"), (0, "simulation"), (3, "simulation")],
)
def test_state_that_cannot_be_written_declines_with_async_exception(
    tolerable: int, runtime: str
) -> None:
    """On threads the failure manager's verdict and the next checkpoint's failure race (the
    job fails as its JobMaster hears of the verdict: another failure can be counted first),
    so there at least ``tolerable + 1`` are counted; on the simulation exactly that many."""
    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(10)
    env.configure(
        {
            "execution.checkpointing.tolerable-failed-checkpoints": tolerable,
            "restart-strategy.type": "none",
        }
    )
    (
        env.from_generator(record, 5_000, rate=50_000)
        .key_by(lambda kv: kv[0])
        .process(KeepsAnObject())
        .name("keeper")
        .collect("out")
    )
    with protocol_events() as logs:
        if runtime == "simulation":
            result = env.execute("unserializable state", runtime="simulation", seed=1)
        else:
            result = env.execute("unserializable state", timeout=GUARD_S)
    failed = [h for h in result.checkpoints["history"] if h["status"] == "FAILED"]
    assert failed, "no checkpoint failed"
    counted = [
        h
        for h in failed
        if h["failure_message"].startswith(
            f"{CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION.message} Cause: cannot write a "
            "lock into a checkpoint (state of operator 'keeper' (process-2))"
        )
    ]
    others = {h["failure_message"] for h in failed if h not in counted}
    assert others <= {
        CheckpointFailureReason.CHECKPOINT_DECLINED_TASK_NOT_READY.message,
        # a checkpoint pending when the job fails is aborted as the coordinator suspends
        CheckpointFailureReason.CHECKPOINT_COORDINATOR_SUSPEND.message,
    }, others
    (first, *_) = _events(logs, "async_snapshot_failed")  # the cause, as Flink logs it
    assert (
        "cannot write a lock into a checkpoint (state of operator 'keeper' (process-2))"
        in (first["error"])
    )
    assert result.completed_checkpoint_ids == []
    # the failure manager fails the job at the first counted failure past the tolerable
    # number (and a job can never finish: its final checkpoint cannot succeed either)
    assert result.status is JobStatus.FAILED
    assert result.failure is not None and "CHECKPOINT_ASYNC_EXCEPTION" in result.failure
    if runtime == "simulation":
        assert len(counted) == tolerable + 1
    else:
        assert len(counted) >= tolerable + 1


def test_an_ignored_flink_setting_is_warned_about_and_create_subdir_is_honoured(
    tmp_path: Path,
) -> None:
    env = StreamExecutionEnvironment(parallelism=1)
    env.enable_checkpointing(10)
    env.configure(
        {
            "execution.checkpointing.dir": str(tmp_path),
            "state.checkpoints.create-subdir": False,
            "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
            "execution.checkpointing.incremental": True,
        }
    )
    env.from_generator(record, 10**9, rate=20_000).key_by(lambda kv: kv[0]).sum(1).collect()
    with protocol_events() as logs:
        result = env.execute("flat layout", runtime="simulation", seed=1, timeout=0.3)
    (warning,) = _events(logs, "setting_has_no_effect")
    assert warning["key"] == "execution.checkpointing.incremental"
    assert warning["log_level"] == "warning"
    assert result.retained_checkpoints
    assert all(Path(p).parent == tmp_path for p in result.retained_checkpoints)
    assert not (tmp_path / result.job_id).exists()


class Marker:
    """A record a weak reference can watch."""

    def __init__(self, n: int) -> None:
        self.n = n


def test_a_finished_jobs_records_go_with_its_result_without_waiting_for_a_full_gc() -> None:
    """No reference cycle keeps a job's collected records alive once its result is dropped
    (otherwise the next job pays for collecting them)."""
    env = StreamExecutionEnvironment(parallelism=2)
    env.from_collection(range(100)).map(Marker).collect("markers")
    result = env.execute("markers", timeout=GUARD_S)
    assert len(result.collected("markers")) == 100
    watch = weakref.ref(result.collected("markers")[0])
    gc.disable()
    try:
        del result, env
        assert watch() is None, "the records outlive their result (a reference cycle)"
    finally:
        gc.enable()


class _Where(KeyedProcessFunction):
    def open(self, ctx: RuntimeContext) -> None:
        self.subtask = ctx.subtask_index

    def process_element(self, value: int, ctx: RuntimeContext) -> list[tuple[int, int]]:
        return [(value, self.subtask)]


def test_key_by_with_a_key_hash_routes_every_key_where_that_hash_says() -> None:
    def odd_even(key: int) -> int:  # every even key one hash, every odd key another
        return key % 2

    env = StreamExecutionEnvironment(parallelism=4)
    env.from_collection(range(200)).key_by(lambda x: x, key_hash=odd_even).process(
        _Where()
    ).collect()
    result = env.execute("key hash", timeout=GUARD_S)
    where = dict(result.collected())
    for parity in (0, 1):
        subtask = key_group_for(parity, 128, odd_even) * 4 // 128
        assert {where[k] for k in range(parity, 200, 2)} == {subtask}


def test_start_new_chain_cuts_the_chain_before_the_operator_only() -> None:
    env = StreamExecutionEnvironment(parallelism=2)
    env.from_collection(range(10)).map(lambda x: x).filter(bool).start_new_chain().map(
        lambda x: x * 2
    ).collect("out")
    job = env.build_job_graph("chains")
    assert [v.name for v in job.vertices] == ["Collection Source -> Map", "Filter -> Map -> out"]
    assert sorted(env.execute("chains", timeout=GUARD_S).collected("out")) == [
        x * 2 for x in range(1, 10)
    ]
