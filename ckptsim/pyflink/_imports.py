"""``import pyflink...`` resolves to ``ckptsim.pyflink...`` while ``ckptsim run`` runs a script.

``pyflink_imports()`` puts a finder first on ``sys.meta_path`` for the duration of the block:
``pyflink`` and every ``pyflink.X`` name is the very module object ``ckptsim.pyflink.X`` (one
implementation under two names). A name ckptsim does not have (``pyflink.table``, a Kafka
connector, ...) raises ``UnsupportedFeature`` naming it and what to use instead. The
``pyflink`` entries of ``sys.modules`` are set aside for the block and put back after it, so a
real PyFlink imported before (or after) is undisturbed, and ``import pyflink`` fails again
after the block if no PyFlink is installed.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

from ckptsim.pyflink._unsupported import unsupported_module

_ROOT = "pyflink"
_lock = threading.Lock()


def _ours(name: str) -> bool:
    return name == _ROOT or name.startswith(_ROOT + ".")


class _AliasLoader(importlib.abc.Loader):
    """Loads ``pyflink.X`` as the module ``ckptsim.pyflink.X`` itself."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the import system set the alias's spec on the module: give it back its own
        module.__spec__ = self.spec


class PyFlinkFinder(importlib.abc.MetaPathFinder):
    """Finds ``pyflink`` and ``pyflink.*`` in ``ckptsim.pyflink``; ``used`` once it did."""

    def __init__(self) -> None:
        self.used = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not _ours(fullname):
            return None
        self.used = True
        real = "ckptsim." + fullname
        try:
            spec = importlib.util.find_spec(real)
        except ModuleNotFoundError:
            spec = None
        if spec is None:
            unsupported_module(fullname)
        return importlib.util.spec_from_loader(
            fullname, _AliasLoader(real), is_package=spec.submodule_search_locations is not None
        )


@contextlib.contextmanager
def pyflink_imports() -> Iterator[PyFlinkFinder]:
    """While the block runs, ``pyflink`` is ckptsim's (see the module's documentation)."""
    from ckptsim.pyflink import _unsupported  # noqa: PLC0415

    finder = PyFlinkFinder()
    with _lock:
        saved: dict[str, Any] = {n: m for n, m in sys.modules.items() if _ours(n)}
        for name in saved:
            del sys.modules[name]
        sys.meta_path.insert(0, finder)
    _unsupported.reset_warnings()
    try:
        yield finder
    finally:
        with _lock:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(finder)
            for name in [n for n in sys.modules if _ours(n)]:
                del sys.modules[name]
            sys.modules.update(saved)
