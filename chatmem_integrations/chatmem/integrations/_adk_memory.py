"""Google ADK's memory service on chatmem's reviewed long-term memory (``adk`` exports it;
the module docstring there says what it guarantees)."""

from __future__ import annotations

import asyncio
import inspect
import math
import re
from collections.abc import Callable, Mapping, Sequence

from chatmem.core import InvalidArgumentError
from chatmem.core.backend import require, validate_positive_int
from chatmem.core.longterm import (
    AsyncBackgroundAnalyser,
    AsyncMemoryRecordRepository,
    Extractor,
    MemoryRecord,
    MemoryStatus,
    RuleBasedExtractor,
    cosine,
)

require("google.adk", "google-adk")

from google.adk.events.event import Event  # noqa: E402
from google.adk.memory.base_memory_service import (  # noqa: E402
    BaseMemoryService,
    SearchMemoryResponse,
)
from google.adk.memory.memory_entry import MemoryEntry  # noqa: E402
from google.adk.sessions.session import Session  # noqa: E402
from google.genai import types  # noqa: E402

from ._adk_codec import session_conversation_id, user_state_id  # noqa: E402

Embed = Callable[[str], Sequence[float]]

_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        "a an and are as at be do does for from have i in is it me my of on or so that "
        "the this to was what when where which who why with you your ",
    )
)
"""Words too common to make a memory match a query."""


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower()) if w not in _STOPWORDS}


class ChatmemMemoryService(BaseMemoryService):
    """ADK memory on chatmem's reviewed long-term memory (see the module docstring).

    ``records`` is an async record store (``await async_record_store_from_url(url)``), read
    on the event loop; ``analyser`` the background analyser feeding it (default: a task with
    ``extractor``, itself defaulting to ``RuleBasedExtractor``). ``embed`` is an
    optional ``str -> vector`` callable: with it a memory matches when its cosine similarity
    to the query is at least ``min_similarity``; without it, when they share a keyword.
    ``limit`` bounds how many memories a search returns (best first).
    """

    def __init__(
        self,
        records: AsyncMemoryRecordRepository,
        *,
        analyser: AsyncBackgroundAnalyser | None = None,
        extractor: Extractor | None = None,
        embed: Embed | None = None,
        min_similarity: float = 0.75,
        limit: int = 10,
    ) -> None:
        if not isinstance(records, AsyncMemoryRecordRepository) or not (
            inspect.iscoroutinefunction(records.find)
        ):
            raise InvalidArgumentError(
                "records", "must be an AsyncMemoryRecordRepository (an async record store)"
            )
        if analyser is not None and not isinstance(analyser, AsyncBackgroundAnalyser):
            raise InvalidArgumentError("analyser", "must be an AsyncBackgroundAnalyser")
        if analyser is not None and extractor is not None:
            raise InvalidArgumentError("extractor", "is the analyser's: pass one or the other")
        if embed is not None and not callable(embed):
            raise InvalidArgumentError("embed", "must be a callable str -> sequence of floats")
        if (
            isinstance(min_similarity, bool)
            or not isinstance(min_similarity, int | float)
            or not math.isfinite(min_similarity)
            or not -1 <= min_similarity <= 1
        ):
            raise InvalidArgumentError("min_similarity", "must be a number from -1 to 1")
        self.records = records
        self.analyser = analyser or AsyncBackgroundAnalyser(
            records, extractor if extractor is not None else RuleBasedExtractor()
        )
        self.embed = embed
        self.min_similarity = float(min_similarity)
        self.limit = validate_positive_int(limit, "limit")
        self._vectors: dict[str, Sequence[float]] = {}

    async def add_session_to_memory(self, session: Session) -> None:
        if not isinstance(session, Session):
            raise InvalidArgumentError("session", "must be an ADK Session")
        await self.add_events_to_memory(
            app_name=session.app_name,
            user_id=session.user_id,
            events=session.events,
            session_id=session.id,
        )

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Queue each user message of ``events`` for analysis (adding a session again is
        harmless: the store keeps one memory per normalised content)."""
        cid = None if session_id is None else session_conversation_id(app_name, user_id, session_id)
        user_state_id(app_name, user_id)  # validates both before anything is queued
        for event in events:
            if not isinstance(event, Event):
                raise InvalidArgumentError("events", "must hold ADK Events")
        for event in events:
            text = _user_text(event)
            if text:
                self.analyser.submit(app_name, user_id, text, conversation_id=cid)

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued message was analysed; False on timeout."""
        return await self.analyser.flush(timeout)

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        user_state_id(app_name, user_id)
        if not isinstance(query, str):
            raise InvalidArgumentError("query", f"must be a str, got {type(query).__name__}")

        approved = await self._approved(app_name, user_id)
        if self.embed is None:
            scored = self._score(approved, query)  # shared words: quick, on the loop
        else:  # the caller's embedding model may block: it runs off the loop
            scored = await asyncio.to_thread(self._score, approved, query)
        best = sorted(scored, key=lambda s: -s[0])[: self.limit]
        return SearchMemoryResponse(memories=[_entry(r) for _, r in best])

    async def _approved(self, app_name: str, user_id: str) -> list[MemoryRecord]:
        out: list[MemoryRecord] = []
        cursor: str | None = None
        while True:
            page = await self.records.find(
                agent_id=app_name, user_id=user_id, status=MemoryStatus.APPROVED, cursor=cursor
            )
            out.extend(page.records)
            if page.next_cursor is None:
                return out
            cursor = page.next_cursor

    def _score(self, records: list[MemoryRecord], query: str) -> list[tuple[float, MemoryRecord]]:
        if self.embed is None:
            words = _words(query)
            hits = [(float(len(words & _words(r.content))), r) for r in records]
            return [(s, r) for s, r in hits if s > 0]
        target = list(self.embed(query))
        out: list[tuple[float, MemoryRecord]] = []
        for r in records:
            vector = self._vectors.get(r.id)
            if vector is None:
                vector = self._vectors[r.id] = list(self.embed(r.content))
            similarity = cosine(target, vector)
            if similarity >= self.min_similarity:
                out.append((similarity, r))
        return out


def _user_text(event: Event) -> str:
    if event.author != "user" or event.content is None:
        return ""
    return "\n".join(p.text for p in event.content.parts or [] if p.text and not p.thought)


def _entry(record: MemoryRecord) -> MemoryEntry:
    return MemoryEntry(
        id=record.id,
        content=types.Content(role="user", parts=[types.Part(text=record.content)]),
        author="user",
        timestamp=record.created_at.isoformat(),
        custom_metadata={
            "memory_type": record.memory_type.value,
            "confidence": record.confidence,
        },
    )
