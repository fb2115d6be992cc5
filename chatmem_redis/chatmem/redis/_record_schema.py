"""The Lua scripts of ``RedisMemoryRecordRepository``: each runs atomically on the server,
so a dedup race or a review race has exactly one winner. Timestamps are UTC microseconds.
"""

# KEYS = [dedup key, record key]; ARGV = [id, document]. Returns the existing id or nil.
ADD = """
local existing = redis.call('GET', KEYS[1])
if existing then return existing end
redis.call('JSON.SET', KEYS[2], '$', ARGV[2])
redis.call('SET', KEYS[1], ARGV[1])
return false
"""
# KEYS = [record key]; ARGV = [status JSON, now, reviewer JSON, reason JSON].
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
