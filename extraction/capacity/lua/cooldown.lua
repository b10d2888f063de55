-- Start (or extend) the pool-wide cooldown after a provider 429, and the ramp after it.
-- KEYS: 1 cooldown, 2 ramp-start ; ARGV: 1 cooldown ms
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ends = now + tonumber(ARGV[1])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if ends > current then
  redis.call('SET', KEYS[1], ends, 'PX', tonumber(ARGV[1]) + 600000)
  redis.call('SET', KEYS[2], ends, 'PX', tonumber(ARGV[1]) + 600000)
end
return math.max(ends, current) - now
