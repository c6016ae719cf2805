-- Record files an attempt is about to write, under its lease: only the lease holder
-- (token) may add to its intent, so a record never outlives the right to write. An
-- actor's lease is its queue item's (the leases hash); an ad-hoc run's (icefloe optimize,
-- service/actor/adhoc.py) is a deadline of its own in the ad-hoc hash.
-- KEYS: 1 leases hash, 2 intents hash (token -> JSON), 3 ad-hoc hash (token -> deadline)
-- ARGV: 1 item id, 2 token, 3 table, 4 now, 5 JSON list of paths, 6 JSON list of prefixes,
--       7 '1' for an ad-hoc run
-- Returns 1 recorded, 0 not the holder (or the ad-hoc lease expired).
if ARGV[7] == '1' then
  local deadline = redis.call('HGET', KEYS[3], ARGV[2])
  if not deadline or tonumber(deadline) < tonumber(ARGV[4]) then return 0 end
elseif redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then
  return 0
end
local raw = redis.call('HGET', KEYS[2], ARGV[2])
local intent
if raw then
  intent = cjson.decode(raw)
else
  intent = {item = ARGV[1], token = ARGV[2], table = ARGV[3], started = tonumber(ARGV[4]),
    paths = {}, prefixes = {}}
end
for _, p in ipairs(cjson.decode(ARGV[5])) do table.insert(intent.paths, p) end
for _, p in ipairs(cjson.decode(ARGV[6])) do table.insert(intent.prefixes, p) end
redis.call('HSET', KEYS[2], ARGV[2], cjson.encode(intent))
return 1
