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

from dataclasses import dataclass

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


@dataclass(frozen=True)
class ConversationKeys:
    """The keys of one conversation, in the order every write script takes them."""

    ids: str
    seq: str
    log: str
    pending_docs: str
    pending: str
    doc_prefix: str
    tag: str

    @property
    def script_keys(self) -> list[str]:
        return [self.ids, self.seq, self.log, self.pending_docs, self.pending]


class Layout:
    """Key names under one prefix. On a cluster (``cluster=True``) the id index is one set
    per slot, ``<prefix>ids:{t}``, in the slot of the conversations it lists (see
    ``_native/cluster``), so each write script touches one slot only."""

    def __init__(self, prefix: str, *, cluster: bool = False) -> None:
        self.prefix = prefix
        self.cluster = cluster
        self.ids = prefix + IDS
        self.pending = prefix + PENDING
        self.doc_prefix = prefix + DOC_PREFIX
        self.conversation_prefix = prefix + CONVERSATION_PREFIX

    def slot_ids(self, slot: int) -> str:
        """The cluster's id index of one slot."""
        return f"{self.ids}:{{{slot_tags()[slot]}}}"

    def conversation(self, cid: str) -> ConversationKeys:
        tag = conversation_tag(cid)
        base = "{" + tag + "}"
        conv = self.conversation_prefix + base
        return ConversationKeys(
            ids=self.slot_ids(key_slot(base)) if self.cluster else self.ids,
            seq=conv + ":seq",
            log=conv + ":log",
            pending_docs=conv + ":pend",
            # a cluster indexes at once (see _plan): its id set stands in, never written
            pending=self.slot_ids(key_slot(base)) if self.cluster else self.pending,
            doc_prefix=self.doc_prefix + base + ":",
            tag=base,
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
