"""chatmem.mongo: chat memory in MongoDB, one document per conversation.

Install with ``pip install "chatmem[mongo]"`` (pymongo only: its own asyncio API serves
``AsyncMongoChatMemoryRepository``).
"""

from chatmem.core.backend import require

require("pymongo", "mongo")

from ._async.records import AsyncMongoMemoryRecordRepository  # noqa: E402
from ._async.repository import AsyncMongoChatMemoryRepository  # noqa: E402
from ._async.schema_ops import async_ensure_indexes  # noqa: E402
from ._async.spring_ai import AsyncSpringAiMongoChatMemoryRepository  # noqa: E402
from ._codec import escape_key, from_document, to_document, unescape_key  # noqa: E402
from ._config import (  # noqa: E402
    DEFAULT_COLLECTION_NAME,
    DEFAULT_INITIALIZE_SCHEMA,
    DEFAULT_TTL,
    MongoConfig,
)
from ._record_schema import DEFAULT_MEMORY_COLLECTION_NAME  # noqa: E402
from ._schema import LAYOUT_VERSION, POSITION_INDEX, TTL_INDEX  # noqa: E402
from ._sync.records import MongoMemoryRecordRepository  # noqa: E402
from ._sync.repository import MongoChatMemoryRepository  # noqa: E402
from ._sync.schema_ops import ensure_indexes  # noqa: E402
from ._sync.spring_ai import SpringAiMongoChatMemoryRepository  # noqa: E402

__all__ = [
    "DEFAULT_COLLECTION_NAME",
    "DEFAULT_INITIALIZE_SCHEMA",
    "DEFAULT_MEMORY_COLLECTION_NAME",
    "DEFAULT_TTL",
    "LAYOUT_VERSION",
    "POSITION_INDEX",
    "TTL_INDEX",
    "AsyncMongoChatMemoryRepository",
    "AsyncMongoMemoryRecordRepository",
    "AsyncSpringAiMongoChatMemoryRepository",
    "MongoChatMemoryRepository",
    "MongoConfig",
    "MongoMemoryRecordRepository",
    "SpringAiMongoChatMemoryRepository",
    "async_ensure_indexes",
    "ensure_indexes",
    "escape_key",
    "from_document",
    "to_document",
    "unescape_key",
]
