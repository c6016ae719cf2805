-- Give in-flight items back: a nack (ARGV[1] = 'nack', one id, token checked) or the reaper
-- (ARGV[1] = 'reap', the ids the caller found with a lease deadline <= now; one that was
-- acked or renewed since is skipped). Each item's attempt count goes up; below max
-- attempts it returns to its table's pending set with its old score, at max attempts it
-- moves to the dead-letter set with its last error.
-- The caller read each item's table and passes its item hash and that table's pending set
-- (a script gets every key through KEYS); if a table changed since, nothing is changed.
-- KEYS: 1 inflight, 2 leases hash, 3 tables zset, 4 dead zset, then per item i (from 1):
--       4 + 2i - 1 its item hash, 4 + 2i its table's pending zset
-- ARGV: 1 mode, 2 now, 3 max attempts, 4 error, 5 token (nack), then per item i:
--       5 + 2i - 1 its id, 5 + 2i its table as the caller read it
-- Returns a flat list: id1, outcome1, id2, outcome2 ... (outcome 'pending' or 'dead'), or
-- -1 when an item's table is not the one read (read again and retry).
local n = (#KEYS - 4) / 2
local todo = {}
for i = 1, n do
  local id, item = ARGV[4 + 2 * i], KEYS[3 + 2 * i]
  local mine
  if ARGV[1] == 'nack' then
    mine = redis.call('HGET', KEYS[2], id) == ARGV[5]
  else
    local deadline = redis.call('ZSCORE', KEYS[1], id)
    mine = deadline and tonumber(deadline) <= tonumber(ARGV[2])
  end
  if mine then
    if (redis.call('HGET', item, 'table') or '') ~= ARGV[5 + 2 * i] then return -1 end
    table.insert(todo, i)
  end
end
local out = {}
for _, i in ipairs(todo) do
  local id, item, pending = ARGV[4 + 2 * i], KEYS[3 + 2 * i], KEYS[4 + 2 * i]
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
  local attempts = redis.call('HINCRBY', item, 'attempts', 1)
  redis.call('HSET', item, 'error', ARGV[4])
  -- a retry scans afresh, so it covers whatever enqueued it again while in flight
  redis.call('HDEL', item, 'again', 'again_json', 'again_enq', 'again_score')
  if attempts >= tonumber(ARGV[3]) then
    redis.call('ZADD', KEYS[4], tonumber(ARGV[2]), id)
    table.insert(out, id)
    table.insert(out, 'dead')
  else
    local score = tonumber(redis.call('HGET', item, 'score'))
    redis.call('ZADD', pending, score, id)
    redis.call('ZADD', KEYS[3], tonumber(redis.call('HGET', item, 'class')), ARGV[5 + 2 * i])
    table.insert(out, id)
    table.insert(out, 'pending')
  end
end
return out
