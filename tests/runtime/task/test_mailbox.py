"""``MailboxProcessor``: when the default action is requested, and what a step runs."""

from __future__ import annotations

from runtime.effects import RequestDefaultAction
from runtime.task.mailbox import MailboxProcessor, MailboxStep, Suspension


def update(mailbox: MailboxProcessor, **kw: bool) -> RequestDefaultAction | None:
    args = {
        "running": True,
        "priority_pending": False,
        "output_available": True,
        "input_available": True,
    }
    args.update(kw)
    return mailbox.update(**args)


def test_the_default_action_is_requested_once_until_it_runs() -> None:
    mailbox = MailboxProcessor()
    assert update(mailbox) == RequestDefaultAction()
    assert update(mailbox) is None, "already in the mailbox"
    assert mailbox.step(priority_pending=False) is MailboxStep.DEFAULT_ACTION
    assert update(mailbox) == RequestDefaultAction()


def test_it_is_suspended_without_input_under_back_pressure_and_while_not_running() -> None:
    for kw, why in (
        ({"input_available": False}, Suspension.NO_INPUT),
        ({"output_available": False}, Suspension.BACK_PRESSURE),
        ({"running": False}, Suspension.NOT_RUNNING),
    ):
        mailbox = MailboxProcessor()
        assert update(mailbox, **kw) is None
        assert mailbox.suspension is why
    mailbox = MailboxProcessor()
    update(mailbox, output_available=False)
    assert mailbox.is_backpressured


def test_a_source_waiting_for_its_timer_is_suspended_until_the_timer() -> None:
    mailbox = MailboxProcessor()
    mailbox.waiting_for_timer = True
    assert update(mailbox) is None and mailbox.suspension is Suspension.WAITING_FOR_TIMER
    mailbox.waiting_for_timer = False
    assert update(mailbox) == RequestDefaultAction()


def test_priority_events_run_first_and_even_under_back_pressure() -> None:
    mailbox = MailboxProcessor()
    assert update(mailbox, output_available=False, priority_pending=True) is not None
    assert mailbox.step(priority_pending=True) is MailboxStep.PRIORITY_EVENTS
