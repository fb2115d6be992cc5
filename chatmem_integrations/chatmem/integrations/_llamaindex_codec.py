"""LlamaIndex ``ChatMessage`` <-> chatmem messages (lossless both ways); the stores are in
``llamaindex``. Needs ``pip install "chatmem[llamaindex]"``.

Mapping (the natural path; ``_lossless`` explains the guarantee behind it):

- roles ``system``/``developer`` -> ``SystemMessage`` (``developer`` is kept), ``user`` ->
  ``UserMessage``, ``assistant`` -> ``AssistantMessage``; each ``ToolResponse`` is one
  ``tool`` message holding a ``TextBlock`` and ``additional_kwargs`` ``tool_call_id`` and
  ``name`` (LlamaIndex's own convention for tool results).
- blocks: a leading ``TextBlock`` is the text (an assistant message without one has text
  ``None``); media become ``ImageBlock``/``AudioBlock``/``VideoBlock``/``DocumentBlock``
  (bytes as base64, or ``url``; ``DocumentBlock.title`` is the media name); tool calls
  become ``ToolCallBlock`` (``tool_kwargs`` a dict, or the exact string when the JSON
  arguments would not come back byte for byte).

LlamaIndex-only data (other ``additional_kwargs``, the ``developer`` role) rides in
``metadata["llamaindex"]``; chatmem-only data (``metadata``, media ids, names outside
documents, URLs LlamaIndex would normalise, tool-call types, where one
``ToolResponseMessage`` ends) rides in ``additional_kwargs["chatmem"]``. Messages of other
roles or with other blocks are carried whole in ``metadata["llamaindex"]["raw"]``.
``additional_kwargs`` values must be JSON (as in LlamaIndex's own ``SimpleChatStore``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chatmem.core import (
    AssistantMessage,
    Media,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.core.backend import require

require("llama_index.core", "llamaindex")

from llama_index.core.base.llms.types import (  # noqa: E402
    AudioBlock,
    ChatMessage,
    DocumentBlock,
    ImageBlock,
    MessageRole,
    TextBlock,
    ToolCallBlock,
    VideoBlock,
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
    split,
    tool_group_envelope,
    tool_group_of,
    tool_partials,
    whole_envelope,
    with_envelope,
)
from ._media import decode_media, encode_media, kind_of, unb64  # noqa: E402

__all__ = ["from_llamaindex", "split_items", "to_llamaindex"]

KEY = "llamaindex"
_ROLES = {
    SystemMessage: MessageRole.SYSTEM,
    UserMessage: MessageRole.USER,
    AssistantMessage: MessageRole.ASSISTANT,
}


def from_llamaindex(
    messages: Iterable[ChatMessage], *, group_tool_responses: bool = True
) -> list[Message]:
    """LlamaIndex messages to chatmem messages. A run of ``tool`` messages becomes one
    ``ToolResponseMessage`` unless ``group_tool_responses`` is False (then one each)."""
    xs = instances_of(messages, ChatMessage)
    return decode_messages(_CODEC, xs, group=group_tool_responses)


def to_llamaindex(
    messages: Sequence[Message] | Message, *, group_tool_responses: bool = True
) -> list[ChatMessage]:
    """Chatmem messages to LlamaIndex messages; ``from_llamaindex`` of the result (with the
    same ``group_tool_responses``) gives the messages back."""
    return encode_messages(_CODEC, messages, group=group_tool_responses)


def split_items(messages: Sequence[ChatMessage]) -> list[list[ChatMessage]]:
    """Cut ungrouped LlamaIndex messages into the runs that each decode to one chatmem
    message (``from_llamaindex(..., group_tool_responses=False)`` gives one per run)."""
    return split(_CODEC, list(messages), False)


# -- blocks --------------------------------------------------------------------------------
def _b64(data: bytes) -> bytes:
    import base64

    return base64.b64encode(data)


def _to_block(m: Media) -> Any:
    kind = kind_of(m.mime_type)
    raw = isinstance(m.data, bytes)
    payload: dict[str, Any] = {"url": m.data} if isinstance(m.data, str) else {}
    if kind == "image":
        return ImageBlock(
            **({"image": _b64(m.data)} if raw else payload),  # type: ignore[arg-type]
            image_mimetype=m.mime_type,
        )
    if kind == "audio":
        return AudioBlock(
            **({"audio": _b64(m.data)} if raw else payload),  # type: ignore[arg-type]
            format=m.mime_type.split("/", 1)[1],
        )
    if kind == "video":
        return VideoBlock(
            **({"video": _b64(m.data)} if raw else payload),  # type: ignore[arg-type]
            video_mimetype=m.mime_type,
        )
    return DocumentBlock(
        **({"data": _b64(m.data)} if raw else payload),  # type: ignore[arg-type]
        document_mimetype=m.mime_type,
        title=m.name,
    )


def _payload(block: Any, field: str) -> bytes | str:
    data, url = getattr(block, field), block.url
    if getattr(block, "path", None) is not None or (data is None) == (url is None):
        raise ValueError("a media block needs exactly one of data and url")
    if data is not None:
        if not isinstance(data, bytes):
            raise TypeError("streamed media")
        return unb64(data.decode("ascii")) if data else b""
    return str(url)


def _from_block(block: Any) -> Media:
    if isinstance(block, ImageBlock):
        if block.detail is not None or block.image_mimetype is None:
            raise ValueError("unmapped image fields")
        return Media(mime_type=block.image_mimetype, data=_payload(block, "image"))
    if isinstance(block, AudioBlock):
        if block.format is None:
            raise ValueError("audio without a format")
        return Media(mime_type=f"audio/{block.format}", data=_payload(block, "audio"))
    if isinstance(block, VideoBlock):
        if block.detail is not None or block.fps is not None or block.video_mimetype is None:
            raise ValueError("unmapped video fields")
        return Media(mime_type=block.video_mimetype, data=_payload(block, "video"))
    if isinstance(block, DocumentBlock):
        if block.document_mimetype is None:
            raise ValueError("document without a mime type")
        return Media(
            mime_type=block.document_mimetype, data=_payload(block, "data"), name=block.title
        )
    raise ValueError(f"no media for {type(block).__name__}")


# -- the codec -----------------------------------------------------------------------------
class _LlamaIndexCodec(FormatCodec[ChatMessage]):
    key = KEY

    def is_tool(self, x: ChatMessage) -> bool:
        return x.role == MessageRole.TOOL

    def envelope(self, x: ChatMessage) -> Mapping[str, Any] | None:
        env = x.additional_kwargs.get(ENVELOPE)
        return env if isinstance(env, Mapping) else None

    def dump(self, x: ChatMessage) -> Any:
        return check_json("message", x.model_dump(mode="json"))

    def load(self, data: Any) -> ChatMessage:
        return ChatMessage.model_validate(data)

    def wrap(self, m: Message) -> ChatMessage:
        kwargs: dict[str, Any] = {ENVELOPE: whole_envelope(m)}
        if isinstance(m, ToolResponseMessage):
            kwargs["tool_call_id"] = m.responses[0].id if m.responses else ""
            return ChatMessage(role=MessageRole.TOOL, blocks=[], additional_kwargs=kwargs)
        return ChatMessage(
            role=_ROLES[type(m)], blocks=[TextBlock(text=m.text or "")], additional_kwargs=kwargs
        )

    def fallback(self, xs: list[ChatMessage]) -> Message:
        x = xs[0]
        if self.is_tool(x):
            return ToolResponseMessage()
        text = x.content or ""
        if x.role in (MessageRole.SYSTEM, MessageRole.DEVELOPER):
            return SystemMessage(text)
        if x.role in (MessageRole.ASSISTANT, MessageRole.MODEL, MessageRole.CHATBOT):
            return AssistantMessage(x.content)
        return UserMessage(text)

    # natural mapping -------------------------------------------------------------------
    def decode(self, xs: list[ChatMessage], names: ToolNames) -> Message:
        head = xs[0]
        kwargs = dict(head.additional_kwargs)
        env = dict(kwargs.pop(ENVELOPE, None) or {})
        metadata = dict(env.pop("metadata", {}))
        if self.is_tool(head):
            return self._decode_tools(xs, env, metadata)
        partial: dict[str, Any] = {}
        if kwargs:
            partial["additional_kwargs"] = kwargs
        role = head.role
        if role == MessageRole.DEVELOPER:
            partial["role"] = role.value
        elif role not in (MessageRole.SYSTEM, MessageRole.USER, MessageRole.ASSISTANT):
            raise ValueError(f"no chatmem kind for role {role.value!r}")
        if partial:
            keep_foreign(metadata, KEY, partial)
        blocks = list(head.blocks)
        text: str | None = None
        if blocks and isinstance(blocks[0], TextBlock):
            text = blocks.pop(0).text  # type: ignore[union-attr]
        calls = [b for b in blocks if isinstance(b, ToolCallBlock)]
        media_blocks = [b for b in blocks if not isinstance(b, ToolCallBlock)]
        if blocks != media_blocks + calls:
            raise ValueError("tool calls before media")
        media = decode_media(media_blocks, env.pop("media", None), _from_block)
        common: dict[str, Any] = {"metadata": metadata, "media": media}
        if role == MessageRole.ASSISTANT:
            call_env = env.pop("tool_calls", None) or [{}] * len(calls)
            if len(call_env) != len(calls):
                raise ValueError("tool call envelope does not match")
            tool_calls = tuple(
                self._decode_call(c, e) for c, e in zip(calls, call_env, strict=True)
            )
            no_more(env)
            return AssistantMessage(text, tool_calls=tool_calls, **common)
        no_more(env)
        if role == MessageRole.USER:
            return UserMessage(require_str(text, "text"), **common)
        return SystemMessage(require_str(text, "text"), **common)

    @staticmethod
    def _decode_call(c: ToolCallBlock, env: Mapping[str, Any]) -> ToolCall:
        args = c.tool_kwargs
        arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        return ToolCall(
            id=require_str(c.tool_call_id, "tool_call_id"),
            name=c.tool_name,
            arguments=arguments,
            type=env.get("type", "function"),
        )

    def _decode_tools(
        self, xs: list[ChatMessage], env: dict[str, Any], metadata: dict[str, Any]
    ) -> ToolResponseMessage:
        marker, media = tool_group_of(env)
        responses: list[ToolResponse] = []
        partials: list[dict[str, Any]] = []
        for i, x in enumerate(xs if marker != 0 else ()):
            kwargs = dict(x.additional_kwargs)
            if kwargs.pop(ENVELOPE, None) is not None and i:
                raise ValueError("envelope on a tool message inside a group")
            rid = require_str(kwargs.pop("tool_call_id"), "tool_call_id")
            name = require_str(kwargs.pop("name", ""), "name")
            if "name" in x.additional_kwargs and name == "":
                raise ValueError("an empty tool name is not told apart from none")
            if len(x.blocks) != 1 or not isinstance(x.blocks[0], TextBlock):
                raise ValueError("a tool result is one text block")
            partials.append(kwargs)
            responses.append(ToolResponse(id=rid, name=name, response_data=x.blocks[0].text))
        if any(partials):
            keep_foreign(metadata, KEY, {"tool_messages": partials})
        return ToolResponseMessage(tuple(responses), metadata=metadata, media=media)

    def encode(self, m: Message, marker: int | None, names: ToolNames) -> list[ChatMessage]:
        metadata = dict(m.metadata)
        partial = dict(metadata.pop(KEY, None) or {})
        env: dict[str, Any] = {}
        if metadata:
            env["metadata"] = metadata
        if isinstance(m, ToolResponseMessage):
            return self._encode_tools(m, marker, partial, env)
        kwargs: dict[str, Any] = plain(partial.pop("additional_kwargs", {}))
        role = partial.pop("role", _ROLES[type(m)].value)
        if partial:
            raise ValueError("unknown llamaindex fields")
        blocks: list[Any] = [] if m.text is None else [TextBlock(text=m.text)]
        parts, infos = encode_media(m.media, _to_block, _from_block)
        blocks.extend(parts)
        if infos:
            env["media"] = infos
        if isinstance(m, AssistantMessage):
            call_env = []
            for c in m.tool_calls:
                args: Any = c.arguments
                try:
                    parsed = json.loads(c.arguments)
                except ValueError:
                    parsed = None
                if isinstance(parsed, dict) and json.dumps(parsed, ensure_ascii=False) == args:
                    args = parsed
                blocks.append(ToolCallBlock(tool_call_id=c.id, tool_name=c.name, tool_kwargs=args))
                call_env.append({"type": c.type} if c.type != "function" else {})
            if any(call_env):
                env["tool_calls"] = call_env
        kwargs = with_envelope(kwargs, env)
        return [ChatMessage(role=MessageRole(role), blocks=blocks, additional_kwargs=kwargs)]

    def _encode_tools(
        self,
        m: ToolResponseMessage,
        marker: int | None,
        partial: dict[str, Any],
        env: dict[str, Any],
    ) -> list[ChatMessage]:
        out: list[ChatMessage] = []
        for r, own in zip(m.responses, tool_partials(partial, m, KEY), strict=True):
            kwargs: dict[str, Any] = {**plain(own), "tool_call_id": r.id}
            if r.name:
                kwargs["name"] = r.name
            out.append(
                ChatMessage(
                    role=MessageRole.TOOL,
                    blocks=[TextBlock(text=r.response_data)],
                    additional_kwargs=kwargs,
                )
            )
        if not out:
            out.append(
                ChatMessage(
                    role=MessageRole.TOOL,
                    blocks=[TextBlock(text="")],
                    additional_kwargs={"tool_call_id": ""},
                )
            )
        head = out[0]
        head.additional_kwargs = with_envelope(
            head.additional_kwargs, tool_group_envelope(env, marker, m)
        )
        return out


_CODEC = _LlamaIndexCodec()
