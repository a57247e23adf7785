"""What a failure in user code says: which operator, which task, what was raised, and the
user's traceback trimmed to their own frames.

User code is everything a job script hands to ckptsim: map/filter/flat_map/reduce/process
functions, key selectors, source readers, sink connectors. An exception there fails the task
(the job fails over). An exception anywhere else is a bug of ckptsim and is not wrapped: it
crashes the task's actor with its full traceback.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass

#: source folders of ckptsim itself: their frames are not the user's
_ROOT = __file__[: -len("runtime/failure.py")]
_OWN = tuple(_ROOT + name + "/" for name in ("runtime", "actors", "spark_bridge"))


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskFailure:
    """A task failed in user code (Flink: the root cause of the task's failure)."""

    #: the operator as the user knows it, e.g. ``map 'Map' (map-2)``, ``key_by selector of
    #: reduce-2``, ``sink 'out' (sink-out)``
    operator: str
    #: the task it ran in, e.g. ``source-1#0``
    task: str
    exception: str
    message: str
    #: the user's frames only (``Traceback (most recent call last): ...``), or "" when none
    traceback: str = ""

    def describe(self, *, with_task: bool = True) -> str:
        """One line: ``key_by selector of reduce-2 (in source-1#0) raised KeyError: 'x'``
        (without ``(in ...)`` where the task is named already)."""
        text = f"{self.exception}: {self.message}" if self.message else self.exception
        where = f" (in {self.task})" if with_task else ""
        return f"{self.operator}{where} raised {text}"


class UserCodeError(Exception):
    """Raised by the task core around a call into user code that raised: carries the
    operator it happened in; ``__cause__`` is the user's exception."""

    def __init__(self, operator: str) -> None:
        super().__init__(operator)
        self.operator = operator


def describe_user_error(error: BaseException, *, operator: str, task: str) -> TaskFailure:
    """The failure of ``error``, raised by the user code of ``operator`` in ``task``."""
    return TaskFailure(
        operator=operator,
        task=task,
        exception=type(error).__name__,
        message=str(error),
        traceback=user_traceback(error),
    )


def user_traceback(error: BaseException) -> str:
    """The traceback of ``error`` without ckptsim's own frames."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not _own(f.filename)]
    if not frames:
        return ""
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)]
    lines += traceback.format_exception_only(type(error), error)
    return "".join(lines)


def _own(filename: str) -> bool:
    return filename.startswith(_OWN)
