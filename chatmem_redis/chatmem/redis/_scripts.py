"""Lua scripts: each write is one atomic script, each read one script (one round trip).

Write scripts take ``KEYS = [ids, seq, sys, msg]`` (see ``_schema``) and
``ARGV = [doc_prefix, conversation_id, ttl_ms, ...]``; new messages travel as pairs
``(kind, body)`` where kind is ``S`` for system messages and body is the document JSON
without its opening brace (the script prepends the server-assigned position).

Every write ends in ``finish()``: an emptied conversation is removed from the id set; a
live one is listed and, with a TTL, every key it owns (counter, both sets, every document)
gets the same expiry in the same script, so a conversation expires whole, never head first.
"""

from __future__ import annotations

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
-- ARGV[4] = delete non-system below this position ('' : no), ARGV[5] = n positions to
-- delete, ARGV[6 .. 5+n] = those positions, then pairs
local below = ARGV[4]
local ndel = tonumber(ARGV[5])
for i = 6, 5 + ndel do
  local s = ARGV[i]
  if redis.call('ZREM', sysk, s) + redis.call('ZREM', msgk, s) > 0 then
    redis.call('DEL', docp .. s)
  end
end
if below ~= '' then
  local bound = '(' .. below
  drop_docs(redis.call('ZRANGE', msgk, '-inf', bound, 'BYSCORE'))
  redis.call('ZREMRANGEBYSCORE', msgk, '-inf', bound)
end
push(6 + ndel)
finish()
return 1
"""
)

READ = r"""
-- KEYS = [sys, msg]; ARGV = [doc_prefix, sys_tail, msg_tail, total_tail]
-- A tail of -1 means all; the result is the documents, oldest first, one a line.
local docp = ARGV[1]
local function tail(z, n)
  if n < 0 then return redis.call('ZRANGE', z, 0, -1) end
  if n == 0 then return {} end
  return redis.call('ZRANGE', z, -n, -1)
end
local a, b = tail(KEYS[1], tonumber(ARGV[2])), tail(KEYS[2], tonumber(ARGV[3]))
local seqs, i, j = {}, 1, 1
while i <= #a or j <= #b do
  if j > #b or (i <= #a and tonumber(a[i]) < tonumber(b[j])) then
    seqs[#seqs + 1] = a[i]; i = i + 1
  else
    seqs[#seqs + 1] = b[j]; j = j + 1
  end
end
local total = tonumber(ARGV[4])
local from = 1
if total >= 0 and #seqs > total then from = #seqs - total + 1 end
local out = {}
for k = from, #seqs, 1000 do
  local keys = {}
  for m = k, math.min(k + 999, #seqs) do keys[#keys + 1] = docp .. seqs[m] end
  keys[#keys + 1] = '.'
  for _, d in ipairs(redis.call('JSON.MGET', unpack(keys))) do
    if d then out[#out + 1] = d end
  end
end
-- One bulk string, one document a line (RedisJSON escapes every newline inside strings):
-- clients parse one reply instead of one per message.
return table.concat(out, '\n')
"""

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

SEARCH = r"""
-- ARGV = [SEARCH or INFO, arguments...]: run here so the reply has one shape on RESP2 and
-- RESP3 clients alike.
if ARGV[1] ~= 'SEARCH' and ARGV[1] ~= 'INFO' then return redis.error_reply('bad command') end
return redis.call('FT.' .. ARGV[1], unpack(ARGV, 2))
"""
