"""``repository_from_url``: the URL scheme picks the backend, imported only when asked for.

An unknown scheme is an error that lists the known ones (never a silent fallback), and a
missing driver is a MissingDependencyError naming the extra to install.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._errors import InvalidArgumentError, MissingDependencyError
from ._repository import BaseChatMemoryRepository, InMemoryChatMemoryRepository

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
# SQLAlchemy "+driver" name -> the module it imports (for URLs naming another driver).
DRIVER_MODULES: dict[str, str] = {
    "psycopg": "psycopg",
    "psycopg2": "psycopg2",
    "pg8000": "pg8000",
    "asyncpg": "asyncpg",
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


def driver_module_of(url: str) -> str | None:
    """The DB-API module a SQL URL needs (``postgresql://`` -> ``psycopg``), else None."""
    scheme = scheme_of(url)
    if scheme not in SQL_DRIVERS:
        return None
    head = url.split(":", 1)[0].lower()
    driver = head.split("+", 1)[1] if "+" in head else None
    if driver is None:
        return SQL_DRIVERS[scheme]
    return DRIVER_MODULES.get(driver)  # an unknown driver: SQLAlchemy reports it itself


def repository_class_for_url(
    url: str, *, require_driver: bool = True
) -> type[BaseChatMemoryRepository]:
    """The repository class for ``url``'s scheme, its backend and driver imported; an unknown
    scheme is an ``InvalidArgumentError`` listing the known ones, a missing driver a
    ``MissingDependencyError`` naming the extra. Connects to nothing. ``require_driver=False``
    skips the SQL DB-API driver check, for work that needs no connection (DDL export)."""
    scheme = scheme_of(url)
    if scheme == "memory":
        return InMemoryChatMemoryRepository
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
    driver = driver_module_of(url) if require_driver else None
    if driver is not None:
        try:
            importlib.import_module(driver)
        except ImportError as exc:
            raise MissingDependencyError(extra, driver) from exc
    cls = getattr(module, class_name)
    assert isinstance(cls, type) and issubclass(cls, BaseChatMemoryRepository)
    return cls


def repository_from_url(url: str, **options: Any) -> BaseChatMemoryRepository:
    """Build the repository for ``url``; ``options`` go to that backend's ``from_url``."""
    cls = repository_class_for_url(url)
    if cls is InMemoryChatMemoryRepository:
        return InMemoryChatMemoryRepository()
    repo = cls.from_url(url, **options)  # type: ignore[attr-defined]
    assert isinstance(repo, BaseChatMemoryRepository)
    return repo
