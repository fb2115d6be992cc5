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
``_settings`` and ``_queue`` (per-agent settings and the durable analysis queue as values;
their I/O in ``_async/settings.py``, ``_async/queue.py``), ``_analyser`` and ``_analyser_task``
(the in-process workers: a thread, a task), ``_async/memory.py`` and ``_async/advisor.py``
(``AsyncLongTermMemory`` and its advisor; the sync ones generated), ``_advisor``
(``LongTermChatTurn``), ``_stores`` (a store by URL). The
stores live in their packages (``JdbcMemoryRecordRepository``, ``RedisMemoryRecordRepository``
...), found by URL scheme through the ``chatmem.memory_stores`` entry-point group.
"""

from ._advisor import (
    USER_ID,
    AsyncLongTermMemory,
    AsyncLongTermMemoryAdvisor,
    LongTermChatTurn,
    LongTermMemory,
    LongTermMemoryAdvisor,
)
from ._analyser import DEFAULT_QUEUE_SIZE, AnalyserStats, BackgroundAnalyser
from ._analyser_task import AsyncBackgroundAnalyser
from ._async.in_memory import AsyncInMemoryMemoryRecordRepository
from ._async.queue import AsyncQueueWorker, async_enqueue
from ._async.repository import AsyncBaseMemoryRecordRepository, AsyncMemoryRecordRepository
from ._async.settings import async_get_settings, async_put_settings
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
from ._queue import DEFAULT_LEASE, QUEUE_NAMESPACE, Job, WorkStats, make_job
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
from ._settings import DEFAULT_SETTINGS_REFRESH, SETTINGS_NAMESPACE, AgentSettings
from ._state import MAX_STATE_VALUE_BYTES, StateEntry
from ._stores import (
    async_record_store_class_for_url,
    async_record_store_from_url,
    record_store_class_for_url,
    record_store_from_url,
)
from ._sync.queue import QueueWorker, enqueue
from ._sync.settings import get_settings, put_settings

__all__ = [
    "DEFAULT_LEASE",
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MAX_RECORDS",
    "DEFAULT_PENDING_TTL",
    "DEFAULT_QUEUE_SIZE",
    "DEFAULT_SETTINGS_REFRESH",
    "DEFAULT_SIMILARITY_THRESHOLD",
    "DEFAULT_TEMPLATE",
    "EXPIRED_REASON",
    "EXTRACTION_PROMPT",
    "MAX_STATE_VALUE_BYTES",
    "QUEUE_NAMESPACE",
    "RECORD_FIELDS",
    "SETTINGS_NAMESPACE",
    "USER_ID",
    "AddResult",
    "AgentSettings",
    "AnalyserStats",
    "AsyncBackgroundAnalyser",
    "AsyncBaseMemoryRecordRepository",
    "AsyncInMemoryMemoryRecordRepository",
    "AsyncLongTermMemory",
    "AsyncLongTermMemoryAdvisor",
    "AsyncMemoryRecordRepository",
    "AsyncQueueWorker",
    "BackfillStats",
    "BackgroundAnalyser",
    "BaseMemoryRecordRepository",
    "Clock",
    "Deduplicator",
    "ExtractionError",
    "Extractor",
    "InMemoryMemoryRecordRepository",
    "Job",
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
    "QueueWorker",
    "RuleBasedExtractor",
    "StateEntry",
    "WorkStats",
    "async_enqueue",
    "async_get_settings",
    "async_put_settings",
    "async_record_store_class_for_url",
    "async_record_store_from_url",
    "backfill",
    "cosine",
    "dedup_key",
    "effective",
    "enqueue",
    "get_settings",
    "inject",
    "is_expired",
    "make_job",
    "normalise",
    "parse_extraction",
    "put_settings",
    "record_from_fields",
    "record_store_class_for_url",
    "record_store_from_url",
    "record_to_fields",
    "render",
    "third_person",
    "utc_now",
]
