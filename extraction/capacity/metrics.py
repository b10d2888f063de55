"""Provider pools' capacity as ``/metrics`` reports it (config.metrics calls ``collect``)."""

from __future__ import annotations

from django.db.backends.utils import CursorWrapper
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from extraction.capacity import limiter
from extraction.capacity.plan import configured_pools


def collect(_cursor: CursorWrapper) -> list[Metric]:
    """Each configured pool's limits, use, headroom and permits in the shared limiter (Redis).

    Leaked and reclaimed permits come from Redis, which every worker of every host shares: the
    acquire that takes a leaked permit back counts it there, so the count is the pool's, not a
    process's."""
    pool = ["pool"]
    up = GaugeMetricFamily(
        "extraction_pool_limiter_up", "1 when the pool's shared limiter (Redis) answered this scrape.", labels=pool
    )
    in_flight = GaugeMetricFamily(
        "extraction_pool_in_flight",
        "Calls in flight in the pool (KV-cache tokens in flight for kv_tokens pools).",
        labels=pool,
    )
    requests = GaugeMetricFamily(
        "extraction_pool_requests_last_minute", "Requests admitted in the last 60 s.", labels=pool
    )
    tokens = GaugeMetricFamily(
        "extraction_pool_tokens_last_minute",
        "Tokens reserved or reconciled in the last 60 s (the TPM window).",
        labels=pool,
    )
    limit = GaugeMetricFamily(
        "extraction_pool_limit",
        "The pool's configured limit per dimension (rpm, tpm, in_flight).",
        labels=["pool", "dimension"],
    )
    headroom = GaugeMetricFamily(
        "extraction_pool_headroom",
        "Limit minus use per dimension; negative after a limit was lowered below current use.",
        labels=["pool", "dimension"],
    )
    cooldown = GaugeMetricFamily(
        "extraction_pool_cooldown_remaining_seconds",
        "Seconds left in the pool-wide cooldown after a provider 429; 0 when none.",
        labels=pool,
    )
    leaked = GaugeMetricFamily(
        "extraction_pool_permits_leaked",
        "In-flight permits past their TTL that were never released (the holder died or overran "
        "its attempt) and that no acquire has reclaimed yet; they no longer count as in flight.",
        labels=pool,
    )
    reclaimed = CounterMetricFamily(
        "extraction_pool_permits_reclaimed",
        "Leaked in-flight permits the limiter took back after their TTL.",
        labels=pool,
    )
    for name in configured_pools():
        limits = limiter.pool_limits(name)
        dimensions = {
            "rpm": limits.requests_per_minute,
            "tpm": limits.tokens_per_minute,
            "in_flight": limits.in_flight_limit,
        }
        for dimension, value in dimensions.items():
            limit.add_metric([name, dimension], value)
        snapshot = limiter.snapshot(limits)
        permits = limiter.permit_counts(limits)
        up.add_metric([name], 0 if snapshot is None or permits is None else 1)
        if snapshot is None or permits is None:
            continue  # no usage figures are better than made-up ones
        in_flight.add_metric([name], snapshot.in_flight)
        requests.add_metric([name], snapshot.requests_last_minute)
        tokens.add_metric([name], snapshot.tokens_last_minute)
        cooldown.add_metric([name], snapshot.cooldown_remaining_seconds)
        used = {
            "rpm": snapshot.requests_last_minute,
            "tpm": snapshot.tokens_last_minute,
            "in_flight": snapshot.in_flight,
        }
        for dimension, value in dimensions.items():
            headroom.add_metric([name, dimension], value - used[dimension])
        leaked.add_metric([name], permits.leaked)
        reclaimed.add_metric([name], permits.reclaimed)
    return [up, in_flight, requests, tokens, limit, headroom, cooldown, leaked, reclaimed]
