"""Analysis after the fact: the user messages of stored conversations go through the same
extract, dedup and store steps as a live turn.

For switching long-term memory on for an agent that already has history, or for running
analysis again after a model outage. Runs are repeatable: a candidate already stored (any
status) is not stored again, so a run cut short is simply run again, and ``shard=(k, n)``
lets n processes share one backfill (each takes the conversations whose stable hash is k
modulo n, so together they cover every conversation exactly once).
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from chatmem.core._errors import InvalidArgumentError
from chatmem.core._messages import UserMessage
from chatmem.core._sync.repository import BaseChatMemoryRepository

from . import _rules as rules
from ._analyser import BackgroundAnalyser, _Job
from ._dedup import Deduplicator
from ._extract import Extractor
from ._repository import MemoryRecordRepository

log = logging.getLogger("chatmem.longterm")


@dataclass
class BackfillStats:
    """What a backfill did so far (``progress`` gets it after every conversation)."""

    conversations: int = 0
    messages: int = 0
    stored: int = 0
    duplicates: int = 0
    failed: int = 0


def validate_shard(value: object) -> tuple[int, int]:
    """``(k, n)`` with ``0 <= k < n``; also parses ``"k/n"`` (the CLI's spelling)."""
    if isinstance(value, str):
        index, _, count = value.partition("/")
        if not (index.isdigit() and count.isdigit()):
            raise InvalidArgumentError("shard", f"{value!r} is not K/N, e.g. 0/2")
        value = (int(index), int(count))
    if (
        not isinstance(value, tuple)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        or not 0 <= value[0] < value[1]
    ):
        raise InvalidArgumentError("shard", f"must be (k, n) with 0 <= k < n, got {value!r}")
    return value[0], value[1]


def in_shard(conversation_id: str, shard: tuple[int, int]) -> bool:
    """Whether ``conversation_id`` belongs to ``shard`` (CRC-32: the same in every process)."""
    return zlib.crc32(conversation_id.encode("utf-8")) % shard[1] == shard[0]


def backfill(
    chat: BaseChatMemoryRepository,
    records: MemoryRecordRepository,
    extractor: Extractor,
    *,
    agent_id: str,
    user_id: str,
    conversation_ids: Iterable[str] | None = None,
    shard: tuple[int, int] | str = (0, 1),
    deduplicator: Deduplicator | None = None,
    progress: Callable[[BackfillStats], None] | None = None,
) -> BackfillStats:
    """Analyse every user message of ``conversation_ids`` (default: every stored
    conversation) as ``user_id``'s messages to ``agent_id``; records keep the conversation
    and position of the message they came from. A message whose extraction or store call
    fails is counted in ``failed`` and logged, and the run goes on (run it again later)."""
    if not isinstance(chat, BaseChatMemoryRepository):
        raise InvalidArgumentError("chat", "must be a ChatMemoryRepository")
    agent = rules.validate_id(agent_id, "agent_id")
    user = rules.validate_id(user_id, "user_id")
    part = validate_shard(shard)
    wanted = None
    if conversation_ids is not None:
        if isinstance(conversation_ids, str):
            raise InvalidArgumentError("conversation_ids", "must be a list of ids, not a str")
        wanted = [rules.validate_id(c, "conversation_ids") for c in conversation_ids]
    analyser = BackgroundAnalyser(records, extractor, deduplicator=deduplicator)
    stats = BackfillStats()
    for cid in wanted if wanted is not None else chat.iter_conversation_ids():
        if not in_shard(cid, part):
            continue
        for message in chat.find_by_conversation_id(cid):
            if not isinstance(message, UserMessage) or not message.text:
                continue
            stats.messages += 1
            job = _Job(agent, user, message.text, cid, message.position)
            try:
                analyser.analyse(job)
            except Exception:
                stats.failed += 1
                log.exception("backfill: analysing a message of %s failed", cid)
        stats.conversations += 1
        stats.stored, stats.duplicates = analyser.stats.stored, analyser.stats.duplicates
        if progress is not None:
            progress(stats)
    return stats
