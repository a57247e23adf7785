"""Write ``ckptsim/pyflink/_pyflink_names.py``: the modules and public names of a real PyFlink.

Run it with the Python of an ``apache-flink`` installation (it imports the real ``pyflink``)::

    PATH=/path/to/pyflink-venv/bin:$PATH python tests/pyflink/capture_pyflink_names.py \\
        > ckptsim/pyflink/_pyflink_names.py && .venv/bin/ruff format ckptsim/pyflink/_pyflink_names.py

A module's public names are its ``__all__`` and every other name without a leading underscore
that holds a class, a function or a module of PyFlink's own (what PyFlink imported there, as
``Time`` in ``pyflink.datastream.window``); the standard library's names a module imported
(``Enum``, ``Optional``, ...) are not PyFlink's API. Each name maps to where it is defined
(``module.QualName``, or ``module:`` and the module's name for a module).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
from typing import Any

ROOTS = ("pyflink.common", "pyflink.datastream")  # the trees ckptsim's PyFlink API mirrors


def _origin(value: Any) -> str | None:
    if isinstance(value, types.ModuleType):
        return f"module:{value.__name__}" if value.__name__.startswith("pyflink.") else None
    module = getattr(value, "__module__", None)
    is_code = inspect.isclass(value) or inspect.isfunction(value)
    if is_code and isinstance(module, str) and module.startswith("pyflink."):
        return f"{module}.{value.__qualname__}"
    return None


def _names(module: types.ModuleType) -> dict[str, str]:
    names: dict[str, str] = {}
    for name in getattr(module, "__all__", ()):
        names[name] = _origin(getattr(module, name, None)) or f"{module.__name__}.{name}"
    for name in dir(module):
        if name.startswith("_") or name in names:
            continue
        origin = _origin(getattr(module, name))
        if origin is not None:
            names[name] = origin
    return dict(sorted(names.items()))


def capture() -> tuple[list[str], dict[str, dict[str, str]]]:
    import pyflink  # noqa: PLC0415 - the real one

    modules = ["pyflink"] + [f"pyflink.{m.name}" for m in pkgutil.iter_modules(pyflink.__path__)]
    names: dict[str, dict[str, str]] = {"pyflink": {"__version__": "pyflink.version.__version__"}}

    def visit(name: str) -> None:
        module = importlib.import_module(name)
        modules.append(name)
        names[name] = _names(module)
        for info in pkgutil.iter_modules(getattr(module, "__path__", [])):
            visit(f"{name}.{info.name}")

    for root in ROOTS:
        visit(root)
    return sorted(set(modules)), dict(sorted(names.items()))


def main() -> None:
    from pyflink.version import __version__  # noqa: PLC0415

    modules, names = capture()
    print(
        f'"""The modules and public names of PyFlink {__version__} (apache-flink=={__version__}),'
    )
    print("as ``tests/pyflink/capture_pyflink_names.py`` read them from a real installation; do")
    print(
        "not edit. ``MODULES``: every module of ``pyflink`` and ``pyflink.*`` (below ``pyflink.common``"
    )
    print(
        "and ``pyflink.datastream`` all of them); ``NAMES``: module -> public name -> where it is"
    )
    print('defined."""')
    print()
    print(f"VERSION = {__version__!r}")
    print()
    print(f"MODULES: frozenset[str] = frozenset({modules!r})")
    print()
    print(f"NAMES: dict[str, dict[str, str]] = {names!r}")


if __name__ == "__main__":
    main()
