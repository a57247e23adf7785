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


#: Pykka's private seam (``actors/pykka_seam.py`` alone may touch it)
PYKKA_PRIVATE = {
    "_create_actor_inbox",
    "_create_future",
    "_start_actor_loop",
    "_actor_loop_setup",
    "_handle_receive",
    "_handle_failure",
}
#: PySpark internals (``spark_bridge/_pyspark_seam.py`` alone may touch them)
PYSPARK_PRIVATE = {
    "_jdf",
    "_jsc",
    "_jvm",
    "_jrdd",
    "_jrdd_deserializer",
    "_jsparkSession",
    "_active_spark_context",
    "_create_local_socket",
    "_local_iterator_from_socket",
    "toArrowBatchRdd",
}


def _private_uses(path: Path, names: set[str], private_modules: str) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names:
            found.append(f"{path.name}:{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.FunctionDef) and node.name in names:
            found.append(f"{path.name}:{node.lineno}: def {node.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith(private_modules):
                found.append(f"{path.name}:{node.lineno}: from {node.module}")
            found += [f"{path.name}:{node.lineno}: {a.name}" for a in node.names if a.name in names]
    return found


@pytest.mark.parametrize(
    ("names", "private_modules", "seam"),
    [
        (PYKKA_PRIVATE, "pykka._", "actors/pykka_seam.py"),
        (PYSPARK_PRIVATE, "pyspark.__never__", "spark_bridge/_pyspark_seam.py"),
    ],
    ids=["pykka", "pyspark"],
)
def test_private_apis_of_pykka_and_pyspark_are_used_in_their_seam_module_only(
    names: set[str], private_modules: str, seam: str
) -> None:
    offenders = [
        use
        for package in ("runtime", "actors", "spark_bridge", "examples", "benchmarks")
        for path in _modules(package)
        if path != ROOT / seam
        for use in _private_uses(path, names, private_modules)
    ]
    assert offenders == []


def test_the_private_api_check_sees_a_use(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from pykka._envelope import Envelope\nx = df._jdf.toArrowBatchRdd()\n")
    assert len(_private_uses(bad, PYKKA_PRIVATE, "pykka._")) == 1
    assert len(_private_uses(bad, PYSPARK_PRIVATE, "pyspark.__never__")) == 2
