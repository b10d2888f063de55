-- KEYS: 1 requests zset, 2 in-flight zset, 3 cooldown ; ARGV: 1 rpm, 2 max in flight
return headroom(KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[1]), tonumber(ARGV[2]))
