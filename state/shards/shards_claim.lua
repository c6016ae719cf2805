-- Claim this decider's fair share of the shards, renew what it holds, release any excess.
-- KEYS: 1 deciders zset (token -> membership deadline ms), 2 shard leases hash
--       (shard -> "<deadline ms> <token>").
-- ARGV: 1 token, 2 ttl ms, 3 number of shards, 4 (optional, tests) the time in ms.
-- Returns {wait_ms, shard, shard, ...}: the shards this decider now holds (ascending) and
-- the ms until the first lease held by another decider lapses (-1: none), so a survivor can
-- look again as soon as a dead decider's shards become free.
-- Time is the server's (TIME), so the deciders' clocks need not agree; ARGV[4] replaces it.
local now = ARGV[4] and tonumber(ARGV[4])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local token, ttl, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + ttl, token)
-- fair share: n // live each, one more for the first n % live tokens in sorted order
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
table.sort(members)
local rank = 0
for i, m in ipairs(members) do
  if m == token then rank = i - 1 end
end
local want = math.floor(n / #members)
if rank < n % #members then want = want + 1 end

local mine, free, wait = {}, {}, -1
local held = {}
local raw = redis.call('HGETALL', KEYS[2])
for i = 1, #raw, 2 do
  local sp = string.find(raw[i + 1], ' ', 1, true)
  held[tonumber(raw[i])] = {tonumber(string.sub(raw[i + 1], 1, sp - 1)),
                            string.sub(raw[i + 1], sp + 1)}
end
for s = 0, n - 1 do
  local h = held[s]
  if h == nil or h[1] <= now then
    table.insert(free, s)
  elseif h[2] == token then
    table.insert(mine, s)
  else
    local left = h[1] - now
    if wait < 0 or left < wait then wait = left end
  end
end
-- shards beyond the count (it was lowered) are nobody's any more
for s, h in pairs(held) do
  if s >= n and h[2] == token then redis.call('HDEL', KEYS[2], s) end
end

while #mine > want do  -- a decider joined: hand the highest shards back
  redis.call('HDEL', KEYS[2], table.remove(mine))
end
local i = 1
while #mine < want and i <= #free do  -- a decider left, or we just joined
  table.insert(mine, free[i])
  i = i + 1
end
table.sort(mine)
local out = {wait}
for _, s in ipairs(mine) do
  redis.call('HSET', KEYS[2], s, (now + ttl) .. ' ' .. token)
  table.insert(out, s)
end
return out
