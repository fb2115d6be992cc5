"""The one place the graph shape is defined: labels, relationships, properties, DDL, Cypher.

::

    (:Session {conversation_id, next_position, system_positions?})
      -[:HAS_MESSAGE]->
    (:Message {conversation_id, position, type, text?, created_at})
      -[:HAS_METADATA {key_order, encoded?}]-> (:Metadata {<key>: <value>, ...})
      -[:HAS_TOOL_CALL]->     (:ToolCall {idx, id, type, name, arguments})
      -[:HAS_TOOL_RESPONSE]-> (:ToolResponse {idx, id, name, response_data})
      -[:HAS_MEDIA]->         (:Media {idx, mime_type, data | uri, id?, name?})

Labels come from ``Neo4jConfig`` (validated, then back-quoted); relationship types and
property names are fixed. Every value is a query parameter.

Isolation: Neo4j reads are read-committed with no snapshot, so a statement reading while
another commits could see part of that commit. Every statement that touches a conversation
therefore first writes to its session node (``SET s.lock = true REMOVE s.lock``: no net
change, but Neo4j takes the node's exclusive lock at the first write and keeps it until
commit) and reads only after that. Writers and readers of one conversation thus serialise
in the server; a reader sees the whole old log or the whole new one, and counters read
after the lock are never stale (``SET n.x = n.x + 1`` alone can lose updates).

Indexes: messages carry their ``conversation_id`` so one composite range index
``(conversation_id, position)`` serves every message read in position order with a bound
(last N, the window, the whole log, trimming). The session keeps ``system_positions`` so
the window finds its system messages by position through the same index. Bounded reads
order by ``(conversation_id, position)``, the index's own order: the planner then reads
only the rows it returns instead of sorting the whole conversation. The uniqueness
constraint on the session's ``conversation_id`` makes ``MERGE`` race-free and serves the
paged id listing in index order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import ParamSpec

from ._config import Neo4jConfig

P = ParamSpec("P")
Shape = frozenset[str]
"""What a batch of messages holds: any of ``metadata``, ``tool_calls``, ``tool_responses``,
``media``, ``system``, and ``single`` for exactly one message (see ``_codec.shape_of``)."""

HAS_MESSAGE = "HAS_MESSAGE"
HAS_METADATA = "HAS_METADATA"
HAS_TOOL_CALL = "HAS_TOOL_CALL"
HAS_TOOL_RESPONSE = "HAS_TOOL_RESPONSE"
HAS_MEDIA = "HAS_MEDIA"
PART_RELATIONSHIPS = f"{HAS_METADATA}|{HAS_TOOL_CALL}|{HAS_TOOL_RESPONSE}|{HAS_MEDIA}"

TRIM_EVERY = 4
TRIM_LIMIT = 8
"""Window appends trim lazily: after an append whose positions cross a multiple of
``TRIM_EVERY * trim_to``, one more statement deletes at most ``TRIM_LIMIT * trim_to`` of
the evicted messages. A trim costs about the same for 20 deletions as for 300, so doing
it rarely in batches keeps adds cheap; the log stays within a few windows, and an overlong
history shrinks as the conversation goes on."""


def _statement(build: Callable[P, str]) -> Callable[P, str]:
    """Return the built Cypher on one line with single spaces: less for the driver to pack
    and send on every call (statements hold no comments and no string literal with a run
    of spaces, so this changes no meaning)."""

    @functools.wraps(build)
    def compact(*args: P.args, **kwargs: P.kwargs) -> str:
        return " ".join(build(*args, **kwargs).split())

    return compact


def _q(label: str) -> str:
    # Labels are validated as [A-Za-z_][A-Za-z0-9_]*; quoting keeps keywords harmless.
    return f"`{label}`"


@dataclass(frozen=True)
class Schema:
    """Cypher for one label configuration (built once per repository)."""

    session: str
    message: str
    metadata: str
    tool_call: str
    tool_response: str
    media: str

    @classmethod
    def of(cls, config: Neo4jConfig) -> Schema:
        return cls(
            session=config.session_label,
            message=config.message_label,
            metadata=config.metadata_label,
            tool_call=config.tool_call_label,
            tool_response=config.tool_response_label,
            media=config.media_label,
        )

    # -- DDL ------------------------------------------------------------------------------
    @property
    def constraint_name(self) -> str:
        return f"chatmem_{self.session}_conversation_id"

    @property
    def index_name(self) -> str:
        return f"chatmem_{self.message}_conversation_position"

    def ddl(self) -> list[str]:
        """Idempotent statements creating exactly what the queries use."""
        return [
            f"CREATE CONSTRAINT {_q(self.constraint_name)} IF NOT EXISTS "
            f"FOR (s:{_q(self.session)}) REQUIRE s.conversation_id IS UNIQUE",
            f"CREATE INDEX {_q(self.index_name)} IF NOT EXISTS "
            f"FOR (m:{_q(self.message)}) ON (m.conversation_id, m.position)",
        ]

    def drop_ddl(self) -> list[str]:
        """Statements removing the constraint and the index (for tests and migrations)."""
        return [
            f"DROP CONSTRAINT {_q(self.constraint_name)} IF EXISTS",
            f"DROP INDEX {_q(self.index_name)} IF EXISTS",
        ]

    # -- building blocks ------------------------------------------------------------------
    def _lock(self, create: bool) -> str:
        """Find (or create) the session node ``s`` and hold its write lock from here on."""
        s = _q(self.session)
        find = (
            f"MERGE (s:{s} {{conversation_id: $cid}})\nON CREATE SET s.next_position = 0"
            if create
            else f"MATCH (s:{s} {{conversation_id: $cid}})"
        )
        return f"{find}\nSET s.lock = true REMOVE s.lock\nWITH s"

    def _reserve(self) -> str:
        """Lock (creating) the session and reserve ``size($messages)`` positions from
        ``base``. Cypher takes the node's write lock before it evaluates a ``SET`` that
        reads the property it writes, so concurrent reservations never overlap."""
        return (
            f"MERGE (s:{_q(self.session)} {{conversation_id: $cid}})\n"
            "ON CREATE SET s.next_position = 0\n"
            "SET s.next_position = s.next_position + size($messages)\n"
            "WITH s, s.next_position - size($messages) AS base"
        )

    def _create_messages(self, shape: Shape) -> str:
        """Create ``$messages`` (see ``_codec.message_params``) at ``base + i`` under the
        locked session ``s`` and remember where system messages went. Only the parts the
        batch has (``shape``) get a ``FOREACH``, and a single message needs no ``UNWIND``:
        a plain turn runs the smallest plan."""
        # A literal map (a null text is simply not stored) plans lighter than SET m = map.
        body = f"""
  CREATE (s)-[:{HAS_MESSAGE}]->(m:{_q(self.message)} {{
    conversation_id: $cid, position: position, type: msg.type, text: msg.text,
    created_at: datetime({{epochSeconds: msg.ts[0], nanosecond: msg.ts[1] * 1000}})}})"""
        parts = {
            "metadata": f"""
  FOREACH (md IN msg.metadata |
    CREATE (m)-[r:{HAS_METADATA}]->(x:{_q(self.metadata)}) SET r = md.rel, x = md.node)""",
            "tool_calls": f"""
  FOREACH (tc IN msg.tool_calls |
    CREATE (m)-[:{HAS_TOOL_CALL}]->(x:{_q(self.tool_call)}) SET x = tc)""",
            "tool_responses": f"""
  FOREACH (tr IN msg.tool_responses |
    CREATE (m)-[:{HAS_TOOL_RESPONSE}]->(x:{_q(self.tool_response)}) SET x = tr)""",
            "media": f"""
  FOREACH (me IN msg.media |
    CREATE (m)-[:{HAS_MEDIA}]->(x:{_q(self.media)}) SET x = me)""",
        }
        body += "".join(text for kind, text in parts.items() if kind in shape)
        if "single" in shape:
            text = f"\nWITH s, base, base AS position, $messages[0] AS msg{body}"
        else:
            text = f"""
CALL {{
  WITH s, base
  UNWIND range(0, size($messages) - 1) AS i
  WITH s, base + i AS position, $messages[i] AS msg{body}
}}"""
        if "system" in shape:
            text += """
SET s.system_positions = coalesce(s.system_positions, []) +
  [i IN range(0, size($messages) - 1) WHERE $messages[i].type = 'SYSTEM' | base + i]"""
        return text

    @staticmethod
    def _delete_where(match: str) -> str:
        """A unit subquery deleting the messages ``old`` that ``match`` finds, with parts."""
        return f"""
CALL {{
  WITH s
  {match}
  OPTIONAL MATCH (old)-[:{PART_RELATIONSHIPS}]->(part)
  DETACH DELETE part, old
}}"""

    def _delete_all(self) -> str:
        return self._delete_where(f"MATCH (s)-[:{HAS_MESSAGE}]->(old:{_q(self.message)})")

    def _returns(self, with_next: bool = False) -> str:
        """One record: ``rows``, a list with one entry per message ``m`` in position order,
        ``[position, type, text, created_at_micros, parts]``. ``parts`` is null for a
        message without part nodes (one degree check instead of four expansions), else
        ``[metadata, tool_calls, tool_responses, media]``, each collected by a pattern
        comprehension, so a message is never multiplied by its parts. One record instead
        of one per message roughly halves the driver's decoding work. ``with_next`` adds
        the session's ``next_position`` to the record."""
        keep, head = ("s, ", "s.next_position AS next_position, ") if with_next else ("", "")
        return f"""
WITH {keep}m ORDER BY m.position
RETURN {head}collect([
  m.position, m.type, m.text,
  m.created_at.epochMillis * 1000 + m.created_at.microsecond % 1000,
  CASE WHEN COUNT {{ (m)-[:{PART_RELATIONSHIPS}]->() }} = 0 THEN null ELSE [
    [(m)-[r:{HAS_METADATA}]->(x:{_q(self.metadata)}) | [r.key_order, r.encoded, properties(x)]],
    [(m)-[:{HAS_TOOL_CALL}]->(x:{_q(self.tool_call)}) | properties(x)],
    [(m)-[:{HAS_TOOL_RESPONSE}]->(x:{_q(self.tool_response)}) | properties(x)],
    [(m)-[:{HAS_MEDIA}]->(x:{_q(self.media)}) | properties(x)]
  ] END
]) AS rows"""

    def _window(self) -> str:
        m = _q(self.message)
        return f"""
CALL {{
  WITH s
  MATCH (m:{m})
  WHERE m.conversation_id = $cid AND m.position >= 0 AND m.type <> 'SYSTEM'
  WITH m ORDER BY m.conversation_id DESC, m.position DESC LIMIT $n
  RETURN m
  UNION ALL
  WITH s
  MATCH (m:{m})
  WHERE m.conversation_id = $cid AND m.position IN coalesce(s.system_positions, [])
  RETURN m
}}"""

    # -- statements -----------------------------------------------------------------------
    @_statement
    def find(self) -> str:
        """The whole log, oldest first (params: cid)."""
        return (
            self._lock(create=False)
            + f"\nMATCH (m:{_q(self.message)}) WHERE m.conversation_id = $cid AND m.position >= 0"
            + self._returns()
        )

    @_statement
    def find_last(self) -> str:
        """The last ``$n`` messages, oldest first (params: cid, n)."""
        return (
            self._lock(create=False)
            + f"""
CALL {{
  WITH s
  MATCH (m:{_q(self.message)}) WHERE m.conversation_id = $cid AND m.position >= 0
  WITH m ORDER BY m.conversation_id DESC, m.position DESC LIMIT $n
  RETURN m
}}"""
            + self._returns()
        )

    @_statement
    def load_window(self, create: bool = False) -> str:
        """Every system message plus the last ``$n`` others (params: cid, n). With
        ``create`` the session node is created if missing, so a window edit holds the lock
        even on a new conversation."""
        return self._lock(create) + self._window() + self._returns()

    @_statement
    def find_ids_page(self) -> str:
        """Ids after ``$after`` in index order, at most ``$limit`` (params: after, limit)."""
        return f"""
MATCH (s:{_q(self.session)})
WHERE s.conversation_id > $after AND EXISTS {{ (s)-[:{HAS_MESSAGE}]->() }}
RETURN s.conversation_id AS id ORDER BY id LIMIT $limit"""

    @functools.lru_cache(maxsize=64)  # noqa: B019 (schemas live as long as repositories)
    @_statement
    def save_all(self, shape: Shape) -> str:
        """Replace the log in one statement (params: cid, messages)."""
        return (
            self._lock(create=True)
            + self._delete_all()
            + "\nSET s.next_position = size($messages), s.system_positions = []"
            + "\nWITH s, 0 AS base"
            + self._create_messages(shape)
        )

    @_statement
    def delete(self) -> str:
        """Remove the session and everything under it (params: cid)."""
        return self._lock(create=False) + self._delete_all() + "\nDETACH DELETE s"

    @functools.lru_cache(maxsize=64)  # noqa: B019
    @_statement
    def append(self, shape: Shape) -> str:
        """Append ``$messages`` after every stored one and return the session's new
        ``next_position`` (params: cid, messages)."""
        return (
            self._reserve()
            + self._create_messages(shape)
            + "\nRETURN s.next_position AS next_position"
        )

    @functools.lru_cache(maxsize=64)  # noqa: B019
    @_statement
    def append_and_load_window(self, shape: Shape) -> str:
        """``append`` then ``load_window`` in one statement (params: cid, messages, n): the
        window read follows the writes in the same query, so it sees them, under the lock
        the reservation took; returns ``next_position`` and ``rows``."""
        return (
            self._reserve()
            + self._create_messages(shape)
            + "\nWITH s"
            + self._window()
            + self._returns(with_next=True)
        )

    @_statement
    def trim(self) -> str:
        """Delete up to ``$trim_limit`` of the oldest non-system messages that are not
        among the newest ``$trim_to`` non-system ones (params: cid, trim_to, trim_limit).
        The cut (k) and the candidates (o) are both read in index order with a bound."""
        m = _q(self.message)
        return self._lock(create=False) + self._delete_where(f"""MATCH (k:{m})
  WHERE k.conversation_id = $cid AND k.position >= 0 AND k.type <> 'SYSTEM'
  WITH k ORDER BY k.conversation_id DESC, k.position DESC SKIP $trim_to LIMIT 1
  CALL {{
    MATCH (o:{m}) WHERE o.conversation_id = $cid AND o.position >= 0 AND o.type <> 'SYSTEM'
    RETURN o ORDER BY o.conversation_id, o.position LIMIT $trim_limit
  }}
  WITH o AS old WHERE old.position <= k.position""")

    @functools.lru_cache(maxsize=64)  # noqa: B019
    @_statement
    def edit_window(self, shape: Shape) -> str:
        """Apply a ``WindowEdit`` in the transaction whose ``load_window(create=True)``
        took the lock (params: cid, delete_positions, below, messages; ``messages`` may be
        empty: the ``UNWIND`` then creates nothing)."""
        m = _q(self.message)
        return (
            f"MATCH (s:{_q(self.session)} {{conversation_id: $cid}})"
            + self._delete_where(
                f"MATCH (old:{m})\n  WHERE old.conversation_id = $cid"
                " AND old.position IN $delete_positions"
            )
            + self._delete_where(
                f"MATCH (old:{m})\n  WHERE $below IS NOT NULL AND old.conversation_id = $cid"
                " AND 0 <= old.position < $below AND old.type <> 'SYSTEM'"
            )
            + "\nSET s.system_positions ="
            " [p IN coalesce(s.system_positions, []) WHERE NOT p IN $delete_positions],"
            "\n    s.next_position = s.next_position + size($messages)"
            + "\nWITH s, s.next_position - size($messages) AS base"
            + self._create_messages(shape)
            + f"\nWITH s WHERE NOT EXISTS {{ (s)-[:{HAS_MESSAGE}]->() }}\nDELETE s"
        )
