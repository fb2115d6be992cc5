"""What every contender in the bench does, and how a round of turns is timed.

Messages are realistic in size and shape: user messages of about 150-400 characters,
assistant replies of about 300-900, a metadata mapping on every third message, made from a
fixed seed so every run and every contender stores the same bytes. A floor stores each
message as the very JSON chatmem writes (``encode_json``), so the payload is the same size.

Bytes read per turn are counted on what each contender returned to its caller, as the UTF-8
size of its own compact JSON form (chatmem: ``encode_json``; a floor: the JSON it stored;
LangChain: ``message_to_dict``; LlamaIndex: ``model_dump_json``), outside the timed loop. That
is the payload handed to the application, not the bytes on the wire. Where a driver shows
its replies (pymongo's command monitoring) the bench also reports the reply bytes of that
turn, which catches a store that fetches more than it returns.
"""

from __future__ import annotations

import gc
import inspect
import json
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from chatmem.core import (
    AssistantMessage,
    ChatTurn,
    Message,
    MessageType,
    MessageWindowChatMemory,
    UserMessage,
)
from chatmem.core.backend import encode_json

WINDOW = 20
H_VALUES = (10, 1_000, 10_000)
TURN_POOL = 16  # distinct (user, assistant) pairs the timed turns cycle through

_WORDS = (  # noqa: SIM905 (prose reads better than a list of words)
    "the order shipped from the Lisbon warehouse on Tuesday and the tracking number shows "
    "a delay at customs please confirm the delivery address and whether a signature is "
    "required we can offer a refund or a replacement the invoice lists two items a blue "
    "jacket in size medium and a pair of running shoes the weather next week looks sunny "
    "with a light breeze summarise the contract terms in plain language and list the risks"
).split()


def _text(rng: random.Random, low: int, high: int) -> str:
    target = rng.randint(low, high)
    words: list[str] = []
    size = 0
    while size < target:
        word = rng.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words).capitalize() + "."


def make_messages(n: int, seed: int = 19) -> list[Message]:
    """``n`` alternating user/assistant messages of realistic size, a third with metadata."""
    rng = random.Random(seed)
    out: list[Message] = []
    for i in range(n):
        meta: dict[str, Any] = {}
        if i % 3 == 2:
            meta = {"model": "gpt-4o-mini", "tokens": rng.randint(40, 400), "trace": f"t{i:06d}"}
        if i % 2 == 0:
            out.append(UserMessage(_text(rng, 150, 400), metadata=meta))
        else:
            out.append(AssistantMessage(_text(rng, 300, 900), metadata=meta))
    return out


def turn_pairs(seed: int = 7) -> list[tuple[Message, Message]]:
    """The (user, assistant) pairs the timed turns cycle through."""
    msgs = make_messages(2 * TURN_POOL, seed)
    return [(msgs[i], msgs[i + 1]) for i in range(0, len(msgs), 2)]


def payload(message: Message) -> str:
    """The JSON a floor stores for ``message``: byte for byte what chatmem encodes."""
    return encode_json(message)


def json_bytes(value: Any) -> int:
    """UTF-8 size of the compact JSON of ``value`` (how floors' reads are counted)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


class WireCounter:
    """Driver-level bytes of the replies a turn received, where a driver lets us see them
    honestly (pymongo's command monitoring: each reply re-encoded as BSON). Counts only
    while ``counting``, i.e. during the untimed turn, so the timed turns pay nothing."""

    def __init__(self) -> None:
        self.counting = False
        self.total = 0
        self.installed: set[str] = set()

    def install(self, backend: str) -> None:
        if backend in ("mongo", "ferretdb") and "pymongo" not in self.installed:
            import bson
            from pymongo import monitoring

            counter = self

            class Listener(monitoring.CommandListener):
                def started(self, event: monitoring.CommandStartedEvent) -> None:
                    pass

                def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
                    if counter.counting:
                        counter.total += len(bson.encode(event.reply))

                def failed(self, event: monitoring.CommandFailedEvent) -> None:
                    pass

            monitoring.register(Listener())  # clients made from now on report to it
            self.installed.add("pymongo")

    def measures(self, backend: str) -> bool:
        return backend in ("mongo", "ferretdb") and "pymongo" in self.installed


WIRE = WireCounter()


class Contender(Protocol):
    """One thing being timed on one conversation: seeded once, then turn after turn."""

    name: str
    kind: str  # "chatmem", "floor" or "peer"

    def seed(self, cid: str, messages: Sequence[Message]) -> None: ...

    def turn(self, cid: str, user: Message, reply: Message) -> Sequence[Any]: ...

    def read_size(self, returned: Sequence[Any]) -> int: ...

    def close(self) -> None: ...


def accepts_keep_history() -> bool:
    """Whether core's ``MessageWindowChatMemory`` has the ``keep_history`` option yet."""
    return "keep_history" in inspect.signature(MessageWindowChatMemory).parameters


class ChatmemContender:
    """chatmem's windowed turn with every message kept in the store.

    With ``keep_history``: ``memory.add`` x2 + ``memory.get``. Before it lands in core: the
    same storage work spelled out, ``repo.append`` x2 + ``repo.window_get(cid, 20)``.
    """

    kind = "chatmem"

    def __init__(self, repository: Any, name: str = "chatmem") -> None:
        self.name = name
        self.repo = repository
        self.mode = "keep_history" if accepts_keep_history() else "append+window_get"
        self.memory: Any = None
        if self.mode == "keep_history":
            self.memory = MessageWindowChatMemory(
                repository, max_messages=WINDOW, keep_history=True
            )

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        self.repo.save_all(cid, list(messages))

    def turn(self, cid: str, user: Message, reply: Message) -> Sequence[Any]:
        if self.memory is not None:
            self.memory.add(cid, user)
            self.memory.add(cid, reply)
            return self.memory.get(cid)  # type: ignore[no-any-return]
        self.repo.append(cid, [user])
        self.repo.append(cid, [reply])
        return self.repo.window_get(cid, WINDOW)  # type: ignore[no-any-return]

    def read_size(self, returned: Sequence[Any]) -> int:
        return sum(len(encode_json(m).encode()) for m in returned)

    def close(self) -> None:
        pass


class AddAndGetContender(ChatmemContender):
    """The window memory's turn with its second add and the read in one call:
    ``memory.add(user)`` then ``memory.add_and_get(reply)``, which returns what ``get``
    would after the ``add`` (one round trip where the store allows, two in all)."""

    def __init__(self, repository: Any, name: str = "chatmem add_and_get") -> None:
        super().__init__(repository, name)
        self.mode = "add + add_and_get"
        self.memory = MessageWindowChatMemory(repository, max_messages=WINDOW, keep_history=True)

    def turn(self, cid: str, user: Message, reply: Message) -> Sequence[Any]:
        self.memory.add(cid, user)
        return self.memory.add_and_get(cid, reply)  # type: ignore[no-any-return]


class ChatTurnContender(ChatmemContender):
    """The same turn through ``ChatTurn(repo, cid, last=20)``: one bounded read of the
    window before the model call, then one ``append`` of the user and assistant messages on
    commit, so two round trips where ``MessageWindowChatMemory`` makes three."""

    def __init__(self, repository: Any, name: str = "chatmem ChatTurn") -> None:
        self.name = name
        self.repo = repository
        self.mode = "ChatTurn(last=20)"
        self.memory = None

    def turn(self, cid: str, user: Message, reply: Message) -> Sequence[Any]:
        with ChatTurn(self.repo, cid, last=WINDOW) as turn:
            turn.append([user, reply])
        return turn.history


class Floor:
    """Base of the bare-driver floors: they return decoded dicts and count their JSON."""

    name = "floor"
    kind = "floor"

    def seed(self, cid: str, messages: Sequence[Message]) -> None:
        raise NotImplementedError

    def turn(self, cid: str, user: Message, reply: Message) -> Sequence[Any]:
        raise NotImplementedError

    def read_size(self, returned: Sequence[Any]) -> int:
        return sum(json_bytes(d) for d in returned)

    def close(self) -> None:
        pass


class GuardedFloor(Floor):
    """Base of the guarded floors: the bare driver doing chatmem's read shape (every system
    message kept, then the newest ``WINDOW`` others, in conversation order) with the cheapest
    per-conversation ordering that is correct under concurrent writers: positions follow
    commit order (no reader sees position n + 1 before n), and no append can land inside a
    concurrent replace. Each backend's docstring says how its ordering gets there."""

    name = "guarded floor"
    kind = "guarded"


class PipelinedFloor(GuardedFloor):
    """A guarded floor whose second append and window read share one round trip: the floor
    ``add_and_get`` is measured against (a backend without one measures it against its
    guarded floor)."""

    name = "pipelined floor"
    kind = "pipelined"


def is_system(message: Message) -> bool:
    """Whether a floor files ``message`` with the system messages its window always keeps."""
    return message.message_type is MessageType.SYSTEM


def _first(row: tuple[int, Any]) -> int:
    return row[0]


def merge_window(systems: Sequence[tuple[int, str]], tail: Sequence[tuple[int, str]]) -> list[Any]:
    """The guarded window from (position, JSON) pairs: the system ones and the newest others
    (``tail``, in any order), decoded in position order (a stable sort: system messages
    that share a position keep their order)."""
    rows = sorted([*systems, *tail], key=_first) if systems else sorted(tail, key=_first)
    return [json.loads(content) for _, content in rows]


@dataclass
class Measured:
    """turns/s per round plus what one turn returned, for one contender at one H."""

    contender: Contender
    rates: list[float] = field(default_factory=list)
    failed: str | None = None  # a peer that raised: why (it is then not timed further)
    msgs_read: int = 0
    bytes_read: int = 0
    wire_bytes_read: int = 0  # only where WIRE measures the backend
    conversations: int = 0  # conversations seeded with H messages for this contender
    max_stored: int = 0  # the most messages any of them held during a timed turn

    @property
    def turns_per_s(self) -> float:
        return statistics.median(self.rates) if self.rates else 0.0


@dataclass
class _Stream:
    """A contender's current conversation, the turns it has left, and its turns so far."""

    cid: str = ""
    left: int = 0
    done: int = 0


def turns_per_conversation(h: int) -> int:
    """How many turns one seeded conversation serves before a fresh one is seeded: it grows
    by at most 10% of H or 10 messages, so a contender that reads its whole history is timed
    at about H, not at H plus everything the bench added (and no contender is timed only on
    the first turn of a conversation)."""
    return max(5, h // 20)


def measure(
    contenders: Sequence[Contender],
    seed: Sequence[Message],
    *,
    turns: int,
    rounds: int,
    round_seconds: float,
    warmup: int,
    new_cid: Callable[[], str],
) -> list[Measured]:
    """Alternating rounds: each round runs every contender in turn (rotated order), so all
    of them see the same machine noise. A round stops after ``turns`` turns or
    ``round_seconds`` of turn time, whichever first (a peer that reads its whole history may
    fill a round with one turn). Before each round the garbage collector runs, untimed: the
    peers leave cyclic garbage whose collection otherwise landed in whichever round came
    next (on PostgreSQL it cost chatmem's rounds about a fifth). Only the turns are timed;
    a fresh conversation is seeded
    with ``seed`` every ``turns_per_conversation(H)`` turns, untimed. A peer that raises is
    marked ``failed`` and timed no further."""
    pairs = turn_pairs()
    h = len(seed)
    budget = turns_per_conversation(h)
    results = [Measured(c) for c in contenders]
    state = {id(m): _Stream() for m in results}

    def run(m: Measured, n: int, limit: float) -> tuple[int, float, Sequence[Any]]:
        c, st = m.contender, state[id(m)]
        done, busy = 0, 0.0
        wall = time.perf_counter()
        last: Sequence[Any] = ()
        while done < n:
            if st.left == 0:
                st.cid, st.left = new_cid(), budget
                c.seed(st.cid, seed)
                m.conversations += 1
            user, reply = pairs[st.done % len(pairs)]
            t0 = time.perf_counter()
            last = c.turn(st.cid, user, reply)
            busy += time.perf_counter() - t0
            m.max_stored = max(m.max_stored, h + 2 * (budget - st.left + 1))
            st.left -= 1
            st.done += 1
            done += 1
            if busy > limit or time.perf_counter() - wall > 4 * limit:
                break
        return done, busy, last

    def guarded(m: Measured, n: int) -> tuple[int, float, Sequence[Any]] | None:
        if m.failed is not None:
            return None
        try:
            return run(m, n, round_seconds)
        except Exception as exc:
            if m.contender.kind != "peer":
                raise
            m.failed = f"H={h}: {type(exc).__name__}: {exc}".strip()[:300]
            return None

    for m in results:
        guarded(m, warmup)
    for r in range(rounds):
        order = results[r % len(results) :] + results[: r % len(results)]
        for m in order:
            gc.collect()  # untimed: no round pays for the cyclic garbage of the one before
            ran = guarded(m, turns)
            if ran is not None:
                m.rates.append(ran[0] / ran[1])
    for m in results:  # one more turn, untimed, to count what a turn reads
        WIRE.total, WIRE.counting = 0, True
        try:
            ran = guarded(m, 1)
        finally:
            WIRE.counting = False
        if ran is None:
            continue
        last = ran[2]
        m.wire_bytes_read = WIRE.total
        m.msgs_read = len(last)
        m.bytes_read = m.contender.read_size(last)
    return results
