"""Finding a harness: by name in the ``chatmem.harnesses`` entry-point group, or by an
explicit ``module:Class`` spec. An unknown name is an error listing the registered ones.

A package registers its harness in its own ``pyproject.toml``::

    [project.entry-points."chatmem.harnesses"]
    mystore = "mystore_testing:MyStoreHarness"
"""

from __future__ import annotations

import importlib
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from .harness import Harness

ENTRY_POINT_GROUP = "chatmem.harnesses"


class HarnessNotFoundError(LookupError):
    """No harness under that name or spec; the message lists what is registered."""


def registered_harnesses() -> dict[str, EntryPoint]:
    """Every harness registered in the ``chatmem.harnesses`` group, by name."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def harness_from_spec(spec: str) -> Harness:
    """Instantiate the ``Harness`` subclass named by ``module:Class``."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise HarnessNotFoundError(f"harness spec {spec!r} is not 'module:Class'")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise HarnessNotFoundError(f"harness {spec!r}: {exc}") from exc
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise HarnessNotFoundError(f"harness {spec!r}: {module_name} has no {part}") from None
    return _instantiate(target, spec)


def load_harness(name: str) -> Harness:
    """The harness registered as ``name`` (or given as ``module:Class``), instantiated."""
    if ":" in name:
        return harness_from_spec(name)
    found = registered_harnesses()
    if name not in found:
        known = ", ".join(sorted(found)) or "none"
        raise HarnessNotFoundError(
            f"unknown backend {name!r}; registered in {ENTRY_POINT_GROUP!r}: {known}"
        )
    try:
        target = found[name].load()
    except ImportError as exc:
        raise HarnessNotFoundError(
            f"backend {name!r} is registered as {found[name].value!r}, which does not import: {exc}"
        ) from exc
    return _instantiate(target, found[name].value)


def _instantiate(target: Any, where: str) -> Harness:
    if isinstance(target, type) and issubclass(target, Harness):
        return target()
    raise HarnessNotFoundError(f"{where!r} is not a chatmem.testing.Harness subclass")
