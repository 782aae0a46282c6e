"""The layering of DESIGN.md, kept: every import in src/pinnace goes to its own package or a
lower layer (`pinnace.clock` may be used by every layer), so the packages form no cycle.

Read from the source with `ast`, so imports made only for type checking or inside functions
count as well.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pinnace

LAYERS: tuple[tuple[str, ...], ...] = (
    ("clock", "resources", "forecast"),
    ("api",),
    ("store",),
    ("apiserver",),
    ("client",),
    ("scheduling",),
    ("scheduler", "kubelet", "controllers"),
    ("descheduler", "autoscaler"),
    ("metrics",),
    ("dashboard",),  # shows the metrics' usage history
    ("cluster",),
    ("sim",),
    ("plan", "gym"),  # capacity planning and the research environment, on the simulated mode
    ("bench",),
    ("cli",),  # the commands, `pinnace bench` among them
)
"""Lowest first. Packages of one layer do not import each other."""

EVERYWHERE = "clock"
ROOT = Path(pinnace.__file__).parent
RANK = {package: rank for rank, layer in enumerate(LAYERS) for package in layer}


@dataclass(frozen=True)
class Import:
    where: str  # path:line
    source: str  # the importing package, "" for the top-level `pinnace` module
    target: str  # the imported package


def test_every_package_has_a_layer() -> None:
    packages = {_package(path) for path in ROOT.rglob("*.py")} - {""}
    assert packages <= set(RANK), f"give these a layer in LAYERS: {sorted(packages - set(RANK))}"


def test_imports_go_only_downwards() -> None:
    upward = [f"{i.where}: {i.source} imports {i.target}" for i in _imports() if not _allowed(i)]
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


def test_packages_form_no_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for i in _imports():
        if i.source and i.source != i.target:
            graph.setdefault(i.source, set()).add(i.target)
    cycle = _cycle(graph)
    assert not cycle, "packages in a cycle: " + " -> ".join(cycle)


def test_an_upward_import_is_found(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text("from pinnace.scheduler.podinfo import PodInfo\n")
    found = list(_imports_of(module, "kubelet"))
    assert [_allowed(i) for i in found] == [False]


def _allowed(i: Import) -> bool:
    if i.target == EVERYWHERE or i.target == i.source:
        return True
    if not i.source:  # the top-level module is loaded with every package: the lowest layer only
        return i.target in LAYERS[0]
    return RANK.get(i.target, len(LAYERS)) < RANK[i.source]


@cache
def _imports() -> tuple[Import, ...]:
    """Every import of a package in the sources, parsed once for the tests that read them."""
    paths = sorted(ROOT.rglob("*.py"))
    return tuple(i for path in paths for i in _imports_of(path, _package(path)))


def _imports_of(path: Path, source: str) -> Iterator[Import]:
    where = path.relative_to(ROOT.parent) if path.is_relative_to(ROOT) else path
    # A package's own module stands for the package in relative imports.
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        for name in _imported_modules(node, package):
            parts = name.split(".")
            if parts[0] == "pinnace" and len(parts) > 1:
                yield Import(f"{where}:{getattr(node, 'lineno', 0)}", source, parts[1])


def _imported_modules(node: ast.AST, package: list[str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parent = package[: len(package) - node.level + 1]
        base = ".".join([*parent, base] if base else parent)
    if base != "pinnace":
        return [base]
    # `from pinnace import clock` imports the package; `from pinnace import Quantity`, the
    # top-level module's re-export of the lowest layer.
    return [f"pinnace.{alias.name}" for alias in node.names if _is_package(alias.name)]


def _is_package(name: str) -> bool:
    return (ROOT / name).is_dir() or (ROOT / f"{name}.py").is_file()


def _package(path: Path) -> str:
    """The layer package of a file: `api` for pinnace/api/kind.py, `cluster` for
    pinnace/cluster.py, "" for pinnace/__init__.py."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return "" if parts == ("__init__",) else parts[0]


def _module_name(path: Path) -> str:
    if not path.is_relative_to(ROOT):
        return "pinnace.test"
    parts = ("pinnace", *path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of `graph` as the packages along it, or [] when there is none."""
    done: set[str] = set()

    def visit(package: str, path: list[str]) -> list[str]:
        if package in path:
            return [*path[path.index(package) :], package]
        if package in done:
            return []
        for target in sorted(graph.get(package, ())):
            found = visit(target, [*path, package])
            if found:
                return found
        done.add(package)
        return []

    for package in sorted(graph):
        found = visit(package, [])
        if found:
            return found
    return []
