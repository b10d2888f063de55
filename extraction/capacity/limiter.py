"""The shared capacity budget of a provider pool (BP-2, BP-3, BP-6), in Redis.

A worker takes a request slot (RPM), a token reservation (TPM: prompt estimate + max output)
and an in-flight permit all or nothing in ONE Lua script, scoped to the pool so every pod
spends the same limits; a call that timed out after being sent keeps its reservation. Windows
are exact sliding 60-second logs on Redis's clock; permits carry a TTL so a killed worker's come
back; a 429 sets a pool-wide cooldown, then a linear ramp so workers do not stampede. Redis is
never the record of work: when it is unreachable the fail mode is ``closed`` (no model calls)
or ``local`` (a bounded per-process share of the limits).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from django.conf import settings
from django_redis import get_redis_connection

logger = logging.getLogger("extraction.limiter")

WINDOW_MS = 60_000
# A pool budget that grants every call (ProviderPool.Budget.UNLIMITED).
UNLIMITED = "unlimited"

LUA = Path(__file__).with_name("lua")


def _lua(name: str) -> str:
    return (LUA / f"{name}.lua").read_text()


# The scripts (extraction/capacity/lua/), read once per process.
_ACQUIRE = _lua("headroom_function") + _lua("acquire")
_COOLDOWN = _lua("cooldown")
_HEADROOM = _lua("headroom_function") + _lua("headroom")
_PERMITS = _lua("permits")
_RELEASE = _lua("headroom_function") + _lua("release")
_SNAPSHOT = _lua("snapshot")


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

    @property
    def in_flight_limit(self) -> int:
        """What in flight is counted against: calls, or KV-cache tokens for a kv_tokens pool."""
        return self.kv_cache_tokens if self.budget == "kv_tokens" else self.max_in_flight


@dataclass(frozen=True)
class Permit:
    pool: str
    permit_id: str
    tokens: int
    weight: int
    local: bool = False
    limits: PoolLimits | None = None  # as granted: the release reports headroom against them
    counted: bool = True  # False for an unlimited pool's permit: nothing to give back


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
        return PoolLimits(
            name,
            row.requests_per_minute,
            row.tokens_per_minute,
            row.max_in_flight,
            row.reserved_tokens,
            row.max_output_tokens,
            row.budget,
            row.kv_cache_tokens,
        )
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
    return [
        f"{base}:req",
        f"{base}:tok",
        f"{base}:toksum",
        f"{base}:inflight",
        f"{base}:cooldown",
        f"{base}:ramp",
        f"{base}:reclaimed",  # no expiry, unlike the windows: a counter /metrics reads
    ]


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
            if self._in_flight.get(limits.name, 0) + weight > max(weight, int(limits.in_flight_limit * share)):
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


def _in_flight_weight(limits: PoolLimits, tokens: int) -> int:
    # BP-6: a local vLLM pool's scarce resource is KV cache, so a permit weighs its tokens.
    return tokens if limits.budget == "kv_tokens" else 1


def _unit_weights(limits: PoolLimits) -> str:
    """ "1" when every permit of the pool weighs 1: the scripts count them instead of summing."""
    return "0" if limits.budget == "kv_tokens" else "1"


def _redis() -> Any:
    # Any: redis-py types every command's reply as "a value or an awaitable of it".
    return get_redis_connection("default")


_SCRIPTS: dict[str, Any] = {}


def _run_script(script: str, numkeys: int, *keys_and_args: Any) -> Any:
    """EVALSHA rather than EVAL: a script's text reaches a Redis server once, not with every
    call. redis-py's Script loads it again after a NOSCRIPT (a new master after a failover,
    a SCRIPT FLUSH) and calls once more."""
    client = _redis()
    runner = _SCRIPTS.get(script)
    if runner is None:
        runner = _SCRIPTS.setdefault(script, client.register_script(script))
    return runner(keys=list(keys_and_args[:numkeys]), args=list(keys_and_args[numkeys:]), client=client)


def permit_holder(job_id: uuid.UUID, fence: int) -> str:
    """The holder a worker names for the attempt it takes a permit for: the job and the fence
    of its claim. The self-audit gives back permits whose holder is no longer RUNNING."""
    return f"{job_id}:{fence}"


def acquire(limits: PoolLimits, *, tokens: int, holder: str = "") -> Permit | Denial:
    """Take a request slot, a token reservation and an in-flight permit, all or nothing.
    ``holder`` (:func:`permit_holder`) is kept in the permit's id, so that a permit can be
    traced to its attempt."""
    _answered.headroom = None
    if limits.budget == UNLIMITED:
        return Permit(limits.name, uuid.uuid4().hex, tokens, 1, limits=limits, counted=False)
    weight = _in_flight_weight(limits, tokens)
    # The id stays unique per acquire; "/" and ":" cannot collide with the "|weight" suffix
    # the scripts parse.
    permit_id = f"{holder}/{uuid.uuid4().hex}" if holder else uuid.uuid4().hex
    try:
        allowed, reason, wait_ms = _run_script(
            _ACQUIRE,
            7,
            *_keys(limits.name),
            permit_id,
            tokens,
            limits.requests_per_minute,
            limits.tokens_per_minute,
            limits.in_flight_limit,
            int(settings.CAPACITY_PERMIT_TTL_SECONDS * 1000),
            int(settings.CAPACITY_RAMP_SECONDS * 1000),
            weight,
            _unit_weights(limits),
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
        logger.warning(
            "capacity limiter unreachable: using the local emergency share",
            extra={"pool": limits.name, "error": str(exc)[:200]},
        )
        return _local.acquire(limits, tokens, weight)
    logger.warning("capacity limiter unreachable: failing closed", extra={"pool": limits.name, "error": str(exc)[:200]})
    return Denial("limiter_unavailable", settings.CAPACITY_UNAVAILABLE_RETRY_SECONDS)


def release(permit: Permit, *, actual_tokens: int | None) -> None:
    """Give the in-flight permit back and reconcile the token reservation.

    ``actual_tokens=None`` means the usage is unknown (timed out after sending): the whole
    reservation stays counted (BP-3)."""
    if not permit.counted:
        return
    if permit.local:
        _local.release(permit)
        return
    keys = _keys(permit.pool)
    limits = permit.limits or pool_limits(permit.pool)
    actual = permit.tokens if actual_tokens is None else max(0, int(actual_tokens))
    try:
        headroom = _run_script(
            _RELEASE,
            5,
            keys[1],
            keys[2],
            keys[3],
            keys[0],
            keys[4],
            permit.permit_id,
            permit.tokens,
            actual,
            permit.weight,
            limits.requests_per_minute,
            limits.in_flight_limit,
            _unit_weights(limits),
        )
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
        remaining = _run_script(_COOLDOWN, 2, keys[4], keys[5], int(seconds * 1000))
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
    if limits.budget == UNLIMITED:
        return PoolSnapshot(limits.name, 0, 0, 0, 0.0, limits)  # nothing is counted
    try:
        requests, tokens, in_flight, cooldown_ms = _run_script(_SNAPSHOT, 5, *_keys(limits.name)[:5])
    except Exception:  # noqa: BLE001
        return None
    return PoolSnapshot(
        limits.name, int(requests), int(tokens), int(in_flight), max(0.0, int(cooldown_ms) / 1000), limits
    )


class PermitCounts(NamedTuple):
    leaked: int  # past their TTL, never released, not yet reclaimed
    reclaimed: int  # leaked permits an acquire or the self-audit took back, since the pool's counter began


def permit_counts(limits: PoolLimits) -> PermitCounts | None:
    """The pool's leaked and reclaimed in-flight permits (None if Redis is unreachable)."""
    if limits.budget == UNLIMITED:
        return PermitCounts(0, 0)  # its permits never reach Redis
    keys = _keys(limits.name)
    try:
        leaked, reclaimed = _run_script(_PERMITS, 2, keys[3], keys[6])
    except Exception:  # noqa: BLE001
        return None
    return PermitCounts(int(leaked), int(reclaimed))


def has_headroom(limits: PoolLimits) -> bool:
    """A cheap pre-check before claiming a job for this pool (the acquire still decides):
    not cooling down, an in-flight permit and a request slot free."""
    answered, _answered.headroom = getattr(_answered, "headroom", None), None
    if limits.budget == UNLIMITED:
        return True
    if answered is not None and answered[0] == limits.name:
        return answered[1]
    try:
        return bool(_run_headroom(limits))
    except Exception:  # noqa: BLE001
        return settings.CAPACITY_FAIL_MODE == "local"


def _run_headroom(limits: PoolLimits) -> int:
    """headroom.lua for the pool: how many calls it could start now (0 while it cools down)."""
    keys = _keys(limits.name)
    return int(
        _run_script(
            _HEADROOM,
            3,
            keys[0],
            keys[3],
            keys[4],
            limits.requests_per_minute,
            limits.in_flight_limit,
            _unit_weights(limits),
        )
    )


# What headroom() answers when it cannot count calls: no bound on the claim but the caller's.
UNCOUNTED = 1_000_000


def headroom(limits: PoolLimits) -> int:
    """How many calls the pool could start now: 0 while it cools down, else the in-flight
    permits and request slots free (the acquire of each still decides). ``UNCOUNTED`` for a pool
    whose in-flight budget is not counted in calls (unlimited, kv_tokens) or, under the local
    fail mode, while Redis is unreachable; 0 then under the closed fail mode."""
    if limits.budget == UNLIMITED:
        return UNCOUNTED
    try:
        free = _run_headroom(limits)
    except Exception:  # noqa: BLE001
        return UNCOUNTED if settings.CAPACITY_FAIL_MODE == "local" else 0
    return (UNCOUNTED if free else 0) if limits.budget == "kv_tokens" else free


@dataclass(frozen=True)
class HeldPermit:
    """An in-flight permit as the pool's set holds it."""

    member: str  # "<permit id>|<weight>", the set's member
    holder: str  # what acquire() was told (job:fence), "" if nothing
    expires_in_seconds: float


def held_permits(pool: str) -> list[HeldPermit] | None:
    """The pool's unexpired in-flight permits, by Redis's clock (None if Redis is unreachable)."""
    in_flight = _keys(pool)[3]
    try:
        pipe = _redis().pipeline(transaction=True)
        pipe.time()
        pipe.zrange(in_flight, 0, -1, withscores=True)
        (seconds, micros), members = pipe.execute()
    except Exception:  # noqa: BLE001 - Redis down or unreachable
        return None
    now_ms = int(seconds) * 1000 + int(micros) // 1000
    held = []
    for raw, score in members:
        member = raw.decode() if isinstance(raw, bytes) else str(raw)
        if score <= now_ms:
            continue  # expired: the next acquire drops it
        permit_id = member.rsplit("|", 1)[0]
        holder = permit_id.rsplit("/", 1)[0] if "/" in permit_id else ""
        held.append(HeldPermit(member, holder, (score - now_ms) / 1000))
    return held


def release_held_permits(pool: str, members: list[str]) -> int:
    """Give back in-flight permits whose attempts are over (the self-audit): the number of
    permits the pool actually had, and now has not. Their token reservations stay counted, as
    for a call whose usage is unknown (BP-3): the call may have been made and billed. A worker
    that still releases one later removes nothing (ZREM of a missing member)."""
    if not members:
        return 0
    keys = _keys(pool)
    released = int(_redis().zrem(keys[3], *members))
    if released:
        _redis().incrby(keys[6], released)  # /metrics' reclaimed count, as when acquire takes them back
    return released


def reset_pool(pool: str) -> None:
    """Forget a pool's window, permits and cooldown (tests, or an operator after a config change)."""
    _redis().delete(*_keys(pool))
