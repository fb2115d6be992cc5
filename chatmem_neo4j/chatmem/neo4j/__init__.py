"""chatmem.neo4j: chat memory in Neo4j 5 (``pip install "chatmem[neo4j]"``)."""

from chatmem.core.backend import require

require("neo4j", "neo4j")

from ._async.records import AsyncNeo4jMemoryRecordRepository  # noqa: E402
from ._async.repository import AsyncNeo4jChatMemoryRepository  # noqa: E402
from ._config import (  # noqa: E402
    DEFAULT_DATABASE,
    DEFAULT_INITIALIZE_SCHEMA,
    DEFAULT_MEDIA_LABEL,
    DEFAULT_MESSAGE_LABEL,
    DEFAULT_METADATA_LABEL,
    DEFAULT_SESSION_LABEL,
    DEFAULT_TOOL_CALL_LABEL,
    DEFAULT_TOOL_RESPONSE_LABEL,
    Neo4jConfig,
    Neo4jUrl,
    parse_url,
)
from ._sync.records import (  # noqa: E402
    DEFAULT_MEMORY_LABEL,
    DEFAULT_USER_LABEL,
    Neo4jMemoryRecordRepository,
)
from ._sync.repository import Neo4jChatMemoryRepository  # noqa: E402

__all__ = [
    "DEFAULT_DATABASE",
    "DEFAULT_INITIALIZE_SCHEMA",
    "DEFAULT_MEDIA_LABEL",
    "DEFAULT_MEMORY_LABEL",
    "DEFAULT_MESSAGE_LABEL",
    "DEFAULT_METADATA_LABEL",
    "DEFAULT_SESSION_LABEL",
    "DEFAULT_TOOL_CALL_LABEL",
    "DEFAULT_TOOL_RESPONSE_LABEL",
    "DEFAULT_USER_LABEL",
    "AsyncNeo4jChatMemoryRepository",
    "AsyncNeo4jMemoryRecordRepository",
    "Neo4jChatMemoryRepository",
    "Neo4jConfig",
    "Neo4jMemoryRecordRepository",
    "Neo4jUrl",
    "parse_url",
]
