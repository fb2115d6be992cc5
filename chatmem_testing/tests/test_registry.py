"""The kit's own plumbing: finding harnesses by name or spec, and the suite's export list."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from chatmem.core import MissingDependencyError
from chatmem.testing import (
    ENTRY_POINT_GROUP,
    Harness,
    HarnessNotFoundError,
    harness_from_spec,
    load_harness,
    registered_harnesses,
)
from chatmem.testing import suite as shared_suite

ROOT = Path(__file__).resolve().parents[2]


def test_our_backends_are_registered_by_entry_point() -> None:
    names = set(registered_harnesses())
    assert {"memory", "sqlite", "postgres", "redis", "mongo", "cassandra", "neo4j"} <= names
    harness = load_harness("memory")
    assert isinstance(harness, Harness) and harness.name == "memory"


def test_every_harness_of_ours_loads_under_its_name() -> None:
    """Each of chatmem's own ``chatmem.harnesses`` entry points imports and builds a harness
    named as registered; the kit's own, ``memory``, ships in the kit (``provision``)."""
    ours = {
        n: ep for n, ep in registered_harnesses().items() if ep.dist and ep.dist.name == "chatmem"
    }
    assert ours["memory"].value == "chatmem.testing.provision:MemoryHarness"
    for name in ours:
        try:
            assert load_harness(name).name == name
        except HarnessNotFoundError as exc:
            # a store's harness ships in its package, which needs its driver: without it the
            # error names the extra (the nox kit session loads every one with all drivers)
            missing = exc.__cause__
            assert isinstance(missing, MissingDependencyError), exc
            assert missing.name and importlib.util.find_spec(missing.name) is None, exc
            assert f'pip install "chatmem[{missing.extra}]"' in str(exc)


def test_every_store_ships_its_harnesses_in_provision_and_registers_each() -> None:
    """Each harness module in a store's ``provision`` package is registered under its own
    ``chatmem.harnesses`` name, and every harness of ours points into a shipped package (so
    the kit works from the installed wheel: the nox ``kit`` session loads them there)."""
    modules = {
        f"chatmem.{p.parent.parent.name}.provision.{p.stem}"
        for p in ROOT.glob("chatmem_*/chatmem/*/provision/[!_]*.py")
    }
    ours = {
        ep.value.split(":")[0]
        for ep in registered_harnesses().values()
        if ep.dist and ep.dist.name == "chatmem"
    }
    assert modules, "no provision packages found"
    assert modules <= ours, f"add to pyproject.toml: {sorted(modules - ours)}"
    assert ours - modules == {"chatmem.testing.provision"}
    assert not (ROOT / "conformance_tests" / "harnesses").exists()


def test_a_module_class_spec_loads_without_registration() -> None:
    harness = load_harness("chatmem.testing.provision:MemoryHarness")
    assert harness.name == "memory"


def test_an_unknown_name_lists_the_registered_ones() -> None:
    with pytest.raises(HarnessNotFoundError) as info:
        load_harness("nosuchstore")
    assert ENTRY_POINT_GROUP in str(info.value) and "memory" in str(info.value)


@pytest.mark.parametrize(
    "spec", ["nomodule_here_xyz:Thing", "os:no_such_attr", "os:path", "justtext:", ":Cls"]
)
def test_a_bad_spec_is_a_clear_error(spec: str) -> None:
    with pytest.raises(HarnessNotFoundError):
        harness_from_spec(spec)


def test_the_suite_exports_every_shared_test_once() -> None:
    tests = shared_suite.shared_tests()
    assert sorted(tests) == shared_suite.__all__
    assert all(name.startswith("test_") for name in tests)
    per_module = sum(
        1
        for module in shared_suite.MODULES
        for name, value in vars(module).items()
        if name.startswith("test_") and callable(value)
    )
    assert per_module == len(tests)  # no name defined in two modules


def test_an_unknown_backend_stops_pytest_with_a_usage_error() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--backend",
            "nosuchstore",
            "--co",
            "-q",
            "conformance_tests",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 4, out.stdout + out.stderr  # pytest's usage-error exit code
    assert "unknown backend 'nosuchstore'" in out.stderr


def _collected(*args: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--backend", "memory", "--co", "-q", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return [line for line in out.stdout.splitlines() if "::" in line]


def test_twin_both_runs_each_shared_test_once_per_twin() -> None:
    """``--twin both`` collects every shared test the one-twin runs collect, a twin-dependent
    one once per twin and an async-only one once; a module outside the suite is unchanged."""
    suite, cli = "conformance_tests/test_suite.py", "conformance_tests/test_cli_reads.py"
    sync = _collected(suite, cli, "--twin", "sync")
    both = _collected(suite, cli, "--twin", "both")

    def base(node: str) -> str:
        return node.split("[")[0]

    assert {base(n) for n in both} == {base(n) for n in sync}
    round_trip = f"{suite}::test_save_and_read_back_every_kind_and_field"
    assert sorted(n for n in both if base(n) == round_trip) == [
        f"{round_trip}[async]",
        f"{round_trip}[sync]",
    ]
    many_tasks = [n for n in both if "test_async_many_tasks_on_one_conversation" in n]
    assert many_tasks and all("[async" in n for n in many_tasks)  # needs the async twin
    assert [n for n in both if n.startswith(cli)] == [n for n in sync if n.startswith(cli)]
