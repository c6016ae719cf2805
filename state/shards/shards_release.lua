-- Hand back every shard this decider holds and leave the membership (a clean shutdown: the
-- others take the shards at their next step instead of after a lease).
-- KEYS: 1 deciders zset, 2 shard leases hash; ARGV: 1 token. Returns the shards released.
local raw = redis.call('HGETALL', KEYS[2])
local released = 0
for i = 1, #raw, 2 do
  local sp = string.find(raw[i + 1], ' ', 1, true)
  if string.sub(raw[i + 1], sp + 1) == ARGV[1] then
    redis.call('HDEL', KEYS[2], raw[i])
    released = released + 1
  end
end
redis.call('ZREM', KEYS[1], ARGV[1])
return released
