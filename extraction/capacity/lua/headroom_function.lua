-- The weight of the live permits in an in-flight set (members "<id>|<weight>", scored by their
-- expiry). Where every permit weighs 1 (``unit``: a pool whose in-flight budget counts calls) it
-- is their count, O(log n); otherwise each member's weight is read, O(n): with 300 calls in
-- flight that walk was most of Redis's CPU per job. A pool switched from kv_tokens to requests
-- counts its heavier permits still in flight as one each until they end.
local function live_weight(in_flight_set, now, unit)
  if unit then return redis.call('ZCOUNT', in_flight_set, now, '+inf') end
  local in_flight = 0
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', in_flight_set, now, '+inf')) do
    in_flight = in_flight + tonumber(string.match(m, '|(%d+)$'))
  end
  return in_flight
end

-- How many claims for the pool could be granted now (0: none): not cooling down, and as many
-- as there are in-flight permits and request slots free (for a kv_tokens pool the in-flight
-- budget counts tokens, so only 0 or not 0 means anything). Loaded in front of headroom.lua,
-- release.lua and acquire.lua.
local function headroom(requests, in_flight_set, cooldown, rpm, max_in_flight, unit)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if tonumber(redis.call('GET', cooldown) or '0') > now then return 0 end
  local in_flight = live_weight(in_flight_set, now, unit)
  if in_flight >= max_in_flight then return 0 end
  local requests_free = rpm - redis.call('ZCOUNT', requests, now - 60000, '+inf')
  if requests_free <= 0 then return 0 end
  return math.min(max_in_flight - in_flight, requests_free)
end
