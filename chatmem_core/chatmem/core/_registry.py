"""``repository_from_url`` / ``async_repository_from_url``: the URL scheme picks the backend,
imported only when asked for. Every backend class has its async twin, named ``Async`` + the
sync class's name, in the same module.

An unknown scheme is an error that lists the known ones (never a silent fallback), and a
missing driver is a MissingDependencyError naming the extra to install.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from ._async.repository import AsyncBaseChatMemoryRepository, AsyncInMemoryChatMemoryRepository
from ._errors import InvalidArgumentError, MissingDependencyError
from ._sync.repository import BaseChatMemoryRepository, InMemoryChatMemoryRepository

# scheme (before any "+driver") -> (module, class, extra)
BACKENDS: dict[str, tuple[str, str, str]] = {
    "sqlite": ("chatmem.jdbc", "JdbcChatMemoryRepository", "sqlite"),
    "postgresql": ("chatmem.jdbc", "JdbcChatMemoryRepository", "postgres"),
    "postgres": ("chatmem.jdbc", "JdbcChatMemoryRepository", "postgres"),
    "mysql": ("chatmem.jdbc", "JdbcChatMemoryRepository", "mysql"),
    "mariadb": ("chatmem.jdbc", "JdbcChatMemoryRepository", "mariadb"),
    "mssql": ("chatmem.jdbc", "JdbcChatMemoryRepository", "mssql"),
    "oracle": ("chatmem.jdbc", "JdbcChatMemoryRepository", "oracle"),
    "redis": ("chatmem.redis", "RedisChatMemoryRepository", "redis"),
    "rediss": ("chatmem.redis", "RedisChatMemoryRepository", "redis"),
    "mongodb": ("chatmem.mongo", "MongoChatMemoryRepository", "mongo"),
    "cassandra": ("chatmem.cassandra", "CassandraChatMemoryRepository", "cassandra"),
    "neo4j": ("chatmem.neo4j", "Neo4jChatMemoryRepository", "neo4j"),
    "bolt": ("chatmem.neo4j", "Neo4jChatMemoryRepository", "neo4j"),
}

# SQL scheme -> the driver module its extra installs (a URL naming no driver uses it).
SQL_DRIVERS: dict[str, str] = {
    "postgresql": "psycopg",
    "postgres": "psycopg",
    "mysql": "pymysql",
    "mariadb": "pymysql",
    "mssql": "pymssql",
    "oracle": "oracledb",
}
# SQL scheme -> the asyncio driver module the async twin uses for it (a URL naming no driver).
ASYNC_SQL_DRIVERS: dict[str, str] = {
    "sqlite": "aiosqlite",
    "postgresql": "psycopg",
    "postgres": "psycopg",
    "mysql": "aiomysql",
    "mariadb": "aiomysql",
}
# SQLAlchemy "+driver" name -> the module it imports (for URLs naming another driver).
DRIVER_MODULES: dict[str, str] = {
    "psycopg": "psycopg",
    "psycopg2": "psycopg2",
    "pg8000": "pg8000",
    "asyncpg": "asyncpg",
    "aiosqlite": "aiosqlite",
    "aiomysql": "aiomysql",
    "asyncmy": "asyncmy",
    "pymysql": "pymysql",
    "mysqldb": "MySQLdb",
    "mysqlconnector": "mysql.connector",
    "mariadbconnector": "mariadb",
    "pymssql": "pymssql",
    "pyodbc": "pyodbc",
    "oracledb": "oracledb",
    "cx_oracle": "cx_Oracle",
}


def scheme_of(url: str) -> str:
    """The backend part of a URL scheme: ``postgresql+psycopg://`` -> ``postgresql``."""
    if not isinstance(url, str) or ("://" not in url and url != "memory:"):
        raise InvalidArgumentError("url", f"{url!r} is not a URL like sqlite:///chat.db")
    return url.split(":", 1)[0].split("+", 1)[0].lower()


def driver_module_of(url: str, *, asyncio: bool = False) -> str | None:
    """The DB-API module a SQL URL needs (``postgresql://`` -> ``psycopg``; with ``asyncio``
    the asyncio driver: ``sqlite://`` -> ``aiosqlite``), else None."""
    scheme = scheme_of(url)
    if scheme not in SQL_DRIVERS and not (asyncio and scheme in ASYNC_SQL_DRIVERS):
        return None
    head = url.split(":", 1)[0].lower()
    driver = head.split("+", 1)[1] if "+" in head else None
    if driver is None:
        return (ASYNC_SQL_DRIVERS if asyncio else SQL_DRIVERS).get(scheme)
    return DRIVER_MODULES.get(driver)  # an unknown driver: SQLAlchemy reports it itself


def config_options(url: str, config: object | None, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` plus the fields of ``config``, a backend's typed option dataclass
    (``RedisConfig``, ``JdbcConfig``, ...: what editors and type checkers see). The config
    must belong to ``url``'s backend, and an option may not be given both ways."""
    if config is None:
        return options
    scheme = scheme_of(url)
    if scheme == "memory" or not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise InvalidArgumentError("config", "must be a backend's Config instance or None")
    module_name, class_name, _ = BACKENDS.get(scheme, ("", "", ""))
    expected = class_name.removesuffix("ChatMemoryRepository") + "Config"
    if type(config).__name__ != expected or not type(config).__module__.startswith(module_name):
        raise InvalidArgumentError(
            "config", f"is a {type(config).__name__}; {scheme}:// URLs take {expected}"
        )
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.init}
    both = sorted(set(fields) & set(options))
    if both:
        raise InvalidArgumentError("config", f"and keyword options both give {', '.join(both)}")
    return {**fields, **options}


def _backend_class(url: str, require_driver: bool, prefix: str) -> type:
    scheme = scheme_of(url)
    try:
        module_name, class_name, extra = BACKENDS[scheme]
    except KeyError:
        known = ", ".join(sorted([*BACKENDS, "memory"]))
        raise InvalidArgumentError(
            "url", f"unknown scheme {scheme!r}; known schemes: {known}"
        ) from None
    try:
        module = importlib.import_module(module_name)
    except MissingDependencyError as exc:
        raise MissingDependencyError(extra, exc.name or module_name) from exc
    driver = driver_module_of(url, asyncio=bool(prefix)) if require_driver else None
    if driver is not None:
        try:
            importlib.import_module(driver)
        except ImportError as exc:
            raise MissingDependencyError(extra, driver) from exc
    try:
        cls = getattr(module, prefix + class_name)
    except AttributeError:
        raise InvalidArgumentError(
            "url", f"{module_name} has no {prefix + class_name} (no async twin for {scheme!r})"
        ) from None
    assert isinstance(cls, type)
    return cls


def repository_class_for_url(
    url: str, *, require_driver: bool = True
) -> type[BaseChatMemoryRepository]:
    """The repository class for ``url``'s scheme, its backend and driver imported; an unknown
    scheme is an ``InvalidArgumentError`` listing the known ones, a missing driver a
    ``MissingDependencyError`` naming the extra. Connects to nothing. ``require_driver=False``
    skips the SQL DB-API driver check, for work that needs no connection (DDL export)."""
    if scheme_of(url) == "memory":
        return InMemoryChatMemoryRepository
    cls = _backend_class(url, require_driver, "")
    assert issubclass(cls, BaseChatMemoryRepository)
    return cls


def async_repository_class_for_url(
    url: str, *, require_driver: bool = True
) -> type[AsyncBaseChatMemoryRepository]:
    """The async twin of ``repository_class_for_url``: ``Async<Store>ChatMemoryRepository``,
    with the backend's asyncio driver checked (for SQL URLs: aiosqlite, psycopg, aiomysql)."""
    if scheme_of(url) == "memory":
        return AsyncInMemoryChatMemoryRepository
    cls = _backend_class(url, require_driver, "Async")
    assert issubclass(cls, AsyncBaseChatMemoryRepository)
    return cls


def repository_from_url(
    url: str, config: object | None = None, **options: Any
) -> BaseChatMemoryRepository:
    """Build the repository for ``url``; ``options`` go to that backend's ``from_url``. For
    typed options pass the backend's config dataclass instead: ``repository_from_url(url,
    RedisConfig(ttl=timedelta(hours=1)))`` (``JdbcConfig``, ``MongoConfig``,
    ``CassandraConfig``, ``Neo4jConfig``)."""
    options = config_options(url, config, options)
    cls = repository_class_for_url(url)
    if cls is InMemoryChatMemoryRepository:
        return InMemoryChatMemoryRepository()
    repo = cls.from_url(url, **options)  # type: ignore[attr-defined]
    assert isinstance(repo, BaseChatMemoryRepository)
    return repo


async def async_repository_from_url(
    url: str, config: object | None = None, **options: Any
) -> AsyncBaseChatMemoryRepository:
    """Build the async repository for ``url`` (same options, config and defaults as the sync
    one):
    ``repo = await async_repository_from_url("postgresql://...")``; ``await repo.close()``
    or ``async with`` closes the client it made."""
    options = config_options(url, config, options)
    cls = async_repository_class_for_url(url)
    if cls is AsyncInMemoryChatMemoryRepository:
        return AsyncInMemoryChatMemoryRepository()
    repo = await cls.from_url(url, **options)  # type: ignore[attr-defined]
    assert isinstance(repo, AsyncBaseChatMemoryRepository)
    return repo
