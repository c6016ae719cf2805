-- Extend the lease of an in-flight item held by `token`.
-- KEYS: 1 inflight, 2 leases hash
-- ARGV: 1 id, 2 token, 3 new deadline
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('ZADD', KEYS[1], 'XX', tonumber(ARGV[3]), ARGV[1])
return 1
