"""The shared capacity budget of a provider pool (BP-2, BP-3, BP-6), in Redis.

Before a model call a worker takes — all or nothing, in ONE Lua script — a request slot
(requests per minute), a token reservation (tokens per minute: estimated prompt + max
output) and an in-flight permit, scoped to the POOL, so three pods with thirty threads each
still spend one pool's limits. After the call it releases the in-flight permit and
reconciles the reservation with the usage the provider reported; a call that timed out after
being sent keeps its whole reservation (it may have been billed).

Windows are exact sliding 60-second logs (what a provider's "per minute" means in the worst
case), kept in sorted sets with a running token sum; in-flight permits carry a TTL so a
killed worker's permits come back. Time is Redis's clock (``TIME``), the same for every pod.
A provider 429 sets a pool-wide cooldown that every acquire honours; after it the limits
ramp up linearly instead of letting every worker stampede at once.

Redis is never the record of work: losing it loses no job. When it is unreachable the
fail mode chosen in settings applies: ``closed`` (no model calls) or ``local`` (a bounded
per-process share of the pool's limits).
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger("extraction.limiter")

WINDOW_MS = 60_000

# KEYS: 1 requests zset, 2 tokens zset, 3 token sum, 4 in-flight zset, 5 cooldown, 6 ramp-start
# ARGV: 1 permit id, 2 tokens, 3 rpm, 4 tpm, 5 max in flight, 6 permit ttl ms, 7 ramp ms, 8 in-flight weight
_ACQUIRE = """
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
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)

local in_flight = 0
for _, m in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
  in_flight = in_flight + tonumber(string.match(m, '|(%d+)$'))
end
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
"""

# KEYS: 1 cooldown, 2 ramp-start ; ARGV: 1 cooldown ms
_COOLDOWN = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ends = now + tonumber(ARGV[1])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if ends > current then
  redis.call('SET', KEYS[1], ends, 'PX', tonumber(ARGV[1]) + 600000)
  redis.call('SET', KEYS[2], ends, 'PX', tonumber(ARGV[1]) + 600000)
end
return math.max(ends, current) - now
"""

# Whether a claim for the pool could be granted now: not cooling down, an in-flight permit and a
# request slot free.
_HEADROOM_FUNCTION = """
local function headroom(requests, in_flight_set, cooldown, rpm, max_in_flight)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if tonumber(redis.call('GET', cooldown) or '0') > now then return 0 end
  local in_flight = 0
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', in_flight_set, now, '+inf')) do
    in_flight = in_flight + tonumber(string.match(m, '|(%d+)$'))
  end
  if in_flight >= max_in_flight then return 0 end
  if redis.call('ZCOUNT', requests, now - 60000, '+inf') >= rpm then return 0 end
  return 1
end
"""

# KEYS: 1 requests zset, 2 in-flight zset, 3 cooldown ; ARGV: 1 rpm, 2 max in flight
_HEADROOM = _HEADROOM_FUNCTION + "return headroom(KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[1]), tonumber(ARGV[2]))"

# The release answers the headroom question too: the worker slot that releases a permit asks
# it next, before its next claim, and one round trip is half the cost of two.
# KEYS: 1 tokens zset, 2 token sum, 3 in-flight zset, 4 requests zset, 5 cooldown ;
# ARGV: 1 id, 2 reserved, 3 actual, 4 weight, 5 rpm, 6 max in flight
_RELEASE = _HEADROOM_FUNCTION + """
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
return headroom(KEYS[4], KEYS[3], KEYS[5], tonumber(ARGV[5]), tonumber(ARGV[6]))
"""

_SNAPSHOT = """
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
"""


@dataclass(frozen=True)
class PoolLimits:
    name: str
    requests_per_minute: int
    tokens_per_minute: int
    max_in_flight: int
    reserved_tokens: int
    max_output_tokens: int
    budget: str = "requests"  # or "kv_tokens": in-flight counts tokens against kv_cache_tokens
    kv_cache_tokens: int = 0


@dataclass(frozen=True)
class Permit:
    pool: str
    permit_id: str
    tokens: int
    weight: int
    local: bool = False
    limits: PoolLimits | None = None  # as granted: the release reports headroom against them


@dataclass(frozen=True)
class Denial:
    reason: str  # cooldown | rpm | tpm | in_flight | limiter_unavailable
    retry_after_seconds: float


_limits_cache: dict[str, tuple[float, PoolLimits]] = {}
_limits_lock = threading.Lock()
LIMITS_CACHE_SECONDS = 5.0


def pool_limits(name: str) -> PoolLimits:
    """The pool's limits: an admin-edited ProviderPool row wins over settings.PROVIDER_POOLS.
    Read at most every few seconds per process (limits change rarely, claims are frequent),
    by one thread at a time, so hundreds of threads do not all reload at the same instant."""
    cached = _limits_cache.get(name)
    if cached is not None and time.monotonic() - cached[0] < LIMITS_CACHE_SECONDS:
        return cached[1]
    with _limits_lock:
        cached = _limits_cache.get(name)
        if cached is not None and time.monotonic() - cached[0] < LIMITS_CACHE_SECONDS:
            return cached[1]
        limits = _load_pool_limits(name)
        _limits_cache[name] = (time.monotonic(), limits)
    return limits


def _load_pool_limits(name: str) -> PoolLimits:
    from extraction.models import ProviderPool

    row = ProviderPool.objects.filter(pk=name).first()
    if row is not None:
        return PoolLimits(name, row.requests_per_minute, row.tokens_per_minute, row.max_in_flight,
                          row.reserved_tokens, row.max_output_tokens, row.budget, row.kv_cache_tokens)
    config = settings.PROVIDER_POOLS[name]
    return PoolLimits(
        name=name,
        requests_per_minute=int(config.get("requests_per_minute", 600)),
        tokens_per_minute=int(config.get("tokens_per_minute", 600_000)),
        max_in_flight=int(config.get("max_in_flight", 30)),
        reserved_tokens=int(config.get("reserved_tokens", 6000)),
        max_output_tokens=int(config.get("max_output_tokens", 2000)),
        budget=config.get("budget", "requests"),
        kv_cache_tokens=int(config.get("kv_cache_tokens", 0)),
    )


def _keys(pool: str) -> list[str]:
    # One hash tag per pool keeps every key of a script in one Redis Cluster slot.
    base = f"cap:{{{pool}}}"
    return [f"{base}:req", f"{base}:tok", f"{base}:toksum", f"{base}:inflight", f"{base}:cooldown", f"{base}:ramp"]


class _LocalShare:
    """Fail mode ``local``: a per-process emergency budget, a fraction of the pool's limits,
    used only while Redis is unreachable."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[str, deque[float]] = {}
        self._tokens: dict[str, deque[tuple[float, int]]] = {}
        self._in_flight: dict[str, int] = {}

    def acquire(self, limits: PoolLimits, tokens: int, weight: int) -> Permit | Denial:
        share = settings.CAPACITY_LOCAL_SHARE
        now = time.monotonic()
        with self._lock:
            requests = self._requests.setdefault(limits.name, deque())
            window = self._tokens.setdefault(limits.name, deque())
            while requests and requests[0] <= now - 60:
                requests.popleft()
            while window and window[0][0] <= now - 60:
                window.popleft()
            if self._in_flight.get(limits.name, 0) + weight > max(weight, int(_in_flight_limit(limits) * share)):
                return Denial("in_flight", 1.0)
            if len(requests) + 1 > max(1, int(limits.requests_per_minute * share)):
                return Denial("rpm", max(0.1, requests[0] + 60 - now))
            if sum(t for _, t in window) + tokens > max(tokens, int(limits.tokens_per_minute * share)):
                return Denial("tpm", max(0.1, window[0][0] + 60 - now))
            requests.append(now)
            window.append((now, tokens))
            self._in_flight[limits.name] = self._in_flight.get(limits.name, 0) + weight
        return Permit(limits.name, uuid.uuid4().hex, tokens, weight, local=True)

    def release(self, permit: Permit) -> None:
        with self._lock:
            self._in_flight[permit.pool] = max(0, self._in_flight.get(permit.pool, 0) - permit.weight)


_local = _LocalShare()


def _in_flight_limit(limits: PoolLimits) -> int:
    return limits.kv_cache_tokens if limits.budget == "kv_tokens" else limits.max_in_flight


def _in_flight_weight(limits: PoolLimits, tokens: int) -> int:
    # BP-6: a local vLLM pool's scarce resource is KV cache, so a permit weighs its tokens.
    return tokens if limits.budget == "kv_tokens" else 1


def _redis():
    return cache.client.get_client(write=True)


def acquire(limits: PoolLimits, *, tokens: int) -> Permit | Denial:
    """Take a request slot, a token reservation and an in-flight permit, all or nothing."""
    _answered.headroom = None
    weight = _in_flight_weight(limits, tokens)
    permit_id = uuid.uuid4().hex
    try:
        allowed, reason, wait_ms = _redis().eval(
            _ACQUIRE, 6, *_keys(limits.name), permit_id, tokens, limits.requests_per_minute,
            limits.tokens_per_minute, _in_flight_limit(limits), int(settings.CAPACITY_PERMIT_TTL_SECONDS * 1000),
            int(settings.CAPACITY_RAMP_SECONDS * 1000), weight,
        )
    except Exception as exc:  # noqa: BLE001 - Redis down or unreachable
        return _unavailable(limits, tokens, weight, exc)
    if int(allowed) == 1:
        return Permit(limits.name, permit_id, tokens, weight, limits=limits)
    reason = reason.decode() if isinstance(reason, bytes) else str(reason)
    # An in-flight denial has no known end: retry after a short, jittered pause.
    wait = int(wait_ms) / 1000 if reason != "in_flight" else settings.CAPACITY_IN_FLIGHT_RETRY_SECONDS
    return Denial(reason, max(0.05, wait))


def _unavailable(limits: PoolLimits, tokens: int, weight: int, exc: Exception) -> Permit | Denial:
    if settings.CAPACITY_FAIL_MODE == "local":
        logger.warning("capacity limiter unreachable: using the local emergency share",
                       extra={"pool": limits.name, "error": str(exc)[:200]})
        return _local.acquire(limits, tokens, weight)
    logger.warning("capacity limiter unreachable: failing closed", extra={"pool": limits.name, "error": str(exc)[:200]})
    return Denial("limiter_unavailable", settings.CAPACITY_UNAVAILABLE_RETRY_SECONDS)


def release(permit: Permit, *, actual_tokens: int | None) -> None:
    """Give the in-flight permit back and reconcile the token reservation.

    ``actual_tokens=None`` means the usage is unknown (timed out after sending): the whole
    reservation stays counted (BP-3)."""
    if permit.local:
        _local.release(permit)
        return
    keys = _keys(permit.pool)
    limits = permit.limits or pool_limits(permit.pool)
    actual = permit.tokens if actual_tokens is None else max(0, int(actual_tokens))
    try:
        headroom = _redis().eval(_RELEASE, 5, keys[1], keys[2], keys[3], keys[0], keys[4], permit.permit_id,
                                 permit.tokens, actual, permit.weight, limits.requests_per_minute,
                                 _in_flight_limit(limits))
    except Exception:  # noqa: BLE001 - the permit's TTL returns it if this is lost
        logger.warning("could not release a capacity permit; its TTL will", extra={"pool": permit.pool})
        return
    _answered.headroom = (permit.pool, bool(headroom))


# The headroom a release in this thread reported, kept for this thread's next has_headroom()
# (a worker slot: release, validate, complete, then ask before its next claim). Any acquire or
# cooldown in the thread forgets it; other processes may have taken the room meanwhile,
# which the acquire after the claim still catches, as it does for has_headroom's own answer.
_answered = threading.local()


def forget_answered_headroom() -> None:
    """Drop this thread's kept answer: it is only as good as the moment of its release. A
    worker slot calls this when a new wake-up starts: a thread pool's thread may get its next
    wake-up seconds later, and an old "no room" would turn that wake-up away while the pool
    has room again."""
    _answered.headroom = None


def start_cooldown(pool: str, *, seconds: float) -> float:
    """A provider 429: every worker of the pool waits ``seconds`` (the longest cooldown wins).
    Returns the cooldown remaining, in seconds."""
    _answered.headroom = None
    keys = _keys(pool)
    try:
        remaining = _redis().eval(_COOLDOWN, 2, keys[4], keys[5], int(seconds * 1000))
    except Exception:  # noqa: BLE001
        return seconds
    logger.warning("provider rate limit: pool cooldown", extra={"pool": pool, "cooldown_seconds": round(seconds, 3)})
    return int(remaining) / 1000


@dataclass(frozen=True)
class PoolSnapshot:
    pool: str
    requests_last_minute: int
    tokens_last_minute: int
    in_flight: int
    cooldown_remaining_seconds: float
    limits: PoolLimits = field(repr=False)


def snapshot(limits: PoolLimits) -> PoolSnapshot | None:
    """Current use of the pool's budget (None if Redis is unreachable)."""
    try:
        requests, tokens, in_flight, cooldown_ms = _redis().eval(_SNAPSHOT, 5, *_keys(limits.name)[:5])
    except Exception:  # noqa: BLE001
        return None
    return PoolSnapshot(limits.name, int(requests), int(tokens), int(in_flight),
                        max(0.0, int(cooldown_ms) / 1000), limits)


def has_headroom(limits: PoolLimits) -> bool:
    """A cheap pre-check before claiming a job for this pool (the acquire still decides):
    not cooling down, an in-flight permit and a request slot free."""
    answered, _answered.headroom = getattr(_answered, "headroom", None), None
    if answered is not None and answered[0] == limits.name:
        return answered[1]
    keys = _keys(limits.name)
    try:
        return bool(_redis().eval(_HEADROOM, 3, keys[0], keys[3], keys[4], limits.requests_per_minute,
                                  _in_flight_limit(limits)))
    except Exception:  # noqa: BLE001
        return settings.CAPACITY_FAIL_MODE == "local"


def reset_pool(pool: str) -> None:
    """Forget a pool's window, permits and cooldown (tests, or an operator after a config change)."""
    _redis().delete(*_keys(pool))
