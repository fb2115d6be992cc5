"""Lua scripts: each write is one atomic script (one round trip).

Write scripts take ``KEYS = [ids, seq, log, pend, pending]`` (see ``_schema``) and
``ARGV = [doc_prefix, conversation_id, ttl_ms, defer, ...]``; new messages travel as triples
``(kind, body, entry)``: kind is ``S`` for system messages, body the index document JSON
without its opening brace and position, entry the log entry without its position (the
script prepends the server-assigned position to the entry, and the position to the body
where it writes the document: at once on a cluster, at the next ``FLUSH`` on one node).

The history lives in the log alone: one sorted set per conversation, member = entry,
score = position, plus ``SYSTEM_OFFSET`` for system messages so that they sort after every
other message. Reads are then plain ``ZRANGE``s, no script: the last ``k + s`` members are
the last ``k`` other messages and all ``s`` system messages. The documents only feed the
search index. Every write ends in ``finish()``: an emptied conversation is removed from the
id set; a live one is listed (the append, straight-line code with nothing but its writes on
the common path, lists only a conversation its sequence starts, and checks no existence:
the log it just wrote exists) and, with a TTL, every key it owns
(counter, log, pending documents, every document) has one expiry, so a conversation
expires whole, never head first (and no document outlives its log to fill a search's
``LIMIT``).

That expiry is never less than one TTL after the last write, and at most ``TTL_SLACK`` more:
a write that finds it due within one TTL sets every key to TTL + slack (touching every
document, O(H): 37 ms at H = 10,000, which every write used to pay), so that happens once per
slack of activity; the writes in between give only the keys they created the
conversation's expiry.

Deferred documents: indexing a document in RediSearch costs the server several times what
the rest of an append does, so with ``defer`` (the conversation's ``{H}``; ``''`` on a
cluster) a write stores each new document in the conversation's ``pend`` hash and lists
``{H}`` in the ``pending`` set instead. ``FLUSH``, which every search runs first, writes
the pending documents in bounded atomic batches. The pending hash only ever holds
positions still in the log: whatever removes a message from the log (trim, edit, replace,
delete) removes its pending document in the same script.
"""

from __future__ import annotations

SYSTEM_OFFSET = 2**50
"""Added to a system message's position for its score (positions stay below it; scores
stay exact doubles below 2**53)."""

TTL_SLACK = 0.1
"""How much past one TTL after its last write a conversation may live (as a fraction of the
TTL): the price of refreshing every key once per slack of activity instead of every write."""

_OFFSET = "local OFFSET = " + str(SYSTEM_OFFSET) + "\n"

_DROP_DOCS = r"""
-- a log entry starts with its position
local function pos(entry) return string.match(entry, '^%d+') end

-- the documents of these log entries, written or pending (in chunks: unpack's limit)
local function drop_docs(entries)
  for i = 1, #entries, 1000 do
    local docs, fields = {}, {}
    for j = i, math.min(i + 999, #entries) do
      local p = pos(entries[j])
      docs[#docs + 1] = docp .. p
      fields[#fields + 1] = p
    end
    redis.call('DEL', unpack(docs))
    redis.call('HDEL', pendk, unpack(fields))
  end
end
"""

_APPLY = r"""
  -- fn on every key the conversation owns (O(H): only when its expiry changes)
  local function apply(fn)
    fn(seqk)
    fn(logk)
    fn(pendk)
    for _, e in ipairs(redis.call('ZRANGE', logk, 0, -1)) do
      fn(docp .. string.match(e, '^%d+'))
    end
  end
"""

_EXPIRY = (
    r"""
  -- the conversation's one expiry (see the module docstring); written: the documents this
  -- write indexed at once (a cluster)
  if ttl > 0 then
    local left = redis.call('PTTL', logk)  -- time is frozen within a script: exact
    if left < ttl then  -- due within one TTL (or no expiry yet): every key, once
"""
    + _APPLY
    + r"""
      local full = ttl + math.floor(ttl * TTL_SLACK)
      apply(function(k) redis.call('PEXPIRE', k, full) end)
    else  -- the keys this write created take the conversation's expiry
      redis.call('PEXPIRE', seqk, left)
      redis.call('PEXPIRE', pendk, left)
      for _, k in ipairs(written) do redis.call('PEXPIRE', k, left) end
    end
  elseif redis.call('PTTL', seqk) >= 0 then
    -- written by a repository without TTL: the whole conversation persists again
"""
    + _APPLY
    + r"""
    apply(function(k) redis.call('PERSIST', k) end)
  end
"""
)

_KEYS = (
    r"""
local ids, seqk, logk, pendk, pending = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local docp, cid, ttl, defer = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local TTL_SLACK = """
    + repr(TTL_SLACK)
    + "\n"
    + _OFFSET
)

_WRITE = r"""
  -- the n triples from ARGV[first] at the next n positions; the documents written at once
  -- on a cluster (listed in written), else stored as sent (FLUSH adds the position)
  local seq = redis.call('INCRBY', seqk, n) - n
  local start = seq
  local pend = {}
  for i = first, #ARGV, 3 do
    local score = seq
    if ARGV[i] == 'S' then score = string.format('%.0f', seq + OFFSET) end
    redis.call('ZADD', logk, score, seq .. ' ' .. ARGV[i + 2])
    if defer == '' then
      local doc = docp .. seq
      redis.call('JSON.SET', doc, '$', '{"position":' .. seq .. ',' .. ARGV[i + 1])
      written[#written + 1] = doc
    else
      pend[#pend + 1] = seq; pend[#pend + 1] = ARGV[i + 1]
      if #pend == 2000 then redis.call('HSET', pendk, unpack(pend)); pend = {} end
    end
    seq = seq + 1
  end
  if defer ~= '' then
    if #pend > 0 then redis.call('HSET', pendk, unpack(pend)) end
    redis.call('SADD', pending, defer)
  end
"""

_PRELUDE = (
    _KEYS
    + r"""
local written = {}  -- documents this script wrote at once (no defer: a cluster)
"""
    + _DROP_DOCS
    + r"""
local function push(first)
  local n = (#ARGV - first + 1) / 3
  if n <= 0 then return 0 end
"""
    + _WRITE
    + r"""
  return start
end

-- after a replace or an edit: an emptied conversation is removed, a live one listed
local function finish()
  if redis.call('EXISTS', logk) == 0 then
    redis.call('DEL', seqk, pendk)
    redis.call('ZREM', ids, cid)
    return
  end
  redis.call('ZADD', ids, 0, cid)
"""
    + _EXPIRY
    + r"""end

local function drop_all()
  drop_docs(redis.call('ZRANGE', logk, 0, -1))
  redis.call('DEL', seqk, logk, pendk)
end
"""
)


def _append(first: int, result: str) -> str:
    """The append script, straight-line (no helper built on the common path): triples from
    ``ARGV[first]``, at least one (callers never append nothing); ``ARGV[5]`` = trim_to (0:
    none); returns ``result``. Its log exists afterwards, so it checks no existence, and it
    lists the conversation only when its sequence starts."""
    return (
        _KEYS
        + f"local first = {first}\n"
        + r"""
local n = (#ARGV - first + 1) / 3
local written = {}
"""
        + _WRITE
        + r"""
if start == 0 then redis.call('ZADD', ids, 0, cid) end
local trim = tonumber(ARGV[5])
if trim > 0 then
  -- Trim in batches (once the log holds twice the bound) so a steady turn deletes nothing.
  -- The other messages sort first: ranks 0 .. extra-1 are the oldest of them.
  local count = redis.call('ZCOUNT', logk, '-inf', '(' .. OFFSET)
  if count > 2 * trim then
"""
        + _DROP_DOCS
        + r"""
    local extra = count - trim
    drop_docs(redis.call('ZRANGE', logk, 0, extra - 1))
    redis.call('ZREMRANGEBYRANK', logk, 0, extra - 1)
  end
end
"""
        + _EXPIRY
        + "return "
        + result
        + "\n"
    )


APPEND = _append(6, "start")
"""Append; returns the first new position."""

APPEND_AND_TAIL = _append(7, "{start, redis.call('ZRANGE', logk, -tonumber(ARGV[6]), -1)}")
"""APPEND, then the log's newest ``ARGV[6]`` entries (what a window read takes: the system
messages sort last); triples from ``ARGV[7]``. Returns ``{the first new position, entries}``."""

SAVE_ALL = (
    _PRELUDE
    + r"""
-- triples from ARGV[5]. Returns the first new position.
drop_all()
local start = push(5)
finish()
return start
"""
)

DELETE = (
    _PRELUDE
    + r"""
drop_all()
redis.call('ZREM', ids, cid)
return 1
"""
)

EDIT = (
    _PRELUDE
    + r"""
-- ARGV[5] = delete non-system below this position ('' : no), ARGV[6] = n positions to
-- delete, ARGV[7 .. 6+n] = those positions, then triples
local below = ARGV[5]
local ndel = tonumber(ARGV[6])
for i = 7, 6 + ndel do
  local s = ARGV[i]
  local sys = string.format('%.0f', tonumber(s) + OFFSET)
  local gone = redis.call('ZREMRANGEBYSCORE', logk, sys, sys)
  if gone + redis.call('ZREMRANGEBYSCORE', logk, s, s) > 0 then
    redis.call('DEL', docp .. s)
    redis.call('HDEL', pendk, s)
  end
end
if below ~= '' then
  local bound = '(' .. below  -- below every system score
  drop_docs(redis.call('ZRANGE', logk, '-inf', bound, 'BYSCORE'))
  redis.call('ZREMRANGEBYSCORE', logk, '-inf', bound)
end
push(7 + ndel)
finish()
return 1
"""
)

IDS_PAGE = r"""
-- KEYS = [ids]; ARGV = [after ('' : from the start), limit, conversation key prefix]
-- Returns {more, id...}. Ids whose conversation expired (TTL) are pruned on the way.
local after, limit, cprefix = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local start = '-'
if after ~= '' then start = '(' .. after end
local out, more = {0}, 0
local function hex(s)
  return (s:gsub('.', function(c) return string.format('%02x', string.byte(c)) end))
end
while more == 0 do
  local batch = redis.call('ZRANGE', KEYS[1], start, '+', 'BYLEX', 'LIMIT', 0, limit + 1)
  for _, id in ipairs(batch) do
    if redis.call('EXISTS', cprefix .. '{' .. hex(id) .. '}:seq') == 1 then
      if #out - 1 == limit then more = 1; break end
      out[#out + 1] = id
    else
      redis.call('ZREM', KEYS[1], id)
    end
    start = '(' .. id
  end
  if #batch < limit + 1 then break end
end
out[1] = more
return out
"""

FLUSH = r"""
-- KEYS = [pending]; ARGV = [conversation prefix, document prefix, budget]. Writes at most
-- about budget pending documents (whole conversations while they fit, then part of one),
-- each with its conversation's expiry; returns how many conversations still wait.
local convp, docp, budget = ARGV[1], ARGV[2], tonumber(ARGV[3])
local done = 0
while done < budget do
  local tag = redis.call('SPOP', KEYS[1])
  if not tag then break end
  local pendk = convp .. tag .. ':pend'
  local items
  local part = redis.call('HLEN', pendk) > budget - done
  if part then
    items = redis.call('HRANDFIELD', pendk, budget - done, 'WITHVALUES')
    redis.call('SADD', KEYS[1], tag)  -- the rest waits for the next call
  else
    items = redis.call('HGETALL', pendk)
  end
  local clock = convp .. tag .. ':seq'  -- the conversation's expiry
  local expiry = redis.pcall('PEXPIRETIME', clock)  -- Redis 7+
  local ttl = -1
  if type(expiry) ~= 'number' then ttl = redis.call('PTTL', clock) end
  for i = 1, #items, 2 do
    local doc = docp .. tag .. ':' .. items[i]
    local body = items[i + 1]
    -- a body as appends send it; a whole document (starting with '{') from releases that
    -- built it in the append
    if string.byte(body, 1) ~= 123 then body = '{"position":' .. items[i] .. ',' .. body end
    redis.call('JSON.SET', doc, '$', body)
    if type(expiry) == 'number' and expiry > 0 then redis.call('PEXPIREAT', doc, expiry)
    elseif ttl > 0 then redis.call('PEXPIRE', doc, ttl) end
    if part then redis.call('HDEL', pendk, items[i]) end
  end
  if not part then redis.call('DEL', pendk) end
  done = done + #items / 2
end
return redis.call('SCARD', KEYS[1])
"""

SEARCH = r"""
-- ARGV = [SEARCH or INFO, arguments...]: run here so the reply has one shape on RESP2 and
-- RESP3 clients alike.
if ARGV[1] ~= 'SEARCH' and ARGV[1] ~= 'INFO' then return redis.error_reply('bad command') end
return redis.call('FT.' .. ARGV[1], unpack(ARGV, 2))
"""

SEARCH_MESSAGES = (
    # read-only; on a cluster it runs on one master (KEYS = [that master's index name]) and
    # reads the hits' keys there, in other slots of the same node, undeclared: Redis allows
    # that (explicitly so with this flag) and fails, never skips, a key of another node
    "#!lua flags=no-writes,allow-cross-slot-keys\n"
    + _OFFSET
    + r"""
-- ARGV = [doc_prefix, conversation_prefix, FT.SEARCH arguments (NOCONTENT)...]
-- Returns {tag, entry, tag, entry, ...} in the search's order: each hit's conversation tag
-- ({H}) and its log entry; a hit whose message is gone (trimmed, expired) is skipped.
local docp, convp = ARGV[1], ARGV[2]
local reply = redis.call('FT.SEARCH', unpack(ARGV, 3))
local out = {}
for k = 2, #reply do
  local tag, p = string.match(string.sub(reply[k], #docp + 1), '^({%x+}):(%d+)$')
  if tag then
    local log = convp .. tag .. ':log'
    local found = redis.call('ZRANGE', log, p, p, 'BYSCORE')
    if #found == 0 then
      local sys = string.format('%.0f', tonumber(p) + OFFSET)
      found = redis.call('ZRANGE', log, sys, sys, 'BYSCORE')
    end
    if #found > 0 then out[#out + 1] = tag; out[#out + 1] = found[1] end
  end
end
return out
"""
)
