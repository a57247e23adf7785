"""Call-through actors: a Pykka actor whose inbox handles each message on the sender's thread.

Built on Pykka's actor seam (``actors.pykka_seam``: its own inbox, its loop started at
once), like the deterministic simulation. A lock serialises the messages, so
the actor still sees them one at a time, in the order they were put, with its usual lifecycle
(``on_start``, ``on_stop``, ``on_failure``). It suits actors whose handlers never block and
only ``tell`` others: the input channels, which are pure relays between two tasks. Running
them on the threads of the tasks they connect saves two thread switches per buffer.
"""

from __future__ import annotations

import threading
from typing import Any

from actors.pykka_seam import Envelope, SeamActor, deliver, run_on_start


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


class InlineActor(SeamActor):
    """A ``ThreadingActor`` without a thread: messages run on the sender's thread."""

    _inline_busy = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        inbox = self.actor_inbox
        assert isinstance(inbox, _CallThroughInbox)
        inbox.actor = self

    @classmethod
    def make_inbox(cls) -> Any:
        return _CallThroughInbox()

    def start_loop(self) -> None:
        run_on_start(self)  # on_start, on the starting thread
