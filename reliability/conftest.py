"""pytest wiring of the reliability suite: profiles, the Toxiproxy fixture, the results table.

The suite reuses the conformance harnesses (``--backend NAME`` starts the same servers). Each
test declares the table column it fills with ``@pytest.mark.column(name)`` and adds the
numbers it measured through the ``note`` fixture; at the end of the run the backend's row is
written to ``<results-dir>/<profile>/<backend>.json`` and the table of every row there is
rendered to ``results.md`` and ``results.json`` next to it.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import tempfile
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from chatmem.testing.harness import Harness, ServerInfo, Unavailable
from chatmem.testing.plugin import _STATE

from .profiles import PROFILES, Profile
from .results import write_row
from .toxiproxy import VERSION, Toxiproxy

_ROW: dict[str, dict[str, Any]] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--profile",
        default=os.environ.get("CHATMEM_RELIABILITY_PROFILE", "short"),
        choices=sorted(PROFILES),
        help="short (CI) or full (the stated scale numbers)",
    )
    parser.addoption(
        "--scale-adds",
        type=int,
        default=None,
        help="override the profile's adds per writer (the table shows the number used)",
    )
    parser.addoption(
        "--results-dir",
        default=os.environ.get("CHATMEM_RELIABILITY_RESULTS", ".work/reliability"),
        help="where the per-backend rows and the rendered table go",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "column(name): the results-table column a test fills")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The restart test runs last: it disturbs every connection to the shared server."""

    def is_restart(item: pytest.Item) -> bool:
        marker = item.get_closest_marker("column")
        return marker is not None and marker.args[0] == "restart"

    items.sort(key=is_restart)  # stable: everything else keeps its order


@pytest.fixture(scope="session")
def profile(request: pytest.FixtureRequest) -> Profile:
    chosen = PROFILES[request.config.getoption("--profile")]
    adds = request.config.getoption("--scale-adds")
    return chosen if adds is None else dataclasses.replace(chosen, scale_adds=adds)


@pytest.fixture
def note(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Details a test reports for its table cell (counts, the timeout observed...)."""
    details: dict[str, Any] = {}
    request.node.stash[_DETAILS] = details
    return details


_DETAILS = pytest.StashKey[dict[str, Any]]()


@pytest.fixture(scope="session")
def toxiproxy(harness: Harness, server: ServerInfo) -> Iterator[Toxiproxy]:
    """One Toxiproxy server per run (server backends only)."""
    if server.url is None:
        pytest.skip("in-process: no connection to break")
    workdir = Path(tempfile.mkdtemp(prefix="chatmem-toxiproxy-"))
    try:
        proxy = Toxiproxy(workdir)
    except Unavailable as exc:
        pytest.fail(f"toxiproxy is required for the fault tests: {exc}", pytrace=False)
    _STATE["toxiproxy"] = VERSION if proxy.version in ("git", "") else proxy.version
    try:
        yield proxy
    finally:
        proxy.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    marker = item.get_closest_marker("column")
    if marker is None:
        return report
    column = marker.args[0]
    if report.when == "call" or (report.when == "setup" and not report.passed):
        outcome = "skip" if report.skipped else ("pass" if report.passed else "fail")
        if hasattr(report, "wasxfail"):
            outcome = "fail"  # a known failure stays a failure in the table
        cell = _ROW.setdefault(column, {"pass": 0, "fail": 0, "skip": 0, "details": []})
        cell[outcome] += 1
        details = dict(item.stash.get(_DETAILS, {}))
        if hasattr(report, "wasxfail"):
            details["error"] = str(report.wasxfail)[:300]
        elif report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            text = getattr(crash, "message", None) or str(report.longrepr).strip()
            details["error"] = text.splitlines()[0][:300]
        if report.skipped and isinstance(report.longrepr, tuple):
            details["skipped"] = str(report.longrepr[2])[:300]
        if details:
            cell["details"].append({"test": item.name, **details})
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _ROW:
        return
    config = session.config
    info: ServerInfo | None = _STATE.get("server")
    row = {
        "backend": config.getoption("--backend"),
        "server": info.label if info else f"not run: {_STATE.get('unavailable', '?')}",
        "stand_in": info.stand_in if info else None,
        "python": platform.python_version(),
        "toxiproxy": _STATE.get("toxiproxy"),
        "profile": config.getoption("--profile"),
        "ran_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "host": f"{platform.node()} ({os.cpu_count()} CPUs, {platform.system()})",
        "columns": _ROW,
    }
    write_row(Path(config.getoption("--results-dir")), row)
