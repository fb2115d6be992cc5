"""Worker functions the multi-process tests start (importable by spawned processes)."""

from __future__ import annotations

from typing import Any


def open_by_url(url: str, options: dict[str, Any]) -> Any:
    """A record store on ``url`` as a separate process opens one (its own client)."""
    from chatmem.core.longterm import record_store_from_url

    return record_store_from_url(url, **options)


def add_one(url: str, options: dict[str, Any], content: str, barrier: Any, results: Any) -> None:
    """Open a fresh store on ``url`` with ``options``, wait for every peer, add one candidate."""
    from chatmem.core.longterm import MemoryCandidate, MemoryType

    repo = open_by_url(url, {**options, "initialize_schema": "never"})
    candidate = MemoryCandidate(memory_type=MemoryType.PREFERENCE, content=content, confidence=0.9)
    barrier.wait(60)
    result = repo.add("agent", "ana", candidate)
    results.put((result.record.id, result.created))
    repo.close()


class Hanging:
    """The offline rules, except that a message containing ``hang_on`` never finishes (the
    worker analysing it holds its claim until it is killed)."""

    def __init__(self, hang_on: str | None) -> None:
        self.hang_on = hang_on

    def extract(self, text: str) -> Any:
        import time

        from chatmem.core.longterm import RuleBasedExtractor

        if self.hang_on is not None and self.hang_on in text:
            time.sleep(600)
        return RuleBasedExtractor().extract(text)


def drain_queue(
    url: str,
    options: dict[str, Any],
    lease_seconds: float,
    worker_id: str,
    hang_on: str | None = None,
) -> None:
    """A worker process: drain the durable analysis queue of the store on ``url``."""
    from datetime import timedelta

    from chatmem.core.longterm import QueueWorker

    repo = open_by_url(url, {**options, "initialize_schema": "never"})
    worker = QueueWorker(
        repo,
        Hanging(hang_on),
        worker_id=worker_id,
        lease=timedelta(seconds=lease_seconds),
        poll=timedelta(seconds=0.2),
    )
    worker.drain()
    repo.close()


class SlowExtractor:
    """The offline rules, a second late: an app process is killed before it analysed."""

    def extract(self, text: str) -> Any:
        import time

        from chatmem.core.longterm import RuleBasedExtractor

        time.sleep(1)
        return RuleBasedExtractor().extract(text)


def app_turns(url: str, options: dict[str, Any], texts: list[str], done: Any) -> None:
    """An app process: a turn per text with a durable memory, say so, then hang on (the test
    kills it with -9 right after, before its own analyser got through them)."""
    import time
    from datetime import timedelta

    from chatmem.core import InMemoryChatMemoryRepository, UserMessage
    from chatmem.core.longterm import LongTermChatTurn, LongTermMemory

    repo = open_by_url(url, {**options, "initialize_schema": "never"})
    memory = LongTermMemory(
        repo,
        agent_id="helper",
        extractor=SlowExtractor(),
        durable=True,
        lease=timedelta(seconds=2),  # what it is analysing when killed is retried soon
    )
    chat = InMemoryChatMemoryRepository()
    for text in texts:  # one turn each; the message is queued in the store within it
        with LongTermChatTurn(chat, "c1", long_term=memory, user_id="ana") as turn:
            turn.append(UserMessage(text))
    done.set()
    time.sleep(600)
