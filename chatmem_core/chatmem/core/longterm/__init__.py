"""chatmem.core.longterm: long-term, per-user agent memory that a person reviews.

Each user message is analysed in the background for preferences, facts and context about
the user; candidates are deduplicated and stored as pending; a reviewer approves or rejects
them (REST API in ``chatmem.core.longterm.api``, the ``chatmem memories`` command); a pending
record not reviewed within 7 days expires as rejected; approved records are rendered into
the system prompt of the user's next conversations.

Layout: ``_model`` (values, errors), ``_rules`` (every lifecycle rule, pure), ``_extract``,
``_dedup``, ``_render`` (pure), ``_codec`` (record <-> flat fields, shared by the document
stores), ``_state`` (the state primitive's entry and rules, pure), ``_async/`` (the contract,
the validating base, the in-memory store; ``_sync/`` is generated from it),
``_analyser`` (the worker), ``_advisor`` (injection), ``_stores`` (a store by URL). The
stores live in their packages (``JdbcMemoryRecordRepository``, ``RedisMemoryRecordRepository``
...), found by URL scheme through the ``chatmem.memory_stores`` entry-point group.
"""

from ._advisor import (
    USER_ID,
    LongTermChatTurn,
    LongTermMemory,
    LongTermMemoryAdvisor,
)
from ._analyser import DEFAULT_QUEUE_SIZE, AnalyserStats, BackgroundAnalyser
from ._async.in_memory import AsyncInMemoryMemoryRecordRepository
from ._async.repository import AsyncBaseMemoryRecordRepository, AsyncMemoryRecordRepository
from ._backfill import BackfillStats, backfill
from ._codec import RECORD_FIELDS, record_from_fields, record_to_fields
from ._dedup import DEFAULT_SIMILARITY_THRESHOLD, Deduplicator, cosine
from ._extract import (
    EXTRACTION_PROMPT,
    Extractor,
    LlmExtractor,
    RuleBasedExtractor,
    parse_extraction,
    third_person,
)
from ._model import (
    AddResult,
    ExtractionError,
    MemoryCandidate,
    MemoryNotFoundError,
    MemoryRecord,
    MemoryRecordPage,
    MemoryStateError,
    MemoryStatus,
    MemoryType,
)
from ._render import DEFAULT_MAX_CHARS, DEFAULT_MAX_RECORDS, DEFAULT_TEMPLATE, inject, render
from ._repository import (
    BaseMemoryRecordRepository,
    InMemoryMemoryRecordRepository,
    MemoryRecordRepository,
)
from ._rules import (
    DEFAULT_PENDING_TTL,
    EXPIRED_REASON,
    Clock,
    dedup_key,
    effective,
    is_expired,
    normalise,
    utc_now,
)
from ._state import MAX_STATE_VALUE_BYTES, StateEntry
from ._stores import (
    async_record_store_class_for_url,
    async_record_store_from_url,
    record_store_class_for_url,
    record_store_from_url,
)

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MAX_RECORDS",
    "DEFAULT_PENDING_TTL",
    "DEFAULT_QUEUE_SIZE",
    "DEFAULT_SIMILARITY_THRESHOLD",
    "DEFAULT_TEMPLATE",
    "EXPIRED_REASON",
    "EXTRACTION_PROMPT",
    "MAX_STATE_VALUE_BYTES",
    "RECORD_FIELDS",
    "USER_ID",
    "AddResult",
    "AnalyserStats",
    "AsyncBaseMemoryRecordRepository",
    "AsyncInMemoryMemoryRecordRepository",
    "AsyncMemoryRecordRepository",
    "BackfillStats",
    "BackgroundAnalyser",
    "BaseMemoryRecordRepository",
    "Clock",
    "Deduplicator",
    "ExtractionError",
    "Extractor",
    "InMemoryMemoryRecordRepository",
    "LlmExtractor",
    "LongTermChatTurn",
    "LongTermMemory",
    "LongTermMemoryAdvisor",
    "MemoryCandidate",
    "MemoryNotFoundError",
    "MemoryRecord",
    "MemoryRecordPage",
    "MemoryRecordRepository",
    "MemoryStateError",
    "MemoryStatus",
    "MemoryType",
    "RuleBasedExtractor",
    "StateEntry",
    "async_record_store_class_for_url",
    "async_record_store_from_url",
    "backfill",
    "cosine",
    "dedup_key",
    "effective",
    "inject",
    "is_expired",
    "normalise",
    "parse_extraction",
    "record_from_fields",
    "record_store_class_for_url",
    "record_store_from_url",
    "record_to_fields",
    "render",
    "third_person",
    "utc_now",
]
