-- Finish an in-flight item. Only the lease holder (token) may ack.
-- KEYS: 1 inflight, 2 leases hash, 3 item hash, 4 tables zset
-- ARGV: 1 id, 2 token, 3 pending key prefix
-- Returns 0 not the holder, 1 done, 2 done but enqueued again while in flight: the item
-- is back in its table's pending set as fresh work (attempts 0).
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
if redis.call('HGET', KEYS[3], 'again') == '1' then
  local f = redis.call('HMGET', KEYS[3], 'again_json', 'again_enq', 'again_score', 'table',
    'class')
  redis.call('HSET', KEYS[3], 'json', f[1], 'enq', f[2], 'score', f[3], 'attempts', 0,
    'error', '')
  redis.call('HDEL', KEYS[3], 'again', 'again_json', 'again_enq', 'again_score', 'leased_at')
  redis.call('ZADD', ARGV[3] .. f[4], tonumber(f[3]), ARGV[1])
  redis.call('ZADD', KEYS[4], tonumber(f[5]), f[4])
  return 2
end
redis.call('DEL', KEYS[3])
return 1
