""" "Why is my job waiting?" — what a job that is not running waits for, for operators.
Reads one job's rows by index and one limiter snapshot (cheap enough for a status request);
times come from the database and Redis, never the web process's clock. Reasons, in check order:

- ``ingress``: ACCEPTED, its requested event not yet published or not yet taken in.
- ``retry_backoff``: RETRY_SCHEDULED with ``available_at`` still ahead.
- ``capacity``: the pool said ``rpm``, ``tpm``, ``in_flight``, ``cooldown`` or
  ``limiter_unavailable``, at the last claim (a ``capacity_deferred`` hand-back) or right now.
- ``tenant_in_flight_cap``: the tenant has ``max_in_flight`` jobs RUNNING.
- ``no_worker``: eligible, yet unclaimed after ``NO_WORKER_GRACE_SECONDS`` (``next_claim`` before).
- in passing: ``scheduled`` (READY later, e.g. handed back at shutdown) and ``deadline_expiry``.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any, TypedDict

from django.conf import settings

from config.db import database_now
from extraction.capacity import limiter
from extraction.events import EventType
from extraction.models import (
    Attempt,
    AttemptOutcome,
    ExtractionJob,
    JobEvent,
    JobState,
    OutboxEvent,
)

# A worker polls every few seconds and the scheduler wakes workers every second: an eligible
# job that nobody claimed for longer than this means no worker is free (or running).
NO_WORKER_GRACE_SECONDS = 5.0

_WAITING_STATES = (JobState.ACCEPTED, JobState.READY, JobState.RETRY_SCHEDULED)
# lifecycle.hand_back records attempt.py's ``f"pool {pool}: {denial.reason}"``.
_DEFERRAL_DETAIL = re.compile(r"^pool (?P<pool>.+): (?P<dimension>[a-z_]+)$")


class WaitExplanation(TypedDict):
    waiting_for: str
    until: str | None  # ISO 8601, when the wait is expected to end at the latest; None = unknown
    detail: dict[str, Any]


def explain_wait(job: ExtractionJob) -> WaitExplanation | None:
    """What ``job`` waits for, or None when it is not waiting (RUNNING, REVIEW_REQUIRED, terminal)."""
    if job.state not in _WAITING_STATES:
        return None
    now = database_now()
    if job.state == JobState.ACCEPTED:
        return _waiting_for_ingress(job)
    if job.deadline_at <= now:
        return _explained("deadline_expiry", None, {"deadline_at": job.deadline_at.isoformat()})
    last_event = JobEvent.objects.filter(job_id=job.pk).order_by("-state_version").first()
    if job.available_at > now:
        if job.state == JobState.RETRY_SCHEDULED:
            return _waiting_for_retry(job)
        if last_event is not None and last_event.reason == AttemptOutcome.CAPACITY_DEFERRED:
            return _deferred_for_capacity(job, last_event)
        return _explained("scheduled", job.available_at, {"reason": last_event.reason if last_event else ""})
    pool = _pool_of(job)
    if pool is not None:
        blocked = _pool_blocks_now(job, pool, now)
        if blocked is not None:
            return blocked
    running = ExtractionJob.objects.filter(tenant_id=job.tenant_id, state=JobState.RUNNING).count()
    cap = job.tenant.max_in_flight
    if running >= cap:
        return _explained("tenant_in_flight_cap", None, {"running": running, "max_in_flight": cap})
    eligible_since = max(job.available_at, last_event.created_at) if last_event else job.available_at
    eligible_for = (now - eligible_since).total_seconds()
    detail = {
        "pool": pool,
        "eligible_since": eligible_since.isoformat(),
        "eligible_for_seconds": round(eligible_for, 3),
    }
    if eligible_for > NO_WORKER_GRACE_SECONDS:
        return _explained("no_worker", None, detail)
    return _explained("next_claim", None, detail)


def _explained(waiting_for: str, until: datetime | None, detail: dict[str, Any]) -> WaitExplanation:
    return {"waiting_for": waiting_for, "until": until.isoformat() if until else None, "detail": detail}


def _pool_of(job: ExtractionJob) -> str | None:
    policy = settings.MODEL_POLICIES.get(job.model_policy)
    return policy["provider_pool"] if policy else None


def _waiting_for_ingress(job: ExtractionJob) -> WaitExplanation:
    event = OutboxEvent.objects.filter(job_id=job.pk, event_type=EventType.REQUESTED).order_by("created_at").first()
    if event is None or event.published_at is None:
        detail: dict[str, Any] = {"requested_event": "unpublished"}
        if event is not None:
            detail |= {"publish_attempts": event.publish_attempts, "last_error": event.last_error[:200] or None}
        return _explained("ingress", None, detail)
    # Published but not taken in: recover_lost_ingress makes it READY by this time at the latest.
    until = event.published_at + timedelta(seconds=settings.INGRESS_RECOVERY_SECONDS)
    return _explained(
        "ingress", until, {"requested_event": "published", "published_at": event.published_at.isoformat()}
    )


def _waiting_for_retry(job: ExtractionJob) -> WaitExplanation:
    last = Attempt.objects.filter(job_id=job.pk).order_by("-fence").first()
    return _explained(
        "retry_backoff",
        job.available_at,
        {
            "attempt": job.attempt,
            "max_attempts": job.max_attempts,
            "last_outcome": last.outcome if last else None,
            "error_class": job.error_class or None,
        },
    )


def _deferred_for_capacity(job: ExtractionJob, event: JobEvent) -> WaitExplanation:
    match = _DEFERRAL_DETAIL.match(str((event.detail or {}).get("detail", "")))
    pool = match["pool"] if match else _pool_of(job)
    dimension = match["dimension"] if match else "unknown"
    return _explained(
        "capacity",
        job.available_at,
        {
            "pool": pool,
            "dimension": dimension,
            "deferred_at": event.created_at.isoformat(),
            "live": _live_usage(pool) if pool else None,
        },
    )


def _pool_blocks_now(job: ExtractionJob, pool: str, now: datetime) -> WaitExplanation | None:
    """The limiter's view right now: would this job's acquire be refused, and on what?

    Approximate by design: the job's admission estimate stands in for the reservation the
    worker computes from the text, and the ramp after a cooldown is not modelled."""
    limits = _limits(pool)
    if limits is None:
        return None
    snapshot = limiter.snapshot(limits)
    if snapshot is None:
        if settings.CAPACITY_FAIL_MODE == "closed":
            return _explained("capacity", None, {"pool": pool, "dimension": "limiter_unavailable", "live": None})
        return None  # fail mode "local": each process spends its own share, invisible from here
    live = _usage(snapshot)
    if snapshot.cooldown_remaining_seconds > 0:
        until = now + timedelta(seconds=snapshot.cooldown_remaining_seconds)
        return _explained("capacity", until, {"pool": pool, "dimension": "cooldown", "live": live})
    # The limiter's in-flight rule: a kv_tokens pool weighs a call by its tokens (BP-6).
    kv = limits.budget == "kv_tokens"
    weight = job.estimated_tokens if kv else 1
    if snapshot.in_flight + weight > max(weight, limits.kv_cache_tokens if kv else limits.max_in_flight):
        dimension = "in_flight"
    elif snapshot.requests_last_minute >= limits.requests_per_minute:
        dimension = "rpm"
    elif snapshot.tokens_last_minute + job.estimated_tokens > max(job.estimated_tokens, limits.tokens_per_minute):
        dimension = "tpm"
    else:
        return None
    return _explained("capacity", None, {"pool": pool, "dimension": dimension, "live": live})


def _limits(pool: str) -> limiter.PoolLimits | None:
    try:
        return limiter.pool_limits(pool)
    except KeyError:  # a pool removed from the configuration since the job was deferred
        return None


def _live_usage(pool: str) -> dict[str, Any] | None:
    limits = _limits(pool)
    snapshot = limiter.snapshot(limits) if limits is not None else None
    return _usage(snapshot) if snapshot is not None else None


def _usage(snapshot: limiter.PoolSnapshot) -> dict[str, Any]:
    limits = snapshot.limits
    return {
        "requests_last_minute": snapshot.requests_last_minute,
        "requests_per_minute": limits.requests_per_minute,
        "tokens_last_minute": snapshot.tokens_last_minute,
        "tokens_per_minute": limits.tokens_per_minute,
        "in_flight": snapshot.in_flight,
        "max_in_flight": limits.in_flight_limit,
        "cooldown_remaining_seconds": round(snapshot.cooldown_remaining_seconds, 3),
    }
