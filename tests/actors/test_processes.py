"""TaskManagers as processes (``runtime="processes"``, ``actors.processes``): the same jobs
give the same output as on threads, with checkpoints, an injected failure and a TaskManager
process killed with SIGKILL; ``taskmanager.numberOfTaskSlots`` decides the processes.

A job here forks its TaskManagers (a few tens of ms each, more on a busy machine); the jobs
are small. Nothing waits on the wall clock: where a test must act while the job runs, the job
waits for it (a ``multiprocessing`` event shared with the forked TaskManagers).
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import io
import multiprocessing
import os
import pickle
import signal
import socket
import struct
import tempfile
import threading
from collections import Counter
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pykka
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from actors.faults import CrashTask, FailTask
from actors.processes import Link, ProcessRuntime, _frame, placement
from actors.protocol import CannotCross, Deliver, QueryJob
from actors.trace import TraceCollector
from ckptsim import Row, RowKind, StreamExecutionEnvironment, check_trace
from ckptsim._cli import main
from ckptsim.testing import ThreadedRun, Topology, threaded_runs
from runtime.job import JobResult, plan_execution
from runtime.network import Buffer
from runtime.status import JobStatus
from tests.conftest import threaded_examples
from tests.properties.test_soak import (
    HANG_GUARD,
    assert_output,
    checkpointing,
    finished,
    modes_and_topologies,
)

pytestmark = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="TaskManagers are forked"
)

N = 6_000
KEYS = 10
#: a guard against a hang, not a measure
GUARD_S = 300
RESTARTS: dict[str, object] = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": 3,
    "restart-strategy.fixed-delay.delay": "5 ms",
}


def record(i: int) -> tuple[int, int, int]:
    return (i % KEYS, i, 1)


def counting_env(
    settings: dict[str, object] | None = None, *, parallelism: int = 2
) -> StreamExecutionEnvironment:
    """A keyed running count (each record's index and its key's count so far), into an
    exactly-once collect sink, with checkpoints every 10 ms."""
    env = StreamExecutionEnvironment(parallelism=parallelism)
    env.enable_checkpointing(10)
    env.configure({"ckptsim.buffer.records": 50, **RESTARTS, **(settings or {})})
    (
        env.from_generator(record, N, rate=30_000)
        .uid("numbers")
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: (a[0], b[1], a[2] + b[2]))
        .uid("counts")
        .collect("counts")
    )
    return env


def observe(result: JobResult) -> tuple[Counter[int], dict[int, list[int]]]:
    indices: Counter[int] = Counter()
    counts: dict[int, list[int]] = {}
    for k, i, c in result.collected("counts"):
        indices[i] += 1
        counts.setdefault(k, []).append(c)
    return indices, {k: sorted(v) for k, v in sorted(counts.items())}


def failure_free() -> tuple[Counter[int], dict[int, list[int]]]:
    return Counter(range(N)), {k: list(range(1, N // KEYS + 1)) for k in range(KEYS)}


def events(trace: TraceCollector, name: str) -> list[MutableMapping[str, Any]]:
    return [e for e in trace.events if e["event"] == name]


@pytest.mark.parametrize(
    "settings",
    [{}, {"execution.checkpointing.unaligned.enabled": True}],
    ids=["aligned", "unaligned"],
)
def test_a_keyed_count_with_checkpoints_gives_the_threaded_output(
    settings: dict[str, object],
) -> None:
    threaded = counting_env(settings).execute("count", timeout=GUARD_S)
    trace = TraceCollector()
    result = counting_env(settings).execute(
        "count", runtime="processes", trace=trace, timeout=GUARD_S
    )
    assert result.status is JobStatus.FINISHED, result.failure
    assert observe(result) == observe(threaded) == failure_free()
    assert result.completed_checkpoint_ids
    assert events(trace, "job_submitted")[0]["runtime"] == "processes"
    # the TaskManagers' protocol events reach the run's trace, which holds the invariants
    assert events(trace, "checkpoint_taken") and events(trace, "barrier_received")
    assert check_trace(trace.events).violation is None


@pytest.mark.parametrize(
    "fault",
    [FailTask(task="counts#1", at_record=2_000), CrashTask(task="numbers#0", at_record=2_000)],
    ids=["fail-task", "crash-task"],
)
def test_an_injected_failure_fails_over_to_the_exact_output(fault: Any) -> None:
    trace = TraceCollector()
    result = counting_env().execute(
        "count", runtime="processes", faults=[fault], trace=trace, timeout=GUARD_S
    )
    assert result.status is JobStatus.FINISHED, result.failure
    assert result.restarts == 1  # the fault struck once: the restarted TaskManagers know
    assert [e["fault"] for e in events(trace, "fault_injected")] == [repr(fault)]
    assert observe(result) == failure_free()
    assert check_trace(trace.events).violation is None


class _KillOnCheckpoint:
    """A tracer that kills the TaskManager of subtask 1 with SIGKILL when the first
    checkpoint completes (or when ``kill`` is called first), then opens ``killed`` (which the
    job waits for)."""

    def __init__(self, runtime: ProcessRuntime, killed: Any) -> None:
        self.level = TraceCollector().level
        self.events: list[MutableMapping[str, Any]] = []
        self.runtime = runtime
        self.killed = killed
        self.victim: int | None = None
        self._lock = threading.Lock()

    def record(self, event: MutableMapping[str, Any]) -> None:
        with self._lock:
            self.events.append({"seq": len(self.events) + 1, **event})
            if event["event"] == "checkpoint_completed":
                self._kill()

    def kill(self) -> None:
        with self._lock:
            self._kill()

    def _kill(self) -> None:
        if self.victim is None:
            self.victim = self.runtime.pids()[-1]
            os.kill(self.victim, signal.SIGKILL)
            self.killed.set()


def test_a_task_manager_killed_with_sigkill_fails_over_to_the_exact_output() -> None:
    context = multiprocessing.get_context("fork")
    killed, held = context.Event(), context.Event()

    def hold_the_last_record(r: tuple[int, int, int]) -> tuple[int, int, int]:
        # the job cannot finish before the kill (closures reach the forked TaskManagers)
        if r[1] >= N - 2:
            held.set()
            killed.wait()
        return r

    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(10)
    env.configure({"ckptsim.buffer.records": 50, **RESTARTS})
    (
        env.from_generator(record, N, rate=30_000)
        .uid("numbers")
        .map(hold_the_last_record)
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: (a[0], b[1], a[2] + b[2]))
        .uid("counts")
        .collect("counts")
    )
    runtime = ProcessRuntime(slots=1)
    tracer = _KillOnCheckpoint(runtime, killed)

    # on a busy machine the sources may reach their last records before a checkpoint
    # completed: a held task takes no barrier, so none would; then the kill comes now (the
    # job restarts from no checkpoint, and its output is as exact)
    def kill_when_held() -> None:
        held.wait()
        tracer.kill()

    waiter = threading.Thread(target=kill_when_held, daemon=True)
    waiter.start()
    result = env.execute("count", runtime=runtime, trace=tracer, timeout=GUARD_S)
    held.set()  # the waiter ends (the kill was done)
    waiter.join()
    assert tracer.victim is not None
    assert result.status is JobStatus.FINISHED, result.failure
    assert result.restarts == 1
    failovers = [e for e in tracer.events if e["event"] == "job_failover"]
    assert len(failovers) == 1
    assert f"(pid {tracer.victim}) lost: killed by SIGKILL" in failovers[0]["cause"]
    assert observe(result) == failure_free()
    assert check_trace(tracer.events).violation is None
    # the restarted job ran in new TaskManagers; none is left
    with pytest.raises(ProcessLookupError):
        os.kill(tracer.victim, 0)
    assert runtime.pids() == []


def test_slots_decide_how_many_subtasks_share_a_task_manager() -> None:
    env = counting_env(parallelism=4)
    plan = plan_execution(env.build_job_graph("count"), env.configuration)
    assert set(placement(plan, 1).values()) == {0, 1, 2, 3}
    two = placement(plan, 2)
    assert {str(t) for t, k in two.items() if k == 1} == {
        "numbers#2",
        "numbers#3",
        "counts#2",
        "counts#3",
    }
    assert set(placement(plan, 4).values()) == {0}

    pids: set[int] = set()

    def where(r: tuple[int, int, int]) -> tuple[int, int, int]:
        pids.add(os.getpid())  # in the TaskManager's copy: sent back with the records below
        return (r[0], r[1], os.getpid())

    env = StreamExecutionEnvironment(parallelism=4)
    env.configure({"taskmanager.numberOfTaskSlots": 2, "ckptsim.runtime": "processes"})
    env.from_collection(range(400)).map(record).map(where).collect("where")
    result = env.execute("where", timeout=GUARD_S)
    assert result.status is JobStatus.FINISHED, result.failure
    processes = {pid for _, _, pid in result.collected("where")}
    assert len(processes) == 2 and os.getpid() not in processes
    assert not pids  # the user function ran in the TaskManagers, not here


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="pinning needs sched_setaffinity and two CPUs",
)
def test_task_managers_that_fill_the_cpus_evenly_run_on_one_cpu_each() -> None:
    cpus = sorted(os.sched_getaffinity(0))

    def cpus_of(run: int) -> Any:
        def where(i: int) -> tuple[int, int, tuple[int, ...]]:
            return (run, os.getpid(), tuple(sorted(os.sched_getaffinity(0))))

        return where

    env = StreamExecutionEnvironment(parallelism=len(cpus))
    env.from_collection(range(100)).map(cpus_of(0)).collect("even")
    even = env.execute("pinned", runtime="processes", timeout=GUARD_S)
    assert even.status is JobStatus.FINISHED, even.failure
    by_process = {pid: allowed for _, pid, allowed in even.collected("even")}
    assert len(by_process) == len(cpus)  # one TaskManager per CPU, each bound to its own
    assert sorted(by_process.values()) == [(cpu,) for cpu in cpus]

    env = StreamExecutionEnvironment(parallelism=1)
    env.from_collection(range(10)).map(cpus_of(2)).collect("lone")
    lone = env.execute("not pinned", runtime="processes", timeout=GUARD_S)
    assert lone.status is JobStatus.FINISHED, lone.failure
    assert {allowed for _, _, allowed in lone.collected("lone")} == {tuple(cpus)}

    env = StreamExecutionEnvironment(parallelism=len(cpus))
    env.configure({"ckptsim.processes.pin-cpus": False})
    env.from_collection(range(100)).map(cpus_of(3)).collect("free")
    free = env.execute("left to the scheduler", runtime="processes", timeout=GUARD_S)
    assert free.status is JobStatus.FINISHED, free.failure
    assert {allowed for _, _, allowed in free.collected("free")} == {tuple(cpus)}


def test_no_actor_thread_or_process_is_left_after_a_job() -> None:
    before = set(threading.enumerate())  # a thread of an earlier test may still be ending
    result = counting_env().execute("cleanup", runtime="processes", timeout=GUARD_S)
    assert result.succeeded
    assert pykka.ActorRegistry.get_all() == []
    assert not set(threading.enumerate()) - before, "threads left behind"
    assert multiprocessing.active_children() == []


def test_a_sink_folder_that_cannot_be_made_is_refused_before_deployment_as_on_threads(
    tmp_path: Path,
) -> None:
    """(It failed the deployment, on both runtimes alike; now it is refused before the job
    runs, on both alike.)"""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    failures = []
    for runtime in ("threaded", "processes"):
        env = StreamExecutionEnvironment(parallelism=2)
        env.from_collection(range(10)).sink_to_file(str(blocker / "out"))
        with pytest.raises(NotADirectoryError) as refused:
            env.execute("unopenable", runtime=runtime, timeout=GUARD_S)
        failures.append(str(refused.value))
    assert failures[0] == failures[1]
    assert f"{blocker} is a file, not a folder" in failures[1]
    assert multiprocessing.active_children() == []


def test_the_command_line_runs_a_script_on_task_manager_processes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "job.py"
    script.write_text(
        "import os\n"
        "from ckptsim import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment(parallelism=2)\n"
        "env.from_collection(range(100)).map(lambda x: (x, os.getpid())).collect('out')\n"
        "result = env.execute('script')\n"
        "print('processes', len({p for _, p in result.collected('out')} - {os.getpid()}))\n"
        "print('sum', sum(x for x, _ in result.collected('out')))\n"
    )
    code = main(["run", str(script), "-D", "ckptsim.runtime=processes"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "processes 2" in out and "sum 4950" in out


class _AskOnCheckpoint:
    """A tracer that, when the first checkpoint completes, asks every task for its progress
    as the progress line and the REST API do (``ref.proxy().progress()``), then opens
    ``release`` (which the job waits for)."""

    def __init__(self, release: Any) -> None:
        self.level = TraceCollector().level
        self.release = release
        self.master: pykka.ActorRef[Any] | None = None
        self.answers: dict[str, dict[str, Any]] = {}
        self._asked = False
        self._lock = threading.Lock()

    def job_started(self, *, master: pykka.ActorRef[Any], **_: Any) -> None:
        self.master = master

    def job_ended(self, job_id: str, result: JobResult) -> None:
        pass

    def record(self, event: MutableMapping[str, Any]) -> None:
        if event["event"] != "checkpoint_completed":
            return
        with self._lock:
            if self._asked:
                return
            self._asked = True
        threading.Thread(target=self._ask, daemon=True).start()

    def _ask(self) -> None:
        try:
            assert self.master is not None
            info: dict[str, Any] = self.master.ask(QueryJob(), block=True, timeout=GUARD_S)
            futures = {t: ref.proxy().progress() for t, ref in info["tasks"].items()}
            self.answers = {t: f.get(timeout=GUARD_S) for t, f in futures.items()}
        finally:
            self.release.set()


def test_a_running_task_answers_progress_questions_from_its_task_manager() -> None:
    release = multiprocessing.get_context("fork").Event()

    def hold_the_last_record(r: tuple[int, int, int]) -> tuple[int, int, int]:
        if r[1] >= N - 2:
            release.wait()
        return r

    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(10)
    env.configure({"ckptsim.buffer.records": 50})
    (
        env.from_generator(record, N, rate=30_000)
        .map(hold_the_last_record)
        .key_by(lambda r: r[0])
        .reduce(lambda a, b: (a[0], b[1], a[2] + b[2]))
        .collect("counts")
    )
    asker = _AskOnCheckpoint(release)
    result = env.execute("count", runtime="processes", trace=asker, observer=asker, timeout=GUARD_S)
    assert result.status is JobStatus.FINISHED, result.failure
    assert len(asker.answers) == 4
    for answer in asker.answers.values():
        assert answer["status"] in {"RUNNING", "DATA_ENDED", "FINISHED"}
        assert "records_in" in answer and "io" in answer


class ProcessRun(ThreadedRun):
    """``ckptsim.testing.ThreadedRun`` on TaskManager processes: the same drawn faults, the
    same trace check."""

    def run(
        self,
        build: Any,
        settings: Any = None,
        *,
        check: bool = True,
        timeout: float = 120.0,
        name: str = "process job",
        shrink_seconds: float | None = None,
    ) -> JobResult:
        return self._run(
            build,
            settings,
            check=check,
            name=name,
            shrink_seconds=shrink_seconds,
            runtime="processes",
            timeout=timeout,
        )


@settings(max_examples=threaded_examples(ci=4), deadline=None)
@given(drawn=modes_and_topologies(), run=threaded_runs(), interval=st.integers(10, 25))
def test_on_task_manager_processes_the_committed_output_after_faults_is_the_failure_free_one(
    drawn: tuple[str, Topology], run: ThreadedRun, interval: int
) -> None:
    """The soak property (``tests/properties/test_soak.py``) on TaskManager processes: random
    topologies, one to three faults of every kind (they strike in the TaskManagers and the
    JobManager alike), every checkpointing mode: the committed output is the failure-free
    one (at-least-once: nothing lost), and the trace passes the trace checker."""
    mode, topology = drawn
    on_processes = ProcessRun(faults=run.faults)
    note(f"mode: {mode}; topology: {topology!r}; run: {on_processes!r}")
    with tempfile.TemporaryDirectory(prefix="ckptsim-procs-") as tmp:
        result = on_processes.run(
            topology.build,
            checkpointing(mode, interval, Path(tmp) / "checkpoints", retained=2),
            timeout=HANG_GUARD,
        )
    finished(result, on_processes, mode)
    assert_output(mode, topology, topology.observe(result))


@dataclasses.dataclass(frozen=True)
class _Reading:
    sensor: str
    value: float


_Point = collections.namedtuple("_Point", "x y")


def _every_kind_of_record() -> list[Any]:
    """Records of the kinds a user collects (module-level classes: pickle finds them)."""
    changed = Row(name="a", count=2)
    changed.set_row_kind(RowKind.UPDATE_AFTER)
    return [
        (1, "a"),
        changed,
        Row(1, None, 2.5),
        {"k": [1, (2, 3)], 4: None, (5, 6): {"nested": b"x"}},
        decimal.Decimal("1.10"),
        datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=datetime.UTC),
        datetime.datetime(2024, 1, 2, 3, 4, 5),
        datetime.date(2024, 2, 29),
        datetime.timedelta(days=1, microseconds=7),
        None,
        2**100,
        -(2**70),
        b"\x00\xff",
        bytearray(b"ab"),
        True,
        1.5,
        float("inf"),
        1 + 2j,
        "\u00fcn\u00efcode \u2713",
        frozenset({1, 2}),
        {3},
        _Point(1, 2),
        _Reading("s1", 0.25),
        RowKind.DELETE,
        (1, 1.0, True),
        [[], (), {}, ""],
    ]


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same type, all the way down (a bool stays a bool, a namedtuple a
    namedtuple, a Decimal keeps its digits, a row its kind and field names)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, Row):
        return (
            a == b
            and a.get_row_kind() is b.get_row_kind()
            and a.get_field_names() == b.get_field_names()
        )
    if isinstance(a, decimal.Decimal):
        return str(a) == str(b)
    return bool(a == b)


@pytest.mark.parametrize("interval", [None, 10], ids=["no-checkpoints", "checkpoints"])
def test_records_of_every_kind_cross_between_processes_and_come_back_as_they_were(
    interval: int | None,
) -> None:
    """Through a rebalance (half of them cross between TaskManagers) into a collect sink
    (published at the end, or committed in transactions), each record comes back equal
    and of its own type."""
    records = _every_kind_of_record()
    env = StreamExecutionEnvironment(parallelism=2)
    if interval is not None:
        env.enable_checkpointing(interval)
    (
        env.from_collection(list(enumerate(records)))
        .rebalance()
        .map(lambda indexed: indexed)
        .collect("out")
    )
    result = env.execute("kinds", runtime="processes", timeout=GUARD_S)
    assert result.status is JobStatus.FINISHED, result.failure
    out = sorted(result.collected("out"), key=lambda indexed: indexed[0])
    assert [i for i, _ in out] == list(range(len(records))), "each record once"
    for (_, back), sent in zip(out, records, strict=True):
        assert _same(back, sent), f"{sent!r} came back as {back!r}"


def test_a_record_that_cannot_cross_to_another_process_fails_the_job_naming_why() -> None:
    env = StreamExecutionEnvironment(parallelism=2)
    (
        env.from_collection(range(100))
        .map(lambda x: (x % 2, threading.Lock()))  # locks cannot be pickled
        .key_by(lambda r: r[0])
        .map(lambda r: r[0])
        .collect()
    )
    result = env.execute("locks", runtime="processes", timeout=GUARD_S)
    assert result.status is JobStatus.FAILED
    assert result.failure is not None
    assert "cannot cross to another process" in result.failure, result.failure
    assert "must be picklable" in result.failure
    # one line naming the operator that emitted it, the record's type and what to do
    assert "map 'Map'" in result.failure and "of type tuple" in result.failure
    assert "runtime='threaded'" in result.failure and "\n" not in result.failure
    assert "bug in ckptsim" not in result.failure


def test_a_collect_sink_value_that_cannot_cross_is_named_and_the_command_line_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "job.py"
    script.write_text(
        "import threading\n"
        "from ckptsim import StreamExecutionEnvironment\n"
        "env = StreamExecutionEnvironment(parallelism=1)\n"
        "env.from_collection(range(10)).map(lambda x: threading.Lock()).collect('locks')\n"
        "env.execute('locks')\n"
    )
    code = main(["run", str(script), "-q", "-D", "ckptsim.runtime=processes"])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.startswith("ckptsim run:")]
    assert len(lines) == 1, err
    assert "collect sink 'locks'" in lines[0] and "_thread.lock" in lines[0], lines[0]
    assert "must be picklable" in lines[0] and "runtime='threaded'" in lines[0]


def test_a_frame_pickles_records_without_a_memo_and_a_cycle_with_one() -> None:
    shared = {"k": 1}
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)
    for message in ([(1, "a"), (2, "b")], [shared, shared], cyclic):
        frame = _frame("channel:1", message)
        (length,) = struct.unpack("!Q", frame[:8])
        assert length == len(frame) - 8
        address, back = pickle.loads(frame[8:])
        assert address == "channel:1"
        if message is cyclic:
            assert back[0] == 1 and back[1] is back  # the memo kept the cycle
        else:
            assert back == message
    # records cross independently, as Flink's serializers write them: no shared identity
    _, (first, second) = pickle.loads(_frame("channel:1", [shared, shared])[8:])
    assert first == second and first is not second
    with pytest.raises(CannotCross, match=r"of type _thread\.lock"):
        _frame("channel:1", Deliver(Buffer([1, threading.Lock()], 16)))


def test_a_link_keeps_each_senders_order_when_the_socket_is_full() -> None:
    """A sender writes its frame itself while nothing waits for the writer thread, as far as
    the socket takes it; once the socket is full (its reader is not reading yet) the rest
    goes through the writer thread, and what is sent later waits behind it: the other end
    gets every sender's messages whole and in order."""
    ours, theirs = socket.socketpair()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    got: list[tuple[str, Any]] = []
    all_arrived = threading.Event()
    senders, per_sender = 3, 40
    payload = b"x" * 20_000  # many socket buffers' worth in all: most frames wait

    def receive(address: str, message: Any) -> None:
        got.append((address, message))
        if len(got) == senders * per_sender:
            all_arrived.set()

    sending = Link(ours, "test-out", lambda a, m: None)
    receiving = Link(theirs, "test-in", receive)
    sending.start(reading=False)

    def send(name: str) -> None:
        for i in range(per_sender):
            sending.send(name, (i, payload))

    threads = [threading.Thread(target=send, args=(f"s{k}",)) for k in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    receiving.start(reading=True)
    try:
        assert all_arrived.wait(60), f"{len(got)} of {senders * per_sender} arrived"
        for k in range(senders):
            mine = [message for address, message in got if address == f"s{k}"]
            assert [i for i, _ in mine] == list(range(per_sender))
            assert all(data == payload for _, data in mine)
    finally:
        sending.close()
        receiving.close()


class _SlowSocket:
    """A socket whose ``send`` takes ``room`` bytes at most and whose ``sendall`` (the writer
    thread's) waits for ``release``: what it was given, in order, is ``wire``."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.release = threading.Event()
        self.wire = bytearray()

    def send(self, data: bytes, flags: int = 0) -> int:
        taken = min(self.room, len(data))
        if not taken:
            raise BlockingIOError
        self.room -= taken
        self.wire += data[:taken]
        return taken

    def sendall(self, data: bytes) -> None:
        assert self.release.wait(60), "never released"
        self.wire += data

    def gettimeout(self) -> float | None:
        return None

    def makefile(self, mode: str, buffering: int) -> Any:
        return io.BytesIO()

    def shutdown(self, how: int) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_frame_sent_while_the_writer_has_frames_waits_behind_them() -> None:
    """The sender writes a frame itself only while no frame waits for the writer thread: a
    frame the socket took in part has its rest written first, though the socket has room
    again by the time the next one is sent."""
    sock = _SlowSocket(room=1 << 20)
    link = Link(sock, "test", lambda a, m: None)  # type: ignore[arg-type]
    link.start(reading=False)
    zeroth, first, second = _frame("z", 0), _frame("a", list(range(100))), _frame("b", "then")
    link.send("z", 0)
    assert bytes(sock.wire) == zeroth  # written by the sender: the writer is held
    sock.room = 10
    link.send("a", list(range(100)))  # 10 bytes now, the rest to the writer
    sock.room = 1 << 20
    link.send("b", "then")
    sock.release.set()
    link.close(flush=True)
    assert bytes(sock.wire) == zeroth + first + second
