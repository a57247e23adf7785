"""The ``ckptsim`` program's entry point, outside the ``ckptsim`` package.

Importing ``ckptsim`` takes about a second; a Ctrl-C in that second raised
``KeyboardInterrupt`` inside the import, before any code of the program could catch it, and
Python printed its traceback. Here the import is the program's first step: Ctrl-C during it,
or anywhere the command line does not handle it itself, ends the program as Ctrl-C does later
(one line, exit status 130). ``python -m ckptsim`` imports the package before any of its code
runs, so only the installed ``ckptsim`` program has this.
"""

from __future__ import annotations

import contextlib
import sys

EXIT_INTERRUPTED = 130  # 128 + SIGINT


def console() -> None:
    """The ``ckptsim`` program (``ckptsim._cli.console``), quiet on an early Ctrl-C."""
    try:
        from ckptsim._cli import console as run  # noqa: PLC0415 - the import is what is guarded

        run()
    except KeyboardInterrupt:
        if sys.stderr is not None:  # (None: started with standard error closed)
            with contextlib.suppress(OSError, ValueError):  # closed since: the status says it
                print("ckptsim: interrupted (Ctrl-C)", file=sys.stderr, flush=True)
        sys.exit(EXIT_INTERRUPTED)
