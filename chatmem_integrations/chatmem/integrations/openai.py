"""OpenAI chat-completions message dicts <-> chatmem messages, lossless both ways.

No third-party import: the dicts are what ``client.chat.completions.create(messages=...)``
takes and what ``response.choices[0].message`` dumps to.

Mapping (the natural path; see ``_lossless`` for the guarantee behind it):

- roles ``system``/``developer`` -> ``SystemMessage`` (``developer`` is kept), ``user`` ->
  ``UserMessage``, ``assistant`` -> ``AssistantMessage``, ``tool`` -> ``ToolResponseMessage``.
- ``content``: a string, ``None`` (assistant only) or content parts. User media become parts:
  images as ``image_url`` (bytes as a base64 data URL), WAV/MP3 bytes as ``input_audio``,
  other bytes as ``file`` (``file_data`` data URL, ``filename``).
- ``tool_calls`` <-> ``ToolCall`` field for field (``arguments`` stays the exact string).
- Each ``ToolResponse`` is one ``{"role": "tool", "tool_call_id", "content"}`` message.
  OpenAI tool messages have no tool name: on the way in it is taken from the assistant
  ``tool_calls`` with that id earlier in the same list.

What OpenAI cannot carry rides in the reserved ``"chatmem"`` key of the dict: chatmem
``metadata``, media outside user messages or of kinds OpenAI has no part for, media ids and
names a part cannot hold, a tool name that differs from its call's, and where one
``ToolResponseMessage`` ends. Keys chatmem has no field for (``name``, ``refusal``,
``audio``, ``annotations``, ``tool_calls: None``...) ride in ``metadata["openai"]``.
The OpenAI API rejects unknown keys: send ``to_openai(messages, for_api=True)``, which drops
the ``"chatmem"`` key (and with it the fields listed above) and nothing else.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chatmem.core import (
    AssistantMessage,
    InvalidArgumentError,
    Media,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    media_from_dict,
    media_to_dict,
)

from ._lossless import (
    ENVELOPE,
    FormatCodec,
    ToolNames,
    check_json,
    decode_messages,
    encode_messages,
    envelope_dict,
    no_more,
    require_str,
    whole_envelope,
)
from ._media import (
    b64,
    data_url,
    decode_media,
    encode_media,
    guess_mime,
    kind_of,
    parse_data_url,
    unb64,
)

__all__ = ["from_openai", "to_openai"]

OpenAIMessage = dict[str, Any]
KEY = "openai"
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3"}
_AUDIO_MIMES = {"wav": "audio/wav", "mp3": "audio/mpeg"}
_ROLES = {SystemMessage: "system", UserMessage: "user", AssistantMessage: "assistant"}


def from_openai(
    messages: Iterable[Mapping[str, Any] | Any], *, group_tool_responses: bool = True
) -> list[Message]:
    """Chat-completions message dicts (or SDK objects, dumped without ``None`` fields) to
    chatmem messages. A run of ``tool`` messages becomes one ``ToolResponseMessage``
    unless ``group_tool_responses`` is False (then one each)."""
    dicts: list[OpenAIMessage] = []
    for i, m in enumerate(messages):
        if hasattr(m, "model_dump") and not isinstance(m, Mapping):
            m = m.model_dump(exclude_none=True)
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
            raise InvalidArgumentError(f"messages[{i}]", "must be a dict with a 'role'")
        dicts.append(check_json(f"messages[{i}]", dict(m)))
    return decode_messages(_CODEC, dicts, group=group_tool_responses)


def to_openai(
    messages: Sequence[Message] | Message,
    *,
    group_tool_responses: bool = True,
    for_api: bool = False,
) -> list[OpenAIMessage]:
    """Chatmem messages to chat-completions dicts; ``from_openai`` of the result (with the
    same ``group_tool_responses``) gives the messages back. ``for_api=True`` drops the
    reserved ``"chatmem"`` key so the API accepts the dicts (no longer lossless)."""
    out = encode_messages(_CODEC, messages, group=group_tool_responses)
    if for_api:
        out = [{k: v for k, v in d.items() if k != ENVELOPE} for d in out]
    return out


# -- media parts ---------------------------------------------------------------------------
def _has_part(m: Media) -> bool:
    kind = kind_of(m.mime_type)
    if kind == "image":
        return True
    return isinstance(m.data, bytes) and (kind == "file" or m.mime_type in _AUDIO_FORMATS)


def _to_part(m: Media) -> dict[str, Any]:
    kind = kind_of(m.mime_type)
    if kind == "image":
        url = data_url(m.mime_type, m.data) if isinstance(m.data, bytes) else m.data
        return {"type": "image_url", "image_url": {"url": url}}
    assert isinstance(m.data, bytes)
    if m.mime_type in _AUDIO_FORMATS:
        fmt = _AUDIO_FORMATS[m.mime_type]
        return {"type": "input_audio", "input_audio": {"data": b64(m.data), "format": fmt}}
    file: dict[str, Any] = {"file_data": data_url(m.mime_type, m.data)}
    if m.name is not None:
        file["filename"] = m.name
    return {"type": "file", "file": file}


def _exact(d: Any, keys: set[str], required: set[str]) -> Mapping[str, Any]:
    if not isinstance(d, Mapping) or not required <= set(d) or not set(d) <= keys:
        raise ValueError("unexpected part shape")
    return d


def _from_part(part: Any) -> Media:
    kind = _exact(part, {"type", "image_url", "input_audio", "file"}, {"type"})["type"]
    if kind == "image_url":
        url = require_str(_exact(part["image_url"], {"url"}, {"url"})["url"], "url")
        parsed = parse_data_url(url)
        if parsed is not None:
            return Media(mime_type=parsed[0], data=parsed[1])
        return Media(mime_type=guess_mime(url, "image"), data=url)
    if kind == "input_audio":
        audio = _exact(part["input_audio"], {"data", "format"}, {"data", "format"})
        fmt = require_str(audio["format"], "format")
        return Media(mime_type=_AUDIO_MIMES.get(fmt, f"audio/{fmt}"), data=unb64(audio["data"]))
    if kind == "file":
        file = _exact(part["file"], {"file_data", "filename"}, {"file_data"})
        parsed = parse_data_url(require_str(file["file_data"], "file_data"))
        if parsed is None:
            raise ValueError("file_data is not a base64 data URL")
        return Media(mime_type=parsed[0], data=parsed[1], name=file.get("filename"))
    raise ValueError(f"no media for part type {kind!r}")


def _is_text_part(p: Any) -> bool:
    return isinstance(p, Mapping) and set(p) == {"type", "text"} and p["type"] == "text"


# -- the codec -----------------------------------------------------------------------------
class _OpenAICodec(FormatCodec[OpenAIMessage]):
    key = KEY

    def is_tool(self, x: OpenAIMessage) -> bool:
        return x.get("role") == "tool"

    def envelope(self, x: OpenAIMessage) -> Mapping[str, Any] | None:
        return envelope_dict(x)

    def dump(self, x: OpenAIMessage) -> Any:
        return copy.deepcopy(x)

    def load(self, data: Any) -> OpenAIMessage:
        if not isinstance(data, dict):
            raise InvalidArgumentError("metadata", f"{KEY} raw message is not a dict")
        return copy.deepcopy(data)

    def wrap(self, m: Message) -> OpenAIMessage:
        if isinstance(m, ToolResponseMessage):
            head = m.responses[0].id if m.responses else ""
            return {
                "role": "tool",
                "tool_call_id": head,
                "content": "",
                ENVELOPE: whole_envelope(m),
            }
        text = m.text
        return {"role": _ROLES[type(m)], "content": text, ENVELOPE: whole_envelope(m)}

    def fallback(self, xs: list[OpenAIMessage]) -> Message:
        x = xs[0]
        if self.is_tool(x):
            return ToolResponseMessage()
        content = x.get("content")
        if isinstance(content, list):
            content = "".join(
                p.get("text", "")
                for p in content
                if isinstance(p, Mapping) and isinstance(p.get("text"), str)
            )
        text = content if isinstance(content, str) else ""
        role = x.get("role")
        if role in ("system", "developer"):
            return SystemMessage(text)
        if role == "assistant":
            return AssistantMessage(content if isinstance(content, str) else None)
        return UserMessage(text)

    # natural mapping -------------------------------------------------------------------
    def decode(self, xs: list[OpenAIMessage], names: ToolNames) -> Message:
        head = xs[0]
        env = dict(self.envelope(head) or {})
        metadata = dict(env.pop("metadata", {}))
        attachments = env.pop("attachments", None)
        if self.is_tool(head):
            return self._decode_tools(xs, env, metadata, attachments, names)
        role = head["role"]
        consumed = {"content", ENVELOPE}
        if role in ("system", "user", "assistant"):
            consumed.add("role")
        calls = head.get("tool_calls")
        if isinstance(calls, list) and calls and role == "assistant":
            consumed.add("tool_calls")
        extras = {k: v for k, v in head.items() if k not in consumed}
        if extras:
            if KEY in metadata:
                raise ValueError("metadata already holds the openai key")
            metadata[KEY] = extras
        content = head.get("content")
        text: str | None
        parts: list[Any] = []
        if isinstance(content, list):
            parts = list(content)
            text = parts.pop(0)["text"] if parts and _is_text_part(parts[0]) else ""
        elif content is None and role == "assistant":
            text = None
        else:
            text = require_str(content, "content")
        media = list(decode_media(parts, env.pop("media", None), _from_part))
        for index, item in attachments or ():
            media.insert(index, media_from_dict(item))
        no_more(env)
        common: dict[str, Any] = {"metadata": metadata, "media": tuple(media)}
        if role in ("system", "developer"):
            return SystemMessage(require_str(text, "content"), **common)
        if role == "user":
            return UserMessage(require_str(text, "content"), **common)
        if role == "assistant":
            tool_calls = (
                tuple(self._decode_call(c) for c in calls or ()) if "tool_calls" in consumed else ()
            )
            return AssistantMessage(text, tool_calls=tool_calls, **common)
        raise ValueError(f"no chatmem kind for role {role!r}")

    @staticmethod
    def _decode_call(c: Any) -> ToolCall:
        call = _exact(c, {"id", "type", "function"}, {"id", "type", "function"})
        fn = _exact(call["function"], {"name", "arguments"}, {"name", "arguments"})
        return ToolCall(
            id=call["id"], type=call["type"], name=fn["name"], arguments=fn["arguments"]
        )

    def _decode_tools(
        self,
        xs: list[OpenAIMessage],
        env: dict[str, Any],
        metadata: dict[str, Any],
        attachments: Any,
        names: ToolNames,
    ) -> ToolResponseMessage:
        marker = env.pop("responses", None)
        env.pop("name", None)
        no_more(env)
        responses: list[ToolResponse] = []
        for x in xs if marker != 0 else ():
            _exact(
                x,
                {"role", "tool_call_id", "content", ENVELOPE},
                {"role", "tool_call_id", "content"},
            )
            own = self.envelope(x) or {}
            rid = require_str(x["tool_call_id"], "tool_call_id")
            name = own["name"] if "name" in own else names.get(rid, "")
            responses.append(ToolResponse(id=rid, name=name, response_data=x["content"]))
        media = tuple(media_from_dict(item) for _, item in attachments or ())
        return ToolResponseMessage(tuple(responses), metadata=metadata, media=media)

    def encode(self, m: Message, marker: int | None, names: ToolNames) -> list[OpenAIMessage]:
        metadata = dict(m.metadata)
        env: dict[str, Any] = {}
        media = list(m.media)
        attachments: list[tuple[int, Media]] = []
        if isinstance(m, UserMessage):
            attachments = [(i, x) for i, x in enumerate(media) if not _has_part(x)]
            media = [x for x in media if _has_part(x)]
        else:
            attachments, media = list(enumerate(media)), []
        if isinstance(m, ToolResponseMessage):
            return self._encode_tools(m, marker, names, metadata, attachments)
        extras = metadata.pop(KEY, None)
        d: OpenAIMessage = {"role": _ROLES[type(m)]}
        parts, infos = encode_media(tuple(media), _to_part, _from_part)
        if parts:
            d["content"] = ([{"type": "text", "text": m.text}] if m.text else []) + parts
        else:
            d["content"] = m.text
        if isinstance(m, AssistantMessage) and m.tool_calls:
            d["tool_calls"] = [
                {"id": c.id, "type": c.type, "function": {"name": c.name, "arguments": c.arguments}}
                for c in m.tool_calls
            ]
        if extras is not None:
            if not isinstance(extras, Mapping) or ENVELOPE in extras:
                raise ValueError("metadata['openai'] must be a dict of message keys")
            d.update(copy.deepcopy(dict(extras)))
        if metadata:
            env["metadata"] = metadata
        if infos:
            env["media"] = infos
        if attachments:
            env["attachments"] = [[i, media_to_dict(x)] for i, x in attachments]
        if env:
            d[ENVELOPE] = json.loads(json.dumps(env))
        return [d]

    def _encode_tools(
        self,
        m: ToolResponseMessage,
        marker: int | None,
        names: ToolNames,
        metadata: dict[str, Any],
        attachments: list[tuple[int, Media]],
    ) -> list[OpenAIMessage]:
        out: list[OpenAIMessage] = []
        for r in m.responses:
            d: OpenAIMessage = {"role": "tool", "tool_call_id": r.id, "content": r.response_data}
            if names.get(r.id, "") != r.name:
                d[ENVELOPE] = {"name": r.name}
            out.append(d)
        if not out:
            out.append({"role": "tool", "tool_call_id": "", "content": ""})
        head_env: dict[str, Any] = dict(out[0].get(ENVELOPE, {}))
        if marker is not None:
            head_env["responses"] = marker
        if metadata:
            head_env["metadata"] = metadata
        if attachments:
            head_env["attachments"] = [[i, media_to_dict(x)] for i, x in attachments]
        if head_env:
            out[0][ENVELOPE] = json.loads(json.dumps(head_env))
        return out


_CODEC = _OpenAICodec()
