"""The pool budget in real Redis: all-or-nothing admission, TTL'd permits, reconciliation,
cooldown with ramp-up, and token-weighted admission for local vLLM pools."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from extraction.capacity import limiter
from extraction.capacity.limiter import Denial, Permit, PoolLimits
from tests.system import wait_for


@pytest.fixture
def pool(settings):
    settings.CAPACITY_RAMP_SECONDS = 1.0
    name = f"test-{uuid.uuid4().hex[:8]}"
    yield name
    limiter.reset_pool(name)


def _limits(name: str, **overrides) -> PoolLimits:
    values = dict(
        requests_per_minute=1000,
        tokens_per_minute=1_000_000,
        max_in_flight=10,
        reserved_tokens=100,
        max_output_tokens=50,
    )
    values.update(overrides)
    return PoolLimits(name=name, **values)


def test_a_denied_acquire_takes_nothing(pool):
    limits = _limits(pool, tokens_per_minute=1000)
    assert isinstance(limiter.acquire(limits, tokens=800), Permit)
    denial = limiter.acquire(limits, tokens=300)
    assert isinstance(denial, Denial) and denial.reason == "tpm"
    snap = limiter.snapshot(limits)
    # The refused request took no request slot, no tokens and no in-flight permit.
    assert (snap.requests_last_minute, snap.tokens_last_minute, snap.in_flight) == (1, 800, 1)


def test_concurrent_acquirers_never_exceed_the_in_flight_limit(pool):
    limits = _limits(pool, max_in_flight=7)
    granted: list[Permit] = []
    lock = threading.Lock()

    def grab():
        result = limiter.acquire(limits, tokens=10)
        if isinstance(result, Permit):
            with lock:
                granted.append(result)

    threads = [threading.Thread(target=grab) for _ in range(60)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(granted) == 7


def test_requests_per_minute_denial_says_when_a_slot_frees(pool):
    limits = _limits(pool, requests_per_minute=3)
    for _ in range(3):
        limiter.release(limiter.acquire(limits, tokens=1), actual_tokens=1)
    denial = limiter.acquire(limits, tokens=1)
    assert denial.reason == "rpm" and 55 < denial.retry_after_seconds <= 60


def test_release_reconciles_reported_usage_but_a_timeout_keeps_the_reservation(pool):
    limits = _limits(pool)
    answered = limiter.acquire(limits, tokens=1000)
    timed_out = limiter.acquire(limits, tokens=1000)
    limiter.release(answered, actual_tokens=250)
    limiter.release(timed_out, actual_tokens=None)  # sent, no answer: may have been billed (BP-3)
    snap = limiter.snapshot(limits)
    assert snap.tokens_last_minute == 1250 and snap.in_flight == 0


def test_a_killed_workers_permit_comes_back_after_its_ttl(pool, settings):
    settings.CAPACITY_PERMIT_TTL_SECONDS = 0.5
    limits = _limits(pool, max_in_flight=1)
    taken = time.monotonic()
    assert isinstance(limiter.acquire(limits, tokens=1), Permit)  # never released: the worker died
    assert limiter.acquire(limits, tokens=1).reason == "in_flight"
    # A denied acquire takes nothing, so polling with acquire is safe; it comes back, and not early.
    wait_for(
        lambda: isinstance(limiter.acquire(limits, tokens=1), Permit),
        timeout=10,
        interval=0.05,
        message="the dead worker's permit to expire",
    )
    assert time.monotonic() - taken >= settings.CAPACITY_PERMIT_TTL_SECONDS


def test_cooldown_blocks_every_caller_then_limits_ramp_up(pool, settings):
    settings.CAPACITY_RAMP_SECONDS = 2.0
    limits = _limits(pool, max_in_flight=10)
    limiter.start_cooldown(pool, seconds=0.5)
    denial = limiter.acquire(limits, tokens=1)
    assert denial.reason == "cooldown" and 0 < denial.retry_after_seconds <= 0.5
    assert not limiter.has_headroom(limits)
    # When the ramp ends, by Redis's clock: the remaining cooldown was read before this line
    # ran, so this is never early (+10 ms for Redis's rounding to whole milliseconds).
    ramp_over = time.monotonic() + denial.retry_after_seconds + settings.CAPACITY_RAMP_SECONDS + 0.01
    wait_for(
        lambda: limiter.snapshot(limits).cooldown_remaining_seconds == 0,
        timeout=10,
        interval=0.01,
        message="the cooldown to end",
    )
    # Right after the cooldown only a fraction of the in-flight limit is open again (10 % at
    # its end, under 50 % for the first 0.9 s of the 2 s ramp)...
    early = [limiter.acquire(limits, tokens=1) for _ in range(10)]
    assert 1 <= sum(isinstance(p, Permit) for p in early) < 5
    for p in early:
        if isinstance(p, Permit):
            limiter.release(p, actual_tokens=1)
    time.sleep(max(0.0, ramp_over - time.monotonic()))
    # ...and all of it once the ramp is over.
    assert sum(isinstance(limiter.acquire(limits, tokens=1), Permit) for _ in range(12)) == 10


def test_a_longer_cooldown_is_not_shortened_by_a_later_shorter_one(pool):
    limiter.start_cooldown(pool, seconds=5)
    remaining = limiter.start_cooldown(pool, seconds=1)
    assert remaining > 4


def test_kv_cache_pool_admits_by_tokens_in_flight_not_by_requests(pool):
    limits = _limits(pool, budget="kv_tokens", kv_cache_tokens=100_000, max_in_flight=1000)
    big = limiter.acquire(limits, tokens=80_000)  # an 80k-token context
    assert isinstance(big, Permit)
    assert limiter.acquire(limits, tokens=30_000).reason == "in_flight"
    small = [limiter.acquire(limits, tokens=4_000) for _ in range(5)]
    assert sum(isinstance(p, Permit) for p in small) == 5  # short documents still fit beside it
    limiter.release(big, actual_tokens=80_000)
    assert isinstance(limiter.acquire(limits, tokens=30_000), Permit)


def test_tokens_are_estimated_with_the_models_encoding_or_the_documented_fallback(settings):
    from extraction.capacity.tokens import PROMPT_OVERHEAD_TOKENS, estimate_prompt_tokens

    text = "Invoice INV-2026-001, total 119.00 EUR. " * 100
    known = estimate_prompt_tokens(text, "gpt-4o") - PROMPT_OVERHEAD_TOKENS
    unknown = estimate_prompt_tokens(text, "builtin-rules-1") - PROMPT_OVERHEAD_TOKENS
    assert unknown == -(-len(text) // 4)  # 4 characters per token
    import bpe_openai

    assert known == len(bpe_openai.encoding_for_model("gpt-4o").encode(text))  # the model's real BPE count


def test_a_release_answers_the_next_headroom_question_of_its_thread_once(pool):
    limits = _limits(pool, max_in_flight=1)
    limiter.release(limiter.acquire(limits, tokens=1), actual_tokens=1)  # room again: 0 of 1 in flight
    taken = []
    other = threading.Thread(target=lambda: taken.append(limiter.acquire(limits, tokens=1)))
    other.start()
    other.join()
    assert isinstance(taken[0], Permit)  # another slot took the room meanwhile
    assert limiter.has_headroom(limits)  # the release's answer: one round trip saved, a pre-check only
    assert not limiter.has_headroom(limits)  # asked again: Redis says the pool is full
    limiter.release(taken[0], actual_tokens=1)
    limiter.acquire(limits, tokens=1)  # an acquire in this thread forgets the release's answer
    assert not limiter.has_headroom(limits)


def test_headroom_counts_the_calls_the_pool_could_start_now(pool):
    """What the dispatcher claims at most: the in-flight permits and request slots free, none
    while the pool cools down."""
    limits = _limits(pool, max_in_flight=5, requests_per_minute=1000)
    assert limiter.headroom(limits) == 5
    permits = [limiter.acquire(limits, tokens=10) for _ in range(2)]
    assert all(isinstance(permit, Permit) for permit in permits)
    assert limiter.headroom(limits) == 3  # in-flight permits free
    assert limiter.headroom(_limits(pool, max_in_flight=5, requests_per_minute=3)) == 1  # request slots free
    limiter.release(permits[0], actual_tokens=10)
    assert limiter.headroom(limits) == 4
    limiter.start_cooldown(pool, seconds=30)
    assert limiter.headroom(limits) == 0


def test_an_unlimited_pool_grants_every_call_and_counts_nothing(pool, settings, db):
    settings.PROVIDER_POOLS = {**settings.PROVIDER_POOLS, pool: {"budget": limiter.UNLIMITED, "max_in_flight": 2}}
    limits = limiter.pool_limits(pool)
    assert limits.budget == "unlimited"
    permits = [limiter.acquire(limits, tokens=5_000_000) for _ in range(10)]

    assert [type(permit) for permit in permits] == [Permit] * 10  # past rpm, tpm and in-flight alike
    assert [permit.counted for permit in permits] == [False] * 10  # so a 429 starts no pool cooldown
    assert limiter.has_headroom(limits) is True
    assert limiter.headroom(limits) == limiter.UNCOUNTED
    assert limiter.snapshot(limits) == limiter.PoolSnapshot(pool, 0, 0, 0, 0.0, limits)
    for permit in permits:
        limiter.release(permit, actual_tokens=10)
    # Nothing of it reached Redis: the shared budget of this pool was never touched.
    redis = limiter.get_redis_connection("default")
    assert [key for key in limiter._keys(pool) if redis.exists(key)] == []


def test_scripts_go_by_hash_and_come_back_after_a_flush(pool):
    """EVALSHA: a script's text is not sent with every call, and a server that lacks it (a new
    master after a failover, a SCRIPT FLUSH) is given it again while the call still answers."""
    from django_redis import get_redis_connection

    client = get_redis_connection("default")

    def calls(command: str) -> int:
        return client.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0)

    limits = _limits(pool)
    evals, loads = calls("eval"), calls("script|load")
    first = limiter.acquire(limits, tokens=10)
    assert isinstance(first, Permit)
    limiter.release(first, actual_tokens=10)
    client.script_flush()
    second = limiter.acquire(limits, tokens=10)
    assert isinstance(second, Permit)
    assert limiter.snapshot(limits).in_flight == 1
    assert calls("eval") == evals  # never the text with the call
    assert calls("script|load") >= loads + 1  # loaded again after the flush
