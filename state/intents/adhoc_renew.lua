-- Extend an ad-hoc run's lease, only while it still holds (an expired one may have its
-- files swept as an abandoned run's: it must not come back to life and commit them).
-- KEYS: 1 adhoc hash (token -> deadline)
-- ARGV: 1 token, 2 now, 3 new deadline
local deadline = redis.call('HGET', KEYS[1], ARGV[1])
if not deadline or tonumber(deadline) < tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
