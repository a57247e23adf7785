"""``MailboxProcessor``: when the task's default action may run (Flink's ``MailboxProcessor``).

The mailbox itself is the runtime's (a Pykka inbox): control mails (triggers, notifications,
timers, credits, deliveries) and the default action (``RunDefaultAction``) interleave in one
FIFO. The default action re-enqueues itself (``RequestDefaultAction``) after each step, so a
control mail is always handled between two buffers, never inside one. A step runs a pending
priority event (an unaligned barrier, an announcement) if there is one, else the default
action: the next input buffer or event, or for a source, its next batch.

The default action is suspended (not requested) while the task is not running, while its
output is back-pressured (its result partition has no free buffer), while a rate-limited
source waits for its timer, and while there is no input; priority events run even under
back-pressure, as Flink runs them as mails.
"""

from __future__ import annotations

import enum

from runtime.effects import RequestDefaultAction


class Suspension(enum.Enum):
    NONE = "NONE"
    NOT_RUNNING = "NOT_RUNNING"
    BACK_PRESSURE = "BACK_PRESSURE"
    WAITING_FOR_TIMER = "WAITING_FOR_TIMER"
    NO_INPUT = "NO_INPUT"


class MailboxStep(enum.Enum):
    PRIORITY_EVENTS = "PRIORITY_EVENTS"
    DEFAULT_ACTION = "DEFAULT_ACTION"


class MailboxProcessor:
    __slots__ = ("scheduled", "suspension", "waiting_for_timer")

    def __init__(self) -> None:
        #: a ``RunDefaultAction`` is in the mailbox (requested and not run yet)
        self.scheduled = False
        #: a rate-limited source waits for its wake-up timer
        self.waiting_for_timer = False
        self.suspension = Suspension.NOT_RUNNING

    def step(self, *, priority_pending: bool) -> MailboxStep:
        """A ``RunDefaultAction`` is handled: what it runs."""
        self.scheduled = False
        return MailboxStep.PRIORITY_EVENTS if priority_pending else MailboxStep.DEFAULT_ACTION

    def update(
        self,
        *,
        running: bool,
        priority_pending: bool,
        output_available: bool,
        input_available: bool,
    ) -> RequestDefaultAction | None:
        """After a mail: whether the default action must be requested again."""
        if not running:
            self.suspension = Suspension.NOT_RUNNING
        elif priority_pending:
            self.suspension = Suspension.NONE
        elif not output_available:
            self.suspension = Suspension.BACK_PRESSURE
        elif self.waiting_for_timer:
            self.suspension = Suspension.WAITING_FOR_TIMER
        elif not input_available:
            self.suspension = Suspension.NO_INPUT
        else:
            self.suspension = Suspension.NONE
        if self.suspension is Suspension.NONE and not self.scheduled:
            self.scheduled = True
            return RequestDefaultAction()
        return None

    @property
    def is_backpressured(self) -> bool:
        return self.suspension is Suspension.BACK_PRESSURE
