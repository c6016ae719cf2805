-- Compare-and-extend the leader lease: only the holder's token extends it.
-- KEYS: 1 leader key; ARGV: 1 token, 2 ttl ms. Returns 1 when extended, 0 otherwise.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
  return 1
end
return 0
