"""Standard output whose reader left (``ckptsim run job.py | head -5``).

Python ignores SIGPIPE, so a write to a pipe nobody reads any more raises
``BrokenPipeError``. ckptsim then does what Python's documentation recommends (the note on
SIGPIPE in the ``signal`` module) and well-behaved Python tools do: it stops writing, points
standard output at ``os.devnull`` (else Python would raise again as it flushes ``sys.stdout``
at exit) and ends without a traceback. The print sinks stop writing and the job runs to its
end; ``ckptsim run`` exits with the job's status (0 when it finished), not 141: the job did
not fail, its reader only stopped listening.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_discarded: set[int] = set()  # the file descriptors pointed at os.devnull


def discard_stdout() -> None:
    """From now on, what is written to standard output goes to ``os.devnull`` (once per
    process; nothing to do when ``sys.stdout`` is no file, as a test's capture)."""
    with _lock:
        try:
            fd = sys.stdout.fileno()
        except (AttributeError, OSError, ValueError):
            return
        if fd in _discarded:
            return
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
        _discarded.add(fd)


@contextlib.contextmanager
def unless_reader_left() -> Iterator[None]:
    """Run the block; if it meets standard output's closed pipe, stop there and send what is
    written to standard output from then on to ``os.devnull``."""
    try:
        yield
    except BrokenPipeError:
        discard_stdout()
