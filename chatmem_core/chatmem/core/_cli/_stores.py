"""Which store a command talks to, and opening it so that reading never creates anything.

Reading commands fall back to the demo's SQLite file; writing commands need an explicit
``--url`` (or ``$CHATMEM_URL``) so a forgotten option never writes into the demo store. A
reading command on a missing SQLite file is an error (SQLite would create the file), and on a
server it opens the store without creating schema.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._async.repository import AsyncBaseChatMemoryRepository
from .._errors import InvalidArgumentError
from .._registry import async_repository_from_url, repository_from_url, scheme_of
from .._sync.repository import BaseChatMemoryRepository
from ._errors import CliError, UsageError, as_usage_error

DEFAULT_URL = "sqlite:///chatmem-demo.db"
URL_ENV = "CHATMEM_URL"

# Every store takes initialize_schema="never": create nothing, and fail with SchemaError on
# first use when the schema is missing. (The in-memory store has nothing to create.)
READ_ONLY_OPTIONS: dict[str, Any] = {"initialize_schema": "never"}


def normalise_url(url: str) -> str:
    """Lower-case the scheme (schemes are case-insensitive: ``SQLITE:///x.db`` works)."""
    scheme, sep, rest = url.partition(":")
    return f"{scheme.lower()}{sep}{rest}" if sep else url


def resolve_url(given: str | None, *, writes: bool, command: str) -> str:
    """``--url``, else ``$CHATMEM_URL``, else (reading commands only) the demo store."""
    url = given or os.environ.get(URL_ENV)
    if url:
        return normalise_url(url)
    if writes:
        raise UsageError(
            f"{command} writes to a store: pass --url URL (or set ${URL_ENV}); "
            "it never falls back to the demo store"
        )
    return DEFAULT_URL


def sqlite_file(url: str) -> Path | None:
    """The file a ``sqlite://`` URL names, or None for an in-memory or URI-mode database."""
    rest = url.split("://", 1)[1] if "://" in url else ""
    path, _, query = rest.partition("?")
    database = path[1:] if path.startswith("/") else path
    if database in ("", ":memory:") or database.startswith("file:") or "uri=true" in query:
        return None
    return Path(database)


def _options(url: str, *, option: str, read_only: bool) -> dict[str, Any]:
    """The ``from_url`` options opening ``url`` as asked; a reading open of a missing SQLite
    file is refused (SQLite would create it)."""
    try:
        scheme = scheme_of(url)
    except InvalidArgumentError as exc:
        raise as_usage_error(exc, option) from None
    if read_only and scheme == "sqlite":
        path = sqlite_file(url)
        if path is not None and not path.is_file():
            raise CliError(
                f"{option}: no SQLite database at {path} (reading commands never create one)"
            )
    return READ_ONLY_OPTIONS if read_only and scheme != "memory" else {}


def open_store(url: str, *, option: str, read_only: bool) -> BaseChatMemoryRepository:
    """The repository for ``url``; with ``read_only``, never creates a file or schema."""
    options = _options(url, option=option, read_only=read_only)
    try:
        return repository_from_url(url, **options)
    except InvalidArgumentError as exc:
        raise as_usage_error(exc, option if exc.argument == "url" else None) from None


async def open_async_store(
    url: str, *, option: str, read_only: bool
) -> AsyncBaseChatMemoryRepository:
    """The async twin of ``open_store`` (for a command that runs an event loop)."""
    options = _options(url, option=option, read_only=read_only)
    try:
        return await async_repository_from_url(url, **options)
    except InvalidArgumentError as exc:
        raise as_usage_error(exc, option if exc.argument == "url" else None) from None
