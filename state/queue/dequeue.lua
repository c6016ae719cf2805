-- Lease the oldest ready item: ready -> in-flight scored by its lease deadline, atomically,
-- so an actor that dies after this call loses nothing (the lease expires, reap returns it).
-- The caller peeked the head's id first and passes its item hash: a script gets every key
-- it touches through KEYS (Redis Cluster). Another actor may have taken that head since.
-- KEYS: 1 ready, 2 inflight, 3 leases hash, 4 item hash of the peeked head
-- ARGV: 1 now, 2 lease seconds, 3 token, 4 the peeked head's id
-- Returns {id, item hash fields...} (saves a round trip), false when nothing is ready, or
-- -1 when the head is no longer the peeked one (nothing changed: peek again and retry).
local top = redis.call('ZRANGE', KEYS[1], 0, 0)
if #top == 0 then return false end
local id = top[1]
if id ~= ARGV[4] then return -1 end
redis.call('ZREM', KEYS[1], id)
redis.call('ZADD', KEYS[2], tonumber(ARGV[1]) + tonumber(ARGV[2]), id)
redis.call('HSET', KEYS[3], id, ARGV[3])
redis.call('HSET', KEYS[4], 'leased_at', ARGV[1])
return {id, redis.call('HGETALL', KEYS[4])}
