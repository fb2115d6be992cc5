"""Turn sessions and preprocessors (docs/behaviour.md section 4, after JetBrains Koog).

A turn loads a conversation before an agent run and stores the updated transcript only when
the run completes; an exception, a cancellation or KeyboardInterrupt leaves the stored
history exactly as it was. Load errors propagate: a failing store is never an empty history.
Preprocessors map a message list to a message list and run in the order given, at load and
at store.

One class serves both kinds of code, and each path does its own kind of I/O:
``with ChatTurn(repo, id)`` takes a sync repository and ``async with ChatTurn(repo, id)`` an
async one (``Async*ChatMemoryRepository``), whose calls it awaits. The other pairing is an
``InvalidArgumentError`` naming ``repository`` before any I/O: a sync repository is never
run in a worker thread to look async, nor an async one driven by a hidden event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import cast

from ._async.repository import AsyncChatMemoryRepository
from ._contract import is_async_repository
from ._errors import InvalidArgumentError
from ._messages import AssistantMessage, Message, SystemMessage, ToolResponseMessage
from ._sync.repository import ChatMemoryRepository
from ._validation import validate_conversation_id, validate_messages, validate_positive_int

Preprocessor = Callable[[list[Message]], list[Message]]


def window_size(n: int) -> Preprocessor:
    """Keep the last ``n`` messages, then drop tool results whose call fell outside them."""
    validate_positive_int(n, "n")

    def keep_last(messages: list[Message]) -> list[Message]:
        kept = messages[-n:]
        called: set[str] = set()
        out: list[Message] = []
        for m in kept:
            if isinstance(m, AssistantMessage):
                called.update(c.id for c in m.tool_calls)
            if isinstance(m, ToolResponseMessage) and not all(r.id in called for r in m.responses):
                continue
            out.append(m)
        return out

    return keep_last


def filter_messages(predicate: Callable[[Message], bool]) -> Preprocessor:
    """Keep only the messages for which ``predicate`` is true."""
    if not callable(predicate):
        raise InvalidArgumentError("predicate", "must be callable")
    return lambda messages: [m for m in messages if predicate(m)]


def drop_system_messages() -> Preprocessor:
    """Remove every system message."""
    return filter_messages(lambda m: not isinstance(m, SystemMessage))


def apply_preprocessors(
    preprocessors: Sequence[Preprocessor], messages: Iterable[Message]
) -> list[Message]:
    """Run ``preprocessors`` in order; each result is validated as a message list."""
    out = list(messages)
    for i, p in enumerate(preprocessors):
        out = validate_messages(p(list(out)), argument=f"preprocessors[{i}] result")
    return out


class ChatTurn:
    """One agent turn: ``with ChatTurn(repo, id) as turn: turn.append(...)``.

    ``turn.messages`` is the loaded (preprocessed) history plus what the turn appended.
    On a clean exit the transcript, preprocessed again, is stored: when it still begins with
    the stored history (no preprocessor rewrote it) only the new messages are appended, in
    one atomic append that loses nothing to a concurrent writer; otherwise it replaces the
    stored history. ``last=n`` loads only the newest ``n`` messages (a read bounded in the
    store, however long the conversation): preprocessors then shape what the model sees, and
    the turn's own messages are appended as given. ``load=False`` is for a framework that reads
    the history itself (the Agents SDK's session asks for it): entering reads nothing, and the
    turn's own messages are appended as given, under the same rule.
    """

    def __init__(
        self,
        repository: ChatMemoryRepository | AsyncChatMemoryRepository,
        conversation_id: str,
        *,
        preprocessors: Sequence[Preprocessor] = (),
        last: int | None = None,
        load: bool = True,
    ) -> None:
        if not isinstance(load, bool):
            raise InvalidArgumentError("load", "must be a bool")
        if not load and last is not None:
            raise InvalidArgumentError("last", "bounds the load: not with load=False")
        if not load and preprocessors:
            raise InvalidArgumentError("preprocessors", "shape the load: not with load=False")
        self.load_history = load
        self.repository = repository
        self._async = is_async_repository(repository)
        self.conversation_id = validate_conversation_id(conversation_id)
        self.last = None if last is None else validate_positive_int(last, "last")
        for i, p in enumerate(preprocessors):
            if not callable(p):
                raise InvalidArgumentError(f"preprocessors[{i}]", "must be callable")
        self.preprocessors = tuple(preprocessors)
        self.history: list[Message] = []
        self.added: list[Message] = []
        self.stored = False
        self._loaded: list[Message] = []  # what the store held, as read

    def _read_plan(self) -> tuple[str, int | None]:
        """The read to make: ``("find_last", n)`` for a bounded load the repository can do
        in the store, else ``("find_by_conversation_id", n)`` (sliced here when n is set)."""
        if self.last is not None and callable(getattr(self.repository, "find_last", None)):
            return "find_last", self.last
        return "find_by_conversation_id", self.last

    def _loaded_now(self, stored: list[Message], n: int | None) -> list[Message]:
        self._loaded = stored[-n:] if n is not None else stored
        self.history = apply_preprocessors(self.preprocessors, self._loaded)
        return self.history

    def _write_plan(self) -> tuple[str, list[Message]]:
        """``("append", new)``, ``("save_all", transcript)`` or ``("none", [])``."""
        if self.last is not None or not self.load_history:
            new = list(self.added)
        else:
            transcript = apply_preprocessors(self.preprocessors, self.messages)
            n = len(self._loaded)
            if transcript[:n] != self._loaded:
                return "save_all", transcript
            new = transcript[n:]
        if not new:
            return "none", []
        if callable(getattr(self.repository, "append", None)):
            return "append", new
        return "save_all", [*self._loaded, *new]  # a plain Protocol store: replace

    @property
    def messages(self) -> list[Message]:
        """The history the model should see: loaded history plus this turn's messages."""
        return self.history + self.added

    def append(self, messages: Message | Sequence[Message]) -> None:
        """Add this turn's messages (the user input, the replies, tool traffic)."""
        self.added.extend(validate_messages(messages))

    def _sync_repository(self) -> ChatMemoryRepository:
        if self._async:
            raise InvalidArgumentError(
                "repository", "is an async repository: use `async with ChatTurn(...)`"
            )
        return cast(ChatMemoryRepository, self.repository)

    def _async_repository(self) -> AsyncChatMemoryRepository:
        if not self._async:
            raise InvalidArgumentError(
                "repository",
                "is a sync repository: use `with ChatTurn(...)`, or pass an async repository "
                "(Async*ChatMemoryRepository) for `async with`",
            )
        return cast(AsyncChatMemoryRepository, self.repository)

    def load(self) -> list[Message]:
        """Read and preprocess the stored history (errors propagate)."""
        method, n = self._read_plan()
        read = getattr(self._sync_repository(), method)
        stored = (
            read(self.conversation_id, n) if method == "find_last" else read(self.conversation_id)
        )
        return self._loaded_now(stored, n)

    def commit(self) -> None:
        """Store the turn (see the class docstring)."""
        method, messages = self._write_plan()
        if method != "none":
            getattr(self._sync_repository(), method)(self.conversation_id, messages)
        self.stored = True

    async def aload(self) -> list[Message]:
        """``load`` for ``async with``: awaits the async repository (a sync one is an
        ``InvalidArgumentError`` naming ``repository``, before any I/O)."""
        repository = self._async_repository()
        method, n = self._read_plan()
        args = (self.conversation_id, n) if method == "find_last" else (self.conversation_id,)
        stored = await getattr(repository, method)(*args)
        return self._loaded_now(stored, n)

    async def acommit(self) -> None:
        """``commit`` for ``async with`` (see ``aload``)."""
        repository = self._async_repository()
        method, messages = self._write_plan()
        if method != "none":
            await getattr(repository, method)(self.conversation_id, messages)
        self.stored = True

    def __enter__(self) -> ChatTurn:
        if self.load_history:
            self.load()
        else:
            self._sync_repository()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()

    async def __aenter__(self) -> ChatTurn:
        if self.load_history:
            await self.aload()
        else:
            self._async_repository()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            await self.acommit()
