"""The contract of Pykka's private seam (``actors.pykka_seam``), which the simulation and the
call-through actors plug into: a Pykka release that moves it fails here first, and importing
ckptsim under an unsupported Pykka is a clear error naming the release to install."""

from __future__ import annotations

import threading
from typing import Any

import pykka
import pytest

from actors import pykka_seam
from actors.pykka_seam import (
    SEAM_METHODS,
    Envelope,
    PykkaSeamError,
    SeamActor,
    ThreadingFuture,
    check_pykka,
    deliver,
)


def test_the_installed_pykka_has_every_seam_method_the_runtimes_use() -> None:
    check_pykka()
    for name in SEAM_METHODS:
        assert callable(getattr(pykka.ThreadingActor, name)), name
    assert issubclass(ThreadingFuture, pykka.Future)
    envelope = Envelope("m", reply_to=None)
    assert envelope.message == "m" and envelope.reply_to is None


@pytest.mark.parametrize("version", ["5.0.0", "3.1.1", "unknown", ""])
def test_another_pykka_release_is_refused_with_what_to_install(version: str) -> None:
    with pytest.raises(PykkaSeamError, match=r"pip install 'pykka==4\.5\.0'"):
        check_pykka(version)


def test_a_seam_method_gone_from_pykka_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(pykka.Actor, "_handle_receive")
    with pytest.raises(PykkaSeamError, match="has no _handle_receive on ThreadingActor"):
        check_pykka("4.5.0")


class Plain(SeamActor):
    def on_receive(self, message: Any) -> Any:
        if message == "boom":
            raise ValueError("boom")
        return (message, threading.current_thread().name)


def test_a_seam_actor_without_overrides_is_an_ordinary_threading_actor() -> None:
    ref = Plain.start()
    try:
        message, thread = ref.ask("hi", timeout=600)  # a guard against a hang, not a measure
        assert message == "hi" and thread != threading.current_thread().name
    finally:
        ref.stop()


class Failing(SeamActor):
    last: Failing | None = None

    def __init__(self) -> None:
        super().__init__()
        self.failures: list[BaseException] = []
        Failing.last = self

    @classmethod
    def make_inbox(cls) -> Any:
        return pykka.ThreadingActor._create_actor_inbox()

    def start_loop(self) -> None:
        pykka_seam.run_on_start(self)  # no thread: the test delivers by hand

    def on_receive(self, message: Any) -> Any:
        if message == "boom":
            raise ValueError("boom")
        return message * 2

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        self.failures.append(exception_value)


def test_deliver_answers_a_question_and_sends_a_failure_to_on_failure() -> None:
    ref = Failing.start()
    actor = Failing.last
    assert actor is not None and actor.actor_ref == ref
    try:
        future = ThreadingFuture[Any]()
        deliver(actor, Envelope(21, reply_to=future))
        assert future.get(timeout=1) == 42
        asked = ThreadingFuture[Any]()
        deliver(actor, Envelope("boom", reply_to=asked))
        with pytest.raises(ValueError, match="boom"):
            asked.get(timeout=1)  # an asker gets the error, the actor lives on
        assert actor.failures == []
        deliver(actor, Envelope("boom", reply_to=None))  # told: on_failure hears of it
        assert [str(e) for e in actor.failures] == ["boom"]
    finally:
        pykka_seam.stop_now(actor)
    assert not ref.is_alive()
