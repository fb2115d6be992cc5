"""The one place the Redis storage shape is defined: keys, document fields, the index.

Per conversation (``H`` = lowercase hex of the id's UTF-8, so any id, whatever its case,
commas, braces or spaces, maps to one safe key and one exact TAG value; ``{H}`` is also the
cluster hash tag, keeping a conversation's keys in one slot)::

    <prefix>ids             ZSET  every conversation id (score 0), paged with ZRANGE BYLEX
                                  (on a cluster: <prefix>ids:{t}, one per slot, see Layout)
    <prefix>c:{H}:seq       STR   next position (INCRBY: the server assigns positions)
    <prefix>c:{H}:log       ZSET  the log: one entry per message, score = position
                                  (+ 2**50 for system messages: they sort last)
    <prefix>m:{H}:<pos>     JSON  one message's index document, indexed by RediSearch
    <prefix>c:{H}:pend      HASH  documents not written yet: position -> document JSON
                                  without its opening brace and position (FLUSH adds them)
    <prefix>pending         SET   the {H} of every conversation with a pending document

On one node, writes leave the index documents pending (an append is then two cheap
commands, not a RediSearch indexing per message); every search first writes whatever is
pending (``FLUSH``, in bounded atomic batches), so a search sees every message written before
it began. A cluster, whose search runs on every master, writes the documents at once.

A log entry is ``<position> <created_at, UTC microseconds> <core wire JSON>``: the message
stored once, compact and exact (every field of every kind round-trips byte for byte). A
history read is one plain ``ZRANGE`` of the log's tail (the system messages sort last, so the
tail holds them too) and never touches RedisJSON or the index; a turn's window read returns
the entries and nothing else.

An index document holds only what the advanced queries need::

    {"position": 7, "conversation_id": "<id>", "conversation_key": "<H>",
     "message_type": "USER", "content": "<text>", "created_at": <UTC microseconds>,
     "metadata": {<typed projection>}}

Searches return document keys only (``NOCONTENT``); the search script maps each key to its
log entry. ``metadata`` holds only the configured fields whose value fits the field type, so
a value of the wrong type is left out of the index instead of failing the whole document's
indexing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ._codec import document_head
from ._config import MetadataFieldType, RedisConfig
from ._native.cluster import key_slot, slot_tags

IDS = "ids"
PENDING = "pending"
DOC_PREFIX = "m:"
CONVERSATION_PREFIX = "c:"

# Index attribute names used by queries.
CONVERSATION_KEY = "conversation_key"
MESSAGE_TYPE = "message_type"
CONTENT = "content"
CREATED_AT = "created_at"
POSITION = "position"


def conversation_tag(cid: str) -> str:
    """The hex form of an id: the key segment and the exact TAG value."""
    return cid.encode("utf-8").hex()


def metadata_attribute(name: str) -> str:
    """The index attribute of a metadata field (``metadata_<name>``)."""
    return f"metadata_{name}"


KEY_CACHE_SIZE = 4096
"""Conversations whose keys a ``Layout`` keeps built (least recently used go first): a turn
names its conversation's keys three times, and building them costs more than the lookup."""


class ConversationKeys:
    """The keys of one conversation, in the order every write script takes them, as text
    and as the bytes the scripts are sent (built once per conversation, see ``Layout``)."""

    __slots__ = (
        "doc_head",
        "doc_prefix",
        "ids",
        "log",
        "pending",
        "pending_docs",
        "seq",
        "systems",
        "tag",
        "wire_cid",
        "wire_defer",
        "wire_doc_prefix",
        "wire_keys",
        "wire_log",
    )

    def __init__(
        self, cid: str, ids: str, conv: str, pending: str, doc_prefix: str, *, defer: bool
    ) -> None:
        self.ids = ids
        self.seq = conv + ":seq"
        self.log = conv + ":log"
        self.pending_docs = conv + ":pend"
        self.pending = pending
        self.doc_prefix = doc_prefix
        self.tag = conv[conv.index("{") :]
        self.wire_keys: tuple[bytes, ...] = tuple(k.encode() for k in self.script_keys)
        self.wire_log = self.wire_keys[2]
        self.wire_doc_prefix = doc_prefix.encode()
        self.wire_cid = cid.encode()
        # the write scripts' defer argument: the tag, or '' to index at once (see _plan)
        self.wire_defer = self.tag.encode() if defer else b""
        # what every index document of this conversation starts with (see _codec)
        self.doc_head = document_head(cid, self.tag[1:-1])
        self.systems = 0
        """System messages this process last saw in the conversation's log: a window
        read's budget (a hint: a read that finds more reads again)."""

    @property
    def script_keys(self) -> list[str]:
        return [self.ids, self.seq, self.log, self.pending_docs, self.pending]


class Layout:
    """Key names under one prefix. On a cluster (``cluster=True``) the id index is one set
    per slot, ``<prefix>ids:{t}``, in the slot of the conversations it lists (see
    ``_native/cluster``), so each write script touches one slot only. ``conversation`` keeps
    the keys of the last ``KEY_CACHE_SIZE`` conversations built."""

    def __init__(self, prefix: str, *, cluster: bool = False) -> None:
        self.prefix = prefix
        self.cluster = cluster
        self.ids = prefix + IDS
        self.pending = prefix + PENDING
        self.doc_prefix = prefix + DOC_PREFIX
        self.conversation_prefix = prefix + CONVERSATION_PREFIX
        self.conversation: Callable[[str], ConversationKeys] = functools.lru_cache(
            maxsize=KEY_CACHE_SIZE
        )(self._conversation)

    def slot_ids(self, slot: int) -> str:
        """The cluster's id index of one slot."""
        return f"{self.ids}:{{{slot_tags()[slot]}}}"

    def _conversation(self, cid: str) -> ConversationKeys:
        base = "{" + conversation_tag(cid) + "}"
        ids = self.slot_ids(key_slot(base)) if self.cluster else self.ids
        return ConversationKeys(
            cid,
            ids,
            self.conversation_prefix + base,
            # a cluster indexes at once (see _plan): its id set stands in, never written
            ids if self.cluster else self.pending,
            self.doc_prefix + base + ":",
            # a cluster, whose searches run on every master, indexes at once
            defer=not self.cluster,
        )


_FIELD_TYPE = {
    MetadataFieldType.TAG: ["TAG", "CASESENSITIVE"],
    MetadataFieldType.TEXT: ["TEXT"],
    MetadataFieldType.NUMERIC: ["NUMERIC"],
}


def index_create_args(config: RedisConfig) -> list[str]:
    """``FT.CREATE`` arguments (after the command name) for ``config``'s index.

    JSON TAG fields have no separator by default, so a value containing ``,`` stays one tag;
    CASESENSITIVE keeps ``A`` and ``a`` apart. STOPWORDS 0: every word is searchable.
    """
    layout = Layout(config.key_prefix)
    schema = [
        "$.conversation_key", "AS", CONVERSATION_KEY, "TAG", "CASESENSITIVE",
        "$.message_type", "AS", MESSAGE_TYPE, "TAG", "CASESENSITIVE",
        "$.content", "AS", CONTENT, "TEXT",
        "$.created_at", "AS", CREATED_AT, "NUMERIC", "SORTABLE",
        "$.position", "AS", POSITION, "NUMERIC",
    ]  # fmt: skip
    for f in config.metadata_fields:
        schema += [f"$.metadata.{f.name}", "AS", metadata_attribute(f.name), *_FIELD_TYPE[f.type]]
    return [
        config.index_name, "ON", "JSON", "PREFIX", "1", layout.doc_prefix,
        "STOPWORDS", "0", "SCHEMA", *schema,
    ]  # fmt: skip


def index_attributes(config: RedisConfig) -> set[str]:
    """Attribute names the index must have for ``config``'s queries."""
    names = {CONVERSATION_KEY, MESSAGE_TYPE, CONTENT, CREATED_AT, POSITION}
    return names | {metadata_attribute(f.name) for f in config.metadata_fields}
