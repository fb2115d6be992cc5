"""LangChain messages <-> chatmem messages (lossless both ways); the chat message history is
in ``langchain``. Needs ``pip install "chatmem[langchain]"``.

Mapping (the natural path; ``_lossless`` explains the guarantee behind it):

- ``HumanMessage``/``SystemMessage``/``AIMessage`` <-> ``UserMessage``/``SystemMessage``/
  ``AssistantMessage``; each ``ToolResponse`` <-> one ``ToolMessage`` (``tool_call_id``,
  ``name``, string ``content``).
- ``content`` is the text; with media it is a list of LangChain standard content blocks: a
  ``text`` block, then ``image``/``audio``/``video``/``file`` blocks (``base64`` or ``url``,
  ``mime_type``, ``id``, ``extras.filename``).
- ``AIMessage.tool_calls`` <-> ``ToolCall``: LangChain holds ``args`` as a dict, chatmem the
  JSON string; a string that ``json.dumps(args, ensure_ascii=False)`` would not reproduce
  exactly is kept beside.

LangChain fields chatmem has no slot for (``id``, ``name``, ``additional_kwargs``,
``response_metadata``, ``usage_metadata``, ``invalid_tool_calls``, ``ToolMessage.artifact``
and ``status``) ride in ``metadata["langchain"]``. Chatmem fields LangChain has no slot for
(``metadata``, a ``None`` text beside no tool call, exact tool-call argument strings and
types, media names outside file blocks, where one ``ToolResponseMessage`` ends) ride in
``additional_kwargs["chatmem"]``. Other message classes (``ChatMessage``, chunks,
``FunctionMessage``) are carried whole in ``metadata["langchain"]["raw"]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chatmem.core import (
    AssistantMessage,
    Media,
    Message,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.core import SystemMessage as ChatmemSystemMessage
from chatmem.core.backend import require

require("langchain_core", "langchain")

from langchain_core.messages import (  # noqa: E402
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)
from langchain_core.messages import (  # noqa: E402
    ToolCall as LangChainToolCall,
)

from ._lossless import (  # noqa: E402
    ENVELOPE,
    FormatCodec,
    ToolNames,
    check_json,
    decode_messages,
    encode_messages,
    instances_of,
    keep_foreign,
    no_more,
    plain,
    require_str,
    tool_group_envelope,
    tool_group_of,
    tool_partials,
    whole_envelope,
    with_envelope,
)
from ._media import b64, decode_media, encode_media, guess_mime, kind_of, unb64  # noqa: E402

__all__ = ["from_langchain", "to_langchain"]

KEY = "langchain"
_COMMON = ("id", "name")
_GUESSED = "media_without_mime_type"  # URL blocks whose mime type was guessed from the URL
_TOOL_DEFAULTS: dict[str, Any] = {"artifact": None, "status": "success"}


def from_langchain(
    messages: Iterable[BaseMessage], *, group_tool_responses: bool = True
) -> list[Message]:
    """LangChain messages to chatmem messages. A run of ``ToolMessage`` becomes one
    ``ToolResponseMessage`` unless ``group_tool_responses`` is False (then one each)."""
    xs = instances_of(messages, BaseMessage)
    return decode_messages(_CODEC, xs, group=group_tool_responses)


def to_langchain(
    messages: Sequence[Message] | Message, *, group_tool_responses: bool = True
) -> list[BaseMessage]:
    """Chatmem messages to LangChain messages; ``from_langchain`` of the result (with the same
    ``group_tool_responses``) gives the messages back."""
    return encode_messages(_CODEC, messages, group=group_tool_responses)


# -- media blocks --------------------------------------------------------------------------
def _to_block(m: Media) -> dict[str, Any]:
    block: dict[str, Any] = {"type": kind_of(m.mime_type)}
    if isinstance(m.data, bytes):
        block["base64"] = b64(m.data)
    else:
        block["url"] = m.data
    block["mime_type"] = m.mime_type
    if m.id is not None:
        block["id"] = m.id
    if m.name is not None and block["type"] == "file":
        block["extras"] = {"filename": m.name}
    return block


def _from_block(block: Any) -> Media:
    if not isinstance(block, Mapping) or block.get("type") not in (
        "image",
        "audio",
        "video",
        "file",
    ):
        raise ValueError("not a media block")
    if not set(block) <= {"type", "base64", "url", "mime_type", "id", "extras"}:
        raise ValueError("unexpected media block keys")
    extras = block.get("extras")
    if extras is not None and (not isinstance(extras, Mapping) or set(extras) != {"filename"}):
        raise ValueError("unexpected extras")
    if ("base64" in block) == ("url" in block):
        raise ValueError("a media block needs exactly one of base64 and url")
    data: bytes | str = (
        unb64(block["base64"]) if "base64" in block else require_str(block["url"], "url")
    )
    mime = block.get("mime_type") or (
        guess_mime(data, block["type"]) if isinstance(data, str) else None
    )
    if mime is None:
        raise ValueError("bytes without a mime type")
    return Media(
        mime_type=mime,
        data=data,
        id=block.get("id"),
        name=extras["filename"] if extras else None,
    )


def _is_text_block(b: Any) -> bool:
    return isinstance(b, Mapping) and set(b) == {"type", "text"} and b["type"] == "text"


# -- the codec -----------------------------------------------------------------------------
_KINDS: dict[type, type] = {
    HumanMessage: UserMessage,
    SystemMessage: ChatmemSystemMessage,
    AIMessage: AssistantMessage,
}
_CLASSES: dict[type, type[BaseMessage]] = {v: k for k, v in _KINDS.items()}


class _LangChainCodec(FormatCodec[BaseMessage]):
    key = KEY

    def is_tool(self, x: BaseMessage) -> bool:
        return isinstance(x, ToolMessage)

    def envelope(self, x: BaseMessage) -> Mapping[str, Any] | None:
        env = x.additional_kwargs.get(ENVELOPE)
        return env if isinstance(env, Mapping) else None

    def dump(self, x: BaseMessage) -> Any:
        return check_json("message", message_to_dict(x))

    def load(self, data: Any) -> BaseMessage:
        return messages_from_dict([data])[0]

    def wrap(self, m: Message) -> BaseMessage:
        kwargs = {ENVELOPE: whole_envelope(m)}
        if isinstance(m, ToolResponseMessage):
            head = m.responses[0].id if m.responses else ""
            return ToolMessage(content="", tool_call_id=head, additional_kwargs=kwargs)
        return _CLASSES[type(m)](content=m.text or "", additional_kwargs=kwargs)

    def fallback(self, xs: list[BaseMessage]) -> Message:
        x = xs[0]
        if self.is_tool(x):
            return ToolResponseMessage()
        text = str(x.text)  # a property since langchain-core 1.0 (the extra's floor)
        kind = x.type
        if kind in ("ai", "AIMessageChunk") or getattr(x, "role", None) in ("ai", "assistant"):
            return AssistantMessage(text)
        if kind.startswith("system") or getattr(x, "role", None) == "system":
            return ChatmemSystemMessage(text)
        return UserMessage(text)

    # natural mapping -------------------------------------------------------------------
    @staticmethod
    def _extras(
        x: BaseMessage, defaults: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(what only LangChain says, the chatmem envelope) of one message."""
        partial: dict[str, Any] = {f: getattr(x, f) for f in _COMMON if getattr(x, f) is not None}
        kwargs = dict(x.additional_kwargs)
        env = dict(kwargs.pop(ENVELOPE, None) or {})
        if kwargs:
            partial["additional_kwargs"] = kwargs
        if x.response_metadata:
            partial["response_metadata"] = dict(x.response_metadata)
        for f, default in defaults.items():
            value = getattr(x, f)
            if value != default:
                partial[f] = value
        return partial, env

    def decode(self, xs: list[BaseMessage], names: ToolNames) -> Message:
        head = xs[0]
        if self.is_tool(head):
            return self._decode_tools(xs)
        kind = _KINDS.get(type(head))
        if kind is None:
            raise TypeError(f"no natural mapping for {type(head).__name__}")
        defaults: dict[str, Any] = {}
        if isinstance(head, AIMessage):
            defaults = {"invalid_tool_calls": [], "usage_metadata": None}
        partial, env = self._extras(head, defaults)
        metadata = dict(env.pop("metadata", {}))
        content = head.content
        blocks: list[Any] = []
        if isinstance(content, list):
            blocks = list(content)
            text: str | None = blocks.pop(0)["text"] if blocks and _is_text_block(blocks[0]) else ""
        else:
            text = require_str(content, "content")
        media = decode_media(blocks, env.pop("media", None), _from_block)
        guessed = [i for i, b in enumerate(blocks) if "mime_type" not in b]
        if guessed:
            partial[_GUESSED] = guessed
        if partial:
            keep_foreign(metadata, KEY, partial)
        common: dict[str, Any] = {"metadata": metadata, "media": media}
        if isinstance(head, AIMessage):
            call_env = env.pop("tool_calls", None) or [{}] * len(head.tool_calls)
            if len(call_env) != len(head.tool_calls):
                raise ValueError("tool call envelope does not match")
            calls = tuple(
                self._decode_call(c, e) for c, e in zip(head.tool_calls, call_env, strict=True)
            )
            if "text" in env:
                text = env.pop("text")
            elif text == "" and calls:
                text = None
            no_more(env)
            return AssistantMessage(text, tool_calls=calls, **common)
        no_more(env)
        return kind(require_str(text, "content"), **common)  # type: ignore[no-any-return]

    @staticmethod
    def _decode_call(c: LangChainToolCall, env: Mapping[str, Any]) -> ToolCall:
        if set(c) - {"name", "args", "id", "type"}:
            raise ValueError("unexpected tool call keys")
        arguments = env.get("arguments")
        if arguments is None:
            arguments = json.dumps(c["args"], ensure_ascii=False)
        return ToolCall(
            id=require_str(c["id"], "tool call id"),
            name=c["name"],
            arguments=arguments,
            type=env.get("type", "function"),
        )

    def _decode_tools(self, xs: list[BaseMessage]) -> ToolResponseMessage:
        env = dict(self.envelope(xs[0]) or {})
        metadata = dict(env.pop("metadata", {}))
        marker, media = tool_group_of(env)
        responses: list[ToolResponse] = []
        partials: list[dict[str, Any]] = []
        for i, x in enumerate(xs if marker != 0 else ()):
            assert isinstance(x, ToolMessage)
            partial, own = self._extras(x, _TOOL_DEFAULTS)
            if own and i:
                raise ValueError("envelope on a tool message inside a group")
            name = partial.pop("name", None)
            if name == "":
                raise ValueError("an empty tool name is not told apart from none")
            partials.append(partial)
            responses.append(
                ToolResponse(
                    id=x.tool_call_id,
                    name=name or "",
                    response_data=require_str(x.content, "content"),
                )
            )
        if any(partials):
            keep_foreign(metadata, KEY, {"tool_messages": partials})
        return ToolResponseMessage(tuple(responses), metadata=metadata, media=media)

    def encode(self, m: Message, marker: int | None, names: ToolNames) -> list[BaseMessage]:
        metadata = dict(m.metadata)
        partial = metadata.pop(KEY, None)
        if partial is not None and not isinstance(partial, Mapping):
            raise ValueError("metadata['langchain'] is not a mapping")
        partial = dict(partial or {})
        env: dict[str, Any] = {}
        if metadata:
            env["metadata"] = metadata
        if isinstance(m, ToolResponseMessage):
            return self._encode_tools(m, marker, partial, env)
        parts, infos = encode_media(m.media, _to_block, _from_block)
        for i in partial.pop(_GUESSED, None) or ():
            parts[i].pop("mime_type")
        content: str | list[Any] = m.text or ""
        if parts:
            content = ([{"type": "text", "text": m.text}] if m.text else []) + parts
        if infos:
            env["media"] = infos
        if not isinstance(m, AssistantMessage):
            return [_CLASSES[type(m)](content=content, **self._kwargs(partial, env))]
        calls, call_env = [], []
        for c in m.tool_calls:
            args = json.loads(c.arguments)
            if not isinstance(args, dict):
                raise ValueError("arguments are not a JSON object")
            own: dict[str, Any] = {}
            if json.dumps(args, ensure_ascii=False) != c.arguments:
                own["arguments"] = c.arguments
            if c.type != "function":
                own["type"] = c.type
            call_env.append(own)
            calls.append(LangChainToolCall(name=c.name, args=args, id=c.id, type="tool_call"))
        if any(call_env):
            env["tool_calls"] = call_env
        guess = (m.text or "") if parts else content
        if (None if guess == "" and calls else guess) != m.text:
            env["text"] = m.text
        return [AIMessage(content=content, tool_calls=calls, **self._kwargs(partial, env))]

    @staticmethod
    def _kwargs(partial: Mapping[str, Any], env: Mapping[str, Any]) -> dict[str, Any]:
        """Constructor arguments: the LangChain-only fields plus the chatmem envelope."""
        kwargs: dict[str, Any] = plain(partial)
        if env:
            extra = kwargs.get("additional_kwargs", {})
            if not isinstance(extra, dict):
                raise ValueError("additional_kwargs is not a dict")
            kwargs["additional_kwargs"] = with_envelope(extra, env)
        return kwargs

    def _encode_tools(
        self,
        m: ToolResponseMessage,
        marker: int | None,
        partial: dict[str, Any],
        env: dict[str, Any],
    ) -> list[BaseMessage]:
        out: list[BaseMessage] = []
        for r, own in zip(m.responses, tool_partials(partial, m, KEY), strict=True):
            kwargs = plain(own)
            kwargs.setdefault("name", r.name or None)
            out.append(ToolMessage(content=r.response_data, tool_call_id=r.id, **kwargs))
        if not out:
            out.append(ToolMessage(content="", tool_call_id=""))
        head = out[0]
        head.additional_kwargs = with_envelope(
            head.additional_kwargs, tool_group_envelope(env, marker, m)
        )
        return out


_CODEC = _LangChainCodec()
