"""Call-through actors (``actors.inline``) and the Pykka seam they rest on.

Pykka is pinned (setup.cfg); ``tests/actors/test_pykka_seam.py`` fails first if a Pykka
release moves the seam (``actors.pykka_seam``).
"""

from __future__ import annotations

import threading
from typing import Any

import pykka
import pytest

from actors.inline import InlineActor


class Recorder(InlineActor):
    last: Recorder | None = None

    def __init__(self) -> None:
        super().__init__()
        Recorder.last = self
        self.seen: list[Any] = []
        self.threads: list[str] = []
        self.started_on: str | None = None
        self.stopped = False
        self.failures: list[BaseException] = []

    def on_start(self) -> None:
        self.started_on = threading.current_thread().name

    def on_stop(self) -> None:
        self.stopped = True

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        self.failures.append(exception_value)

    def on_receive(self, message: Any) -> Any:
        if message == "boom":
            raise ValueError("boom")
        if isinstance(message, tuple) and message[0] == "echo-self":
            self.actor_ref.tell(("after", message[1]))  # re-entrant send: queued, not nested
            self.seen.append(("during", message[1]))
            return None
        self.seen.append(message)
        self.threads.append(threading.current_thread().name)
        return message


def started(ref: pykka.ActorRef[Recorder]) -> Recorder:
    assert Recorder.last is not None
    assert Recorder.last.actor_ref == ref
    return Recorder.last


def test_messages_run_on_the_senders_thread_in_order_and_start_is_synchronous() -> None:
    ref = Recorder.start()
    actor = started(ref)
    try:
        assert actor.started_on == threading.current_thread().name
        for i in range(5):
            ref.tell(i)
        worker = threading.Thread(target=lambda: ref.tell("from-worker"), name="worker")
        worker.start()
        worker.join()
        assert actor.seen == [0, 1, 2, 3, 4, "from-worker"]
        assert actor.threads[-1] == "worker"
        assert ref.ask("answer") == "answer"
    finally:
        ref.stop()
    assert actor.stopped
    assert pykka.ActorRegistry.get_all() == []


def test_a_message_sent_to_itself_is_handled_after_the_current_one() -> None:
    ref = Recorder.start()
    try:
        ref.tell(("echo-self", 1))
        assert started(ref).seen == [("during", 1), ("after", 1)]
    finally:
        ref.stop()


def test_a_failing_tell_stops_the_actor_and_reaches_on_failure_an_ask_gets_the_error() -> None:
    ref = Recorder.start()
    actor = started(ref)
    with pytest.raises(ValueError, match="boom"):
        ref.ask("boom")
    assert ref.is_alive()
    ref.tell("boom")
    assert [str(e) for e in actor.failures] == ["boom"]
    assert not ref.is_alive()
    with pytest.raises(pykka.ActorDeadError):  # as with any stopped Pykka actor
        ref.tell("too late")


def test_concurrent_senders_are_serialised() -> None:
    ref = Recorder.start()
    actor = started(ref)

    def send(base: int) -> None:
        for i in range(500):
            ref.tell(base + i)

    threads = [threading.Thread(target=send, args=(k * 1000,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ref.stop()
    assert sorted(actor.seen) == sorted(k * 1000 + i for k in range(4) for i in range(500))
    for k in range(4):  # each sender's messages keep their order
        mine = [m for m in actor.seen if k * 1000 <= m < k * 1000 + 500]
        assert mine == sorted(mine)
