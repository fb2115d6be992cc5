"""The framework's own JSON of an item, kept in a chatmem message's metadata (pure helpers
the Agent Framework and Strands codecs share).

The payload sits under the framework's key as JSON data, or as one JSON string under
``"json"`` when it holds text a store cannot keep as such (a NUL, a lone surrogate), so it
round-trips exactly on every store.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from chatmem.core import AssistantMessage, InvalidArgumentError, Message


def with_payload(base: Message, key: str, payload: dict[str, Any], argument: str) -> Message:
    """``base`` carrying ``payload`` under ``metadata[key]``; ``InvalidArgumentError`` naming
    ``argument`` when the payload is not JSON data."""
    try:
        data = json.loads(json.dumps(payload, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(argument, f"is not JSON data ({exc})") from exc
    try:
        return dataclasses.replace(base, metadata={key: data})
    except InvalidArgumentError:  # text a store cannot keep as it is: keep it as JSON text
        return dataclasses.replace(base, metadata={key: {"json": json.dumps(data)}})


def payload_of(m: Message, key: str) -> dict[str, Any] | None:
    """The payload ``with_payload`` put in ``m`` (a copy), None for a message without one."""
    slot = m.metadata.get(key)
    if not isinstance(slot, Mapping):
        return None
    if set(slot) == {"json"} and isinstance(slot["json"], str):
        data = json.loads(slot["json"])
        return data if isinstance(data, dict) else None
    copied = json.loads(json.dumps(slot))
    return copied if isinstance(copied, dict) else None


def tool_names(messages: list[Message]) -> dict[str, str]:
    """Tool names by call id, from the tool calls among ``messages`` (tool results in these
    frameworks do not name their tool)."""
    return {c.id: c.name for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls}
