"""The two public surfaces, pinned: ``chatmem.core`` is the user API (what an application
imports), ``chatmem.core.backend`` the SPI (what a store implementation imports). A new
public name is a deliberate edit of these lists."""

from __future__ import annotations

import types

import chatmem.core
import chatmem.core.backend

USER_API = [
    "CONVERSATION_ID", "DEFAULT_MAX_MESSAGES", "DEFAULT_MAX_TOKENS", "TOKENS_KEY",
    "AssistantMessage", "AsyncChatMemory", "AsyncChatMemoryRepository",
    "AsyncInMemoryChatMemoryRepository", "AsyncMessageWindowChatMemory",
    "AsyncTokenWindowChatMemory", "BackendError", "BackendUnavailableError", "ChatMemory",
    "ChatMemoryError", "ChatMemoryRepository", "ChatTurn", "ConcurrencyError",
    "InMemoryChatMemoryRepository", "InvalidArgumentError", "InvalidIdentifierError", "Media",
    "Message", "MessageChatMemoryAdvisor", "MessageType", "MessageWindowChatMemory",
    "MissingDependencyError", "Preprocessor", "SchemaError", "SchemaMode", "SystemMessage",
    "TokenWindowChatMemory", "ToolCall", "ToolResponse", "ToolResponseMessage", "UserMessage",
    "__version__", "apply_preprocessors", "async_repository_class_for_url",
    "async_repository_from_url", "drop_system_messages", "filter_messages", "media_from_dict",
    "media_to_dict", "message_from_dict", "message_to_dict", "repository_class_for_url",
    "repository_from_url", "window_size",
]  # fmt: skip

BACKEND_SPI = [
    "ASYNC_TWIN", "DEFAULT_DECODE_CACHE_SIZE", "DEFAULT_PAGE_SIZE", "DEFAULT_SCHEMA_MODE",
    "FORMAT_VERSION", "MAX_CONVERSATION_ID_LENGTH", "SPRING_AI_LOSSY", "SYNC_TWIN",
    "AsyncBaseChatMemoryRepository", "AsyncOwnedClientMixin", "AsyncSchemaCheck",
    "BackendError", "BackendUnavailableError", "BaseChatMemoryRepository", "Capability",
    "ChatMemoryError", "ConcurrencyError", "ConversationIdPage", "DecodeCache",
    "InvalidArgumentError", "InvalidIdentifierError", "MissingDependencyError",
    "OwnedClientMixin", "Reply", "SchemaCheck", "SchemaError", "SchemaMode", "WindowEdit",
    "add_to_window", "apply_window_edit", "async_owning", "async_retry", "collection_name",
    "conversation_id_of", "cql_identifier", "cypher_label", "decode_json", "dump_json",
    "encode_json", "error_translator", "from_micros", "index_name", "is_async_repository",
    "message_text", "missing_schema_message", "outputs_of", "owning", "plan_window_edit",
    "redis_key_prefix", "remembered", "require", "retry", "schema_mode", "split_layout",
    "spring_ai_lossy", "spring_ai_storable", "sql_identifier", "stamp", "to_micros",
    "token_window_of", "validate_conversation_id", "validate_messages", "validate_positive_int",
    "validate_ttl", "window_of", "window_source", "would_lose",
]  # fmt: skip

SHARED = {
    # the error tree and the schema option type: users catch / annotate them, stores raise /
    # accept them, so both surfaces carry the same objects
    "BackendError", "BackendUnavailableError", "ChatMemoryError", "ConcurrencyError",
    "InvalidArgumentError", "InvalidIdentifierError", "MissingDependencyError", "SchemaError",
    "SchemaMode",
}  # fmt: skip


def _public_attributes(module: types.ModuleType) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }


def test_the_user_api_is_exactly_the_pinned_list() -> None:
    assert chatmem.core.__all__ == USER_API
    assert all(hasattr(chatmem.core, name) for name in USER_API)
    # nothing public beyond the list (submodules such as ``backend`` aside)
    assert _public_attributes(chatmem.core) == set(USER_API) - {"__version__"}


def test_the_backend_spi_is_exactly_the_pinned_list() -> None:
    assert chatmem.core.backend.__all__ == BACKEND_SPI
    assert all(hasattr(chatmem.core.backend, name) for name in BACKEND_SPI)


def test_the_spi_stays_out_of_the_user_api() -> None:
    assert set(USER_API) & set(BACKEND_SPI) == SHARED
    for name in SHARED:
        assert getattr(chatmem.core, name) is getattr(chatmem.core.backend, name)
    for name in ("BaseChatMemoryRepository", "Capability", "stamp", "retry", "WindowEdit"):
        assert not hasattr(chatmem.core, name), name
