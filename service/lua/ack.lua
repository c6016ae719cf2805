-- Finish an in-flight item. Only the lease holder (token) may ack.
-- KEYS: 1 inflight, 2 leases hash, 3 item hash
-- ARGV: 1 id, 2 token
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[3])
return 1
