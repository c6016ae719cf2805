-- Move the best pending item of one table to the ready set (the fair scheduler chose it).
-- KEYS: 1 pending zset of the table, 2 tables zset, 3 ready zset, 4 sequence counter
-- ARGV: 1 table
-- Returns the item id, or false when the table has nothing pending.
local top = redis.call('ZPOPMAX', KEYS[1])
if #top == 0 then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return false
end
local seq = redis.call('INCR', KEYS[4])
redis.call('ZADD', KEYS[3], seq, top[1])
if redis.call('ZCARD', KEYS[1]) == 0 then
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return top[1]
