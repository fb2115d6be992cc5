"""The backend SPI: everything a chatmem store implementation needs from core, in one place.

A backend package (ours or a third party's) imports from ``chatmem.core.backend`` and
``chatmem.core`` only, never from ``chatmem.core._*``; an import-rule test enforces that for
our own packages. What a backend gets here:

- ``BaseChatMemoryRepository`` and its hooks (see its module docstring): the public methods
  validate once, before any I/O, then call one ``_hook`` with validated arguments;
  ``AsyncBaseChatMemoryRepository`` is its async twin (the same hooks, awaited);
- ``retry`` / ``async_retry``: the one retry loop (lost compare-and-set, retryable
  deadlock...);
- ``OwnedClientMixin`` and ``owning`` (async: ``AsyncOwnedClientMixin``, ``async_owning``):
  the ``from_url`` / ``close`` / ``with`` lifecycle of a client the repository created
  itself (a client the caller passed is never closed);
- ``ASYNC_TWIN`` / ``SYNC_TWIN``: write a backend once as async code (in ``_async/``) and
  generate the sync twin in ``_sync/`` with ``scripts/unasync.py`` (see that script);
- validation helpers, one rule per identifier kind plus ``validate_ttl``;
- ``require``: import a driver or raise ``MissingDependencyError`` naming the extra;
- the schema vocabulary: ``schema_mode`` normalises ``initialize_schema``, ``SchemaCheck``
  verifies once, in ``"never"`` mode, that the schema exists;
- the Spring AI layouts' loss rules: ``spring_ai_storable`` refuses by name what Spring's
  storage cannot hold unless ``lossy`` (``spring_ai_lossy``) opts into it, and
  ``split_layout`` reads ``layout=`` from a store URL or its options;
- ``dump_json``: the one JSON wire encoder (compact, non-ASCII kept) every store uses;
- ``DecodeCache``: decoded messages by their exact stored bytes, so a window read decodes
  only rows it has not seen (see its module for why that can never serve stale data);
- the window rules as pure functions: ``add_to_window`` and ``window_of`` (messages),
  ``token_window_of`` (tokens; ``message_text`` is the text a message is counted by),
  ``plan_window_edit`` / ``apply_window_edit`` (what ``_edit_window`` applies), for a
  store's own fast paths and for tests checking a store against the rule;
- for adapters built on the advisor: ``Reply``, ``conversation_id_of``, ``outputs_of``, and
  ``is_async_repository`` (which twin a repository is);
- ``error_translator``: builds a backend's ``translate_errors(what)`` context manager that
  maps driver exception classes onto ``BackendUnavailableError`` / ``BackendError`` (the
  driver's exception stays as ``__cause__``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from ._advisor import Reply, conversation_id_of, outputs_of
from ._async.lifecycle import AsyncOwnedClientMixin, async_owning
from ._async.repository import AsyncBaseChatMemoryRepository, async_retry
from ._async.schema_check import AsyncSchemaCheck
from ._codec import FORMAT_VERSION, decode_json, dump_json, encode_json, from_micros, to_micros
from ._contract import (
    ASYNC_TWIN,
    DEFAULT_PAGE_SIZE,
    SYNC_TWIN,
    Capability,
    ConversationIdPage,
    is_async_repository,
    stamp,
    window_source,
)
from ._decode_cache import DEFAULT_DECODE_CACHE_SIZE, DecodeCache, remembered
from ._errors import (
    BackendError,
    BackendUnavailableError,
    ChatMemoryError,
    ConcurrencyError,
    InvalidArgumentError,
    InvalidIdentifierError,
    MissingDependencyError,
    SchemaError,
    require,
)
from ._schema_mode import DEFAULT_SCHEMA_MODE, SchemaMode, missing_schema_message, schema_mode
from ._spring_layout import (
    SPRING_AI_LOSSY,
    split_layout,
    spring_ai_lossy,
    spring_ai_storable,
    would_lose,
)
from ._sync.lifecycle import OwnedClientMixin, owning
from ._sync.repository import BaseChatMemoryRepository, retry
from ._sync.schema_check import SchemaCheck
from ._token_window import message_text, token_window_of
from ._validation import (
    MAX_CONVERSATION_ID_LENGTH,
    collection_name,
    cql_identifier,
    cypher_label,
    index_name,
    redis_key_prefix,
    sql_identifier,
    validate_conversation_id,
    validate_messages,
    validate_positive_int,
    validate_ttl,
)
from ._window import WindowEdit, add_to_window, apply_window_edit, plan_window_edit, window_of

ErrorClasses = tuple[type[BaseException], ...]
Classifier = Callable[[BaseException, str], ChatMemoryError | None]


def error_translator(
    store: str,
    *,
    unavailable: ErrorClasses = (),
    failures: ErrorClasses = (),
    classify: Classifier | None = None,
    logger: str | None = None,
) -> Callable[[str], AbstractContextManager[None]]:
    """Build a backend's ``translate_errors(what)`` context manager.

    Inside the block, an exception of a class in ``unavailable`` becomes
    ``BackendUnavailableError`` and one in ``failures`` becomes ``BackendError``, each naming
    ``store`` and ``what``; ``classify(exc, what)`` is asked first and may return a more
    precise chatmem error (``SchemaError``, an unknown-outcome timeout...) or None. chatmem's
    own errors and anything else pass through unchanged. Lost connections are logged at
    WARNING on ``logger`` (default ``chatmem.<store>``), other translated errors at DEBUG.
    """
    caught = (*unavailable, *failures)
    log = logging.getLogger(logger or f"chatmem.{store.lower()}")

    @contextmanager
    def translate_errors(what: str) -> Iterator[None]:
        try:
            yield
        except ChatMemoryError:
            raise
        except caught as exc:
            error = classify(exc, what) if classify is not None else None
            if error is None:
                if isinstance(exc, unavailable):
                    error = BackendUnavailableError(f"{store} unreachable during {what}: {exc}")
                else:
                    error = BackendError(f"{store} failed during {what}: {exc}")
            if isinstance(error, BackendUnavailableError):
                log.warning("%s", error)  # the connection is gone: operators want to know
            else:
                log.debug("%s", error)
            raise error from exc

    return translate_errors


__all__ = [
    "ASYNC_TWIN",
    "DEFAULT_DECODE_CACHE_SIZE",
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_SCHEMA_MODE",
    "FORMAT_VERSION",
    "MAX_CONVERSATION_ID_LENGTH",
    "SPRING_AI_LOSSY",
    "SYNC_TWIN",
    "AsyncBaseChatMemoryRepository",
    "AsyncOwnedClientMixin",
    "AsyncSchemaCheck",
    "BackendError",
    "BackendUnavailableError",
    "BaseChatMemoryRepository",
    "Capability",
    "ChatMemoryError",
    "ConcurrencyError",
    "ConversationIdPage",
    "DecodeCache",
    "InvalidArgumentError",
    "InvalidIdentifierError",
    "MissingDependencyError",
    "OwnedClientMixin",
    "Reply",
    "SchemaCheck",
    "SchemaError",
    "SchemaMode",
    "WindowEdit",
    "add_to_window",
    "apply_window_edit",
    "async_owning",
    "async_retry",
    "collection_name",
    "conversation_id_of",
    "cql_identifier",
    "cypher_label",
    "decode_json",
    "dump_json",
    "encode_json",
    "error_translator",
    "from_micros",
    "index_name",
    "is_async_repository",
    "message_text",
    "missing_schema_message",
    "outputs_of",
    "owning",
    "plan_window_edit",
    "redis_key_prefix",
    "remembered",
    "require",
    "retry",
    "schema_mode",
    "split_layout",
    "spring_ai_lossy",
    "spring_ai_storable",
    "sql_identifier",
    "stamp",
    "to_micros",
    "token_window_of",
    "validate_conversation_id",
    "validate_messages",
    "validate_positive_int",
    "validate_ttl",
    "window_of",
    "window_source",
    "would_lose",
]
