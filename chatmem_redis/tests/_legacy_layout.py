"""Writes conversations exactly as chatmem's two-set layout did (the release before the
one-log layout): its Lua write scripts verbatim, and its documents, which carried the
message as a ``message`` string. The upgrade tests read and write such data with today's
code; this module never imports chatmem.redis, so it cannot drift with it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from chatmem.core import Message, MessageType
from chatmem.core.backend import encode_json, to_micros

# verbatim from the two-set layout's _scripts.py (_PRELUDE, APPEND, SAVE_ALL)
_PRELUDE = r"""
local ids, seqk, sysk, msgk = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local docp, cid, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])

local function each_chunk(members, fn)
  for i = 1, #members, 1000 do
    local chunk = {}
    for j = i, math.min(i + 999, #members) do chunk[#chunk + 1] = docp .. members[j] end
    fn(chunk)
  end
end

local function drop_docs(members)
  each_chunk(members, function(chunk) redis.call('DEL', unpack(chunk)) end)
end

local function push(first)
  local n = (#ARGV - first + 1) / 2
  if n <= 0 then return end
  local seq = redis.call('INCRBY', seqk, n) - n
  for i = first, #ARGV, 2 do
    redis.call('JSON.SET', docp .. seq, '$', '{"position":' .. seq .. ',' .. ARGV[i + 1])
    if ARGV[i] == 'S' then
      redis.call('ZADD', sysk, seq, seq)
    else
      redis.call('ZADD', msgk, seq, seq)
    end
    seq = seq + 1
  end
end

local function finish()
  if redis.call('EXISTS', sysk, msgk) == 0 then
    redis.call('DEL', seqk)
    redis.call('ZREM', ids, cid)
    return
  end
  redis.call('ZADD', ids, 0, cid)
  local function apply(fn)
    for _, k in ipairs({seqk, sysk, msgk}) do fn(k) end
    for _, z in ipairs({sysk, msgk}) do
      for _, s in ipairs(redis.call('ZRANGE', z, 0, -1)) do fn(docp .. s) end
    end
  end
  if ttl > 0 then
    apply(function(k) redis.call('PEXPIRE', k, ttl) end)
  elseif redis.call('PTTL', seqk) >= 0 then
    -- written by a repository without TTL: the whole conversation persists again
    apply(function(k) redis.call('PERSIST', k) end)
  end
end

local function drop_all()
  drop_docs(redis.call('ZRANGE', sysk, 0, -1))
  drop_docs(redis.call('ZRANGE', msgk, 0, -1))
  redis.call('DEL', seqk, sysk, msgk)
end
"""

APPEND = (
    _PRELUDE
    + r"""
-- ARGV[4] = trim_to (0: none); pairs from ARGV[5]
push(5)
local trim = tonumber(ARGV[4])
if trim > 0 then
  -- Trim in batches (once the log holds twice the bound) so a steady turn deletes nothing.
  local count = redis.call('ZCARD', msgk)
  if count > 2 * trim then
    local extra = count - trim
    drop_docs(redis.call('ZRANGE', msgk, 0, extra - 1))
    redis.call('ZREMRANGEBYRANK', msgk, 0, extra - 1)
  end
end
finish()
return 1
"""
)

SAVE_ALL = (
    _PRELUDE
    + r"""
-- pairs from ARGV[4]
drop_all()
push(4)
finish()
return 1
"""
)


def _document_body(cid: str, message: Message) -> str:
    """That layout's document without its opening brace (no metadata fields configured)."""
    assert message.created_at is not None
    content = message.text or ""
    if message.message_type is MessageType.TOOL:
        content = "\n".join(r.response_data for r in message.responses)  # type: ignore[attr-defined]
    doc: dict[str, Any] = {
        "conversation_id": cid,
        "conversation_key": cid.encode("utf-8").hex(),
        "message_type": message.message_type.value,
        "content": content,
        "created_at": to_micros(message.created_at),
        "message": encode_json(message),
    }
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))[1:]


def legacy_args(
    prefix: str, cid: str, messages: Sequence[Message], ttl_ms: int
) -> tuple[list[str], list[Any]]:
    """``(KEYS, ARGV head + pairs)`` of that layout's write scripts for ``messages``."""
    tag = "{" + cid.encode("utf-8").hex() + "}"
    conv = f"{prefix}c:{tag}"
    keys = [prefix + "ids", conv + ":seq", conv + ":sys", conv + ":msg"]
    pairs: list[Any] = []
    for m in messages:
        if m.created_at is None:
            m = m.with_store_fields(created_at=datetime.now(timezone.utc), position=None)
        kind = "S" if m.message_type is MessageType.SYSTEM else "M"
        pairs += [kind, _document_body(cid, m)]
    return keys, [f"{prefix}m:{tag}:", cid, ttl_ms, *pairs]


def legacy_save_all(
    client: Any, prefix: str, cid: str, messages: Sequence[Message], ttl_ms: int = 0
) -> None:
    """Replace ``cid``'s history as the two-set layout's ``save_all`` did."""
    keys, args = legacy_args(prefix, cid, messages, ttl_ms)
    client.eval(SAVE_ALL, len(keys), *keys, *args)


def legacy_append(
    client: Any, prefix: str, cid: str, messages: Sequence[Message], ttl_ms: int = 0
) -> None:
    """Append to ``cid`` as the two-set layout's ``append`` did (no trim)."""
    keys, args = legacy_args(prefix, cid, messages, ttl_ms)
    head, pairs = args[:3], args[3:]
    client.eval(APPEND, len(keys), *keys, *head, 0, *pairs)
