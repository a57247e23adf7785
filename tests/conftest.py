"""Suite-wide settings: Hypothesis profiles.

``ci`` (the default, used by ``make test`` and CI) is derandomized: every run explores the same
examples, so a red build is reproducible as is. ``dev`` searches randomly (a failure prints the
``--hypothesis-seed`` that replays it); ``thorough`` searches long; ``soak`` searches randomly
and runs the threaded-runtime properties (``tests/properties/test_soak.py``) long.
Select with ``HYPOTHESIS_PROFILE=dev make test``.
"""

from __future__ import annotations

import os
import random
import tempfile
from typing import Any, NoReturn

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


# pytest-xdist (``make test`` runs ``pytest -n 2 --dist loadgroup``): the tests of a group run
# in one worker, in file order. ``spark``: every Spark test, so that the suite starts one
# SparkSession (the session-scoped ``spark`` fixture, tests/spark_bridge/conftest.py) and one
# JVM; the Spark page's examples too (docs/spark.md: its ``local_spark`` then takes that
# session, after the Spark tests, instead of starting a second JVM in the docs' worker).
# ``docs``: every other page's examples, so that a page repeating an earlier one's (Getting
# started repeats the README's tour) replays its commands (tests/test_docs.py) instead of
# running them again. ``timeline``: the timeline's tests, so that their module-scoped runs
# (``many_checkpoints``: a hundred checkpoints; and three more) are simulated once, not once
# in each worker (an ungrouped test goes to either). The groups go out first (xdist orders
# work by its number of tests), so that the single tests even out the end. (Grouped here, by
# node id prefix, the first that matches, and not with xdist's ``xdist_group`` marker: xdist
# 3.8 marks a group in ``item._nodeid``, which pytest 9 no longer reads.)
GROUPS = {
    "tests/spark_bridge/": "spark",
    "tests/test_docs.py::test_the_examples_of_a_page_run[docs/spark.md]": "spark",
    "tests/test_docs.py": "docs",
    "tests/rest/test_timeline.py": "timeline",
}


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist every worker must collect the same tests, named alike; a set's
    order of strings (a parametrized test's id: ``ids=repr``) follows the hash seed, which
    each process draws for itself. So the workers share one, drawn afresh for each run (as a
    run in one process has one), unless PYTHONHASHSEED says which.

    Where PYTHONDONTWRITEBYTECODE is set (as on the 2-core machine the suite's time is
    measured on), every Python process would compile the sources it imports again: each
    worker all the test modules, each of the suite's ``ckptsim`` and ``python`` commands and
    Spark's Python workers the packages, about half a second of CPU a process. So the
    processes this run starts keep their bytecode outside the repository, in a folder of the
    system's temporary directory (PYTHONPYCACHEPREFIX: none is written in the tree), unless
    PYTHONPYCACHEPREFIX says where."""
    if (
        config.pluginmanager.hasplugin("xdist")
        and config.getoption("numprocesses", None)
        and not hasattr(config, "workerinput")  # the controller, before it starts its workers
        and "PYTHONHASHSEED" not in os.environ
    ):
        os.environ["PYTHONHASHSEED"] = str(random.SystemRandom().randint(1, 2**32 - 1))
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and "PYTHONPYCACHEPREFIX" not in os.environ:
        del os.environ["PYTHONDONTWRITEBYTECODE"]  # for the processes started from here on
        os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "ckptsim-pycache")


def pytest_report_header(config: pytest.Config) -> str | None:
    seed = os.environ.get("PYTHONHASHSEED")
    return f"PYTHONHASHSEED={seed} (replay: PYTHONHASHSEED={seed} make test)" if seed else None


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: a run without xdist ignores it
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") != "loadgroup":
        return None  # xdist's own scheduler
    from xdist.scheduler import LoadGroupScheduling  # noqa: PLC0415 - only with xdist

    class Groups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            for prefix, group in GROUPS.items():
                if nodeid.startswith(prefix):
                    return group
            return str(super()._split_scope(nodeid))

    return Groups(config, log)


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
