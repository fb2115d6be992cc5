"""pytest plugin for the conformance suite: ``--backend NAME`` or ``--harness module:Class``
picks the harness (names come from the ``chatmem.harnesses`` entry-point group).

Load it with ``-p chatmem.testing.plugin``; collect the shared tests with one line in a
test module, ``from chatmem.testing.suite import *``. It provisions one server per run (see
``harness.py`` for the order of routes), gives each test an isolated repository, deselects
other backends' specific tests, and ends the run with a summary naming the product and
version the backend ran against (stand-ins by name), also written as JSON to
``$CHATMEM_SUMMARY_DIR`` (default ``.work/summary``).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from chatmem.core.backend import AsyncBaseChatMemoryRepository, BaseChatMemoryRepository, Capability

from .capabilities import require_capability
from .harness import (
    Harness,
    ServerInfo,
    Unavailable,
    docker_available,
    forced_route,
    testcontainers_image,
)
from .registry import HarnessNotFoundError, load_harness
from .twins import BOTH, TWINS, LoopThread, blocking_view, twin_from_env

_STATE: dict[str, Any] = {}
SUITE_PACKAGE = "chatmem.testing.suite"
"""Where the shared suite's tests are defined (a backend's test module star-imports them)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chatmem", "chatmem conformance suite")
    group.addoption(
        "--backend",
        default=os.environ.get("CHATMEM_BACKEND", "memory"),
        help="backend to test: a harness name registered in the chatmem.harnesses entry points",
    )
    group.addoption(
        "--twin",
        default=None,
        choices=(*TWINS, BOTH),
        help="which twin the shared suite tests: sync (default), async (through a blocking "
        "view of the backend's async repository) or both (every twin-dependent test once per "
        "twin, on one server start); env CHATMEM_TWIN",
    )
    group.addoption(
        "--harness",
        default=os.environ.get("CHATMEM_HARNESS"),
        help="harness to test as module:Class (overrides --backend)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "backend(*names): test of those backends' own features (run only for them)"
    )
    config.addinivalue_line(
        "markers", "multiprocess: needs a repository reachable from other processes"
    )
    config.addinivalue_line(
        "markers", "capability(name): a shared test of an optional capability (ttl, search...)"
    )
    spec = config.getoption("--harness")
    try:
        _STATE["harness"] = load_harness(spec or config.getoption("--backend"))
    except HarnessNotFoundError as exc:
        raise pytest.UsageError(str(exc)) from None


def backend_name(config: pytest.Config) -> str:
    """The name of the harness this run tests (``--backend`` or the ``--harness`` class's)."""
    harness: Harness | None = _STATE.get("harness")
    return harness.name if harness is not None else str(config.getoption("--backend"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``--twin both``: every shared-suite test that depends on the ``twin`` fixture runs once
    per twin (a backend's own tests keep the sync twin, as in a ``--twin sync`` run)."""
    shared = metafunc.function.__module__.startswith(SUITE_PACKAGE)
    if shared and "twin" in metafunc.fixturenames and twin_of(metafunc.config) == BOTH:
        metafunc.parametrize("twin", TWINS, indirect=True, scope="session")


def _sync_run_of_async_test(item: pytest.Item) -> bool:
    """In a ``--twin both`` run: the sync copy of a test only the async twin runs."""
    callspec = getattr(item, "callspec", None)
    fixtures = getattr(item, "fixturenames", ())
    return (
        callspec is not None
        and callspec.params.get("twin") == "sync"
        and ("async_twin" in fixtures)
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    harness: Harness | None = _STATE.get("harness")
    names = {backend_name(config), *(harness.also_runs if harness else ())}
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        marker = item.get_closest_marker("backend")
        foreign = marker is not None and not names & set(marker.args)
        (drop if foreign or _sync_run_of_async_test(item) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    gaps = dict(harness.known_gaps) if harness else {}
    for pattern, (reason, strict) in gaps.items():  # a stand-in's documented gaps run as xfail
        for item in items:
            if re.search(pattern, item.nodeid):
                item.add_marker(pytest.mark.xfail(reason=reason, strict=strict))


def _required(name: str) -> bool:
    wanted = os.environ.get("CHATMEM_REQUIRE_BACKENDS", "")
    names = {n.strip() for n in wanted.split(",") if n.strip()}
    return "all" in names or name in names


def provision(harness: Harness, workdir: Path) -> ServerInfo:
    """Try env URL, local server, testcontainers (or only the route ``CHATMEM_ROUTE``
    forces); raise Unavailable with every reason."""
    route = forced_route()
    reasons: list[str] = []
    if route in ("auto", "env"):
        if harness.env_var and os.environ.get(harness.env_var):
            return harness.from_env(os.environ[harness.env_var])
        reasons.append(f"{harness.env_var} not set" if harness.env_var else "no env route")
    if route in ("auto", "local"):
        try:
            return harness.start_local(workdir)
        except Unavailable as exc:
            reasons.append(f"local server: {exc}")
    if route in ("auto", "testcontainers"):
        if harness.testcontainers_image is None:
            reasons.append("no testcontainers route")
        else:
            image = testcontainers_image(harness)
            docker = docker_available()
            if docker:
                try:
                    return harness.start_testcontainers()
                except Unavailable as exc:
                    reasons.append(f"testcontainers ({image}): {exc}")
            else:
                reasons.append(f"testcontainers ({image}): {docker.reason}")
    if route != "auto":
        reasons.insert(0, f"CHATMEM_ROUTE={route}")
    raise Unavailable("; ".join(reasons))


@pytest.fixture(scope="session")
def harness() -> Harness:
    """The harness chosen by ``--backend`` or ``--harness``."""
    found: Harness = _STATE["harness"]
    return found


@pytest.fixture(scope="session")
def server(harness: Harness) -> Iterator[ServerInfo]:
    if "unavailable" in _STATE:
        _skip_or_fail(harness, _STATE["unavailable"])
    workdir = Path(tempfile.mkdtemp(prefix=f"chatmem-{harness.name}-"))
    try:
        info = provision(harness, workdir)
    except Unavailable as exc:
        _STATE["unavailable"] = str(exc)
        _skip_or_fail(harness, str(exc))
    _STATE["server"] = info
    try:
        yield info
    finally:
        info.stop()


def _skip_or_fail(harness: Harness, reason: str) -> None:
    message = f"{harness.name} not available: {reason}"
    if _required(harness.name):
        pytest.fail(f"required backend {message}", pytrace=False)
    pytest.skip(message)


def twin_of(config: pytest.Config) -> str:
    """The twin this run tests: ``--twin`` or ``CHATMEM_TWIN`` (default ``sync``)."""
    chosen = config.getoption("--twin")
    return str(chosen) if chosen else twin_from_env()


@pytest.fixture(scope="session")
def twin(request: pytest.FixtureRequest) -> str:
    """``"sync"`` or ``"async"``: which twin the shared suite is testing (in a ``--twin both``
    run, this test's copy)."""
    param = getattr(request, "param", None)
    if param is not None:
        return str(param)
    chosen = twin_of(request.config)
    return "sync" if chosen == BOTH else chosen


@pytest.fixture(scope="session")
def twin_loop() -> Iterator[LoopThread]:
    """The event loop (in a background thread) that blocking views of async twins run on."""
    loop = LoopThread()
    yield loop
    loop.stop()


@pytest.fixture
def make_repository(
    harness: Harness, server: ServerInfo, twin: str, request: pytest.FixtureRequest
) -> Iterator[Callable[..., BaseChatMemoryRepository]]:
    """Build an isolated repository; in an async-twin run, a blocking view of the async twin
    on the same data (the sync repository made the namespace and is what ``cleanup`` gets)."""
    made: list[BaseChatMemoryRepository] = []
    views: list[Any] = []
    loop: LoopThread | None = request.getfixturevalue("twin_loop") if twin == "async" else None

    def make(**options: Any) -> BaseChatMemoryRepository:
        repo = harness.make_repository(server, **options)
        made.append(repo)
        if loop is None:
            return repo
        view = blocking_view(loop.run(harness.make_async_twin(server, repo)), loop, repo)
        views.append(view)
        return view  # type: ignore[return-value]  # registered as a virtual subclass

    yield make
    for view in views:
        if hasattr(view.twin, "close"):
            view.close()
    for repo in made:
        harness.cleanup(server, repo)


@pytest.fixture
def async_twin(twin: str, harness: Harness, server: ServerInfo) -> Iterator[Callable[[], Any]]:
    """``async with async_twin() as repo``: an async repository on a fresh namespace, built
    and closed on the running loop (the sync repository that made it is cleaned up after)."""
    if twin != "async":
        pytest.skip("async-twin test: runs in the --twin async run")
    made: list[BaseChatMemoryRepository] = []

    @asynccontextmanager
    async def open_twin() -> AsyncIterator[AsyncBaseChatMemoryRepository]:
        repo = harness.make_repository(server)
        made.append(repo)
        built = await harness.make_async_twin(server, repo)
        try:
            yield built
        finally:
            close = getattr(built, "close", None)
            if close is not None:
                await close()

    yield open_twin
    for repo in made:
        harness.cleanup(server, repo)


@pytest.fixture(scope="session")
def shared_suite_tests() -> dict[str, Any]:
    """Every shared test function by name (the suite's guard compares the run against it;
    a fixture, so the suite's own modules never import the suite package back)."""
    from .suite import shared_tests

    return shared_tests()


@pytest.fixture
def repository(
    make_repository: Callable[..., BaseChatMemoryRepository],
) -> BaseChatMemoryRepository:
    return make_repository()


@pytest.fixture
def cold_urls(harness: Harness, server: ServerInfo) -> Iterator[list[str]]:
    """Collects the cold default URLs a test made and removes them afterwards."""
    made: list[str] = []
    yield made
    for url in made:
        harness.cleanup_cold_default(server, url)


@pytest.fixture
def ttl_repository(
    repository: BaseChatMemoryRepository,
    harness: Harness,
    make_repository: Callable[..., BaseChatMemoryRepository],
) -> BaseChatMemoryRepository:
    """A repository whose conversations expire ``harness.short_ttl`` after their last write
    (the test is skipped for a repository class that does not claim TTL)."""
    require_capability(repository, Capability.TTL)
    return make_repository(**harness.ttl_options(harness.short_ttl))


@pytest.fixture
def search_repository(
    repository: BaseChatMemoryRepository,
    harness: Harness,
    make_repository: Callable[..., BaseChatMemoryRepository],
) -> BaseChatMemoryRepository:
    """A repository with search enabled (skipped for a class that does not claim search)."""
    require_capability(repository, Capability.SEARCH)
    return make_repository(**harness.search_options())


def forced_route_or_none() -> str | None:
    """The route a run that reached no server was forced onto (for its summary row)."""
    try:
        route = forced_route()
    except Unavailable:
        return None
    return None if route == "auto" else route


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    backend = backend_name(config)
    if "server" not in _STATE and "unavailable" not in _STATE:
        return  # no test asked for a server (unit tests): nothing to report
    stats = terminalreporter.stats
    counts = {
        k: len(
            [
                r
                for r in stats.get(k, [])
                if getattr(r, "when", "call") != "teardown" or k == "error"
            ]
        )
        for k in ("passed", "failed", "skipped", "error", "xfailed", "xpassed")
    }
    info: ServerInfo | None = _STATE.get("server")
    ran_against = (
        info.label if info else f"not run: {_STATE.get('unavailable', 'no test used a server')}"
    )
    suite = " ".join(sorted({a.split("::")[0].rstrip("/") for a in config.args})) or "."
    twin = twin_of(config)
    if twin != "sync":
        suite = f"{suite} ({'both twins' if twin == BOTH else 'async twin'})"
    row = {
        "suite": suite,
        "backend": backend,
        "python": platform.python_version(),
        "server": ran_against,
        "route": info.route if info else forced_route_or_none(),
        "image": info.extra.get("image") if info else None,
        "stand_in": info.stand_in if info else None,
        **counts,
    }
    out_dir = Path(os.environ.get("CHATMEM_SUMMARY_DIR", ".work/summary"))
    out_dir.mkdir(parents=True, exist_ok=True)
    key = suite if row["route"] in (None, "local", "embedded", "env") else f"{suite}|{row['route']}"
    tag = hashlib.sha1(key.encode()).hexdigest()[:8]
    (out_dir / f"{backend}-py{platform.python_version()}-{tag}.json").write_text(json.dumps(row))
    terminalreporter.write_sep("=", "chatmem conformance summary")
    terminalreporter.write_line(
        f"backend={backend} twin={twin} python={row['python']} server={ran_against} "
        f"route={row['route'] or '-'} image={row['image'] or '-'} "
        f"passed={counts['passed']} failed={counts['failed']} skipped={counts['skipped']} "
        f"errors={counts['error']} xfailed={counts['xfailed']} xpassed={counts['xpassed']}"
    )
