-- How many claims for the pool could be granted now (0: none): not cooling down, and as many
-- as there are in-flight permits and request slots free (for a kv_tokens pool the in-flight
-- budget counts tokens, so only 0 or not 0 means anything). Loaded in front of headroom.lua and
-- release.lua.
local function headroom(requests, in_flight_set, cooldown, rpm, max_in_flight)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if tonumber(redis.call('GET', cooldown) or '0') > now then return 0 end
  local in_flight = 0
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', in_flight_set, now, '+inf')) do
    in_flight = in_flight + tonumber(string.match(m, '|(%d+)$'))
  end
  if in_flight >= max_in_flight then return 0 end
  local requests_free = rpm - redis.call('ZCOUNT', requests, now - 60000, '+inf')
  if requests_free <= 0 then return 0 end
  return math.min(max_in_flight - in_flight, requests_free)
end
