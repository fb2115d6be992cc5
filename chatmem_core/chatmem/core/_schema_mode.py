"""The one schema vocabulary of every store: ``initialize_schema`` and its checks.

``"always"`` (the default everywhere) creates what is missing when the repository is built,
idempotently and safely when many threads or processes start on a cold store at once.
``"never"`` creates nothing; the first operation of each repository object checks once that
the schema exists and otherwise raises ``SchemaError`` saying what to run. The SQL store also
takes ``"embedded"`` (create on SQLite only, Spring AI's default). ``True``/``False`` are
aliases of ``"always"``/``"never"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ._errors import InvalidArgumentError

SchemaMode = Literal["always", "never", "embedded"]
ALWAYS: SchemaMode = "always"
NEVER: SchemaMode = "never"
EMBEDDED: SchemaMode = "embedded"
DEFAULT_SCHEMA_MODE: SchemaMode = ALWAYS
SCHEMA_MODES: tuple[SchemaMode, ...] = (ALWAYS, NEVER)


def schema_mode(value: object, allowed: Sequence[str] = SCHEMA_MODES) -> SchemaMode:
    """Normalise an ``initialize_schema`` option (``True``/``False`` mean always/never);
    anything else is an ``InvalidArgumentError`` naming ``initialize_schema``."""
    if value is True:
        return ALWAYS
    if value is False:
        return NEVER
    if isinstance(value, str) and value in allowed:
        return value  # type: ignore[return-value]
    choices = ", ".join(repr(m) for m in allowed)
    raise InvalidArgumentError(
        "initialize_schema", f"must be one of {choices} (or True/False), got {value!r}"
    )


def missing_schema_message(what: str, missing: Sequence[str], url_hint: str | None = None) -> str:
    """The text of the ``SchemaError`` a ``"never"`` repository raises: what is missing and
    the three ways to create it."""
    url = url_hint or "<your store URL>"
    return (
        f"the chat memory schema is missing in {what}: {', '.join(missing)}. Create it with "
        f"`chatmem schema --url {url}` (apply its output), or `repo.create_schema()`, or "
        'build the repository with initialize_schema="always"'
    )


def redacted_url(url: str | None) -> str | None:
    """``url`` without its password, fit to print in an error message."""
    if url is None:
        return None
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        userinfo, at, hostport = parts.netloc.rpartition("@")
        if not at or ":" not in userinfo:
            return url
        netloc = f"{userinfo.split(':', 1)[0]}:***@{hostport}"
        return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        return None
