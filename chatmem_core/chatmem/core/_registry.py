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


def scheme_of(url: str) -> str:
    """The backend part of a URL scheme: ``postgresql+psycopg://`` -> ``postgresql``."""
    if not isinstance(url, str) or ("://" not in url and url != "memory:"):
        raise InvalidArgumentError("url", f"{url!r} is not a URL like sqlite:///chat.db")
    return url.split(":", 1)[0].split("+", 1)[0].lower()


def repository_from_url(url: str, **options: Any) -> BaseChatMemoryRepository:
    """Build the repository for ``url``; ``options`` go to that backend's ``from_url``."""
    scheme = scheme_of(url)
    if scheme == "memory":
        return InMemoryChatMemoryRepository()
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
    cls = getattr(module, class_name)
    repo = cls.from_url(url, **options)
    assert isinstance(repo, BaseChatMemoryRepository)
    return repo


def repository_class_for_url(url: str) -> type[BaseChatMemoryRepository]:
    """The repository class ``url``'s scheme selects, imported but not connected."""
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
    cls = getattr(module, class_name)
    assert isinstance(cls, type) and issubclass(cls, BaseChatMemoryRepository)
    return cls
