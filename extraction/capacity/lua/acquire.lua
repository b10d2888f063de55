-- Take a request slot, a token reservation and an in-flight permit, all or nothing.
-- KEYS: 1 requests zset, 2 tokens zset, 3 token sum, 4 in-flight zset, 5 cooldown, 6 ramp-start,
--       7 permits reclaimed (a counter /metrics reads)
-- ARGV: 1 permit id, 2 tokens, 3 rpm, 4 tpm, 5 max in flight, 6 permit ttl ms, 7 ramp ms, 8 in-flight weight,
--       9 "1" if every permit weighs 1 (live_weight, headroom_function.lua)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id, tokens = ARGV[1], tonumber(ARGV[2])
local rpm, tpm, max_in_flight = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local ttl, ramp_ms, weight = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])

local cooldown = tonumber(redis.call('GET', KEYS[5]) or '0')
if cooldown > now then return {0, 'cooldown', cooldown - now} end

-- After a cooldown, limits ramp from 10 % to 100 % over ramp_ms.
local factor = 1.0
local ramp_start = tonumber(redis.call('GET', KEYS[6]) or '0')
if ramp_start > 0 and now < ramp_start + ramp_ms then
  factor = 0.1 + 0.9 * (now - ramp_start) / ramp_ms
end

-- Expire the windows and dead workers' permits.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 60000)
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - 60000)
if #old > 0 then
  local freed = 0
  for _, m in ipairs(old) do freed = freed + tonumber(string.match(m, '|(%d+)$')) end
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 60000)
  redis.call('DECRBY', KEYS[3], freed)
end
local reclaimed = redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
if reclaimed > 0 then redis.call('INCRBY', KEYS[7], reclaimed) end

local in_flight = live_weight(KEYS[4], now, ARGV[9] == '1')
if in_flight + weight > math.max(weight, math.floor(max_in_flight * factor)) then
  return {0, 'in_flight', 0}
end
if redis.call('ZCARD', KEYS[1]) + 1 > math.max(1, math.floor(rpm * factor)) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, 'rpm', tonumber(first[2]) + 60000 - now}
end
local used = tonumber(redis.call('GET', KEYS[3]) or '0')
if used + tokens > math.max(tokens, math.floor(tpm * factor)) then
  -- When will enough of the window expire?
  local need = used + tokens - math.floor(tpm * factor)
  local wait = 1000
  local entries = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
  local acc = 0
  for i = 1, #entries, 2 do
    acc = acc + tonumber(string.match(entries[i], '|(%d+)$'))
    if acc >= need then wait = tonumber(entries[i + 1]) + 60000 - now; break end
  end
  return {0, 'tpm', wait}
end

redis.call('ZADD', KEYS[1], now, id)
redis.call('ZADD', KEYS[2], now, id .. '|' .. tokens)
redis.call('INCRBY', KEYS[3], tokens)
redis.call('ZADD', KEYS[4], now + ttl, id .. '|' .. weight)
for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], 120000 + ttl) end
return {1, 'ok', 0}
