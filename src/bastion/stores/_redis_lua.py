"""Lua scripts of the Redis backend: each runs atomically on the server.

A client killed mid-call either never sent the script or the server ran all of it. Index keys
derived from the run's status or agent are built inside the scripts from the key prefix, so
the backend targets a single Redis server (not Redis Cluster).
"""

from __future__ import annotations

__all__ = [
    "APPEND",
    "COUNTER_ADD",
    "DELETE_RUN",
    "DELETE_SESSION",
    "SESSION_APPEND",
    "SESSION_STATE",
]

# KEYS: run hash, journal list.  ARGV: expected_seq, now, agent, status ('' = keep), prefix,
# run_id, entry...   Returns {1, new_last} or {0, actual_last}.
APPEND = """
local last = tonumber(redis.call('HGET', KEYS[1], 'last_seq') or '0')
if last ~= tonumber(ARGV[1]) then return {0, last} end
local now, agent, status, prefix, run_id = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
if last == 0 then
  if status == '' then status = 'running' end
  redis.call('HSET', KEYS[1], 'agent', agent, 'status', status, 'created_at', now)
  redis.call('ZADD', prefix .. 'runs', now, run_id)
  redis.call('ZADD', prefix .. 'runs:status:' .. status, now, run_id)
  redis.call('ZADD', prefix .. 'runs:agent:' .. agent, now, run_id)
elseif status ~= '' then
  local old = redis.call('HGET', KEYS[1], 'status')
  if old ~= status then
    local created = redis.call('HGET', KEYS[1], 'created_at')
    redis.call('ZREM', prefix .. 'runs:status:' .. old, run_id)
    redis.call('ZADD', prefix .. 'runs:status:' .. status, created, run_id)
    redis.call('HSET', KEYS[1], 'status', status)
  end
end
for i = 7, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
local new_last = last + #ARGV - 6
redis.call('HSET', KEYS[1], 'last_seq', new_last, 'updated_at', now)
return {1, new_last}
"""

# KEYS: session hash, entries list, ids hash, sessions zset.
# ARGV: session_id, entry_id, parent_id ('' = root), now, encoded entry, '1' = append only if
# parent_id is the head (the hash's ``head``; a session stored before it existed: the id in
# the last entry's header).  Returns {1, position} or {0, 'parent'|'taken'|'head', head}.
SESSION_APPEND = """
if ARGV[3] ~= '' and redis.call('HEXISTS', KEYS[3], ARGV[3]) == 0 then return {0, 'parent'} end
if redis.call('HEXISTS', KEYS[3], ARGV[2]) == 1 then return {0, 'taken'} end
if ARGV[6] == '1' then
  local head = redis.call('HGET', KEYS[1], 'head')
  if not head then
    head = ''
    local last = redis.call('LINDEX', KEYS[2], -1)
    if last then
      head = cjson.decode(string.sub(last, 1, string.find(last, '\\n', 1, true) - 1))[1]
    end
  end
  if head ~= ARGV[3] then return {0, 'head', head} end
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'created_at', ARGV[4], 'entry_count', 0)
  redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])
end
local position = redis.call('HINCRBY', KEYS[1], 'entry_count', 1)
redis.call('HSET', KEYS[1], 'updated_at', ARGV[4], 'head', ARGV[2])
redis.call('HSET', KEYS[3], ARGV[2], position)
redis.call('RPUSH', KEYS[2], ARGV[5])
return {1, position}
"""

# KEYS: session hash, sessions zset.  ARGV: session_id, now, state JSON.
SESSION_STATE = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'created_at', ARGV[2], 'entry_count', 0)
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
end
redis.call('HSET', KEYS[1], 'updated_at', ARGV[2], 'state', ARGV[3])
return 1
"""

# KEYS: counter hash (one field per window).  ARGV: window, amount, maximum ('' = none).
# Doubles throughout, formatted with 17 digits so the value round-trips exactly.
COUNTER_ADD = """
local value = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local new = value + tonumber(ARGV[2])
if ARGV[3] ~= '' and new > tonumber(ARGV[3]) then
  return {0, string.format('%.17g', value)}
end
local text = string.format('%.17g', new)
redis.call('HSET', KEYS[1], ARGV[1], text)
return {1, text}
"""

# Delete one run: its hash and entry list, and its place in every index.
# KEYS: run hash, entry list. ARGV: prefix, run id. Returns {1} if the run existed.
DELETE_RUN = """
local agent = redis.call('HGET', KEYS[1], 'agent')
if not agent then
  redis.call('DEL', KEYS[2])
  return {0}
end
local status = redis.call('HGET', KEYS[1], 'status')
redis.call('ZREM', ARGV[1] .. 'runs', ARGV[2])
redis.call('ZREM', ARGV[1] .. 'runs:status:' .. status, ARGV[2])
redis.call('ZREM', ARGV[1] .. 'runs:agent:' .. agent, ARGV[2])
redis.call('DEL', KEYS[1], KEYS[2])
return {1}
"""

# Delete one session. KEYS: session hash, entry list, id index, session index.
# ARGV: prefix, session id. Returns {1} if the session existed.
DELETE_SESSION = """
local existed = redis.call('EXISTS', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('ZREM', KEYS[4], ARGV[2])
return {existed}
"""
