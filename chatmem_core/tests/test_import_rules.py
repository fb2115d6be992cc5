"""Import rules between our packages, read from the source (no import is executed).

- A backend imports only public core names (``chatmem.core``, the SPI ``chatmem.core.backend``,
  ``chatmem.core.longterm``...): never a ``_private`` module or a ``_private`` name.
- Core imports no backend (the CLI reaches backends through the URL registry).
- Backends never import each other.
- No package has an import cycle among its modules (imports under ``if TYPE_CHECKING:`` are
  annotations only and do not count; imports inside functions do).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ("jdbc", "cassandra", "neo4j", "mongo", "redis")

KNOWN_CORE_TO_BACKEND: set[tuple[str, str]] = {
    # `chatmem memories` builds JdbcMemoryRecordRepository and its DDL by name; it should
    # find the record repository through a registry as the chat commands do.
    ("chatmem.core.longterm._cli", "chatmem.jdbc"),
}
"""(core module, backend module) pairs allowed while they are being removed; the test fails
when a listed pair no longer occurs, so the list only ever shrinks."""


@dataclass(frozen=True)
class Import:
    """One imported module (and, for ``from m import n``, the name) at a line of a module."""

    source: str
    target: str
    name: str | None
    line: int
    annotation_only: bool


def _sources(package: str) -> Iterator[tuple[str, Path]]:
    """(dotted module name, file) of every module of ``chatmem_<package>/chatmem``."""
    root = ROOT / f"chatmem_{package}"
    for path in sorted((root / "chatmem").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(module: str, path: Path) -> list[Import]:
    """Every import statement of a module, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    found: list[Import] = []

    def visit(node: ast.AST, annotation_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.body:
                    visit_stmt(stmt, True)
                for stmt in child.orelse:
                    visit_stmt(stmt, annotation_only)
                continue
            visit_stmt(child, annotation_only)

    def visit_stmt(node: ast.AST, annotation_only: bool) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(Import(module, alias.name, None, node.lineno, annotation_only))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([node.module] if node.module else [])])
            for alias in node.names:
                found.append(Import(module, base, alias.name, node.lineno, annotation_only))
        else:
            visit(node, annotation_only)

    visit(tree, False)
    return found


def all_imports(package: str) -> list[Import]:
    return [i for module, path in _sources(package) for i in imports_of(module, path)]


def _private(i: Import) -> bool:
    parts = [*i.target.split("."), *([i.name] if i.name else [])]
    return any(p.startswith("_") for p in parts)


def _in(target: str, package: str) -> bool:
    return target == package or target.startswith(package + ".")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_backend_imports_only_public_core_names(backend: str) -> None:
    bad = [
        f"{i.source}:{i.line} imports {i.target}{'.' + i.name if i.name else ''}"
        for i in all_imports(backend)
        if _in(i.target, "chatmem.core") and _private(i)
    ]
    assert bad == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_backends_never_import_each_other(backend: str) -> None:
    others = [f"chatmem.{b}" for b in BACKENDS if b != backend]
    bad = [
        f"{i.source}:{i.line} imports {i.target}"
        for i in all_imports(backend)
        if any(_in(i.target, o) for o in others)
        or (i.target == "chatmem" and i.name in BACKENDS and i.name != backend)
    ]
    assert bad == []


def test_core_imports_no_backend() -> None:
    found = {
        (i.source, i.target)
        for i in all_imports("core")
        if any(_in(i.target, f"chatmem.{b}") for b in BACKENDS)
        or (i.target == "chatmem" and i.name in BACKENDS)
    }
    assert found - KNOWN_CORE_TO_BACKEND == set()
    assert KNOWN_CORE_TO_BACKEND - found == set(), "fixed: remove it from the allowance"


@pytest.mark.parametrize("package", ("core", *BACKENDS))
def test_no_import_cycle_inside_a_package(package: str) -> None:
    modules = {module for module, _ in _sources(package)}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for i in all_imports(package):
        if i.annotation_only:
            continue
        # ``from pkg import mod`` depends on the submodule, not on the package's __init__
        target = f"{i.target}.{i.name}" if f"{i.target}.{i.name}" in modules else i.target
        if target in modules and target != i.source:
            graph[i.source].add(target)
    cycles = _cycles(graph)
    assert cycles == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected group of modules (Tarjan), as a readable path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return groups


def test_the_rules_see_what_they_check() -> None:
    """Guard against a rule that passes because it reads nothing: the scanner resolves
    relative and lazy imports and tells annotation-only ones apart."""
    jdbc = all_imports("jdbc")
    assert any(
        i.source == "chatmem.jdbc._sync.repository" and i.target == "chatmem.jdbc._dialects"
        for i in jdbc
    )
    assert any(i.target == "chatmem.jdbc._schema" and i.annotation_only for i in jdbc)
    assert any(
        i.source == "chatmem.jdbc._schema" and i.target == "chatmem.jdbc._dialects" for i in jdbc
    )
    assert any(i.target == "chatmem.core.backend" for b in BACKENDS for i in all_imports(b))
    assert _private(Import("m", "chatmem.core._errors", "require", 1, False))
    assert _private(Import("m", "chatmem.core", "_codec", 1, False))
    assert not _private(Import("m", "chatmem.core.backend", "retry", 1, False))
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
