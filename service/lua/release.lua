-- Give in-flight items back: a nack (ARGV[1] = 'nack', one id, token checked) or the reaper
-- (ARGV[1] = 'reap', every item whose lease deadline is <= now). Each item's attempt count
-- goes up; below max attempts it returns to its table's pending set with its old score,
-- at max attempts it moves to the dead-letter set with its last error.
-- KEYS: 1 inflight, 2 leases hash, 3 tables zset, 4 dead zset
-- ARGV: 1 mode, 2 now, 3 max attempts, 4 item key prefix, 5 pending key prefix, 6 error,
--       7 id (nack), 8 token (nack)
-- Returns a flat list: id1, outcome1, id2, outcome2 ... (outcome 'pending' or 'dead').
local ids
if ARGV[1] == 'nack' then
  if redis.call('HGET', KEYS[2], ARGV[7]) ~= ARGV[8] then return {} end
  ids = {ARGV[7]}
else
  ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[2], 'LIMIT', 0, 500)
end
local out = {}
for _, id in ipairs(ids) do
  local item = ARGV[4] .. id
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
  local attempts = redis.call('HINCRBY', item, 'attempts', 1)
  redis.call('HSET', item, 'error', ARGV[6])
  -- a retry scans afresh, so it covers whatever enqueued it again while in flight
  redis.call('HDEL', item, 'again', 'again_json', 'again_enq', 'again_score')
  if attempts >= tonumber(ARGV[3]) then
    redis.call('ZADD', KEYS[4], tonumber(ARGV[2]), id)
    table.insert(out, id)
    table.insert(out, 'dead')
  else
    local tbl = redis.call('HGET', item, 'table')
    local score = tonumber(redis.call('HGET', item, 'score'))
    redis.call('ZADD', ARGV[5] .. tbl, score, id)
    redis.call('ZADD', KEYS[3], tonumber(redis.call('HGET', item, 'class')), tbl)
    table.insert(out, id)
    table.insert(out, 'pending')
  end
end
return out
