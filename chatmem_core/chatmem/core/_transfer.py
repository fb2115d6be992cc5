"""Moving conversations in and out of stores: JSON Lines export/import, store-to-store
migration, and counts. Everything streams: ids are paged with ``iter_conversation_ids`` and
one conversation is held at a time, so memory stays bounded by the largest conversation.

Export format, one line per conversation::

    {"conversation_id": "c1", "messages": [{"v": 1, "type": "USER", "text": "hi",
      "created_at": "2024-02-29T12:34:56.789012+00:00"}, ...]}

Each message is core's ``message_to_dict`` plus its ``created_at`` (exact to the microsecond).
Positions are not exported: they are store-assigned, and the list order is the log order.

No path here loses data by default: an export never writes an empty record (an unknown id is
``ConversationNotFoundError``), an import validates the whole file before writing anything and
never replaces or deletes a stored conversation unless ``replace=True``, and a migration never
turns a conversation that vanished from the source into a delete in the target.
"""

from __future__ import annotations

import io
import json
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

from ._codec import message_from_dict, message_to_dict
from ._errors import ChatMemoryError, InvalidArgumentError, SchemaError
from ._messages import Message
from ._sync.repository import DEFAULT_PAGE_SIZE, BaseChatMemoryRepository
from ._validation import validate_conversation_id

Progress = Callable[[int], None]


class ConversationNotFoundError(ChatMemoryError, LookupError):
    """Conversations asked for by id that the store does not hold (``conversation_ids``)."""

    def __init__(self, conversation_ids: Iterable[str]) -> None:
        self.conversation_ids = tuple(conversation_ids)
        shown = ", ".join(repr(c) for c in self.conversation_ids[:5])
        more = len(self.conversation_ids) - 5
        super().__init__(f"no such conversation: {shown}{f' and {more} more' if more > 0 else ''}")


class ImportConflictError(ChatMemoryError):
    """An import would overwrite conversations the target already holds; nothing was written.
    ``conversation_ids`` lists them."""

    def __init__(self, conversation_ids: Iterable[str]) -> None:
        self.conversation_ids = tuple(conversation_ids)
        shown = ", ".join(repr(c) for c in self.conversation_ids[:5])
        more = len(self.conversation_ids) - 5
        super().__init__(
            f"{len(self.conversation_ids)} conversation(s) already exist in the target "
            f"({shown}{f' and {more} more' if more > 0 else ''}); nothing was written"
        )


class ImportIncompleteError(ChatMemoryError):
    """The store failed part-way through an import. Lines are written in file order and each
    conversation atomically, so exactly the records before ``failed_line`` were applied
    (``result`` lists them, and those skipped); ``__cause__`` is the store's error."""

    def __init__(
        self, result: ImportResult, failed_line: int, failed_id: str, error: BaseException
    ) -> None:
        self.result = result
        self.failed_line = failed_line
        self.failed_id = failed_id
        super().__init__(
            f"the store failed at line {failed_line} ({failed_id!r}: {error}); the "
            f"{len(result.written) + len(result.deleted)} conversation(s) before it were "
            f"written, line {failed_line} and after were not"
        )


@dataclass(frozen=True)
class MigrationResult:
    """What ``migrate`` did: conversations written, already identical, messages written, and
    conversations listed by the source but empty when read (deleted meanwhile; not copied)."""

    copied: int
    unchanged: int
    messages: int
    vanished: int = 0

    @property
    def conversations(self) -> int:
        """Every conversation the source held when read."""
        return self.copied + self.unchanged


@dataclass(frozen=True)
class ExportResult:
    """Conversations written, and those listed but empty when read (not written)."""

    written: int
    vanished: tuple[str, ...] = ()


@dataclass(frozen=True)
class ImportResult:
    """What ``import_conversations`` applied, by conversation id."""

    written: tuple[str, ...] = ()
    messages: int = 0
    skipped_existing: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    empty: tuple[str, ...] = ()

    @property
    def conversations(self) -> int:
        """Conversations written (created or replaced)."""
        return len(self.written)


@dataclass(frozen=True)
class StoreStats:
    """Counts over a whole store; ``oldest``/``newest`` are None when it is empty."""

    conversations: int
    messages: int
    oldest: datetime | None
    newest: datetime | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (timestamps in ISO 8601)."""
        return {
            "conversations": self.conversations,
            "messages": self.messages,
            "oldest": self.oldest.isoformat() if self.oldest else None,
            "newest": self.newest.isoformat() if self.newest else None,
        }


def conversation_to_line(conversation_id: str, messages: Iterable[Message]) -> str:
    """One export line (no trailing newline)."""
    encoded = []
    for m in messages:
        d = message_to_dict(m)
        d["created_at"] = m.created_at.isoformat() if m.created_at else None
        encoded.append(d)
    return json.dumps(
        {"conversation_id": conversation_id, "messages": encoded},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def line_to_conversation(line: str, *, where: str = "line") -> tuple[str, list[Message]]:
    """Parse one export line; InvalidArgumentError naming ``where`` when it is malformed."""
    try:
        record = json.loads(line)
        cid = validate_conversation_id(
            record["conversation_id"], argument=f"{where}.conversation_id"
        )
        if not isinstance(record["messages"], list):
            raise TypeError("messages must be a list")
        messages = []
        for d in record["messages"]:
            ts = d.pop("created_at", None)
            created = datetime.fromisoformat(ts) if ts is not None else None
            messages.append(message_from_dict(d, created_at=created))
    except InvalidArgumentError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, SchemaError) as exc:
        raise InvalidArgumentError(where, f"is not a chatmem export line ({exc})") from exc
    return cid, messages


def _exists(repo: BaseChatMemoryRepository, cid: str) -> bool:
    return bool(repo.find_last(cid, 1))


def export_conversations(
    repo: BaseChatMemoryRepository,
    out: TextIO,
    conversation_ids: Iterable[str] | None = None,
    *,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> ExportResult:
    """Write one line per conversation: all of them, or ``conversation_ids`` (each once, in
    the order given). Every requested id is checked first: an unknown one raises
    ConversationNotFoundError before anything is written. A conversation that is empty when
    read (deleted meanwhile) is never written as an empty record; it is in ``vanished``."""
    if conversation_ids is not None:
        wanted = list(dict.fromkeys(validate_conversation_id(c) for c in conversation_ids))
        missing = [c for c in wanted if not _exists(repo, c)]
        if missing:
            raise ConversationNotFoundError(missing)
        ids: Iterator[str] = iter(wanted)
    else:
        ids = repo.iter_conversation_ids(page_size=page_size)
    written, vanished = 0, []
    for cid in ids:
        messages = repo.find_by_conversation_id(cid)
        if not messages:
            vanished.append(cid)
            continue
        out.write(conversation_to_line(cid, messages) + "\n")
        written += 1
    return ExportResult(written, tuple(vanished))


def _decoded(lines: Iterable[str]) -> Iterator[str]:
    """``lines``, with a decoding failure turned into an input error (decoding runs ahead of
    the lines handed out, so the line number is approximate)."""
    n, it = 0, iter(lines)
    while True:
        try:
            line = next(it)
        except StopIteration:
            return
        except UnicodeDecodeError as exc:
            raise InvalidArgumentError("input", f"is not UTF-8 text (near line {n + 1})") from exc
        n += 1
        yield line


@contextmanager
def _rewindable(source: TextIO | Iterable[str]) -> Iterator[Callable[[], Iterator[str]]]:
    """A way to read ``source`` twice (validate, then write) without holding it in memory: a
    seekable file is re-read, a list re-iterated, anything else (a pipe) spooled to disk."""
    if isinstance(source, (list, tuple)):
        items = source
        yield lambda: iter(items)
        return
    if isinstance(source, io.IOBase) and source.seekable():
        stream, start = source, source.tell()

        def again() -> Iterator[str]:
            stream.seek(start)
            return _decoded(stream)

        yield again
        return
    with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
        spool.writelines(_decoded(source))

        def from_spool() -> Iterator[str]:
            spool.seek(0)
            return iter(spool)

        yield from_spool


def _records(lines: Iterable[str], max_id_length: int) -> Iterator[tuple[int, str, list[Message]]]:
    for n, line in enumerate(lines, 1):
        if line.strip():
            cid, msgs = line_to_conversation(line, where=f"line {n}")
            validate_conversation_id(
                cid, argument=f"line {n}.conversation_id", max_length=max_id_length
            )
            yield n, cid, msgs


def import_conversations(
    repo: BaseChatMemoryRepository,
    source: TextIO | Iterable[str],
    *,
    replace: bool = False,
    skip_existing: bool = False,
) -> ImportResult:
    """Import an export file, all or nothing up front: every line is parsed and validated, and
    (unless ``replace``) every target conversation checked, before anything is written.

    A conversation the target already holds is an ImportConflictError listing them (nothing
    written), is left alone with ``skip_existing``, or is replaced with ``replace``. A record
    with no messages deletes the stored conversation only with ``replace``; otherwise it writes
    nothing (in ``empty``). An id twice in one file is an InvalidArgumentError. If the store
    fails part-way, ImportIncompleteError says which conversations were written."""
    if replace and skip_existing:
        raise InvalidArgumentError("skip_existing", "cannot be combined with replace")
    with _rewindable(source) as read:
        return _import(repo, read, replace=replace, skip_existing=skip_existing)


def _import(
    repo: BaseChatMemoryRepository,
    read: Callable[[], Iterator[str]],
    *,
    replace: bool,
    skip_existing: bool,
) -> ImportResult:
    limit = repo.max_conversation_id_length
    first_line: dict[str, int] = {}
    for n, cid, _ in _records(read(), limit):
        if cid in first_line:
            raise InvalidArgumentError(
                f"line {n}", f"conversation {cid!r} already appeared on line {first_line[cid]}"
            )
        first_line[cid] = n
    existing: set[str] = set()
    if not replace:
        existing = {cid for cid in first_line if _exists(repo, cid)}
        if existing and not skip_existing:
            raise ImportConflictError(sorted(existing, key=first_line.__getitem__))
    skipped = tuple(sorted(existing, key=first_line.__getitem__))
    written: list[str] = []
    deleted: list[str] = []
    empty: list[str] = []
    messages = 0
    for n, cid, msgs in _records(read(), limit):
        if cid in existing:
            continue
        if not msgs and not replace:
            empty.append(cid)
            continue
        try:
            repo.save_all(cid, msgs)
        except ChatMemoryError as exc:
            done = ImportResult(tuple(written), messages, skipped, tuple(deleted), tuple(empty))
            raise ImportIncompleteError(done, n, cid, exc) from exc
        (written if msgs else deleted).append(cid)
        messages += len(msgs)
    return ImportResult(tuple(written), messages, skipped, tuple(deleted), tuple(empty))


def _same(a: list[Message], b: list[Message]) -> bool:
    return a == b and [m.created_at for m in a] == [m.created_at for m in b]


def migrate(
    source: BaseChatMemoryRepository,
    target: BaseChatMemoryRepository,
    *,
    page_size: int = DEFAULT_PAGE_SIZE,
    progress: Progress | None = None,
) -> MigrationResult:
    """Copy every conversation of ``source`` into ``target`` (content and ``created_at``).
    A conversation the target already holds identically is left alone, so a second run
    writes nothing; a differing one is replaced atomically. Conversations only the target
    holds are kept, and one the source lists but reads empty (deleted meanwhile) is skipped,
    never deleted from the target. ``progress(done)`` is called after each conversation."""
    if source is target:
        raise InvalidArgumentError("target", "is the source repository")
    copied = unchanged = written = vanished = 0
    for cid in source.iter_conversation_ids(page_size=page_size):
        messages = source.find_by_conversation_id(cid)
        if not messages:
            vanished += 1
        elif _same(messages, target.find_by_conversation_id(cid)):
            unchanged += 1
        else:
            target.save_all(cid, messages)
            copied += 1
            written += len(messages)
        if progress is not None:
            progress(copied + unchanged + vanished)
    return MigrationResult(copied, unchanged, written, vanished)


def count_conversations(
    repo: BaseChatMemoryRepository, *, page_size: int = DEFAULT_PAGE_SIZE
) -> int:
    """How many conversations ``repo`` holds (pages through the ids only)."""
    return sum(1 for _ in repo.iter_conversation_ids(page_size=page_size))


def store_stats(
    repo: BaseChatMemoryRepository, *, page_size: int = DEFAULT_PAGE_SIZE
) -> StoreStats:
    """Conversations, messages and the oldest/newest ``created_at``, over the whole store."""
    conversations = messages = 0
    oldest: datetime | None = None
    newest: datetime | None = None
    for cid in repo.iter_conversation_ids(page_size=page_size):
        log = repo.find_by_conversation_id(cid)
        if not log:
            continue
        conversations += 1
        messages += len(log)
        for m in log:
            ts = m.created_at
            if ts is None:
                continue
            oldest = ts if oldest is None or ts < oldest else oldest
            newest = ts if newest is None or ts > newest else newest
    return StoreStats(conversations, messages, oldest, newest)
