"""Test matrix: conformance by backend x Python, unit tests, lint, typecheck, bench.

Each ``conformance`` session starts its backend's server once (through the harness its store
package ships in ``chatmem.<store>.provision``) and runs the shared suite plus that backend's
own tests. The in-memory and SQLite backends run on every installed Python; server backends on one.
Interpreters are never downloaded; a missing one skips its sessions.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import nox

nox.options.error_on_missing_interpreters = False
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = [
    "lint",
    "typecheck",
    "unit",
    "conformance",
    "conformance_tc",
    "integrations",
    "openai-agents-sdk-tests",
    "adk",
    "agent-framework-strands",
    "longterm",
    "longterm_browser",
    "kit",
    "docs",
    "bench_smoke",
]

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
# pinned: scripts/unasync.py formats the generated sync twins with it, and --check compares
RUFF = "ruff==0.17.6"
MAIN_PYTHON = "3.11"
EVERY_PYTHON = ("memory", "sqlite")

# backend -> (extra to install, its own test folders)
BACKENDS: dict[str, tuple[str, tuple[str, ...]]] = {
    # the URL-registry tests in conformance_tests name the SQL store beside the in-memory one
    "memory": ("sqlite", ()),
    "sqlite": ("sqlite", ("chatmem_jdbc/tests",)),
    "postgres": ("postgres", ("chatmem_jdbc/tests",)),
    "mariadb": ("mysql", ("chatmem_jdbc/tests",)),
    "mssql": ("mssql", ("chatmem_jdbc/tests",)),
    "oracle": ("oracle", ("chatmem_jdbc/tests",)),
    "redis": ("redis", ("chatmem_redis/tests",)),
    "redis_cluster": ("redis", ("chatmem_redis/tests",)),
    "mongo": ("mongo", ("chatmem_mongo/tests",)),
    "cassandra": ("cassandra", ("chatmem_cassandra/tests",)),
    # 3 nodes on 127.0.0.1-3: the shared suite plus the node-failure tests
    "cassandra_cluster": ("cassandra", ("chatmem_cassandra/tests",)),
    "neo4j": ("neo4j", ("chatmem_neo4j/tests",)),
    "ferretdb": ("mongo", ("chatmem_mongo/tests",)),
}


def _harnesses() -> list[str]:
    """Every harness the package registers (``chatmem.harnesses`` entry points in
    pyproject.toml: the in-memory store's lives in the kit, the servers' here)."""
    import tomllib

    project = tomllib.loads(Path(__file__).with_name("pyproject.toml").read_text())["project"]
    return sorted(project["entry-points"]["chatmem.harnesses"])


HARNESSES = _harnesses()
MATRIX = [
    nox.param(python, backend, id=f"{backend}-{python}")
    for backend in HARNESSES
    for python in (PYTHONS if backend in EVERY_PYTHON else [MAIN_PYTHON])
]
PACKAGES = [
    f"chatmem_{p}/chatmem"
    for p in ("core", "jdbc", "cassandra", "neo4j", "mongo", "redis", "testing", "integrations")
]


def _install(session: nox.Session, extra: str) -> None:
    extras = ",".join(e for e in (extra, "test") if e)
    session.install("-e", f".[{extras}]")


# backends whose store has no async twin (SQL Server, Oracle: no server here to test one) or
# whose session runs the sync twin only (the 3-node Cassandra cluster: its node-failure tests
# dominate; the async twin by hand: pytest conformance_tests/test_suite.py --backend
# cassandra_cluster --twin async)
SYNC_ONLY = ("mssql", "oracle", "cassandra_cluster")
# The 3-node Cassandra cluster runs what a cluster adds to the single node (which runs the
# whole suite on both twins): concurrent writers, the cold default path, first use, its
# node-failure and lagging-coordinator tests (any ``-- args``: the whole suite).
CLUSTER_SCOPE = {"cassandra_cluster": ("test_concurrency", "test_default_path")}


def _suite_tests(modules: tuple[str, ...]) -> list[str]:
    """The test functions the shared suite's ``modules`` define, read from their source."""
    import re

    suite = Path(__file__).parent / "chatmem_testing" / "chatmem" / "testing" / "suite"
    names: list[str] = []
    for module in modules:
        text = (suite / f"{module}.py").read_text()
        names += re.findall(r"^(?:async )?def (test_\w+)", text, re.M)
    return names


@nox.session
@nox.parametrize("python,backend", MATRIX)
def conformance(session: nox.Session, backend: str) -> None:
    """The shared suite on both twins (``--twin both``: once on the sync repository, once on
    a blocking view of the async one, every call on one event loop) plus the async-only tests
    and the backend's own tests, against one start of a real server."""
    extra, own_tests = BACKENDS.get(backend, (backend, ()))
    _install(session, extra)
    folders = [f for f in own_tests if Path(f).is_dir() and any(Path(f).glob("test_*.py"))]
    twin = "sync" if backend in SYNC_ONLY else "both"
    if backend in EVERY_PYTHON and session.python != MAIN_PYTHON:
        # Spring AI's side (a JVM per call) is the same on every Python: checked once
        folders += [f"--ignore={f}/test_spring_ai_layout.py" for f in own_tests]
    shared = ["conformance_tests"]
    if backend in CLUSTER_SCOPE and not session.posargs:
        tests = _suite_tests(CLUSTER_SCOPE[backend])
        shared = [f"conformance_tests/test_suite.py::{t}" for t in tests]
    session.run(
        "pytest",
        *shared,
        *folders,
        "--backend",
        backend,
        "--twin",
        twin,
        "-q",
        "-rs",
        *session.posargs,
    )


THIRD_PARTY = "conformance_tests/fixtures/thirdparty_backend"


@nox.session(python=MAIN_PYTHON)
def kit(session: nox.Session) -> None:
    """A third-party backend outside our package tree runs the whole shipped suite: chatmem
    (built as a wheel, with the testing extra) and the fixture package in one venv, then
    plain ``pytest`` with only the lines README "Adding a backend" shows. Every harness of
    ours is loaded there too, from the wheel."""
    root = Path(__file__).parent.resolve()
    # the drivers (all) too: a store's harness ships in its package, which needs its driver
    session.install(
        f"chatmem[testing,all] @ {root.as_uri()}", str(root / THIRD_PARTY), "mypy>=1.11"
    )
    session.env.setdefault("CHATMEM_SUMMARY_DIR", str(root / ".work" / "summary"))
    session.chdir(root / THIRD_PARTY)
    session.run("mypy", "--strict", "src")  # the shipped kit and core are typed for them too
    # every harness of ours resolves from the installed wheel, outside the checkout
    session.run("python", "-c", HARNESSES_FROM_WHEEL)
    session.run("pytest", "-q", "-rs", *session.posargs)


HARNESSES_FROM_WHEEL = """
import chatmem.testing as kit, sys
eps = [ep for ep in kit.registered_harnesses().values() if ep.dist and ep.dist.name == "chatmem"]
for ep in eps:
    h = kit.load_harness(ep.name)
    mod = sys.modules[type(h).__module__].__file__
    assert h.name == ep.name and "site-packages" in mod, (ep.name, mod)
print(len(eps), "harness entry points resolve from the installed wheel")
"""


# The testcontainers route, forced (CHATMEM_ROUTE=testcontainers) for every server backend.
# CHATMEM_TC_IMAGES=official (the default) runs testcontainers' modules on the pinned official
# images; CHATMEM_TC_IMAGES=local on the images scripts/docker/build-images.sh built here
# (no registry needed; scripts/test.sh sets it). SQL Server and Oracle have no local image.
LOCAL_IMAGES = {
    "postgres": "chatmem/postgres:15",
    "mariadb": "chatmem/mariadb:10.11",
    "redis": "chatmem/redis-stack:8.2",
    "mongo": "chatmem/mongo-nx:0.8.1",
    "cassandra": "chatmem/cassandra:5.0.8",
    "neo4j": "chatmem/neo4j:5.26.28",
}
TC_BACKENDS = [*LOCAL_IMAGES, "mssql", "oracle"]
TC_FULL = "postgres"
"""The backend whose testcontainers session runs the whole suite (the others: ``TC_SMOKE``)."""
TC_SMOKE = " or ".join(
    [
        "test_harness_routes",
        "test_save_and_read_back_every_kind_and_field",
        "test_concurrent_appends_lose_nothing",
        "test_cold_default_path_from_threads_loses_nothing",
        "test_typed_config_reaches_repository_from_url",
    ]
)
"""Round trip, concurrent writers and the cold default path through the container's port."""


@nox.session(python=MAIN_PYTHON)
@nox.parametrize("backend", TC_BACKENDS)
def conformance_tc(session: nox.Session, backend: str) -> None:
    """The shared suite through testcontainers (the route Docker users take), one container
    per session: whole on ``TC_FULL``, ``TC_SMOKE`` on the others (any ``-- args`` run the
    whole suite; ``-- chatmem_<backend>/tests`` adds the backend's own tests)."""
    extra = BACKENDS[backend][0]
    _install(session, extra)
    env = {"CHATMEM_ROUTE": "testcontainers"}
    if os.environ.get("CHATMEM_TC_IMAGES", "official") == "local":
        # no registry here: no Ryuk reaper image (our harnesses stop their containers), and
        # clients reach the mapped ports on loopback (also when testcontainers believes it
        # runs inside a container, where it would pick the bridge gateway instead)
        env |= {
            "TESTCONTAINERS_RYUK_DISABLED": "true",
            "TESTCONTAINERS_HOST_OVERRIDE": "127.0.0.1",
            "TESTCONTAINERS_CONNECTION_MODE": "docker_host",
        }
        if backend in LOCAL_IMAGES:
            key = f"CHATMEM_TC_IMAGE_{backend.upper()}"
            env[key] = os.environ.get(key, LOCAL_IMAGES[backend])
    env.setdefault("TC_MAX_TRIES", os.environ.get("TC_MAX_TRIES", "300"))
    # the suite's behaviour is the local session's; what this route adds is the container's
    # start, its mapped port and its image: the whole suite on one backend, a smoke elsewhere
    scope = [] if backend == TC_FULL or session.posargs else ["-k", TC_SMOKE]
    session.run(
        "pytest",
        "conformance_tests",
        "--backend",
        backend,
        "-q",
        "-rs",
        *scope,
        *session.posargs,
        env=env,
    )


# no server here for mssql/oracle; ferretdb is a cross-check of the mongo stand-in, not a
# backend; the clusters' failovers are their own tests (chatmem_redis/tests/test_redis_cluster.py,
# chatmem_cassandra/tests/test_cassandra_cluster.py, run by their conformance sessions)
CLUSTERS = ("redis_cluster", "cassandra_cluster")
RELIABILITY_BACKENDS = [b for b in HARNESSES if b not in ("mssql", "oracle", "ferretdb", *CLUSTERS)]


@nox.session(python=MAIN_PYTHON)
@nox.parametrize("backend", [nox.param(b, id=b) for b in RELIABILITY_BACKENDS])
def reliability(session: nox.Session, backend: str) -> None:
    """Faults through Toxiproxy, restart under load, scale, bad-input corpus; writes the
    results table to .work/reliability/<profile>/ (``-- --profile full`` for the stated
    numbers; the default ``short`` profile is what CI runs)."""
    _install(session, BACKENDS.get(backend, (backend, ()))[0])
    session.run("pytest", "reliability", "--backend", backend, "-q", "-rs", *session.posargs)


FRAMEWORKS = "langchain,llamaindex,langgraph,pydantic-ai"
# the OpenAI Agents SDK: about 4 s more per install from a warm cache (openai, mcp, starlette)
FRAMEWORKS += ",openai-agents"
# LangGraph's checkpointer conformance suite (a test dependency, not an extra)
FRAMEWORK_TESTS = ["langgraph-checkpoint-conformance==0.0.2"]
# the OpenTelemetry SDK's in-memory exporter and reader capture what chatmem emits
OTEL_TESTS = ["opentelemetry-sdk>=1.20"]
INTEGRATION_BACKENDS = ["postgres", "redis"]


@nox.session(python=PYTHONS)
def unit(session: nox.Session) -> None:
    """Core tests needing no server: window rule, codec, validation, CLI, data transfer, and
    the LangChain/LlamaIndex conversions and adapters on the in-memory store and SQLite."""
    _install(session, f"sqlite,{FRAMEWORKS},otel")
    # test_unasync checks the generated twins with the pinned ruff; the SDK captures spans
    session.install(*FRAMEWORK_TESTS, RUFF, *OTEL_TESTS)
    session.run(
        "pytest",
        "chatmem_core/tests",
        "chatmem_testing/tests",
        "chatmem_integrations/tests",
        "-q",
        "-rs",
        "--backend",
        "memory",
        *([] if session.python == MAIN_PYTHON else ["-m", "not scale"]),
        *session.posargs,
    )


@nox.session(python=MAIN_PYTHON)
@nox.parametrize("backend", [b for b in INTEGRATION_BACKENDS if b in HARNESSES])
def integrations(session: nox.Session, backend: str) -> None:
    """The framework adapters, LlamaIndex stores, LangGraph saver and store, and Spring AI
    advisors against a server backend too (vector stores: Redis with the redis backend,
    pgvector on its own server with the postgres one)."""
    _install(session, f"{BACKENDS[backend][0]},{FRAMEWORKS},otel")
    session.install(*FRAMEWORK_TESTS, *OTEL_TESTS)
    session.run(
        "pytest",
        "chatmem_integrations/tests/test_adapters.py",
        "chatmem_integrations/tests/test_llamaindex_stores.py",
        "chatmem_integrations/tests/test_spring_advisors.py",
        "chatmem_integrations/tests/test_langgraph.py",
        "chatmem_integrations/tests/test_pydantic_ai.py",
        "chatmem_integrations/tests/test_openai_agents.py",
        "chatmem_core/tests/test_observability.py",
        "--backend",
        backend,
        "-q",
        "-rs",
        *session.posargs,
    )


ADK_BACKENDS = ["memory", "sqlite", "postgres", "redis"]


@nox.session(python=MAIN_PYTHON)
def adk(session: nox.Session) -> None:
    """Google ADK's session and memory services (google-adk is heavy: its own session on one
    Python, not in FRAMEWORKS) on each backend in turn (on memory also the docs page's examples)."""
    _install(session, "sqlite,postgres,redis,google-adk")
    for backend in [b for b in ADK_BACKENDS if b == "memory" or b in HARNESSES]:
        session.run(
            "pytest",
            "chatmem_integrations/tests/test_adk.py",
            "--backend",
            backend,
            "-q",
            "-rs",
            *session.posargs,
        )


def _fetch_sdist(session: nox.Session, distribution: str) -> Path:
    """The unpacked source distribution of the installed release of ``distribution``,
    fetched into .work/ at test time (a framework's own tests; nothing of it is kept in the
    repository)."""
    version = session.run(
        "python",
        "-c",
        f"import importlib.metadata as m; print(m.version({distribution!r}))",
        silent=True,
    )
    version = str(version).strip()
    stem = f"{distribution.replace('-', '_')}-{version}"
    work = Path(".work") / f"{distribution}-sdist"
    tree = work / stem
    if not tree.exists():
        session.run(
            "python",
            "-m",
            "pip",
            "download",
            "--no-binary",
            ":all:",
            "--no-deps",
            f"{distribution}=={version}",
            "-d",
            str(work),
        )
        with tarfile.open(work / f"{stem}.tar.gz") as tar:
            tar.extractall(work, filter="data")
    return tree


# The SDK's own tests of SQLiteSession's internals (its connections, threads, file lock and
# rollbacks, rows corrupted in its file, its TypeError for unknown settings): no counterpart
# in a chatmem session (docs/integrations/openai-agents.md lists them).
SDK_SESSION_TESTS_LEFT_OUT = (
    "connection or corrupt or lock or closed_rejects or rolls_back or post_commit"
    " or quarantined or rollback_failure or rejects_unknown_dictionary"
)


@nox.session(name="openai-agents-sdk-tests", python=MAIN_PYTHON)
def openai_agents_sdk_tests(session: nox.Session) -> None:
    """The Agents SDK's own session tests (from its source distribution, fetched into .work/
    at test time, nothing of it kept in the repository) run against ChatmemSession."""
    _install(session, "openai-agents")
    session.install("pip", "pytest-asyncio", "pytest-mock", "inline-snapshot")
    tree = _fetch_sdist(session, "openai-agents")
    session.chdir(tree)
    session.run(
        "pytest",
        "-p",
        "chatmem_integrations.tests.sdk_session_shim",
        "tests/memory/test_session.py",
        "tests/memory/test_session_limit.py",
        "-k",
        f"not ({SDK_SESSION_TESTS_LEFT_OUT})",
        "-q",
        "-p",
        "no:cacheprovider",
        env={"PYTHONPATH": str(Path(__file__).resolve().parent)},
    )


AF_STRANDS_BACKENDS = ["memory", "sqlite", "postgres", "redis"]
AF_STRANDS_TESTS = [
    "chatmem_integrations/tests/test_agent_framework.py",
    "chatmem_integrations/tests/test_strands.py",
]


@nox.session(name="agent-framework-strands", python=MAIN_PYTHON)
def agent_framework_strands(session: nox.Session) -> None:
    """Microsoft Agent Framework's history provider and session store and Strands' session
    repository on each backend in turn (their own sessions: neither is in FRAMEWORKS), then
    Strands' own RepositorySessionManager tests (from its source distribution, fetched into
    .work/ at test time) against ChatmemSessionRepository on SQLite."""
    _install(session, "sqlite,postgres,redis,agent-framework,strands")
    # what Strands' test conftest imports (moto), and its async tests' runner
    session.install("pip", "moto>=5.1,<6", "pytest-asyncio>=1.0,<1.5")
    for backend in [b for b in AF_STRANDS_BACKENDS if b == "memory" or b in HARNESSES]:
        session.run(
            "pytest", *AF_STRANDS_TESTS, "--backend", backend, "-q", "-rs", *session.posargs
        )
    tree = _fetch_sdist(session, "strands-agents")
    db = (tree / "chatmem-shim.db").resolve()
    session.chdir(tree)
    session.run(
        "pytest",
        "-p",
        "chatmem_integrations.tests.strands_repository_shim",
        "tests/strands/session/test_repository_session_manager.py",
        "-q",
        "-p",
        "no:cacheprovider",
        env={
            "PYTHONPATH": str(Path(__file__).resolve().parent),
            "CHATMEM_SHIM_URL": f"sqlite:///{db}",
        },
    )


@nox.session(python=MAIN_PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over the whole tree (lint rules and formatting), and every generated sync twin
    current with its async source (scripts/unasync.py --check)."""
    session.install(RUFF)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("python", "scripts/unasync.py", "--check")


@nox.session(python=MAIN_PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy --strict on our packages (drivers installed so their types are checked too, and
    testcontainers, which the stores' harnesses in ``provision`` use)."""
    session.install(
        "-e",
        f".[all,api,testing,test,{FRAMEWORKS},google-adk,agent-framework,strands]",
        "mypy>=1.11",
    )
    session.run("mypy", *PACKAGES)


LONGTERM = "conformance_tests/longterm"
LONGTERM_BACKENDS = [
    "memory",
    "sqlite",
    "postgres",
    "mariadb",
    "redis",
    "mongo",
    "cassandra",
    "neo4j",
]


@nox.session(python=MAIN_PYTHON)
@nox.parametrize("backend", [nox.param(b, id=b) for b in LONGTERM_BACKENDS])
def longterm(session: nox.Session, backend: str) -> None:
    """Long-term memory: the record suite (on both twins) and the worked examples on each
    store; on memory also the pure rules, analysis, injection, API and README example; on
    SQLite the CLI."""
    driver = BACKENDS[backend][0]
    _install(
        session, ",".join(["api", "sqlite"] + ([driver] if driver not in ("", "sqlite") else []))
    )
    session.install("httpx>=0.27")
    session.run(
        "pytest",
        LONGTERM,
        f"--ignore={LONGTERM}/test_review_page.py",
        "--backend",
        backend,
        "--twin",
        "both",
        "-q",
        "-rs",
        *session.posargs,
    )


@nox.session(python=MAIN_PYTHON)
def longterm_browser(session: nox.Session) -> None:
    """The review page in headless Chromium (scripts/install/chromium.sh) via Selenium."""
    _install(session, "api,sqlite")
    session.install("selenium>=4.20")
    session.run(
        "pytest",
        f"{LONGTERM}/test_review_page.py",
        "--backend",
        "sqlite",
        "-q",
        "-rs",
        *session.posargs,
    )


@nox.session(python=MAIN_PYTHON)
def docs(session: nox.Session) -> None:
    """The documentation site with its API reference (mkdocs build --strict: any warning
    fails), every python example in README.md and docs/ run as a script against SQLite /
    in-memory stores, and README kept a front door whose paragraphs are not copied there."""
    _install(session, f"sqlite,{FRAMEWORKS}")
    session.install("mkdocs-material>=9.5,<10", "mkdocstrings[python]>=1.0,<2")
    session.run(
        "mkdocs", "build", "--strict", "--site-dir", ".work/site", env={"NO_MKDOCS_2_WARNING": "1"}
    )
    session.run(
        "pytest", "docs/test_examples.py", "docs/test_pages.py", "-q", "-rs", *session.posargs
    )


# Peer contenders and the plot, installed in the bench sessions only (never in an extra).
BENCH_PEERS = [
    "langchain-community",
    "langchain-postgres",
    "langchain-redis",
    "langchain-mongodb",
    "langchain-neo4j",
    "cassio",
    "llama-index-storage-chat-store-sqlite",
    "llama-index-storage-chat-store-postgres",
    "llama-index-storage-chat-store-redis",
    "llama-index-storage-chat-store-mongo",
    # the meta-package, as LlamaIndex users install it: MongoChatStore reads its version
    "llama-index",
]
BENCH_TOOLS = ["matplotlib>=3.8"]


@nox.session(python=MAIN_PYTHON)
def bench(session: nox.Session) -> None:
    """Turns/s of chatmem vs its bare-driver floor and its peers (not a test), one run:
    nox -s bench -- sqlite postgres ... [--quick] [--async]; a full run then redraws the plot
    and the tables in README and docs/performance.md from benchmarks/results/latest.json."""
    session.install("-e", ".[all,test]", *BENCH_PEERS, *BENCH_TOOLS)
    args = session.posargs or ["sqlite"]
    session.run("python", "-m", "benchmarks.run", *args)
    if "--quick" not in args:
        session.run("python", "-m", "benchmarks.report")


@nox.session(python=MAIN_PYTHON)
def bench_smoke(session: nox.Session) -> None:
    """The bench's own test: a quick run on SQLite and memory, its results file checked."""
    session.install("-e", ".[sqlite,test]", *BENCH_TOOLS)
    session.run("pytest", "benchmarks/test_bench.py", "-q", "-rs", *session.posargs)


@nox.session(python=False)
def summary(session: nox.Session) -> None:
    """Print and write the conformance summary of every session that ran."""
    session.run("python3", "scripts/summary.py", external=True)
