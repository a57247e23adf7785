"""Pykka's private actor seam, in one module: the only place ckptsim touches Pykka internals.

The deterministic simulation (``actors.simulation``) and the call-through actors
(``actors.inline``) replace where a Pykka actor keeps its mail, how its futures are made and
how its loop starts. Pykka leaves that to "implementors of new actor types" through private
methods (``_create_actor_inbox``, ``_create_future``, ``_start_actor_loop``), and handles one
message in ``_actor_loop_setup``, ``_handle_receive``, ``_handle_failure`` and ``_stop``; its
envelopes and threading future live in ``pykka._envelope`` and ``pykka._threading``. None of
that is public API, so Pykka is pinned (``setup.cfg``), and importing this module checks the
installed version and every name used, failing with ``PykkaSeamError`` that says what to
install, instead of an ``AttributeError`` deep inside a running job.

Everything else uses Pykka's public API only (``tests/test_layering.py`` checks).
"""

from __future__ import annotations

import importlib.metadata
import sys
import threading
from typing import Any, ClassVar

import pykka

#: the Pykka releases whose private seam this module is written against (setup.cfg pins one)
SUPPORTED_MAJOR = 4
TESTED_VERSION = "4.5.0"
#: the private methods of ``pykka.ThreadingActor`` this module calls or overrides
SEAM_METHODS = (
    "_create_actor_inbox",
    "_create_future",
    "_start_actor_loop",
    "_actor_loop_setup",
    "_handle_receive",
    "_handle_failure",
    "_stop",
)


class PykkaSeamError(ImportError):
    """The installed Pykka does not have the private seam ckptsim's runtimes plug into."""


def check_pykka(version: str | None = None) -> None:
    """Raise ``PykkaSeamError`` unless ``version`` (default: the installed Pykka's) is a
    supported release and every seam method is there."""
    if version is None:
        try:
            version = importlib.metadata.version("pykka")
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
    how = (
        f"ckptsim's simulation and call-through actors use Pykka's private actor seam, written "
        f"against Pykka {TESTED_VERSION}: install it with pip install 'pykka=={TESTED_VERSION}'"
    )
    major = version.split(".", 1)[0]
    if not major.isdigit() or int(major) != SUPPORTED_MAJOR:
        raise PykkaSeamError(f"Pykka {version} is installed, not {SUPPORTED_MAJOR}.x. {how}")
    missing = [m for m in SEAM_METHODS if not callable(getattr(pykka.ThreadingActor, m, None))]
    if missing:
        raise PykkaSeamError(
            f"Pykka {version} has no {', '.join(missing)} on ThreadingActor any more. {how}"
        )


check_pykka()

from pykka import messages as _pykka_messages  # noqa: E402
from pykka._envelope import Envelope  # noqa: E402 - only once the seam is known to be there
from pykka._threading import ThreadingFuture  # noqa: E402

#: the messages Pykka's own ``_handle_receive`` answers itself (stop, proxy calls); every other
#: message goes straight to ``on_receive``, as ``_handle_receive`` would pass it
_PYKKA_MESSAGES = (
    _pykka_messages._ActorStop,
    _pykka_messages.ProxyCall,
    _pykka_messages.ProxyGetAttr,
    _pykka_messages.ProxySetAttr,
)
#: ``_handle_receive`` as Pykka defines it: an actor class that overrides it gets every message
_PYKKA_HANDLE_RECEIVE = pykka.Actor._handle_receive

__all__ = [
    "Envelope",
    "ExpectedFailures",
    "PykkaSeamError",
    "SeamActor",
    "ThreadingFuture",
    "check_pykka",
    "deliver",
    "reset_registry_after_fork",
    "run_on_start",
    "stop_now",
    "unregister_all",
]


class SeamActor(pykka.ThreadingActor):
    """A ``ThreadingActor`` whose inbox, futures and loop come from its subclass, through
    ``make_inbox()``, ``make_future()`` and ``start_loop()`` (defaults: Pykka's own)."""

    @classmethod
    def make_inbox(cls) -> Any:
        return pykka.ThreadingActor._create_actor_inbox()

    @classmethod
    def make_future(cls) -> pykka.Future[Any]:
        return pykka.ThreadingActor._create_future()

    def start_loop(self) -> None:
        pykka.ThreadingActor._start_actor_loop(self)

    @classmethod
    def _create_actor_inbox(cls) -> Any:
        return cls.make_inbox()

    @classmethod
    def _create_future(cls) -> pykka.Future[Any]:
        return cls.make_future()

    def _start_actor_loop(self) -> None:
        self.start_loop()


class ExpectedFailures(pykka.ThreadingActor):
    """An actor some of whose failures are part of the run (``expected_failures``: an injected
    crash): the actor stops as after any failure, but Pykka does not log a traceback of an
    unhandled exception for them; the actor reports them as its own events."""

    expected_failures: ClassVar[tuple[type[BaseException], ...]] = ()

    def _handle_failure(
        self,
        exception_type: type[BaseException] | None,
        exception_value: BaseException | None,
        traceback: Any,
    ) -> None:
        if isinstance(exception_value, self.expected_failures):
            pykka.ActorRegistry.unregister(self.actor_ref)
            self.actor_stopped.set()
            return
        super()._handle_failure(exception_type, exception_value, traceback)


def reset_registry_after_fork() -> None:
    """In a process just forked from a threaded one: Pykka's actor registry lock may have
    been held by a thread that does not exist here; give the registry a new one (the
    registered references are the parent's, and stay unused)."""
    pykka.ActorRegistry._actor_refs_lock = threading.RLock()


def run_on_start(actor: pykka.Actor) -> None:
    """What Pykka's loop does first: ``on_start`` (a failure goes to ``on_failure``)."""
    actor._actor_loop_setup()


def stop_now(actor: pykka.Actor) -> None:
    """Stop ``actor`` at once, its remaining mail unread (``on_stop`` runs)."""
    actor._stop()


def unregister_all(refs: list[pykka.ActorRef[Any]]) -> None:
    """Take ``refs`` out of Pykka's actor registry in one pass (``ActorRegistry.unregister``
    searches its list once per reference: stopping n actors one by one costs n² steps). Their
    ``_stop`` later finds them gone, which Pykka allows."""
    gone = {id(ref) for ref in refs}
    with pykka.ActorRegistry._actor_refs_lock:
        kept = [ref for ref in pykka.ActorRegistry._actor_refs if id(ref) not in gone]
        pykka.ActorRegistry._actor_refs[:] = kept


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
        message = envelope.message
        if isinstance(message, _PYKKA_MESSAGES) or (
            type(actor)._handle_receive is not _PYKKA_HANDLE_RECEIVE
        ):
            response = actor._handle_receive(message)
        else:  # what Pykka's ``_handle_receive`` does with it, without its four type checks
            response = actor.on_receive(message)
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
