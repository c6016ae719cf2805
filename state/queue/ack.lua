-- Finish an in-flight item. Only the lease holder (token) may ack.
-- KEYS: 1 inflight, 2 leases hash, 3 item hash, 4 tables zset, 5 pending zset of the
--       item's table as the caller read it (a script gets every key through KEYS)
-- ARGV: 1 id, 2 token, 3 the item's table as the caller read it
-- Returns 0 not the holder, 1 done, 2 done but enqueued again while in flight: the item
-- is back in its table's pending set as fresh work (attempts 0); -1 the item's table is
-- not the one read (nothing changed: read it again and retry).
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
local again = redis.call('HGET', KEYS[3], 'again') == '1'
if again and redis.call('HGET', KEYS[3], 'table') ~= ARGV[3] then return -1 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
if again then
  local f = redis.call('HMGET', KEYS[3], 'again_json', 'again_enq', 'again_score', 'class')
  redis.call('HSET', KEYS[3], 'json', f[1], 'enq', f[2], 'score', f[3], 'attempts', 0,
    'error', '')
  redis.call('HDEL', KEYS[3], 'again', 'again_json', 'again_enq', 'again_score', 'leased_at')
  redis.call('ZADD', KEYS[5], tonumber(f[3]), ARGV[1])
  redis.call('ZADD', KEYS[4], tonumber(f[4]), ARGV[3])
  return 2
end
redis.call('DEL', KEYS[3])
return 1
