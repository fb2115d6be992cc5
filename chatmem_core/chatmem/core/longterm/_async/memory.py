"""``AsyncLongTermMemory``: one agent's long-term memory over a record store of its twin
(one source for both).

It holds the record store, the agent id, the in-process analyser (extractor, dedup, queue)
and the rendering caps and template. Whether the agent's memory is on, and how long its new
pending records wait for review, are the agent's settings in the store (``put_settings``,
``chatmem memories settings``), re-read at most every ``settings_refresh``; the constructor's
``enabled`` applies while the agent has no stored settings (or the store keeps none).

``durable=True`` records every accepted user message in the store's analysis queue before
``observe`` returns, so a crash loses none: this process's analyser claims it at once, and
any worker (``chatmem memories work``) takes what a dead process left (a message this process
was analysing when it died, once its claim's ``lease`` has passed). The default keeps the
queue in memory (no set-up; a crash loses what was not analysed yet).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta

from chatmem.core._contract import ASYNC_TWIN
from chatmem.core._errors import InvalidArgumentError
from chatmem.core._messages import Message, UserMessage
from chatmem.core._validation import validate_messages, validate_positive_int

from .. import _rules as rules
from .._advice import require_records
from .._analyser import DEFAULT_QUEUE_SIZE
from .._dedup import Deduplicator
from .._extract import Extractor
from .._model import MemoryStatus
from .._queue import DEFAULT_LEASE, make_job, validate_lease
from .._render import DEFAULT_MAX_CHARS, DEFAULT_MAX_RECORDS, DEFAULT_TEMPLATE, Template, render
from .._render import inject as inject_block
from .._settings import DEFAULT_SETTINGS_REFRESH, AgentSettings, SettingsCache
from .queue import AsyncQueueWorker, async_enqueue
from .repository import AsyncMemoryRecordRepository
from .settings import async_read_settings, defaults_of

ASYNC = True
if ASYNC:  # the in-process worker: a task here, a thread in the sync twin
    from .._analyser_task import AsyncBackgroundAnalyser as Analyser
else:
    from .._analyser import BackgroundAnalyser as Analyser

log = logging.getLogger("chatmem.longterm")


class AsyncLongTermMemory:
    """Long-term memory of one agent: nothing is analysed or injected while it is off
    (``enabled``, overridden by the agent's stored settings). Without an ``extractor``
    memories are only injected (extraction runs elsewhere)."""

    def __init__(
        self,
        repository: AsyncMemoryRecordRepository,
        *,
        agent_id: str,
        extractor: Extractor | None = None,
        enabled: bool = True,
        deduplicator: Deduplicator | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        template: Template = DEFAULT_TEMPLATE,
        max_records: int = DEFAULT_MAX_RECORDS,
        max_chars: int = DEFAULT_MAX_CHARS,
        settings_refresh: timedelta = DEFAULT_SETTINGS_REFRESH,
        durable: bool = False,
        lease: timedelta = DEFAULT_LEASE,
    ) -> None:
        require_records(repository, AsyncMemoryRecordRepository, want_async=ASYNC_TWIN)
        if isinstance(template, str) and "{memories}" not in template:
            raise InvalidArgumentError("template", "must contain {memories}")
        if not isinstance(durable, bool):
            raise InvalidArgumentError("durable", "must be a bool")
        lease = validate_lease(lease)
        if durable and not callable(getattr(repository, "write_state", None)):
            raise InvalidArgumentError("durable", "needs a record store with state entries")
        self.repository = repository
        self.agent_id = rules.validate_id(agent_id, "agent_id")
        self.enabled = bool(enabled)
        self.template = template
        self.max_records = validate_positive_int(max_records, "max_records")
        self.max_chars = validate_positive_int(max_chars, "max_chars")
        self.durable = durable
        self.fallback = AgentSettings(
            enabled=self.enabled, pending_ttl=defaults_of(repository).pending_ttl
        )
        self._settings = SettingsCache(settings_refresh, self.fallback)
        self._has_state = callable(getattr(repository, "read_state", None))
        worker = None
        if durable and extractor is not None:
            worker = AsyncQueueWorker(
                repository,
                extractor,
                agent_id=self.agent_id,
                deduplicator=deduplicator,
                settings_refresh=settings_refresh,
                lease=lease,
            )
        self.analyser = (
            Analyser(
                repository,
                extractor,
                deduplicator=deduplicator,
                queue_size=queue_size,
                queue_worker=worker,
            )
            if extractor is not None
            else None
        )

    async def settings(self) -> AgentSettings:
        """The agent's settings as this process applies them: re-read from the store when
        the refresh interval has passed (a failed read keeps the last ones, logged)."""
        if not self._has_state or not self._settings.due():
            return self._settings.value
        try:
            stored = await async_read_settings(self.repository, self.agent_id)
        except Exception:
            log.exception("long-term memory settings of agent %s unreadable", self.agent_id)
            return self._settings.update(None)
        return self._settings.update(self.fallback if stored is None else stored)

    async def system_prompt_block(self, user_id: str) -> str | None:
        """The rendered approved memories of ``user_id`` (None when there are none or the
        agent's memory is off)."""
        uid = rules.validate_id(user_id, "user_id")
        if not (await self.settings()).enabled:
            return None
        page = await self.repository.find(
            agent_id=self.agent_id,
            user_id=uid,
            status=MemoryStatus.APPROVED,
            limit=min(rules.MAX_PAGE_SIZE, max(self.max_records * 5, 100)),
        )
        return render(
            page.records,
            template=self.template,
            max_records=self.max_records,
            max_chars=self.max_chars,
        )

    async def inject(self, prompt: Sequence[Message], user_id: str) -> list[Message]:
        """``prompt`` with the user's approved memories in its system message."""
        messages = validate_messages(prompt, argument="prompt")
        return inject_block(messages, await self.system_prompt_block(user_id))

    async def observe(
        self,
        user_id: str,
        text: str,
        *,
        conversation_id: str | None = None,
        message_position: int | None = None,
    ) -> bool:
        """Accept a user message for background analysis; False when it was not (memory
        off, no extractor, or the in-memory queue full). Durable: recorded in the store's
        queue before this returns."""
        job = make_job(self.agent_id, user_id, text, conversation_id, message_position)
        if self.analyser is None and not self.durable:
            return False
        settings = await self.settings()
        if not settings.enabled:
            return False
        if self.durable:
            key = await async_enqueue(self.repository, job)
            if self.analyser is not None:
                self.analyser.submit_queued(key)
            return True
        assert self.analyser is not None
        return self.analyser.submit(
            job.agent_id,
            job.user_id,
            job.text,
            conversation_id=job.conversation_id,
            message_position=job.message_position,
            pending_ttl=settings.pending_ttl,
        )

    async def observe_messages(
        self, user_id: str, messages: Sequence[Message], *, conversation_id: str | None = None
    ) -> int:
        """Accept the text of each user message in ``messages`` (a stored turn) for
        analysis; how many were accepted."""
        uid = rules.validate_id(user_id, "user_id")
        accepted = 0
        for m in validate_messages(messages):
            if isinstance(m, UserMessage) and m.text:
                accepted += await self.observe(uid, m.text, conversation_id=conversation_id)
        return accepted

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait for queued analysis to finish (True when nothing was left)."""
        return True if self.analyser is None else await self.analyser.flush(timeout)

    async def close(self) -> None:
        """Finish queued analysis and stop the worker."""
        if self.analyser is not None:
            await self.analyser.close()
