-- Record files an ad-hoc run (icefloe optimize) is about to write, under its lease: only
-- while the run's deadline holds may it add to its intent (so a record never outlives the
-- right to write, as for an actor's attempt: intent.lua).
-- KEYS: 1 adhoc hash (token -> deadline), 2 intents hash (token -> JSON)
-- ARGV: 1 item id, 2 token, 3 table, 4 now, 5 JSON list of paths, 6 JSON list of prefixes
-- Returns 1 recorded, 0 the lease is gone.
local deadline = redis.call('HGET', KEYS[1], ARGV[2])
if not deadline or tonumber(deadline) < tonumber(ARGV[4]) then return 0 end
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
