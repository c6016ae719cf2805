-- Lease the oldest ready item: ready -> in-flight scored by its lease deadline, atomically,
-- so an actor that dies after this call loses nothing (the lease expires, reap returns it).
-- KEYS: 1 ready, 2 inflight, 3 leases hash
-- ARGV: 1 now, 2 lease seconds, 3 token, 4 item key prefix
-- Returns {id, item hash fields...} (saves a round trip) or false.
local top = redis.call('ZPOPMIN', KEYS[1])
if #top == 0 then return false end
local id = top[1]
redis.call('ZADD', KEYS[2], tonumber(ARGV[1]) + tonumber(ARGV[2]), id)
redis.call('HSET', KEYS[3], id, ARGV[3])
redis.call('HSET', ARGV[4] .. id, 'leased_at', ARGV[1])
return {id, redis.call('HGETALL', ARGV[4] .. id)}
