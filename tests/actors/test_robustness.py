"""Failures around a job end it with a clear cause, never hang, and touch only its own things
(found in review: a crashing JobMaster hung the run; one job's cleanup stopped another's
actors; an unwritable path leaked threads)."""

from __future__ import annotations

import io
import threading
from pathlib import Path
from typing import Any

import pykka
import pytest

from actors import launcher
from actors.connectors import PrintConnector
from actors.inline import InlineActor
from actors.pykka_seam import Envelope, deliver
from ckptsim import KeyedProcessFunction, RuntimeContext, StreamExecutionEnvironment
from ckptsim._cli import main
from ckptsim._logging import _CurrentStderr
from runtime.checkpoint import TaskId
from runtime.coordinator import CheckpointCoordinator
from runtime.messages import AcknowledgeCheckpoint
from runtime.status import JobStatus


class HoldsALock(KeyedProcessFunction):
    def __init__(self) -> None:
        self.lock = threading.Lock()  # cannot be copied per subtask

    def process_element(self, value: Any, ctx: RuntimeContext) -> list[Any]:
        return [value]


def small_job(**settings: Any) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment(parallelism=2)
    env.configure(settings)
    env.from_collection(range(100)).map(lambda x: (x % 3, x)).key_by(lambda r: r[0]).sum(
        1
    ).collect()
    return env


@pytest.mark.parametrize("case", ["unwritable sink", "uncopyable function"])
def test_a_deployment_that_fails_fails_the_job_with_its_cause(case: str, tmp_path: Path) -> None:
    """(An unwritable sink folder is refused before the job runs, since its deployment
    failure was a usage error found late; nothing is left behind either way.)"""
    before = set(threading.enumerate())  # a thread of an earlier test may still be ending
    env = StreamExecutionEnvironment(parallelism=2)
    stream = env.from_collection(range(10)).map(lambda x: (x, x))
    if case == "unwritable sink":
        blocker = tmp_path / "a-file"
        blocker.write_text("")
        stream.sink_to_file(str(blocker / "out"))  # a directory inside a file
        with pytest.raises(NotADirectoryError, match="cannot be created"):
            env.execute(case, timeout=600)
    else:
        stream.key_by(lambda r: r[0]).process(HoldsALock()).collect()
        result = env.execute(case, timeout=600)  # a guard against a hang, not a measure
        assert result.status is JobStatus.FAILED
        expected = "deployment failed: TypeError"
        assert result.failure is not None and result.failure.startswith(expected), result.failure
    assert pykka.ActorRegistry.get_all() == []
    assert not set(threading.enumerate()) - before, "threads left behind"


def test_a_job_ending_does_not_stop_another_jobs_actors() -> None:
    results: list[Any] = []
    long = StreamExecutionEnvironment(parallelism=2)
    long.from_generator(lambda i: (i % 5, 1), 4_000, rate=40_000).key_by(lambda r: r[0]).sum(
        1
    ).collect()
    other = threading.Thread(target=lambda: results.append(long.execute("long", timeout=600)))
    other.start()
    for _ in range(3):
        assert small_job().execute("short", timeout=600).succeeded
    other.join()
    (result,) = results
    assert result.status is JobStatus.FINISHED, result.failure
    assert len(result.collected()) == 4_000


def test_a_cancelled_job_whose_function_never_returns_is_given_up_with_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    monkeypatch.setattr(launcher, "CANCEL_GRACE_S", 0.2)
    env = StreamExecutionEnvironment(parallelism=1)
    env.from_collection(range(10)).map(lambda x: release.wait() and x).collect()
    try:
        with pytest.raises(launcher.JobCancellationTimeout, match="did not stop within"):
            env.execute("stuck", timeout=0.2)
    finally:
        release.set()  # let the abandoned (daemon) task thread end


def test_an_unusable_checkpoint_directory_leaks_no_thread(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for _ in range(3):
        with pytest.raises(OSError):
            small_job(**{"execution.checkpointing.dir": str(blocker / "cp")}).execute("x")
    assert not [t.name for t in threading.enumerate() if t.name.startswith("ckptsim-")]


def test_logging_to_a_closed_pipe_does_not_break_the_job(monkeypatch: pytest.MonkeyPatch) -> None:
    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError("the reader left")

        def flush(self) -> None:
            raise BrokenPipeError("the reader left")

    monkeypatch.setattr("sys.stderr", ClosedPipe())
    stderr = _CurrentStderr()
    assert stderr.write("a log line\n") == 0
    stderr.flush()


def test_a_print_sink_whose_reader_left_stops_writing_and_does_not_fail() -> None:
    class ClosedPipe(io.StringIO):
        writes = 0

        def write(self, text: str) -> int:
            self.writes += 1
            raise BrokenPipeError("the reader left")

        def flush(self) -> None:
            raise BrokenPipeError("the reader left")

    pipe = ClosedPipe()
    sink = PrintConnector(TaskId("sink", 0), 1, stream=pipe)
    sink.write(["a", "b"])  # no exception: the job goes on
    sink.write(["c"])
    sink.pre_commit(1)
    sink.close(finished=True)
    assert sink.reader_left and pipe.writes == 1  # nothing more is formatted or written


def test_a_message_left_to_a_stopped_call_through_actor_gets_an_answer() -> None:
    class Quiet(InlineActor):
        def on_receive(self, message: Any) -> Any:
            return message

    ref = Quiet.start()
    ref.stop()
    future = pykka.ThreadingFuture[Any]()
    inbox = ref.actor_inbox
    actor = inbox.actor  # type: ignore[attr-defined]
    deliver(actor, Envelope("late", reply_to=future))
    with pytest.raises(pykka.ActorDeadError, match="stopped before handling"):
        future.get(timeout=1)


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "job.py"
    path.write_text(body)
    return str(path)


def test_an_unwritable_stats_file_is_refused_before_the_job_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = "def build(env):\n    env.from_collection([1]).collect()\n"
    code = main(["run", script(tmp_path, body), "--stats", str(tmp_path / "no" / "s.json")])
    assert code == 2
    captured = capsys.readouterr()
    assert "cannot write the stats file" in captured.err and "FINISHED" not in captured.out


def test_a_build_function_that_executes_the_job_itself_runs_it_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = "def build(env):\n    env.from_collection([1, 2]).collect()\n    env.execute('mine')\n"
    assert main(["run", script(tmp_path, body)]) == 0
    assert capsys.readouterr().out.count("FINISHED") == 1


def test_a_command_line_setting_overrides_the_scripts_under_either_spelling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = (
        "def build(env):\n"
        "    env.configure({'execution.checkpointing.num-retained': 3})\n"
        "    env.from_collection([1, 2]).collect()\n"
    )
    assert main(["run", script(tmp_path, body), "-D", "state.checkpoints.num-retained=2"]) == 0
    assert "FINISHED" in capsys.readouterr().out


def test_a_crash_of_the_checkpoint_coordinator_fails_the_job_with_its_cause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bug in the coordinator's core (here: it raises on the first acknowledgement) is not
    a task failure to restart from; the job fails naming it, instead of waiting for
    checkpoints and statistics that never come."""
    handle = CheckpointCoordinator.handle

    def buggy(self: CheckpointCoordinator, msg: object, now: int) -> Any:
        if isinstance(msg, AcknowledgeCheckpoint):
            raise RuntimeError("a bug in the coordinator")
        return handle(self, msg, now)  # type: ignore[arg-type]

    monkeypatch.setattr(CheckpointCoordinator, "handle", buggy)
    env = StreamExecutionEnvironment(parallelism=2)
    env.enable_checkpointing(10)
    env.from_generator(lambda i: (i % 5, 1), 50_000, rate=100_000).key_by(lambda r: r[0]).sum(
        1
    ).collect()
    result = env.execute("coordinator bug", runtime="simulation", seed=1, timeout=60)
    assert result.status is JobStatus.FAILED
    assert (
        result.failure == "checkpoint coordinator crashed: RuntimeError: a bug in the coordinator"
    )
    assert pykka.ActorRegistry.get_all() == []
