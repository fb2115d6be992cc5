"""The pure part of the Redis record store: the record document, the search queries and the
index, and the Lua scripts (each runs atomically on the server, so a dedup race, a review
race or a state write race has exactly one winner). Timestamps are UTC microseconds.

State entries: a hash ``<prefix>s:<namespace>|<key>`` (``value``, ``version``,
``updated_at``; ``|`` is not a namespace character, so the name is unambiguous) and a sorted
set ``<prefix>n:<namespace>`` of the namespace's keys, all at score 0, so ``ZRANGEBYLEX``
lists them in byte order (code-point order of the UTF-8 keys).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from chatmem.core.backend import from_micros, to_micros
from chatmem.core.longterm import (
    MemoryRecord,
    MemoryStatus,
    StateEntry,
    record_from_fields,
    record_to_fields,
)

from ._native.query import format_number, tag_query

# KEYS = [dedup key, record key]; ARGV = [id, document]. Returns the existing id or nil.
ADD = """
local existing = redis.call('GET', KEYS[1])
if existing then return existing end
redis.call('JSON.SET', KEYS[2], '$', ARGV[2])
redis.call('SET', KEYS[1], ARGV[1])
return false
"""
# KEYS = [record key]; ARGV = [status JSON, now, reviewer JSON, reason JSON] and, for an
# edit at approval, [content JSON, original content JSON].
REVIEW = """
local raw = redis.call('JSON.GET', KEYS[1], '$.status', '$.expires_at')
if not raw then return false end
local f = cjson.decode(raw)
local expires = f['$.expires_at'][1]
if f['$.status'][1] ~= 'pending' or expires == cjson.null
  or tonumber(expires) <= tonumber(ARGV[2]) then return false end
redis.call('JSON.SET', KEYS[1], '$.status', ARGV[1])
redis.call('JSON.SET', KEYS[1], '$.reviewed_at', ARGV[2])
redis.call('JSON.SET', KEYS[1], '$.reviewer', ARGV[3])
redis.call('JSON.SET', KEYS[1], '$.reason', ARGV[4])
if ARGV[5] then
  redis.call('JSON.SET', KEYS[1], '$.content', ARGV[5])
  redis.call('JSON.SET', KEYS[1], '$.original_content', ARGV[6])
end
return redis.call('JSON.GET', KEYS[1], '$')
"""
# KEYS = [record key]; ARGV = [now, reason JSON]. 1 when it expired the record now.
EXPIRE = """
local raw = redis.call('JSON.GET', KEYS[1], '$.status', '$.expires_at')
if not raw then return 0 end
local f = cjson.decode(raw)
local expires = f['$.expires_at'][1]
if f['$.status'][1] ~= 'pending' or expires == cjson.null
  or tonumber(expires) > tonumber(ARGV[1]) then return 0 end
redis.call('JSON.SET', KEYS[1], '$.status', '"rejected"')
redis.call('JSON.SET', KEYS[1], '$.reviewed_at', string.format('%d', expires))
redis.call('JSON.SET', KEYS[1], '$.reviewer', 'null')
redis.call('JSON.SET', KEYS[1], '$.reason', ARGV[2])
return 1
"""
# KEYS = [record key, dedup key]; ARGV = [id]. Removes both atomically; 1 if it existed.
DELETE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('DEL', KEYS[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1
"""
# FT.SEARCH inside a script: one reply shape on RESP2 and RESP3 clients alike.
SEARCH = "return redis.call('FT.SEARCH', unpack(ARGV))"

# KEYS = [entry hash, namespace set]; ARGV = [key, value, expected version or "", now].
# The new version, or false when the entry is present (create) or at another version.
WRITE_STATE = """
local v = redis.call('HGET', KEYS[1], 'version')
if ARGV[3] == '' then
  if v then return false end
elseif v ~= ARGV[3] then return false end
local n = (v and tonumber(v) or 0) + 1
redis.call('HSET', KEYS[1], 'value', ARGV[2], 'version', n, 'updated_at', ARGV[4])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return n
"""
# KEYS = [entry hash, namespace set]; ARGV = [key, expected version or ""]. 1 if deleted.
DELETE_STATE = """
local v = redis.call('HGET', KEYS[1], 'version')
if not v or (ARGV[2] ~= '' and v ~= ARGV[2]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
"""
# KEYS = [namespace set]; ARGV = [lex start, limit, entry hash name prefix]. A flat list of
# key, value, version, updated_at per entry, read in one atomic step.
LIST_STATE = """
local keys = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], '+', 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, k in ipairs(keys) do
  local h = redis.call('HMGET', ARGV[3] .. k, 'value', 'version', 'updated_at')
  if h[2] then
    out[#out + 1] = k
    out[#out + 1] = h[1]
    out[#out + 1] = h[2]
    out[#out + 1] = h[3]
  end
end
return out
"""


def hex_id(value: str) -> str:
    """An id as the lowercase hex of its UTF-8: an exact TAG value."""
    return value.encode("utf-8").hex()


def as_text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def glob_escape(value: str) -> str:
    """``value`` matched literally in a SCAN pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in value)


def to_document(record: MemoryRecord, key: str) -> dict[str, Any]:
    """A record as its JSON document: the shared fields plus ``agent_key``/``user_key`` (the
    ids hex-encoded, exact TAG values) right after the ids they encode."""
    doc: dict[str, Any] = {}
    for name, value in record_to_fields(record, key).items():
        doc[name] = value
        if name in ("agent_id", "user_id"):
            doc[name[:-3] + "_key"] = hex_id(value)
    return doc


def from_document(doc: dict[str, Any]) -> MemoryRecord:
    """A record from its JSON document."""
    return record_from_fields(doc)


def from_json_path(raw: Any) -> MemoryRecord | None:
    """A record from ``JSON.GET key $`` (a one-element array), or None."""
    if raw is None:
        return None
    docs = json.loads(as_text(raw))
    return from_document(docs[0]) if docs else None


def status_query(status: MemoryStatus | None, now: datetime) -> str | None:
    """The clause selecting records whose *effective* status at ``now`` is ``status``."""
    at = format_number(to_micros(now))
    pending = tag_query("status", MemoryStatus.PENDING.value)
    if status is MemoryStatus.PENDING:
        return f"{pending} @expires_at:[({at} +inf]"
    if status is MemoryStatus.REJECTED:
        rejected = tag_query("status", MemoryStatus.REJECTED.value)
        return f"({rejected} | ({pending} @expires_at:[-inf {at}]))"
    if status is MemoryStatus.APPROVED:
        return tag_query("status", MemoryStatus.APPROVED.value)
    return None


def index_create_args(index: str, prefix: str) -> list[str]:
    """``FT.CREATE`` arguments: exact TAGs for ids, type and status; numbers for the rest."""
    return [
        index, "ON", "JSON", "PREFIX", "1", prefix + "r:", "SCHEMA",
        "$.agent_key", "AS", "agent_key", "TAG", "CASESENSITIVE",
        "$.user_key", "AS", "user_key", "TAG", "CASESENSITIVE",
        "$.type", "AS", "type", "TAG", "CASESENSITIVE",
        "$.status", "AS", "status", "TAG", "CASESENSITIVE",
        "$.confidence", "AS", "confidence", "NUMERIC",
        "$.created_at", "AS", "created_at", "NUMERIC", "SORTABLE",
        "$.expires_at", "AS", "expires_at", "NUMERIC",
        "$.reviewed_at", "AS", "reviewed_at", "NUMERIC",
    ]  # fmt: skip


def state_entry(namespace: str, key: str, value: Any, version: Any, updated: Any) -> StateEntry:
    """An entry from the hash fields Redis returned."""
    return StateEntry(
        namespace=namespace,
        key=key,
        value=as_text(value),
        version=int(version),
        updated_at=from_micros(int(updated)),
    )
