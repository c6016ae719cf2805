-- Lease a batch at once: the head of the ready set and the ids behind it that the caller
-- peeked and chose (one table's run, icefloe.state.queue.take_batch), each with its own token, or
-- nothing: two actors polling together never split a batch between them.
-- KEYS: 1 ready, 2 inflight, 3 leases hash, 4.. the item hash of each chosen id, in order
-- ARGV: 1 now, 2 lease seconds, then per chosen id: its id, its token
-- Returns {{id, item hash fields...}, ...}, false when nothing is ready, or -1 when the head
-- is no longer the first chosen id (nothing changed: peek again and retry).
local top = redis.call('ZRANGE', KEYS[1], 0, 0)
if #top == 0 then return false end
if top[1] ~= ARGV[3] then return -1 end
local deadline = tonumber(ARGV[1]) + tonumber(ARGV[2])
local out = {}
for i = 3, #ARGV, 2 do
  local id, token, hash = ARGV[i], ARGV[i + 1], KEYS[4 + (i - 3) / 2]
  if not redis.call('ZSCORE', KEYS[1], id) then break end  -- taken since the peek: stop
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZADD', KEYS[2], deadline, id)
  redis.call('HSET', KEYS[3], id, token)
  redis.call('HSET', hash, 'leased_at', ARGV[1])
  table.insert(out, {id, redis.call('HGETALL', hash)})
end
return out
