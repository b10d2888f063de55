-- KEYS: 1 requests zset, 2 in-flight zset, 3 cooldown
-- ARGV: 1 rpm, 2 max in flight, 3 "1" if every permit weighs 1
return headroom(KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1')
