"""Opening the record store a ``chatmem memories`` or ``chatmem serve`` command names.

The class comes from the URL's scheme (``chatmem.memory_stores``); its options from the
command line: ``--create-schema``, ``--table-name`` for stores that take one, and
``--store-option NAME=VALUE`` for any other text option of that class (a Redis
``key_prefix``, a MongoDB ``collection_name``, a Cassandra ``keyspace``), each checked
against the class's signature before anything connects.
"""

from __future__ import annotations

import argparse
import inspect
from typing import Any

from chatmem.core._errors import InvalidArgumentError

from ._async.repository import AsyncBaseMemoryRecordRepository
from ._repository import BaseMemoryRecordRepository
from ._stores import async_record_store_class_for_url, record_store_class_for_url, takes_option

# set by their own flags, never through --store-option
FLAGGED = {"initialize_schema": "--create-schema", "table_name": "--table-name"}
TEXT_ANNOTATIONS = {"str", "str | None", "Optional[str]"}


def _text_options(cls: type[Any]) -> set[str]:
    """The keyword options of ``cls``'s constructor typed as text."""
    parameters = inspect.signature(cls).parameters.values()
    return {
        p.name
        for p in parameters
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.default is not p.empty
        and (p.annotation is str or str(p.annotation) in TEXT_ANNOTATIONS)
    }


def parse_store_options(cls: type[Any], given: list[str]) -> dict[str, str]:
    """``NAME=VALUE`` pairs as keyword options of ``cls``; an unknown name, a non-text
    option or a repeated one is an ``InvalidArgumentError`` naming ``--store-option`` (and
    listing what the class takes)."""
    allowed = _text_options(cls) - set(FLAGGED)
    options: dict[str, str] = {}
    for item in given:
        name, sep, value = item.partition("=")
        if name in FLAGGED:
            raise InvalidArgumentError("--store-option", f"{name} is set with {FLAGGED[name]}")
        if not sep or name not in allowed:
            raise InvalidArgumentError(
                "--store-option",
                f"{item!r} is not NAME=VALUE for a text option of {cls.__name__} "
                f"(it takes: {', '.join(sorted(allowed)) or 'none'})",
            )
        if name in options:
            raise InvalidArgumentError("--store-option", f"{name} is given twice")
        options[name] = value
    return options


def _options(cls: type[Any], url: str, args: argparse.Namespace) -> dict[str, Any]:
    """``from_url`` options: a schema created only with ``--create-schema`` (otherwise the
    store checks that it exists), ``--table-name`` only when given (refused for a store that
    takes none), and the ``--store-option`` pairs."""
    options: dict[str, Any] = {"initialize_schema": "always" if args.create_schema else "never"}
    if args.table_name is not None:
        if not takes_option(cls.from_url, "table_name", forwards_to=cls):
            raise InvalidArgumentError(
                "--table-name", f"is not an option of {cls.__name__} ({url.split(':', 1)[0]}://)"
            )
        options["table_name"] = args.table_name
    options.update(parse_store_options(cls, getattr(args, "store_options", [])))
    return options


def open_store(url: str, args: argparse.Namespace) -> BaseMemoryRecordRepository:
    """The record store at ``url`` through its class's ``from_url``."""
    cls = record_store_class_for_url(url)
    options = _options(cls, url, args)
    store: BaseMemoryRecordRepository = cls.from_url(url, **options)  # type: ignore[attr-defined]
    return store


async def open_async_store(url: str, args: argparse.Namespace) -> AsyncBaseMemoryRecordRepository:
    """The async twin of ``open_store``, for ``serve``'s event loop."""
    cls = async_record_store_class_for_url(url)
    options = _options(cls, url, args)
    store: AsyncBaseMemoryRecordRepository = await cls.from_url(url, **options)  # type: ignore[attr-defined]
    return store


def open_chat_store(url: str, option: str) -> Any:
    """The chat repository at ``url`` (given as ``option``), read-only: never creates a file
    or schema (the backfill and the review page only read conversations)."""
    from chatmem.core._cli._stores import open_store as open_chat

    return open_chat(url, option=option, read_only=True)


def schema_sql(url: str, args: argparse.Namespace) -> str:
    """``memories schema``: the DDL script of the record store class for ``url`` (its
    ``schema_sql_for``); a usage error for a store that has none or takes no table name."""
    cls = record_store_class_for_url(url)
    build = getattr(cls, "schema_sql_for", None)
    scheme = url.split(":", 1)[0]
    if build is None:
        raise InvalidArgumentError(
            "--url",
            f"{cls.__name__} ({scheme}://) has no schema script: it creates its own "
            "schema (pass --create-schema to the other commands)",
        )
    options: dict[str, Any] = {}
    if args.table_name is not None:
        if not takes_option(build, "table_name"):
            raise InvalidArgumentError("--table-name", f"is not an option of {cls.__name__}")
        options["table_name"] = args.table_name
    script = build(url, **options)
    assert isinstance(script, str)
    return script
