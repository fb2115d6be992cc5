"""The message model: four kinds of immutable messages, their parts, and equality by content.

Store-assigned fields (``created_at``, ``position``) are exposed but excluded from equality,
so a message read back from any store equals the one that was saved.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any, ClassVar

from ._errors import InvalidArgumentError

Metadata = Mapping[str, Any]


def _read_only(self: object, *args: object, **kwargs: object) -> Any:
    raise TypeError("message metadata is read-only; build a new message instead")


class FrozenList(list):  # type: ignore[type-arg]
    """A list nested in metadata that cannot change (still equal to, and JSON like, a list)."""

    __slots__ = ()
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


class FrozenDict(dict):  # type: ignore[type-arg]
    """A mapping in metadata that cannot change (still equal to, and JSON like, a dict)."""

    __slots__ = ()
    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _read_only
    __ior__ = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


def freeze_json(value: Any) -> Any:
    """Deep-freeze a JSON value our own codec produced (no validation: the hot read path)."""
    if type(value) is dict:
        return FrozenDict({k: freeze_json(v) for k, v in value.items()})
    if type(value) is list:
        return FrozenList([freeze_json(v) for v in value])
    return value


_EMPTY: Mapping[str, Any] = FrozenDict()


def _empty_metadata() -> Mapping[str, Any]:
    return _EMPTY


class MessageType(str, Enum):
    """The kind of a message; values match Spring AI's ``MessageType`` names."""

    USER = "USER"
    ASSISTANT = "ASSISTANT"
    SYSTEM = "SYSTEM"
    TOOL = "TOOL"


def check_text(argument: str, value: str) -> str:
    """Reject strings no store can hold losslessly: NUL characters and lone surrogates."""
    if "\x00" in value:
        raise InvalidArgumentError(argument, "contains a NUL character, which stores reject")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(argument, "is not valid Unicode (lone surrogate)") from exc
    return value


def _check_str(argument: str, value: object, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise InvalidArgumentError(argument, f"must be a str, got {type(value).__name__}")
    check_text(argument, value)


def _json_copy(argument: str, value: object, depth: int = 0) -> Any:
    """Deep-copy a JSON-compatible value, rejecting anything a JSON store cannot keep exactly."""
    if depth > 64:
        raise InvalidArgumentError(argument, "is nested more than 64 levels deep")
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArgumentError(argument, "holds a NaN or infinite float")
        return value
    if isinstance(value, str):
        return check_text(argument, value)
    if isinstance(value, (list, tuple)):
        return FrozenList([_json_copy(argument, v, depth + 1) for v in value])
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidArgumentError(argument, f"has a non-str key {k!r}")
            out[check_text(argument, k)] = _json_copy(argument, v, depth + 1)
        return FrozenDict(out)
    raise InvalidArgumentError(
        argument, f"holds a {type(value).__name__}, which is not JSON-compatible"
    )


def freeze_metadata(value: object) -> Mapping[str, Any]:
    """Validate and copy caller metadata into a read-only mapping (empty when None)."""
    if value is None or (isinstance(value, Mapping) and not value):
        return _EMPTY
    if not isinstance(value, Mapping):
        raise InvalidArgumentError("metadata", "must be a mapping of str to JSON values")
    frozen: Mapping[str, Any] = _json_copy("metadata", value)
    return frozen


@dataclass(frozen=True, slots=True, kw_only=True)
class Media:
    """An attachment: a mime type and either raw bytes or a URI string."""

    mime_type: str
    data: bytes | str
    id: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        _check_str("media.mime_type", self.mime_type)
        if isinstance(self.data, (bytearray, memoryview)):
            object.__setattr__(self, "data", bytes(self.data))
        elif not isinstance(self.data, (bytes, str)):
            raise InvalidArgumentError("media.data", "must be bytes or a URI str")
        elif isinstance(self.data, str):
            check_text("media.data", self.data)
        _check_str("media.id", self.id, optional=True)
        _check_str("media.name", self.name, optional=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A tool call requested by the assistant; ``arguments`` is a JSON string."""

    id: str
    name: str
    arguments: str = "{}"
    type: str = "function"

    def __post_init__(self) -> None:
        for name in ("id", "name", "arguments", "type"):
            _check_str(f"tool_call.{name}", getattr(self, name))


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResponse:
    """The result of one tool call, matched to it by ``id``."""

    id: str
    name: str
    response_data: str

    def __post_init__(self) -> None:
        for name in ("id", "name", "response_data"):
            _check_str(f"tool_response.{name}", getattr(self, name))


def _normalise_common(msg: Any) -> None:
    object.__setattr__(msg, "metadata", freeze_metadata(msg.metadata))
    media = msg.media
    if isinstance(media, Media):
        media = (media,)
    if not isinstance(media, Sequence) or isinstance(media, (str, bytes)):
        raise InvalidArgumentError("media", "must be a sequence of Media")
    media = tuple(media)
    for m in media:
        if not isinstance(m, Media):
            raise InvalidArgumentError("media", f"holds a {type(m).__name__}, not a Media")
    object.__setattr__(msg, "media", media)
    ts = msg.created_at
    if ts is not None:
        if not isinstance(ts, datetime) or ts.tzinfo is None:
            raise InvalidArgumentError("created_at", "must be a timezone-aware datetime")
        object.__setattr__(msg, "created_at", ts.astimezone(timezone.utc))
    pos = msg.position
    if pos is not None and (isinstance(pos, bool) or not isinstance(pos, int)):
        raise InvalidArgumentError("position", "must be an int")


def _tuple_of(argument: str, value: object, kind: type) -> tuple[Any, ...]:
    if isinstance(value, kind):
        return (value,)
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise InvalidArgumentError(argument, f"must be a sequence of {kind.__name__}")
    items = tuple(value)
    for item in items:
        if not isinstance(item, kind):
            raise InvalidArgumentError(
                argument, f"holds a {type(item).__name__}, not a {kind.__name__}"
            )
    return items


class _MessageMethods:
    """Behaviour shared by the four message classes (no fields of its own)."""

    __slots__ = ()
    message_type: ClassVar[MessageType]

    def with_store_fields(self, *, created_at: datetime | None, position: int | None) -> Message:
        """Return a copy carrying store-assigned fields (equality is unchanged).

        Only the two store fields are checked: the content of a message already built is
        valid, so the copy skips re-validating it (every add stamps each message)."""
        if created_at is not None:
            if not isinstance(created_at, datetime) or created_at.tzinfo is None:
                raise InvalidArgumentError("created_at", "must be a timezone-aware datetime")
            if created_at.tzinfo is not timezone.utc:
                created_at = created_at.astimezone(timezone.utc)
        if position is not None and (isinstance(position, bool) or not isinstance(position, int)):
            raise InvalidArgumentError("position", "must be an int")
        cls = type(self)
        copy: Any = object.__new__(cls)
        for name in _FIELD_NAMES[cls]:
            object.__setattr__(copy, name, getattr(self, name))
        object.__setattr__(copy, "created_at", created_at)
        object.__setattr__(copy, "position", position)
        result: Message = copy
        return result


@dataclass(frozen=True, slots=True)
class _TextMessage(_MessageMethods):
    """The fields of user and system messages (which differ only in kind)."""

    text: str
    _: KW_ONLY
    metadata: Metadata = field(default_factory=_empty_metadata)
    media: tuple[Media, ...] = ()
    created_at: datetime | None = field(default=None, compare=False)
    position: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        _check_str("text", self.text)
        _normalise_common(self)


@dataclass(frozen=True, slots=True)
class UserMessage(_TextMessage):
    """What the person said, with optional media."""

    message_type: ClassVar[MessageType] = MessageType.USER


@dataclass(frozen=True, slots=True)
class SystemMessage(_TextMessage):
    """Instructions for the model; kept by the window memory, never evicted."""

    message_type: ClassVar[MessageType] = MessageType.SYSTEM


@dataclass(frozen=True, slots=True)
class AssistantMessage(_MessageMethods):
    """The model's reply; ``text`` may be None when it only calls tools."""

    text: str | None = None
    _: KW_ONLY
    tool_calls: tuple[ToolCall, ...] = ()
    metadata: Metadata = field(default_factory=_empty_metadata)
    media: tuple[Media, ...] = ()
    created_at: datetime | None = field(default=None, compare=False)
    position: int | None = field(default=None, compare=False)
    message_type: ClassVar[MessageType] = MessageType.ASSISTANT

    def __post_init__(self) -> None:
        _check_str("text", self.text, optional=True)
        object.__setattr__(self, "tool_calls", _tuple_of("tool_calls", self.tool_calls, ToolCall))
        _normalise_common(self)


@dataclass(frozen=True, slots=True)
class ToolResponseMessage(_MessageMethods):
    """Results of tool calls, sent back to the model; its ``text`` is always empty."""

    responses: tuple[ToolResponse, ...] = ()
    _: KW_ONLY
    metadata: Metadata = field(default_factory=_empty_metadata)
    media: tuple[Media, ...] = ()
    created_at: datetime | None = field(default=None, compare=False)
    position: int | None = field(default=None, compare=False)
    message_type: ClassVar[MessageType] = MessageType.TOOL

    @property
    def text(self) -> str:
        """Tool-response messages carry responses, not text."""
        return ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "responses", _tuple_of("responses", self.responses, ToolResponse))
        _normalise_common(self)


Message = UserMessage | AssistantMessage | SystemMessage | ToolResponseMessage
MESSAGE_CLASSES: tuple[type, ...] = (
    UserMessage,
    AssistantMessage,
    SystemMessage,
    ToolResponseMessage,
)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls))
    for cls in (UserMessage, AssistantMessage, SystemMessage, ToolResponseMessage)
}
