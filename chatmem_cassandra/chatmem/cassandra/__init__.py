"""chatmem.cassandra: chat memory in Apache Cassandra (one partition per conversation).

Needs the ``cassandra-driver`` package: ``pip install "chatmem[cassandra]"``.
"""

from chatmem.core.backend import require

require("cassandra", "cassandra")

from ._async.records import AsyncCassandraMemoryRecordRepository  # noqa: E402
from ._async.repository import AsyncCassandraChatMemoryRepository  # noqa: E402
from ._config import (  # noqa: E402
    DEFAULT_CONSISTENCY,
    DEFAULT_CONTENT_COLUMN,
    DEFAULT_CONVERSATION_ID_COLUMN,
    DEFAULT_CREATED_AT_COLUMN,
    DEFAULT_KEYSPACE,
    DEFAULT_MESSAGE_TYPE_COLUMN,
    DEFAULT_NEXT_POSITION_COLUMN,
    DEFAULT_ORIGIN_COLUMN,
    DEFAULT_POSITION_COLUMN,
    DEFAULT_REPLICATION,
    DEFAULT_SERIAL_CONSISTENCY,
    DEFAULT_SYSTEM_MESSAGES_COLUMN,
    DEFAULT_TABLE_NAME,
    CassandraConfig,
    CassandraUrl,
    NetworkTopologyStrategy,
    SimpleStrategy,
    parse_url,
)
from ._record_schema import DEFAULT_MEMORY_TABLE_NAME, memory_schema_cql  # noqa: E402
from ._schema import schema_cql  # noqa: E402
from ._sync.records import CassandraMemoryRecordRepository  # noqa: E402
from ._sync.repository import CassandraChatMemoryRepository  # noqa: E402

__all__ = [
    "DEFAULT_CONSISTENCY",
    "DEFAULT_CONTENT_COLUMN",
    "DEFAULT_CONVERSATION_ID_COLUMN",
    "DEFAULT_CREATED_AT_COLUMN",
    "DEFAULT_KEYSPACE",
    "DEFAULT_MEMORY_TABLE_NAME",
    "DEFAULT_MESSAGE_TYPE_COLUMN",
    "DEFAULT_NEXT_POSITION_COLUMN",
    "DEFAULT_ORIGIN_COLUMN",
    "DEFAULT_POSITION_COLUMN",
    "DEFAULT_REPLICATION",
    "DEFAULT_SERIAL_CONSISTENCY",
    "DEFAULT_SYSTEM_MESSAGES_COLUMN",
    "DEFAULT_TABLE_NAME",
    "AsyncCassandraChatMemoryRepository",
    "AsyncCassandraMemoryRecordRepository",
    "CassandraChatMemoryRepository",
    "CassandraConfig",
    "CassandraMemoryRecordRepository",
    "CassandraUrl",
    "NetworkTopologyStrategy",
    "SimpleStrategy",
    "memory_schema_cql",
    "parse_url",
    "schema_cql",
]
