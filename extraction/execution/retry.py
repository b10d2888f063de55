"""Retry policy (RTY-1..3): one retry layer, full jitter, Retry-After honoured, deadline-aware."""

from __future__ import annotations

import random
from dataclasses import dataclass

from django.conf import settings

from config.backoff import full_jitter
from extraction.models import AttemptOutcome
from extraction.providers.base import ErrorKind

# What each provider error class means for the job.
TRANSIENT = {ErrorKind.RATE_LIMITED, ErrorKind.TIMEOUT, ErrorKind.PROVIDER_ERROR, ErrorKind.INVALID_OUTPUT}

OUTCOME_OF_ERROR = {
    ErrorKind.RATE_LIMITED: AttemptOutcome.RATE_LIMITED,
    ErrorKind.TIMEOUT: AttemptOutcome.TIMEOUT,
    ErrorKind.PROVIDER_ERROR: AttemptOutcome.PROVIDER_ERROR,
    ErrorKind.PERMANENT: AttemptOutcome.PERMANENT_ERROR,
    ErrorKind.INVALID_OUTPUT: AttemptOutcome.INVALID_OUTPUT,
}


@dataclass(frozen=True)
class RetryDecision:
    retry: bool
    delay_seconds: float = 0.0
    exhausted: bool = False  # transient, but the attempt budget is spent


def backoff_seconds(attempt: int, *, retry_after: float | None = None, rng: random.Random | None = None) -> float:
    """Full jitter: uniform(0, min(cap, base · 2^(attempt-1))), raised to Retry-After when the
    provider named a wait (plus a little jitter, so a pool's workers do not return in step).

    Retry-After is honoured beyond the backoff cap (retrying earlier only earns another 429),
    up to RETRY_AFTER_MAX_SECONDS; the deadline check decides whether such a wait still fits."""
    draw = rng or random.Random()
    base, cap = settings.RETRY_BASE_SECONDS, settings.RETRY_CAP_SECONDS
    delay = full_jitter(attempt, base=base, cap=cap, rng=draw)
    if retry_after is not None:
        delay = max(delay, min(retry_after, settings.RETRY_AFTER_MAX_SECONDS) + draw.uniform(0, base / 2))
    return delay


def decide(kind: ErrorKind, *, attempt: int, max_attempts: int, retry_after: float | None = None) -> RetryDecision:
    """Whether an attempt that failed with ``kind`` gets another one (the deadline is checked
    by the database when the retry is written, with its own clock)."""
    if kind not in TRANSIENT:
        return RetryDecision(retry=False)
    if attempt >= max_attempts:
        return RetryDecision(retry=False, exhausted=True)
    return RetryDecision(retry=True, delay_seconds=backoff_seconds(attempt, retry_after=retry_after))
