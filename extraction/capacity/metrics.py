"""Provider pools' capacity as ``/metrics`` reports it (config.metrics calls ``collect``)."""

from __future__ import annotations

from django.db.backends.utils import CursorWrapper

from config.metrics import Metric, Sample
from extraction.capacity import limiter
from extraction.capacity.plan import configured_pools


def collect(_cursor: CursorWrapper) -> list[Metric]:
    """Each configured pool's limits, use and headroom in the shared limiter (Redis)."""
    up = Metric("extraction_pool_limiter_up", "1 when the pool's shared limiter (Redis) answered this scrape.")
    in_flight = Metric(
        "extraction_pool_in_flight", "Calls in flight in the pool (KV-cache tokens in flight for kv_tokens pools)."
    )
    requests = Metric("extraction_pool_requests_last_minute", "Requests admitted in the last 60 s.")
    tokens = Metric(
        "extraction_pool_tokens_last_minute", "Tokens reserved or reconciled in the last 60 s (the TPM window)."
    )
    limit = Metric("extraction_pool_limit", "The pool's configured limit per dimension (rpm, tpm, in_flight).")
    headroom = Metric(
        "extraction_pool_headroom",
        "Limit minus use per dimension; negative after a limit was lowered below current use.",
    )
    cooldown = Metric(
        "extraction_pool_cooldown_remaining_seconds",
        "Seconds left in the pool-wide cooldown after a provider 429; 0 when none.",
    )
    for pool in configured_pools():
        limits = limiter.pool_limits(pool)
        in_flight_limit = limits.in_flight_limit
        dimensions = {"rpm": limits.requests_per_minute, "tpm": limits.tokens_per_minute, "in_flight": in_flight_limit}
        for dimension, value in dimensions.items():
            limit.samples.append(Sample(value, (("pool", pool), ("dimension", dimension))))
        snapshot = limiter.snapshot(limits)
        up.samples.append(Sample(0 if snapshot is None else 1, (("pool", pool),)))
        if snapshot is None:
            continue  # no usage figures are better than made-up ones
        label = (("pool", pool),)
        in_flight.samples.append(Sample(snapshot.in_flight, label))
        requests.samples.append(Sample(snapshot.requests_last_minute, label))
        tokens.samples.append(Sample(snapshot.tokens_last_minute, label))
        cooldown.samples.append(Sample(snapshot.cooldown_remaining_seconds, label))
        used = {
            "rpm": snapshot.requests_last_minute,
            "tpm": snapshot.tokens_last_minute,
            "in_flight": snapshot.in_flight,
        }
        for dimension, value in dimensions.items():
            headroom.samples.append(Sample(value - used[dimension], (("pool", pool), ("dimension", dimension))))
    return [up, in_flight, requests, tokens, limit, headroom, cooldown]
