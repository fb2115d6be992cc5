"""Every store package has the same modules for the same roles (docs/contributing.md, "One
skeleton for every store package"), the same public names, and stays within the size limits.

Read from the source tree (no store driver needed), so a new store package is checked from
the day its folder exists.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPECIAL = ("core", "testing", "integrations")
STORES = sorted(
    p.parent.name
    for p in ROOT.glob("chatmem_*/chatmem/*/__init__.py")
    if p.parent.name not in SPECIAL
)
CLASS_NAMES = {"jdbc": "Jdbc", "redis": "Redis", "mongo": "Mongo", "cassandra": "Cassandra"}
DRIVERS = {
    "jdbc": "sqlalchemy",
    "redis": "redis",
    "mongo": "pymongo",
    "cassandra": "cassandra",
    "neo4j": "neo4j",
}

REQUIRED = {
    "__init__.py",  # re-exports and __all__
    "_config.py",  # <Store>Config and the DEFAULT_* constants
    "_schema.py",  # the chat store's storage shape (pure)
    "_codec.py",  # message <-> row, document or node (pure)
    "_errors.py",  # translate_errors and the error classification
    "_async/repository.py",  # Async<Store>ChatMemoryRepository: I/O only
    "_async/schema_ops.py",  # creating and checking the schema on the server
    "_async/records.py",  # Async<Store>MemoryRecordRepository (and its sync twin)
    "provision/__init__.py",  # the conformance harnesses
}
OPTIONAL_TOP = {"_plan.py", "_connect.py", "_record_schema.py"}
FOLDERS = {"_async", "_sync", "_native", "provision"}

# A store not yet on the skeleton (none today): exactly what it still lacks and what it still
# keeps at its top level; an entry goes once it is moved.
NOT_YET: dict[str, dict[str, set[str]]] = {}

MAX_MODULE_LINES = 450
MAX_CLASS_LINES = 300
# What is over a limit, with its size then (nothing today): it may shrink, never grow, and
# nothing joins it.
OVERSIZED_MODULES: dict[str, int] = {}
OVERSIZED_CLASSES: dict[str, int] = {}


def _folder(store: str) -> Path:
    (folder,) = ROOT.glob(f"chatmem_*/chatmem/{store}")
    return folder


def _modules(store: str) -> set[str]:
    folder = _folder(store)
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*.py")}


def _product_modules() -> list[tuple[str, Path]]:
    """(``store/relative/path.py``, file) of every hand-written store module."""
    return [
        (f"{store}/{rel}", _folder(store) / rel)
        for store in STORES
        for rel in sorted(_modules(store))
        if not rel.startswith("_sync/")
    ]


def test_the_skeleton_sees_every_store() -> None:
    assert {"jdbc", "redis", "mongo", "cassandra", "neo4j"} <= set(STORES)


@pytest.mark.parametrize("store", STORES)
def test_every_store_has_the_skeleton_modules(store: str) -> None:
    modules = _modules(store)
    known = NOT_YET.get(store, {"missing": set(), "stray": set()})
    missing = REQUIRED - modules - known["missing"]
    assert not missing, f"chatmem.{store} lacks {sorted(missing)}"
    top = {m for m in modules if "/" not in m}
    stray = top - REQUIRED - OPTIONAL_TOP - known["stray"]
    assert not stray, f"chatmem.{store}: {sorted(stray)} belong in _native/ (or a role above)"
    folders = {m.split("/", 1)[0] for m in modules if "/" in m}
    assert folders <= FOLDERS, f"chatmem.{store}: unknown folders {sorted(folders - FOLDERS)}"


@pytest.mark.parametrize("store", STORES)
def test_every_async_module_has_its_generated_twin(store: str) -> None:
    modules = _modules(store)
    sources = {m.removeprefix("_async/") for m in modules if m.startswith("_async/")}
    twins = {m.removeprefix("_sync/") for m in modules if m.startswith("_sync/")}
    assert sources == twins


@pytest.mark.parametrize("store", STORES)
def test_every_store_exports_the_same_names_with_from_url(store: str) -> None:
    """``<Store>ChatMemoryRepository``, ``<Store>MemoryRecordRepository``, their ``Async``
    twins and ``<Store>Config`` are exported by name (read from ``__all__``); the store classes
    each define or inherit ``from_url`` (checked on the classes when the driver is here)."""
    prefix = CLASS_NAMES.get(store, store.capitalize())
    tree = ast.parse((_folder(store) / "__init__.py").read_text(encoding="utf-8"))
    exported: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            exported = set(ast.literal_eval(node.value))
    stores = [
        f"{prefix}ChatMemoryRepository",
        f"Async{prefix}ChatMemoryRepository",
        f"{prefix}MemoryRecordRepository",
        f"Async{prefix}MemoryRecordRepository",
    ]
    assert {*stores, f"{prefix}Config"} <= exported, f"chatmem.{store}.__all__ = {exported}"
    driver = DRIVERS.get(store)
    if driver is None or importlib.util.find_spec(driver) is None:
        return  # the names are checked above; the classes need the driver to import
    module = importlib.import_module(f"chatmem.{store}")
    for name in stores:
        assert callable(getattr(getattr(module, name), "from_url", None)), name


def test_no_store_module_grows_past_the_size_limit() -> None:
    over = {}
    for name, path in _product_modules():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        limit = OVERSIZED_MODULES.get(name, MAX_MODULE_LINES)
        if lines > limit:
            over[name] = lines
    assert not over, f"over {MAX_MODULE_LINES} lines (or past today's size): {over}"


def test_no_store_class_grows_past_the_size_limit() -> None:
    over = {}
    for name, path in _product_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                key = f"{name}:{node.name}"
                if lines > OVERSIZED_CLASSES.get(key, MAX_CLASS_LINES):
                    over[key] = lines
    assert not over, f"classes over {MAX_CLASS_LINES} lines (or past today's size): {over}"


def test_the_oversized_lists_name_only_what_is_still_over() -> None:
    """An entry is removed once its module or class is back within the limit."""
    sizes = {
        name: len(path.read_text(encoding="utf-8").splitlines())
        for name, path in _product_modules()
    }
    fixed = [n for n in OVERSIZED_MODULES if sizes.get(n, 0) <= MAX_MODULE_LINES]
    assert not fixed, f"remove from OVERSIZED_MODULES: {fixed}"


def test_the_not_yet_list_names_only_what_is_still_off_the_skeleton() -> None:
    """An entry goes once its store has the module, or no longer keeps the stray one."""
    for store, known in NOT_YET.items():
        modules = _modules(store)
        assert not known["missing"] & modules, f"{store}: remove from NOT_YET missing"
        assert known["stray"] <= modules, f"{store}: remove from NOT_YET stray"


def test_no_module_of_core_integrations_or_the_kit_passes_the_limits() -> None:
    """The same limits outside the stores (issue 28: no product module over 450 lines, no
    class over 300, generated twins aside)."""
    over = {}
    for package in SPECIAL:
        (folder,) = ROOT.glob(f"chatmem_*/chatmem/{package}")
        for path in sorted(folder.rglob("*.py")):
            if "_sync" in path.relative_to(folder).parts:
                continue
            text = path.read_text(encoding="utf-8")
            name = f"{package}/{path.relative_to(folder).as_posix()}"
            if len(text.splitlines()) > MAX_MODULE_LINES:
                over[name] = len(text.splitlines())
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.ClassDef):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > MAX_CLASS_LINES:
                        over[f"{name}:{node.name}"] = lines
    assert not over, f"over {MAX_MODULE_LINES} lines a module or {MAX_CLASS_LINES} a class: {over}"
