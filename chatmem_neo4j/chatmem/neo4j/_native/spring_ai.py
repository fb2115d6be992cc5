"""The Spring AI layout's pure parts on Neo4j: the graph Spring AI's
``Neo4jChatMemoryRepository`` (1.1 and 2.0 share it) reads and writes, its Cypher, and
messages encoded and decoded (the repository is ``_async/spring_ai.py``).

::

    (:Session {id})-[:HAS_MESSAGE]->(:Message {id, idx, messageType, textContent})
      -[:HAS_METADATA]->      (:Metadata {...})        one per message, empty from chatmem
      -[:HAS_TOOL_CALL]->     (:ToolCall {id, name, arguments, type, idx})
      -[:HAS_TOOL_RESPONSE]-> (:ToolResponse {id, name, responseData, idx})

``idx`` counts from 1 in conversation order; ``messageType`` is ``user``, ``assistant``,
``system`` or ``tool``. Spring's indexes (``session_conversation_id_index`` on
``Session.conversationId``, ``message_index_index`` on ``Message.index``: properties its
queries never use) are created as Spring creates them; chatmem adds one uniqueness
constraint on ``Session.id`` so that concurrent first writes cannot make two sessions.
"""

# The Cypher below is built from validated labels, never from user text.

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chatmem.core import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.core.backend import InvalidArgumentError, cypher_label

SPRING_AI_LABELS = {
    "session_label": "Session",
    "message_label": "Message",
    "metadata_label": "Metadata",
    "tool_call_label": "ToolCall",
    "tool_response_label": "ToolResponse",
    "media_label": "Media",
}
"""Spring's ``Neo4jChatMemoryRepositoryConfig.DEFAULT_*_LABEL``."""
SESSION_CONSTRAINT = "chatmem_spring_session_id"
HOLDS = frozenset({"tool_calls", "tool_responses"})
"""What this layout stores (the rest of ``SPRING_AI_LOSSY`` is refused unless named)."""

LOCK = "SET s.chatmem_lock = true REMOVE s.chatmem_lock"
_TYPES: dict[str, Any] = {
    "user": UserMessage,
    "assistant": AssistantMessage,
    "system": SystemMessage,
}


@dataclass(frozen=True)
class SpringAiNeo4jLabels:
    """The six labels (Spring's defaults), validated."""

    session_label: str = "Session"
    message_label: str = "Message"
    metadata_label: str = "Metadata"
    tool_call_label: str = "ToolCall"
    tool_response_label: str = "ToolResponse"
    media_label: str = "Media"

    def __post_init__(self) -> None:
        names = [getattr(self, k) for k in SPRING_AI_LABELS]
        for key, value in zip(SPRING_AI_LABELS, names, strict=True):
            cypher_label(value, key)
        if len(set(names)) != len(names):
            raise InvalidArgumentError("labels", "the six labels must be distinct")


def spring_ai_schema(labels: SpringAiNeo4jLabels) -> list[str]:
    """Spring's two indexes (``Neo4jChatMemoryRepositoryConfig.ensureIndexes``) and
    chatmem's uniqueness constraint on the session id."""
    return [
        "CREATE INDEX session_conversation_id_index IF NOT EXISTS"
        f" FOR (n:{labels.session_label}) ON (n.conversationId)",
        "CREATE INDEX message_index_index IF NOT EXISTS"
        f" FOR (n:{labels.message_label}) ON (n.index)",
        f"CREATE CONSTRAINT {SESSION_CONSTRAINT} IF NOT EXISTS"
        f" FOR (n:{labels.session_label}) REQUIRE n.id IS UNIQUE",
    ]


def cypher(labels: SpringAiNeo4jLabels) -> dict[str, str]:
    """The layout's statements by name; every value is a parameter."""
    s, m, md = labels.session_label, labels.message_label, labels.metadata_label
    tc, tr = labels.tool_call_label, labels.tool_response_label
    parts = f"""OPTIONAL MATCH (m)-[:HAS_METADATA]->(md:{md})
OPTIONAL MATCH (m)-[:HAS_TOOL_CALL]->(tc:{tc})
OPTIONAL MATCH (m)-[:HAS_TOOL_RESPONSE]-(tr:{tr})
OPTIONAL MATCH (m)-[:HAS_MEDIA]->(me:{labels.media_label})"""
    return {
        # the session's exclusive lock, held to commit (no net change to the node); a
        # reader takes it only when the session exists
        "lock_existing": f"MATCH (s:{s} {{id: $cid}}) {LOCK}",
        "lock": f"MERGE (s:{s} {{id: $cid}}) {LOCK}",
        "read": f"""MATCH (:{s} {{id: $cid}})-[:HAS_MESSAGE]->(m:{m})
OPTIONAL MATCH (m)-[:HAS_METADATA]->(md:{md})
OPTIONAL MATCH (m)-[:HAS_TOOL_CALL]->(tc:{tc})
WITH m, md, tc ORDER BY tc.idx
WITH m, md, collect(tc) AS calls
OPTIONAL MATCH (m)-[:HAS_TOOL_RESPONSE]-(tr:{tr})
WITH m, md, calls, tr ORDER BY tr.idx
RETURN m, md, calls, collect(tr) AS responses ORDER BY m.idx""",
        "create": f"""MATCH (s:{s} {{id: $cid}})
UNWIND $messages AS x
CREATE (s)-[:HAS_MESSAGE]->(m:{m}) SET m = x.props
CREATE (m)-[:HAS_METADATA]->(:{md})
FOREACH (c IN x.calls | CREATE (m)-[:HAS_TOOL_CALL]->(t:{tc}) SET t = c)
FOREACH (r IN x.responses | CREATE (m)-[:HAS_TOOL_RESPONSE]->(t:{tr}) SET t = r)""",
        "clear": f"""MATCH (:{s} {{id: $cid}})-[:HAS_MESSAGE]->(m:{m})
{parts}
DETACH DELETE m, md, tc, tr, me""",
        "drop_session": f"MATCH (s:{s} {{id: $cid}}) DETACH DELETE s",
        "ids": f"""MATCH (s:{s}) WHERE s.id > $after AND EXISTS {{ (s)-[:HAS_MESSAGE]->(:{m}) }}
RETURN s.id AS id ORDER BY id LIMIT $n""",
    }


def encode(messages: Sequence[Message], start: int) -> list[dict[str, Any]]:
    """Messages as the ``create`` statement's parameter, ``idx`` from ``start + 1``."""
    out = []
    for i, msg in enumerate(messages):
        text = "" if isinstance(msg, ToolResponseMessage) else (msg.text or "")
        props = {
            "id": str(uuid.uuid4()),
            "idx": start + i + 1,
            "messageType": msg.message_type.value.lower(),
            "textContent": text,
        }
        calls = []
        if isinstance(msg, AssistantMessage):
            calls = [
                {"id": c.id, "name": c.name, "arguments": c.arguments, "type": c.type, "idx": k}
                for k, c in enumerate(msg.tool_calls)
            ]
        responses = []
        if isinstance(msg, ToolResponseMessage):
            responses = [
                {"id": r.id, "name": r.name, "responseData": r.response_data, "idx": str(k)}
                for k, r in enumerate(msg.responses)
            ]
        out.append({"props": props, "calls": calls, "responses": responses})
    return out


def decode(records: Sequence[Any]) -> list[Message]:
    """``read`` records as messages, positioned by their index in the conversation."""
    out: list[Message] = []
    for position, record in enumerate(records):
        m, md, calls, responses = record["m"], record["md"], record["calls"], record["responses"]
        kind = m.get("messageType")
        metadata = dict(md) if md is not None else {}
        if kind == "tool":
            msg: Message = ToolResponseMessage(
                tuple(
                    ToolResponse(
                        id=r.get("id"), name=r.get("name"), response_data=r.get("responseData")
                    )
                    for r in responses
                ),
                metadata=metadata,
            )
        elif kind == "assistant":
            tool_calls = tuple(
                ToolCall(
                    id=c.get("id"),
                    name=c.get("name"),
                    arguments=c.get("arguments"),
                    type=c.get("type") or "function",
                )
                for c in calls
            )
            text = m.get("textContent")
            msg = AssistantMessage(
                None if tool_calls and not text else text,
                tool_calls=tool_calls,
                metadata=metadata,
            )
        elif kind in _TYPES:
            msg = _TYPES[kind](m.get("textContent") or "", metadata=metadata)
        else:
            raise InvalidArgumentError("messageType", f"unknown Spring message type {kind!r}")
        out.append(msg.with_store_fields(created_at=None, position=position))
    return out
