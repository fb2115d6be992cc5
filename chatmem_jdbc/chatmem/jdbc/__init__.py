"""chatmem.jdbc: chat memory in SQL databases through SQLAlchemy 2.

Install with ``pip install "chatmem[sqlite]"`` (or the extra of your database).
"""

from chatmem.core.backend import require

require("sqlalchemy", "sqlite")

from ._async.engine import make_async_engine  # noqa: E402
from ._async.records import AsyncJdbcMemoryRecordRepository  # noqa: E402
from ._async.repository import AsyncJdbcChatMemoryRepository  # noqa: E402
from ._async.spring_ai import AsyncSpringAiJdbcChatMemoryRepository  # noqa: E402
from ._config import DEFAULT_INITIALIZE_SCHEMA, DEFAULT_TABLE_NAME, JdbcConfig  # noqa: E402
from ._native.dialects import DIALECTS, SqlDialect  # noqa: E402
from ._native.spring_ai import (  # noqa: E402
    SPRING_AI_INITIALIZE_SCHEMA,
    SPRING_AI_TABLE_NAME,
    spring_ai_schema,
)
from ._record_schema import DEFAULT_MEMORY_TABLE_NAME, memory_schema_sql  # noqa: E402
from ._schema import build_tables, schema_sql, schema_statements  # noqa: E402
from ._sync.engine import make_engine  # noqa: E402
from ._sync.records import JdbcMemoryRecordRepository  # noqa: E402
from ._sync.repository import JdbcChatMemoryRepository  # noqa: E402
from ._sync.spring_ai import SpringAiJdbcChatMemoryRepository  # noqa: E402

__all__ = [
    "DEFAULT_INITIALIZE_SCHEMA",
    "DEFAULT_MEMORY_TABLE_NAME",
    "DEFAULT_TABLE_NAME",
    "DIALECTS",
    "SPRING_AI_INITIALIZE_SCHEMA",
    "SPRING_AI_TABLE_NAME",
    "AsyncJdbcChatMemoryRepository",
    "AsyncJdbcMemoryRecordRepository",
    "AsyncSpringAiJdbcChatMemoryRepository",
    "JdbcChatMemoryRepository",
    "JdbcConfig",
    "JdbcMemoryRecordRepository",
    "SpringAiJdbcChatMemoryRepository",
    "SqlDialect",
    "build_tables",
    "make_async_engine",
    "make_engine",
    "memory_schema_sql",
    "schema_sql",
    "schema_statements",
    "spring_ai_schema",
]
