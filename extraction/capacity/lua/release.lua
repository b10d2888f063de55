-- Release a permit, reconcile the reservation with the actual usage, and answer the headroom
-- question too: the worker slot that releases a permit asks it next, before its next claim,
-- so one round trip serves both.
-- KEYS: 1 tokens zset, 2 token sum, 3 in-flight zset, 4 requests zset, 5 cooldown
-- ARGV: 1 id, 2 reserved, 3 actual, 4 weight, 5 rpm, 6 max in flight, 7 "1" if every permit weighs 1
redis.call('ZREM', KEYS[3], ARGV[1] .. '|' .. ARGV[4])
local reserved, actual = tonumber(ARGV[2]), tonumber(ARGV[3])
if actual ~= reserved then
  local member = ARGV[1] .. '|' .. reserved
  local score = redis.call('ZSCORE', KEYS[1], member)
  if score then
    redis.call('ZREM', KEYS[1], member)
    redis.call('ZADD', KEYS[1], score, ARGV[1] .. '|' .. actual)
    redis.call('INCRBY', KEYS[2], actual - reserved)
  end
end
return headroom(KEYS[4], KEYS[3], KEYS[5], tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7] == '1')
