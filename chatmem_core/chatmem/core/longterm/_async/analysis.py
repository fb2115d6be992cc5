"""One message's analysis I/O: extract, compare with the user's memories, store the new.

Shared by the in-process analysers (a thread or a task, one per twin),
the durable queue's workers and the backfill, so a candidate goes through the same steps
whoever found it. The rules (dedup, the record's lifecycle) are pure, elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from .._dedup import Deduplicator
from .._extract import Extractor
from .._model import MemoryCandidate, MemoryStatus
from .._queue import Job
from .repository import AsyncMemoryRecordRepository

ASYNC = True

DEDUP_SCAN_LIMIT = 500
"""How many of the user's pending and approved memories a candidate is compared with by
similarity (exact duplicates are caught by the store's unique key whatever the count)."""


@dataclass
class Outcome:
    """What storing one message's candidates did."""

    stored: int = 0
    duplicates: int = 0


async def async_extract(extractor: Extractor, text: str) -> list[MemoryCandidate]:
    """The extractor's candidates for ``text`` (its ``aextract`` when it has one)."""
    if ASYNC:
        aextract = getattr(extractor, "aextract", None)
        if aextract is not None:
            found: list[MemoryCandidate] = await aextract(text)
            return found
    return extractor.extract(text)


async def async_store_candidates(
    records: AsyncMemoryRecordRepository,
    deduplicator: Deduplicator,
    job: Job,
    candidates: list[MemoryCandidate],
    *,
    pending_ttl: timedelta | None = None,
) -> Outcome:
    """Store each candidate that duplicates none of the user's memories as pending
    (expiring after ``pending_ttl``, else the store's default)."""
    outcome = Outcome()
    if not candidates:
        return outcome
    existing = []
    # without embeddings the only duplicates are of the same normalised text, which the
    # store's unique key refuses anyway: no need to read the user's memories first
    similar = (MemoryStatus.APPROVED, MemoryStatus.PENDING) if deduplicator.embed else ()
    for status in similar:
        page = await records.find(
            agent_id=job.agent_id, user_id=job.user_id, status=status, limit=DEDUP_SCAN_LIMIT
        )
        existing.extend(page.records)
    for candidate in candidates:
        if deduplicator.duplicate_of(candidate, existing) is not None:
            outcome.duplicates += 1
            continue
        result = await records.add(
            job.agent_id,
            job.user_id,
            candidate,
            conversation_id=job.conversation_id,
            message_position=job.message_position,
            pending_ttl=pending_ttl,
        )
        if result.created:
            outcome.stored += 1
            existing.append(result.record)
        else:
            outcome.duplicates += 1
    return outcome


async def async_analyse(
    records: AsyncMemoryRecordRepository,
    extractor: Extractor,
    deduplicator: Deduplicator,
    job: Job,
    *,
    pending_ttl: timedelta | None = None,
) -> Outcome:
    """Extract ``job``'s candidates and store the new ones."""
    candidates = await async_extract(extractor, job.text)
    return await async_store_candidates(
        records, deduplicator, job, candidates, pending_ttl=pending_ttl
    )
