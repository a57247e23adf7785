"""Call-through actors: a Pykka actor whose inbox handles each message on the sender's thread.

Built on Pykka's actor seam (``_create_actor_inbox``, ``_create_future``,
``_start_actor_loop``), like the deterministic simulation. A lock serialises the messages, so
the actor still sees them one at a time, in the order they were put, with its usual lifecycle
(``on_start``, ``on_stop``, ``on_failure``). It suits actors whose handlers never block and
only ``tell`` others: the input channels, which are pure relays between two tasks. Running
them on the threads of the tasks they connect saves two thread switches per buffer.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import pykka
from pykka._envelope import Envelope


def deliver(actor: pykka.Actor, envelope: Envelope[Any]) -> None:
    """Handle one message as Pykka's own actor loop does (reply, or failure hooks)."""
    if actor.actor_stopped.is_set():
        if envelope.reply_to is not None:  # as Pykka answers mail left to a stopped actor
            envelope.reply_to.set_exception(
                exc_info=(
                    pykka.ActorDeadError,
                    pykka.ActorDeadError(f"{actor.actor_ref} stopped before handling the message"),
                    None,
                )
            )
        return
    try:
        response = actor._handle_receive(envelope.message)
        if envelope.reply_to is not None:
            envelope.reply_to.set(response)
    except Exception:
        if envelope.reply_to is not None:
            envelope.reply_to.set_exception()
        else:
            actor._handle_failure(*sys.exc_info())
            try:
                actor.on_failure(*sys.exc_info())
            except Exception:
                actor._handle_failure(*sys.exc_info())


class _CallThroughInbox:
    def __init__(self) -> None:
        self.actor: InlineActor | None = None
        self.lock = threading.RLock()
        self.backlog: list[Envelope[Any]] = []

    def put(self, envelope: Envelope[Any], /) -> None:
        actor = self.actor
        assert actor is not None
        with self.lock:
            if self.backlog or getattr(actor, "_inline_busy", False):
                self.backlog.append(envelope)  # a message sent to itself while handling one
                return
            actor._inline_busy = True
            try:
                deliver(actor, envelope)
                while self.backlog:
                    deliver(actor, self.backlog.pop(0))
            finally:
                actor._inline_busy = False

    def get(self) -> Envelope[Any]:
        raise RuntimeError("a call-through inbox is never read by a loop")

    def empty(self) -> bool:
        return not self.backlog


class InlineActor(pykka.ThreadingActor):
    """A ``ThreadingActor`` without a thread: messages run on the sender's thread."""

    _inline_busy = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        inbox = self.actor_inbox
        assert isinstance(inbox, _CallThroughInbox)
        inbox.actor = self

    @staticmethod
    def _create_actor_inbox() -> Any:
        return _CallThroughInbox()

    def _start_actor_loop(self) -> None:
        self._actor_loop_setup()  # on_start, on the starting thread
