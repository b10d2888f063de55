-- Current use of the pool's budget: requests and tokens in the window, calls in flight,
-- cooldown remaining.
-- KEYS: 1 requests zset, 2 tokens zset, 3 token sum, 4 in-flight zset, 5 cooldown
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local in_flight = 0
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], now, '+inf')) do
  in_flight = in_flight + tonumber(string.match(m, '|(%d+)$'))
end
local tokens = 0
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], now - 60000, '+inf')) do
  tokens = tokens + tonumber(string.match(m, '|(%d+)$'))
end
return {redis.call('ZCOUNT', KEYS[1], now - 60000, '+inf'), tokens, in_flight,
        tonumber(redis.call('GET', KEYS[5]) or '0') - now}
