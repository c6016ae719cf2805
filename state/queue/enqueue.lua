-- Enqueue or coalesce one action item (idempotent on its id).
-- KEYS: 1 item hash, 2 pending zset of the table, 3 tables zset, 4 ready, 5 inflight, 6 dead
-- ARGV: 1 id, 2 item JSON, 3 log2(value), 4 class, 5 now, 6 aging seconds, 7 table, 8 force
-- Returns 1 new, 0 coalesced (already pending, ready or in flight), -1 dead and not revived.
-- An item in flight may have scanned its partition before the change that enqueues it
-- again: it is marked 'again' and goes back to pending when it is acked (ack.lua).
local id = ARGV[1]
if redis.call('ZSCORE', KEYS[6], id) then
  if ARGV[8] ~= '1' then return -1 end
  redis.call('ZREM', KEYS[6], id)
  redis.call('DEL', KEYS[1])
end
if redis.call('ZSCORE', KEYS[5], id) then
  local again_enq = redis.call('HGET', KEYS[1], 'again_enq') or ARGV[5]
  local again_score = tonumber(ARGV[3]) - tonumber(again_enq) / tonumber(ARGV[6])
  redis.call('HSET', KEYS[1], 'again', '1', 'again_json', ARGV[2], 'again_enq', again_enq,
    'again_score', tostring(again_score))
  return 0
end
if redis.call('ZSCORE', KEYS[4], id) then
  return 0
end
local enq = redis.call('HGET', KEYS[1], 'enq')
local result = 0
if not enq then
  enq = ARGV[5]
  result = 1
  redis.call('HSET', KEYS[1], 'attempts', 0, 'error', '')
end
-- aging: every `aging` seconds of waiting counts like doubling the value
local score = tonumber(ARGV[3]) - tonumber(enq) / tonumber(ARGV[6])
redis.call('HSET', KEYS[1], 'json', ARGV[2], 'table', ARGV[7], 'class', ARGV[4],
  'enq', enq, 'score', tostring(score))
redis.call('ZADD', KEYS[2], score, id)
redis.call('ZADD', KEYS[3], tonumber(ARGV[4]), ARGV[7])
return result
