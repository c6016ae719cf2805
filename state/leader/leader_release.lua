-- Compare-and-delete the leader lease (a clean shutdown hands over at once).
-- KEYS: 1 leader key; ARGV: 1 token. Returns 1 when released.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
