"""Suite-wide settings: Hypothesis profiles.

``ci`` (the default, used by ``make test`` and CI) is derandomized: every run explores the same
examples, so a red build is reproducible as is. ``dev`` searches randomly (a failure prints the
``--hypothesis-seed`` that replays it); ``thorough`` searches long; ``soak`` searches randomly
and runs the threaded-runtime properties (``tests/properties/test_soak.py``) long.
Select with ``HYPOTHESIS_PROFILE=dev make test``.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=150,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", max_examples=150, deadline=None, print_blob=True)
settings.register_profile(
    "thorough",
    max_examples=3000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "soak",
    max_examples=150,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def skip_unless_ci(reason: str) -> NoReturn:
    """Skip the test for ``reason``: something it needs is missing on this machine. Under CI
    (``CI=true`` in the environment) fail instead: there the suite must run whole, and a green
    run with a part of it skipped would hide that part."""
    if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
        pytest.fail(f"{reason} (CI=true: a missing requirement fails the run instead of skipping)")
    pytest.skip(reason)


def system_examples() -> int:
    """Examples per whole-system property (each runs a simulated job): fewer than the
    profile's default except when searching long."""
    profile = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    return {"thorough": 500}.get(profile, 40)


def threaded_examples(ci: int) -> int:
    """Examples per threaded-runtime property (each runs jobs on threads, in wall time, about
    a second each): ``ci`` in the ``ci`` and ``dev`` profiles (a few seconds), hundreds in
    ``soak`` (HYPOTHESIS_PROFILE=soak: minutes)."""
    profile = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    return {"soak": 400, "thorough": 100}.get(profile, ci)


# The actors log protocol events at info level; tests keep the console quiet (a test that
# inspects events uses structlog.testing.capture_logs).
import logging  # noqa: E402

import structlog  # noqa: E402

structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


import contextlib  # noqa: E402
from collections.abc import Iterator, MutableMapping  # noqa: E402
from typing import Any  # noqa: E402

from structlog.testing import capture_logs  # noqa: E402

from ckptsim._logging import logging_restored  # noqa: E402


@contextlib.contextmanager
def protocol_events() -> Iterator[list[MutableMapping[str, Any]]]:
    """The events (info level and above) the actors log inside the block, whatever the console
    level; logging is put back after it. (A run's trace is ``execute(trace=...)``: this is
    for tests of what is logged.)"""
    with logging_restored():
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
        with capture_logs() as events:
            yield events


__all__ = ["protocol_events", "system_examples", "threaded_examples"]
