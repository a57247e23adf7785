"""The layering rules (README, "Layout"), enforced: imports point downward only.

- runtime/ is pure: no pykka, pyspark, structlog, threading, queue, asyncio, subprocess;
  wall time only in runtime/clock.py; file I/O modules only in runtime/storage.py.
- actors/ never imports pyspark; only spark_bridge/ does.
- structlog is configured only in the CLI entry point.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN_IN_RUNTIME = {
    "pykka",
    "pyspark",
    "structlog",
    "threading",
    "queue",
    "asyncio",
    "subprocess",
    "multiprocessing",
    "concurrent",
    "socket",
    "actors",
    "spark_bridge",
}
FILE_IO = {"os", "pathlib", "shutil", "tempfile", "io", "glob"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", _modules("runtime"), ids=lambda p: str(p.relative_to(ROOT)))
def test_runtime_module_imports_nothing_impure(path: Path) -> None:
    imports = _imports(path)
    assert not imports & FORBIDDEN_IN_RUNTIME, f"{path}: {sorted(imports & FORBIDDEN_IN_RUNTIME)}"
    if path.name != "clock.py":
        assert "time" not in imports, f"{path} reads the wall clock; inject a Clock instead"
    if path.name != "storage.py":
        assert not imports & FILE_IO, f"{path}: file I/O belongs in runtime/storage.py"


@pytest.mark.parametrize("package", ["actors", "runtime"])
def test_only_spark_bridge_imports_pyspark(package: str) -> None:
    offenders = [str(p) for p in _modules(package) if "pyspark" in _imports(p)]
    assert offenders == []


def test_structlog_is_configured_only_in_the_cli() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for package in ("runtime", "actors", "spark_bridge")
        for p in _modules(package)
        if "structlog.configure(" in p.read_text() and p.name != "cli.py"
    ]
    assert offenders == []


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    """The rule above can fail: a module importing threading is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("import threading\nfrom pykka import ThreadingActor\n")
    assert {"threading", "pykka"} <= _imports(bad)
