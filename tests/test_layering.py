"""The layering rules (docs: "Architecture"), enforced.

- The layers, top to bottom: ``ckptsim`` (the application and its API) -> ``spark_bridge`` ->
  ``actors`` -> ``runtime``. Imports point down the layers only, and no module imports
  itself round a circle: every import counts, lazy ones inside functions and ``TYPE_CHECKING``
  ones included.
- runtime/ is pure: no pykka, pyspark, structlog, threading, queue, asyncio, subprocess;
  wall time only in runtime/clock.py; file I/O modules only in runtime/storage.py.
- Only spark_bridge/ imports pyspark.
- structlog is configured only in the application's logging module (ckptsim/_logging.py).
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


@pytest.mark.parametrize("package", ["ckptsim", "actors", "runtime"])
def test_only_spark_bridge_imports_pyspark(package: str) -> None:
    offenders = [str(p) for p in _modules(package) if "pyspark" in _imports(p)]
    assert offenders == []


def test_structlog_is_configured_only_in_the_applications_logging_module() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for package in LAYERS
        for p in _modules(package)
        if "structlog.configure(" in p.read_text() and p != ROOT / "ckptsim" / "_logging.py"
    ]
    assert offenders == []


# --- the import graph: no circles, no arrow up the layers ----------------------------------------

#: top to bottom
LAYERS = ("ckptsim", "spark_bridge", "actors", "runtime")
Graph = dict[str, set[str]]


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph(root: Path = ROOT, packages: tuple[str, ...] = LAYERS) -> Graph:
    """Module -> the project's modules it imports, anywhere in it (a ``from package import
    name`` that names a submodule is an arrow to the submodule, else to the package)."""
    files = {
        _module_name(path, root): path
        for package in packages
        for path in sorted((root / package).rglob("*.py"))
    }

    def known(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: Graph = {}
    for module, path in files.items():
        arrows: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                arrows.update(filter(None, (known(alias.name) for alias in node.names)))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's own package
                    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        package = package.rpartition(".")[0]
                    base = f"{package}.{base}" if base else package
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    arrows.add(target if target in files else known(base) or "")
        arrows.discard("")
        arrows.discard(module)
        graph[module] = arrows
    return graph


def _circles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def _layer(module: str) -> int:
    return LAYERS.index(module.split(".", maxsplit=1)[0])


def _upward(graph: Graph) -> list[str]:
    return [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if _layer(target) < _layer(module)
    ]


def _describe(graph: Graph, circle: list[str]) -> str:
    members = set(circle)
    return "; ".join(f"{m} -> {', '.join(sorted(graph[m] & members))}" for m in circle)


def test_no_module_imports_itself_round_a_circle() -> None:
    graph = _import_graph()
    assert [_describe(graph, circle) for circle in _circles(graph)] == []


def test_imports_point_down_the_layers() -> None:
    assert _upward(_import_graph()) == []


def test_the_graph_checks_see_a_circle_and_an_upward_arrow(tmp_path: Path) -> None:
    """The two rules above can fail: a lazy import closing a circle and a ``TYPE_CHECKING``
    import pointing up are both seen."""
    (tmp_path / "runtime").mkdir()
    (tmp_path / "actors").mkdir()
    (tmp_path / "runtime" / "__init__.py").write_text("")
    (tmp_path / "runtime" / "a.py").write_text("from runtime.b import B\n")
    (tmp_path / "runtime" / "b.py").write_text("def f():\n    from runtime import a\n")
    (tmp_path / "runtime" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from actors.x import X\n"
    )
    (tmp_path / "actors" / "__init__.py").write_text("")
    (tmp_path / "actors" / "x.py").write_text("from runtime.c import C\n")
    graph = _import_graph(tmp_path, ("actors", "runtime"))
    assert _circles(graph) == [["actors.x", "runtime.c"], ["runtime.a", "runtime.b"]]
    assert _upward(graph) == ["runtime.c -> actors.x"]


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
