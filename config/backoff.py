"""Waiting before trying again, shared by every retry loop: full-jitter exponential backoff and
the server's own ``Retry-After``."""

from __future__ import annotations

import math
import random
import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

_DELTA_SECONDS = re.compile(r"\d+(?:\.\d+)?")


def full_jitter(attempt: int, *, base: float, cap: float, rng: random.Random | None = None) -> float:
    """uniform(0, min(cap, base · 2^(attempt-1))): retries of many clients spread out instead of
    returning in step (the AWS architecture blog's "full jitter")."""
    return (rng or random).uniform(0, min(cap, base * 2 ** max(attempt - 1, 0)))


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delta-seconds or an HTTP-date (RFC 9110 §10.2.3).

    A date in the past means "now" (0.0). Anything unparsable is None, so callers fall back to
    their own backoff instead of trusting garbage.
    """
    if value is None:
        return None
    value = value.strip()
    if _DELTA_SECONDS.fullmatch(value):
        seconds = float(value)
        return seconds if math.isfinite(seconds) else None
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        # asctime() dates carry no zone; HTTP dates are always GMT.
        moment = moment.replace(tzinfo=UTC)
    now = now or datetime.now(UTC)
    return max(0.0, (moment - now).total_seconds())
