-- The pool's leaked permits: past their TTL, never released, not yet reclaimed by an acquire
-- (their holder died or overran its attempt); and the count of those reclaimed so far.
-- KEYS: 1 in-flight zset, 2 permits reclaimed
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. now), tonumber(redis.call('GET', KEYS[2]) or '0')}
