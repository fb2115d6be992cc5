"""Import rules between our packages, read from the source (no import is executed).

Every package folder ``chatmem_*/chatmem/<name>`` is found on disk, so a new store (or
``chatmem_integrations``) is checked from the day it exists. There is no allowance list.

- Core (``chatmem.core``) imports no other chatmem package.
- A store imports only public core names (``chatmem.core``, the SPI ``chatmem.core.backend``,
  ``chatmem.core.longterm``: never a ``_private`` module or name), never another store or
  ``chatmem.integrations``; only its ``provision`` module (or package) may import the kit,
  ``chatmem.testing``, and only its public names.
- The kit (``chatmem.testing``) and the integrations (``chatmem.integrations``) import only
  public core names (no store, no ``_private`` core module or name).
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
PACKAGES = sorted(p.parent.name for p in ROOT.glob("chatmem_*/chatmem/*/__init__.py"))
SPECIAL = ("core", "testing", "integrations")
STORES = tuple(p for p in PACKAGES if p not in SPECIAL)
PUBLIC_CORE = ("chatmem.core", "chatmem.core.backend", "chatmem.core.longterm")


@dataclass(frozen=True)
class Import:
    """One imported module (and, for ``from m import n``, the name) at a line of a module."""

    source: str
    target: str
    name: str | None
    line: int
    annotation_only: bool

    def __str__(self) -> str:
        return (
            f"{self.source}:{self.line} imports {self.target}{'.' + self.name if self.name else ''}"
        )


def _sources(package: str, root: Path = ROOT) -> Iterator[tuple[str, Path]]:
    """(dotted module name, file) of every module of the package ``chatmem.<package>``."""
    for folder in sorted(root.glob(f"chatmem_*/chatmem/{package}")):
        base = folder.parent.parent
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
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


def all_imports(package: str, root: Path = ROOT) -> list[Import]:
    return [i for module, path in _sources(package, root) for i in imports_of(module, path)]


def _in(target: str, package: str) -> bool:
    return target == package or target.startswith(package + ".")


def imported_module(i: Import) -> str | None:
    """The chatmem module an import reaches (``from chatmem import mystore`` reaches
    ``chatmem.mystore``), or None for anything outside ``chatmem``."""
    if i.target == "chatmem":
        return f"chatmem.{i.name}" if i.name else "chatmem"
    return i.target if _in(i.target, "chatmem") else None


def _private(i: Import) -> bool:
    parts = [*i.target.split("."), *([i.name] if i.name else [])]
    return any(p.startswith("_") for p in parts)


def public_core(i: Import) -> bool:
    """Whether ``i`` takes a public name of a public core module."""
    return i.target in PUBLIC_CORE and not _private(i)


def violations(package: str, imports: list[Import], *, store: bool | None = None) -> list[str]:
    """What breaks the module docstring's rules among ``imports`` of ``chatmem.<package>``
    (``store``: whether the store rules apply; by default, whether it is one of ours)."""
    own = f"chatmem.{package}"
    store = package in STORES if store is None else store
    bad: list[str] = []
    for i in imports:
        target = imported_module(i)
        if target is None or _in(target, own):
            continue
        if package == "core":
            bad.append(f"{i}: core imports no other chatmem package")
        elif _in(target, "chatmem.core"):
            if not public_core(i):
                bad.append(f"{i}: only public names of {', '.join(PUBLIC_CORE)}")
        elif store and _in(target, "chatmem.testing"):
            if not _in(i.source, f"{own}.provision"):
                bad.append(f"{i}: only the store's provision module may import the kit")
            elif _private(i):
                bad.append(f"{i}: the kit's public names only")
        else:
            bad.append(f"{i}: {own} may not import {target}")
    return bad


def test_the_rules_cover_every_package_folder() -> None:
    assert {"core", "testing"} <= set(PACKAGES)
    assert {"jdbc", "redis", "mongo", "cassandra", "neo4j"} <= set(STORES)


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_between_packages_follow_the_rules(package: str) -> None:
    assert violations(package, all_imports(package)) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_inside_a_package(package: str) -> None:
    assert cycles_in(package) == []


def cycles_in(package: str, root: Path = ROOT) -> list[list[str]]:
    modules = {module for module, _ in _sources(package, root)}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for i in all_imports(package, root):
        if i.annotation_only:
            continue
        # ``from pkg import mod`` depends on the submodule, not on the package's __init__
        target = f"{i.target}.{i.name}" if f"{i.target}.{i.name}" in modules else i.target
        if target in modules and target != i.source:
            graph[i.source].add(target)
    return _cycles(graph)


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


def test_every_package_is_seen_importing_core() -> None:
    """Guard against rules that pass because the scanner reads nothing: every package but
    core imports core, and core's own relative and lazy imports are resolved."""
    for package in PACKAGES:
        targets = {imported_module(i) for i in all_imports(package)}
        if package != "core":
            assert any(t and _in(t, "chatmem.core") for t in targets), package
    core = all_imports("core")
    assert any(
        i.source == "chatmem.core._async.token_window" and i.target == "chatmem.core._token_window"
        for i in core
    )  # relative, resolved
    assert any(i.source == "chatmem.core" and i.target == "chatmem.core._observe" for i in core)


def test_the_scanner_and_rules_on_a_package_made_to_break_them(tmp_path: Path) -> None:
    pkg = tmp_path / "chatmem_demo" / "chatmem" / "demo"
    (pkg / "provision").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import x\n")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from chatmem.core import Message, _codec\n"
        "from chatmem.core._errors import require\n"
        "from chatmem import jdbc\n"
        "import chatmem.testing\n"
        "if TYPE_CHECKING:\n"
        "    from .b import y\n"
        "x = 1\n"
    )
    (pkg / "b.py").write_text("def f():\n    from . import c\n")
    (pkg / "c.py").write_text("from .b import f\nfrom chatmem.core.backend import retry\n")
    (pkg / "provision" / "__init__.py").write_text(
        "from chatmem.testing import Harness\nfrom chatmem.testing._x import y\n"
    )
    found = all_imports("demo", tmp_path)
    assert any(i.target == "chatmem.demo.b" and i.annotation_only for i in found)
    assert any(i.source == "chatmem.demo.b" and i.target == "chatmem.demo" for i in found)
    assert cycles_in("demo", tmp_path) == [["chatmem.demo.b", "chatmem.demo.c"]]
    where = [b.split(" imports ")[0] for b in violations("demo", found, store=True)]
    assert where == [
        "chatmem.demo.a:2",  # _codec is a private name
        "chatmem.demo.a:3",  # a private core module
        "chatmem.demo.a:4",  # another store
        "chatmem.demo.a:5",  # the kit outside provision
        "chatmem.demo.provision:2",  # a private kit module
    ]
    as_kit = [b.split(" imports ")[0] for b in violations("demo", found, store=False)]
    assert as_kit == [*where[:4], "chatmem.demo.provision:1", "chatmem.demo.provision:2"]
    assert violations("core", found) != []  # core may import no other package at all
    assert not public_core(Import("m", "chatmem.core._errors", "require", 1, False))
    assert not public_core(Import("m", "chatmem.core", "_codec", 1, False))
    assert public_core(Import("m", "chatmem.core.backend", "retry", 1, False))
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
