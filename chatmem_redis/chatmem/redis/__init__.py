"""chatmem.redis: chat memory in Redis (RedisJSON documents, RediSearch queries)."""

from ._async.advanced import AsyncAdvancedRedisChatMemoryRepository
from ._async.records import (
    DEFAULT_MEMORY_INDEX_NAME,
    DEFAULT_MEMORY_KEY_PREFIX,
    AsyncRedisMemoryRecordRepository,
)
from ._async.repository import AsyncRedisChatMemoryRepository
from ._config import (
    DEFAULT_ASYNC_MAX_CONNECTIONS,
    DEFAULT_INDEX_NAME,
    DEFAULT_KEY_PREFIX,
    DEFAULT_SEARCH_LIMIT,
    MetadataField,
    MetadataFieldType,
    RedisConfig,
)
from ._native.query import escape_tag, format_number, tag_query, text_query, text_terms
from ._native.search import MessageWithConversation
from ._sync.advanced import AdvancedRedisChatMemoryRepository
from ._sync.records import RedisMemoryRecordRepository
from ._sync.repository import RedisChatMemoryRepository

__all__ = [
    "DEFAULT_ASYNC_MAX_CONNECTIONS",
    "DEFAULT_INDEX_NAME",
    "DEFAULT_KEY_PREFIX",
    "DEFAULT_MEMORY_INDEX_NAME",
    "DEFAULT_MEMORY_KEY_PREFIX",
    "DEFAULT_SEARCH_LIMIT",
    "AdvancedRedisChatMemoryRepository",
    "AsyncAdvancedRedisChatMemoryRepository",
    "AsyncRedisChatMemoryRepository",
    "AsyncRedisMemoryRecordRepository",
    "MessageWithConversation",
    "MetadataField",
    "MetadataFieldType",
    "RedisChatMemoryRepository",
    "RedisConfig",
    "RedisMemoryRecordRepository",
    "escape_tag",
    "format_number",
    "tag_query",
    "text_query",
    "text_terms",
]
