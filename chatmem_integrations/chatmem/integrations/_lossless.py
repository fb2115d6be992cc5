"""The machinery that makes every conversion lossless in both directions.

Each format has a *natural* mapping (its own idiom: OpenAI content parts, LangChain content
blocks, LlamaIndex blocks) and two envelopes for what the other side cannot say:

- what only the format can say rides in the chatmem message's ``metadata[<format key>]``
  (for example a LangChain message ``id`` or an OpenAI ``refusal``);
- what only chatmem can say rides in the format's reserved ``"chatmem"`` slot (chatmem
  ``metadata``, media names, where one ``ToolResponseMessage`` ends).

Every natural conversion is checked by converting it back. When the check fails (a shape the
natural mapping does not cover) the whole original is carried verbatim instead: the chatmem
message gets ``metadata[<key>] = {"raw": [...]}``, the foreign message gets
``"chatmem": {"message": ...}``. So ``decode(encode(m)) == m`` and ``encode(decode(x)) == x``
hold for every input, by construction, and the tests show the natural path serves the corpus.

Tool responses: chatmem keeps the results of one round of tool calls in one
``ToolResponseMessage``; the three formats have one tool message per call. Encoding emits one
tool message per response. Decoding groups them: with ``group_tool_responses=True`` (the
default, Spring AI's shape: what the memory advisor needs) a run of consecutive tool messages
becomes one ``ToolResponseMessage``; with ``False`` every tool message becomes its own (what
an incrementally written history needs, so that appending in parts and reading back agree).
Where that rule alone would not restore the grouping, the first tool message of a group says
how many follow (``"chatmem": {"responses": k}``).
"""

from __future__ import annotations

import dataclasses
import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from chatmem.core import (
    AssistantMessage,
    InvalidArgumentError,
    Media,
    Message,
    ToolResponseMessage,
    UserMessage,
    media_from_dict,
    media_to_dict,
    message_from_dict,
    message_to_dict,
)
from chatmem.core.backend import validate_messages

X = TypeVar("X")

ENVELOPE = "chatmem"
"""The reserved key, in each foreign format, for what only chatmem can say."""

# What a natural mapping raises for a shape it does not cover; the raw envelope takes over.
NATURAL_FAILURES: tuple[type[BaseException], ...] = (
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    IndexError,
)

ToolNames = Mapping[str, str]


class FormatCodec(ABC, Generic[X]):
    """One foreign format: its natural mapping, envelopes and raw form."""

    key: str
    """The chatmem metadata key for what only this format can say."""

    # -- the foreign side -------------------------------------------------------------
    @abstractmethod
    def is_tool(self, x: X) -> bool:
        """True for a tool-result message."""

    @abstractmethod
    def envelope(self, x: X) -> Mapping[str, Any] | None:
        """The reserved chatmem slot of ``x`` (None when absent)."""

    @abstractmethod
    def dump(self, x: X) -> Any:
        """``x`` as JSON-native data (exact: ``load(dump(x)) == x``)."""

    @abstractmethod
    def load(self, data: Any) -> X:
        """Inverse of ``dump``."""

    @abstractmethod
    def wrap(self, m: Message) -> X:
        """A foreign message carrying the whole chatmem message in its envelope."""

    # -- natural mapping ----------------------------------------------------------------
    @abstractmethod
    def decode(self, xs: list[X], names: ToolNames) -> Message:
        """The natural chatmem message for one item (one message, or one tool group)."""

    @abstractmethod
    def encode(self, m: Message, marker: int | None, names: ToolNames) -> list[X]:
        """The natural foreign messages for ``m``; ``marker`` goes on a tool group's head."""

    @abstractmethod
    def fallback(self, xs: list[X]) -> Message:
        """A best-effort chatmem message for ``xs`` (its kind and text), used under the raw
        envelope when the natural mapping does not apply."""

    # -- derived --------------------------------------------------------------------------
    def marker(self, x: X) -> int | None:
        """How many tool messages the group headed by ``x`` holds (None: not said)."""
        env = self.envelope(x)
        if not env:
            return None
        if "message" in env:
            return 1
        k = env.get("responses")
        return k if isinstance(k, int) and not isinstance(k, bool) and k >= 0 else None


def _raw_of(codec: FormatCodec[Any], m: Message) -> list[Any] | None:
    slot = m.metadata.get(codec.key)
    if isinstance(slot, Mapping) and isinstance(slot.get("raw"), list) and len(slot) == 1:
        return list(slot["raw"])
    return None


def _whole(codec: FormatCodec[Any], x: Any) -> Message | None:
    env = codec.envelope(x)
    if env and isinstance(env.get("message"), Mapping):
        return message_from_dict(env["message"])
    return None


def decode_item(codec: FormatCodec[X], xs: list[X], names: ToolNames) -> Message:
    """One item to chatmem: a carried chatmem message, else natural, else the raw form."""
    carried = [w for w in (_whole(codec, x) for x in xs) if w is not None]
    if carried:
        if len(xs) == 1 and xs == [codec.wrap(carried[0])]:
            return carried[0]
    else:
        try:
            y = codec.decode(xs, names)
            marker = codec.marker(xs[0]) if codec.is_tool(xs[0]) else None
            if _raw_of(codec, y) is None and codec.encode(y, marker, names) == xs:
                return y
        except NATURAL_FAILURES:
            pass
    try:
        base = codec.fallback(xs)
    except NATURAL_FAILURES:
        base = ToolResponseMessage() if codec.is_tool(xs[0]) else UserMessage("")
    raw = [codec.dump(x) for x in xs]
    return _with_metadata(base, {codec.key: {"raw": raw}})


def encode_item(codec: FormatCodec[X], m: Message, marker: int | None, names: ToolNames) -> list[X]:
    """One chatmem message to foreign messages: the carried original, else natural, else
    the whole message in the envelope. Each path is taken only when ``decode_item`` of its
    result gives ``m`` back."""
    raw = _raw_of(codec, m)
    try:
        if raw is not None:
            xs = [codec.load(d) for d in raw]
            if xs and decode_item(codec, xs, names) == m:
                return xs
        else:
            xs = codec.encode(m, marker, names)
            if xs and decode_item(codec, xs, names) == m:
                return xs
    except NATURAL_FAILURES:
        pass
    return [codec.wrap(m)]


def _with_metadata(m: Message, metadata: Mapping[str, Any]) -> Message:
    return dataclasses.replace(m, metadata=metadata)  # the constructor checks and freezes it


def split(codec: FormatCodec[X], xs: Sequence[X], group: bool) -> list[list[X]]:
    """Cut a foreign message list into items: one message, or one group of tool messages."""
    items: list[list[X]] = []
    i, n = 0, len(xs)
    while i < n:
        x = xs[i]
        j = i + 1
        if codec.is_tool(x):
            k = codec.marker(x)
            if k is not None:
                while j < n and j < i + k and codec.is_tool(xs[j]) and codec.marker(xs[j]) is None:
                    j += 1
            elif group:
                while j < n and codec.is_tool(xs[j]) and codec.marker(xs[j]) is None:
                    j += 1
        items.append(list(xs[i:j]))
        i = j
    return items


def _learn_names(names: dict[str, str], m: Message) -> None:
    if isinstance(m, AssistantMessage):
        for c in m.tool_calls:
            names[c.id] = c.name


def instances_of(messages: Iterable[object], cls: type[X]) -> list[X]:
    """``messages`` as a list, each checked to be a ``cls`` (InvalidArgumentError naming
    ``messages[i]`` otherwise): the argument check of every framework's decoder."""
    xs: list[X] = []
    for i, x in enumerate(messages):
        if not isinstance(x, cls):
            raise InvalidArgumentError(
                f"messages[{i}]", f"is a {type(x).__name__}, not a {cls.__name__}"
            )
        xs.append(x)
    return xs


def decode_messages(codec: FormatCodec[X], xs: Sequence[X], *, group: bool) -> list[Message]:
    """Foreign messages to chatmem messages (see the module docstring for grouping)."""
    names: dict[str, str] = {}
    out: list[Message] = []
    for item in split(codec, list(xs), group):
        m = decode_item(codec, item, names)
        _learn_names(names, m)
        out.append(m)
    return out


def _marker_for(ms: Sequence[Message], i: int, group: bool) -> int | None:
    m = ms[i]
    if not isinstance(m, ToolResponseMessage):
        return None
    k = len(m.responses)
    next_is_tool = i + 1 < len(ms) and isinstance(ms[i + 1], ToolResponseMessage)
    needed = (k == 0 or next_is_tool) if group else k != 1
    return k if needed else None


def encode_messages(
    codec: FormatCodec[X], messages: Sequence[Message] | Message, *, group: bool
) -> list[X]:
    """Chatmem messages to foreign messages, cut back by ``decode_messages`` exactly."""
    ms = validate_messages(messages)
    names: dict[str, str] = {}
    items: list[list[X]] = []
    for i, m in enumerate(ms):
        items.append(encode_item(codec, m, _marker_for(ms, i, group), names))
        _learn_names(names, m)
    # A carried original may not delimit itself inside its new neighbours; such an item is
    # replaced by the whole-message envelope, which always stands alone.
    for _ in range(len(items) + 1):
        flat = [x for item in items for x in item]
        got = split(codec, flat, group)
        if got == items:
            return flat
        bad = next(i for i, (a, b) in enumerate(zip(got, items, strict=False)) if a != b)
        items[bad] = [codec.wrap(ms[bad])]
    raise AssertionError("tool message grouping did not settle")  # pragma: no cover


def envelope_dict(x: Mapping[str, Any], key: str = ENVELOPE) -> Mapping[str, Any] | None:
    """The reserved slot of a dict-shaped message, when it is a mapping."""
    env = x.get(key)
    return env if isinstance(env, Mapping) else None


def whole_envelope(m: Message) -> dict[str, Any]:
    """The envelope that carries a whole chatmem message."""
    return {"message": message_to_dict(m)}


def require_str(value: object, what: str) -> str:
    """``value`` when it is a str, else the TypeError a natural mapping gives up on."""
    if not isinstance(value, str):
        raise TypeError(f"{what} is not a str")
    return value


def check_json(argument: str, value: Any) -> Any:
    """Validate a JSON-compatible value early, naming the argument (by the message model's
    own metadata rule, which also returns it frozen)."""
    try:
        return UserMessage("", metadata={"v": value}).metadata["v"]
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(argument, str(exc).split(": ", 1)[-1]) from exc


# -- pieces every framework codec's natural mapping uses ---------------------------------------
def plain(value: Any) -> Any:
    """``value`` as plain, mutable JSON data (a deep copy: frozen mappings become dicts)."""
    return json.loads(json.dumps(value))


def no_more(env: Mapping[str, Any]) -> None:
    """The ValueError a natural mapping gives up with when an envelope holds keys it did not
    read (the raw envelope then carries the message)."""
    if env:
        raise ValueError(f"unknown envelope keys {sorted(env)}")


def keep_foreign(metadata: dict[str, Any], key: str, value: Any) -> None:
    """Keep what only the format says as ``metadata[key]`` (a ValueError when the message's
    own metadata already uses that key)."""
    if key in metadata:
        raise ValueError(f"metadata already holds the {key} key")
    metadata[key] = plain(value)


def with_envelope(kwargs: Mapping[str, Any], env: Mapping[str, Any]) -> dict[str, Any]:
    """``kwargs`` (a format's free-form extras dict) with the chatmem envelope ``env`` added,
    when there is one (a ValueError when ``kwargs`` already holds the reserved key)."""
    if not env:
        return dict(kwargs)
    if ENVELOPE in kwargs:
        raise ValueError("the extras already hold the chatmem key")
    return {**kwargs, ENVELOPE: plain(env)}


def tool_group_of(env: dict[str, Any]) -> tuple[int | None, tuple[Media, ...]]:
    """What a tool group's head envelope says of the group (where it ends, the message's
    media), popped from ``env``, which must then be empty."""
    marker = env.pop("responses", None)
    media = tuple(media_from_dict(d) for d in env.pop("media", None) or ())
    no_more(env)
    return marker, media


def tool_group_envelope(
    env: dict[str, Any], marker: int | None, m: ToolResponseMessage
) -> dict[str, Any]:
    """``env`` plus where ``m``'s tool group ends and its media (inverse of ``tool_group_of``)."""
    if marker is not None:
        env["responses"] = marker
    if m.media:
        env["media"] = [media_to_dict(x) for x in m.media]
    return env


def tool_partials(partial: dict[str, Any], m: ToolResponseMessage, key: str) -> list[Any]:
    """The format-only fields of each tool message of ``m`` (``metadata[key]
    ["tool_messages"]``, one empty dict each when none), checked against its responses."""
    partials = partial.pop("tool_messages", None) or [{}] * len(m.responses)
    if partial or len(partials) != len(m.responses):
        raise ValueError(f"metadata[{key!r}] does not match the responses")
    return list(partials)
