"""The delivery state machine's attempt: claim, send, record (DLV-1, DLV-5).

Every step is a short transaction; the HTTP request happens between two of them, never
inside one. A delivery row is the authority: Celery messages that name it are hints, so a
duplicate hint finds the row claimed (SKIP LOCKED / state guard) and a lost hint is re-sent
by :func:`delivery.scheduling.schedule_due_deliveries`. The rows come from
:mod:`delivery.fan_out`; operators put them back with :mod:`delivery.replay`.

Outcomes of one attempt:
- 2xx: DELIVERED; the endpoint's failure counters reset and its circuit closes.
- 410: FAILED and the endpoint disabled.
- 429: retried no sooner than Retry-After; the whole endpoint waits as long.
- 401/403: retried; after ``AUTH_FAILURES_TO_FLAG`` in a row, a configuration alarm and the
  endpoint FLAGGED (held until verified again).
- anything else (3xx — never followed —, 4xx, 5xx, timeouts, refused connections, an
  address the egress rule refuses): retried with full-jitter exponential backoff until the
  delivery's attempt budget is spent, then FAILED.
Counted failures open the endpoint's circuit after ``WEBHOOK_CIRCUIT_FAILURES`` in a row;
after ``WEBHOOK_CIRCUIT_OPEN_SECONDS`` (doubling per failed probe) the longest-waiting delivery probes
(half-open). An endpoint failing for ``WEBHOOK_AUTO_DISABLE_DAYS`` is disabled.
"""

from __future__ import annotations

import json
import logging
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models import Q
from django.db.models.functions import Now
from opentelemetry.trace import SpanKind

from config import tracing
from config.backoff import full_jitter, parse_retry_after
from config.db import database_now
from config.sql import load_statements
from delivery import egress, signing
from delivery.endpoint_health import AttemptSeen, EndpointHealth, HealthPolicy, next_health
from delivery.models import (
    CircuitState,
    DeliveryAttemptOutcome,
    DeliveryState,
    EndpointStatus,
    WebhookEndpoint,
    WebhookSecret,
)

SQL = load_statements(Path(__file__).with_suffix(".sql"))
logger = logging.getLogger("delivery")

DISPATCH_TASK = "delivery.dispatch"
SNIPPET_CHARS = 512
MAX_RETRY_AFTER_SECONDS = 24 * 3600


def lease_seconds() -> float:
    # The request's total deadline, plus name resolution and the two short transactions.
    return 2 * settings.WEBHOOK_TIMEOUT_SECONDS + 10


def backoff_seconds(attempt: int, *, rng: random.Random | None = None) -> float:
    return full_jitter(
        attempt, base=settings.WEBHOOK_RETRY_BASE_SECONDS, cap=settings.WEBHOOK_RETRY_CAP_SECONDS, rng=rng
    )


class NotClaimed(StrEnum):
    """Why :func:`claim_delivery` took no attempt."""

    NOT_DUE = "not_due"  # not PENDING, not due yet, or another claim has the row locked
    ENDPOINT_NOT_ACTIVE = "endpoint_not_active"
    HELD = "held"  # by its endpoint (throttled, circuit open, the probe elsewhere); due as before
    ATTEMPTS_SPENT = "attempts_spent"  # now FAILED


class Recorded(StrEnum):
    """What :func:`record_outcome` wrote: the delivery's new state, or STALE (the attempt's
    fence moved on, nothing was written)."""

    DELIVERED = "delivered"
    PENDING = "pending"
    FAILED = "failed"
    STALE = "stale"


@dataclass(frozen=True)
class ClaimedDelivery:
    delivery_id: uuid.UUID
    attempt: int
    max_attempts: int
    endpoint_id: uuid.UUID
    tenant_id: uuid.UUID
    url: str
    endpoint_status: str
    is_verification: bool
    body: bytes
    keys: tuple[signing.SigningKey, ...]
    timestamp: int  # the database's clock at the claim: the attempt's webhook-timestamp
    job_id: uuid.UUID | None = None  # None for a verification event
    trace_context: Mapping[str, str] | None = None  # the job's, read only when tracing

    def log_extra(self) -> dict[str, Any]:
        return {"delivery_id": str(self.delivery_id), "endpoint_id": str(self.endpoint_id), "attempt": self.attempt}


def signing_keys(endpoint_id: uuid.UUID) -> tuple[signing.SigningKey, ...]:
    """The endpoint's valid keys, newest first (the rotated-out one until it expires)."""
    secrets = (
        WebhookSecret.objects.filter(endpoint_id=endpoint_id)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=Now()))  # the database's clock
        .order_by("-created_at", "-id")
    )
    return tuple(signing.SigningKey(s.key_id, signing.unseal(s.sealed, context=s.context())) for s in secrets)


def claim_delivery(delivery_id: uuid.UUID) -> ClaimedDelivery | NotClaimed:
    """Take one due delivery for one attempt, or say why not.

    1. Lock the row if PENDING and due (SKIP LOCKED: a duplicate hint walks away).
    2. Gate on the endpoint: active (a verification delivery: any status), not throttled by a
       429, circuit closed — or open past its time, where the endpoint's longest-waiting
       delivery takes the half-open probe by a guarded update. Otherwise ``HELD``, due as before.
    3. PENDING → SENDING with attempts+1 (the fence) and a lease; an attempt row in flight.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(SQL["lock_due_delivery"], {"id": delivery_id, "traced": tracing.enabled()})
        row = cursor.fetchone()
        if row is None:
            return NotClaimed.NOT_DUE
        (
            attempts,
            max_attempts,
            is_verification,
            body_text,
            tenant_id,
            due_at,
            endpoint_id,
            url,
            status,
            circuit,
            open_until,
            not_before,
            now,
            job_id,
            trace_context,
        ) = row
        if status != EndpointStatus.ACTIVE and not is_verification:
            return NotClaimed.ENDPOINT_NOT_ACTIVE
        if _held(cursor, delivery_id, endpoint_id, due_at, circuit, open_until, not_before, now):
            # Its due time stays: the scheduler hints no delivery of a held endpoint, and when the
            # endpoint may go again, the longest-waiting delivery is first in line.
            cursor.execute(SQL["hold_delivery"], {"id": delivery_id})
            return NotClaimed.HELD
        if attempts >= max_attempts:
            cursor.execute(
                SQL["fail_spent_delivery"],
                {"id": delivery_id},
            )
            return NotClaimed.ATTEMPTS_SPENT
        cursor.execute(
            SQL["start_attempt"],
            {
                "id": delivery_id,
                "lease": lease_seconds(),
            },
        )
        (attempt,) = cursor.fetchone()
        cursor.execute(SQL["insert_attempt"], {"id": delivery_id, "number": attempt})
        keys = signing_keys(endpoint_id)
    return ClaimedDelivery(
        delivery_id=delivery_id,
        attempt=attempt,
        max_attempts=max_attempts,
        endpoint_id=endpoint_id,
        tenant_id=tenant_id,
        url=url,
        endpoint_status=status,
        is_verification=is_verification,
        body=body_text.encode(),
        keys=keys,
        timestamp=int(now.timestamp()),
        job_id=job_id,
        trace_context=json.loads(trace_context) if isinstance(trace_context, str) else trace_context,
    )


def _held(
    cursor: CursorWrapper,
    delivery_id: uuid.UUID,
    endpoint_id: uuid.UUID,
    due_at: datetime,
    circuit: str,
    open_until: datetime | None,
    not_before: datetime | None,
    now: datetime,
) -> bool:
    """Whether the endpoint keeps this delivery waiting: throttled by a 429, circuit open (or
    half-open with another probe out), or past its opening with an older delivery waiting —
    the half-open probe goes to the endpoint's longest-waiting delivery, so while a receiver
    stays down every delivery is tried in turn, not whichever hint raced in first. Otherwise
    this delivery takes the probe by a guarded update."""
    if not_before is not None and not_before > now:
        return True
    if circuit == CircuitState.CLOSED:
        return False
    if open_until is not None and open_until > now:
        return True
    cursor.execute(
        SQL["older_pending_delivery"],
        {"endpoint": endpoint_id, "due_at": due_at, "id": delivery_id},
    )
    if cursor.fetchone()[0]:
        return True
    cursor.execute(
        SQL["take_probe"],
        {
            "endpoint": endpoint_id,
            "circuit": circuit,
            "open_until": open_until,
            "lease": lease_seconds(),
        },
    )
    return cursor.rowcount == 0  # another delivery took the probe


@dataclass(frozen=True)
class Outcome:
    outcome: str  # an DeliveryAttemptOutcome value
    http_status: int | None = None
    retry_after: float | None = None
    snippet: str = ""
    error: str = ""
    elapsed_ms: int | None = None

    @property
    def delivered(self) -> bool:
        return self.outcome == DeliveryAttemptOutcome.DELIVERED

    @property
    def gone(self) -> bool:
        return self.http_status == 410

    @property
    def auth_failure(self) -> bool:
        return self.http_status in (401, 403)

    @property
    def throttled(self) -> bool:
        return self.http_status == 429

    @property
    def counts_against_endpoint(self) -> bool:
        return not self.delivered and not self.throttled


def classify(response: egress.EgressResponse) -> Outcome:
    snippet = response.body[:SNIPPET_CHARS].decode("utf-8", errors="replace")
    if 200 <= response.status < 300:
        return Outcome(
            DeliveryAttemptOutcome.DELIVERED, response.status, snippet=snippet, elapsed_ms=response.elapsed_ms
        )
    retry_after = None
    if response.status in (429, 503):
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        if retry_after is not None:
            retry_after = min(retry_after, MAX_RETRY_AFTER_SECONDS)
    error = f"HTTP {response.status}"
    if 300 <= response.status < 400:
        error += f" redirect to {response.headers.get('location', '?')[:200]!r} not followed"
    return Outcome(
        DeliveryAttemptOutcome.HTTP_ERROR,
        response.status,
        retry_after=retry_after,
        snippet=snippet,
        error=error,
        elapsed_ms=response.elapsed_ms,
    )


def send(claim: ClaimedDelivery) -> Outcome:
    """One attempt: vet the URL again (DNS may have changed since registration), sign the
    stored bytes with a fresh timestamp, POST them to the vetted address."""
    try:
        target = egress.vet_url(claim.url)
    except egress.EgressRefused as exc:
        logger.warning("webhook egress refused", extra={**claim.log_extra(), "reason": str(exc)[:300]})
        return Outcome(DeliveryAttemptOutcome.EGRESS_REFUSED, error=f"egress refused: {exc}"[:1000])
    headers = signing.signed_headers(
        claim.keys, webhook_id=str(claim.delivery_id), timestamp=claim.timestamp, body=claim.body
    )
    # The attempt's span (W3C traceparent): a traced receiver continues the job's trace.
    headers = [*headers, *tracing.current_trace_context().items()]
    try:
        response = egress.post(
            target,
            claim.body,
            headers,
            timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
            max_response_bytes=settings.WEBHOOK_MAX_RESPONSE_BYTES,
        )
    except egress.EgressTimeout as exc:
        return Outcome(DeliveryAttemptOutcome.TIMEOUT, error=str(exc)[:1000])
    except egress.EgressConnectionError as exc:
        return Outcome(DeliveryAttemptOutcome.CONNECTION_ERROR, error=str(exc)[:1000])
    return classify(response)


def record_outcome(claim: ClaimedDelivery, outcome: Outcome, *, delay_seconds: float | None = None) -> Recorded:
    """Write one attempt's outcome, in one transaction, under the attempt fence.

    1. Close the attempt row.
    2. The delivery: DELIVERED, FAILED (410 or budget spent) or PENDING at the next time —
       guarded on ``attempts`` (a reaped-and-reclaimed delivery is not ours any more; a
       reaped one still PENDING is, and a late 2xx still counts).
    3. The endpoint: counters, circuit, throttle, status (410, auth alarm, auto-disable).
    Returns the delivery's new state, or ``STALE``.
    """
    delay = backoff_seconds(claim.attempt) if delay_seconds is None else delay_seconds
    if outcome.retry_after is not None:
        delay = max(delay, outcome.retry_after)  # never sooner than the receiver asked
    final = outcome.gone or claim.attempt >= claim.max_attempts
    state = DeliveryState.DELIVERED if outcome.delivered else DeliveryState.FAILED if final else DeliveryState.PENDING
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            SQL["end_attempt"],
            {
                "outcome": outcome.outcome,
                "http_status": outcome.http_status,
                "retry_after": outcome.retry_after,
                "elapsed_ms": outcome.elapsed_ms,
                "snippet": outcome.snippet,
                "error": outcome.error,
                "id": claim.delivery_id,
                "number": claim.attempt,
            },
        )
        cursor.execute(
            SQL["record_delivery_outcome"],
            {
                "state": state,
                "http_status": outcome.http_status,
                "error": outcome.error,
                "snippet": outcome.snippet,
                "delay": delay,
                "id": claim.delivery_id,
                "attempt": claim.attempt,
            },
        )
        if cursor.rowcount == 0:
            logger.info("stale delivery outcome discarded", extra=claim.log_extra())
            return Recorded.STALE
        endpoint_status = _record_endpoint_health(claim, outcome)
    _log_outcome(claim, outcome, state, endpoint_status)
    return Recorded(state.value)


def _record_endpoint_health(claim: ClaimedDelivery, outcome: Outcome) -> EndpointStatus:
    """The endpoint's health after this attempt (endpoint_health.next_health), written in the
    attempt's transaction. A 2xx to an endpoint with nothing to reset writes nothing: every
    delivery to a healthy endpoint would otherwise queue on this one row's lock."""
    seen = AttemptSeen(
        delivered=outcome.delivered,
        verification=claim.is_verification,
        counted=outcome.counts_against_endpoint,
        auth_failure=outcome.auth_failure,
        gone=outcome.gone,
        throttle_seconds=outcome.retry_after if outcome.throttled else None,
    )
    endpoints = WebhookEndpoint.objects.filter(pk=claim.endpoint_id).only(*EndpointHealth.FIELDS)
    if outcome.delivered and not claim.is_verification:
        seen_before = endpoints.first()
        if seen_before is None or EndpointHealth.of(seen_before).healthy:
            return EndpointStatus(seen_before.status if seen_before else claim.endpoint_status)
    endpoint = endpoints.select_for_update().get()
    current = EndpointHealth.of(endpoint)
    now = database_now()
    health = next_health(current, seen, now=now, policy=HealthPolicy.from_settings())
    if health != current:
        changed = {name: getattr(health, name) for name in EndpointHealth.FIELDS}
        endpoints.update(**changed, updated_at=now)
    return EndpointStatus(health.status)


def _log_outcome(
    claim: ClaimedDelivery, outcome: Outcome, state: DeliveryState, endpoint_status: EndpointStatus
) -> None:
    extra = {**claim.log_extra(), "http_status": outcome.http_status, "outcome": outcome.outcome, "state": state}
    if outcome.delivered:
        logger.info("webhook delivered", extra=extra)
    else:
        logger.warning("webhook attempt failed", extra={**extra, "error": outcome.error[:200]})
    if endpoint_status != claim.endpoint_status:
        if endpoint_status == EndpointStatus.FLAGGED:
            # The configuration alarm (DLV-5): the receiver rejects our signature; someone must act.
            logger.error(
                "webhook endpoint flagged: repeated 401/403, configuration alarm",
                extra={**extra, "alarm": "webhook_endpoint_auth"},
            )
        elif endpoint_status == EndpointStatus.DISABLED:
            logger.error("webhook endpoint disabled", extra={**extra, "alarm": "webhook_endpoint_disabled"})
        elif endpoint_status == EndpointStatus.ACTIVE:
            logger.info("webhook endpoint verified and active", extra=extra)


def deliver(delivery_id: uuid.UUID) -> Recorded | NotClaimed:
    """Claim, send, record one delivery. Returns what happened (for logs and tests).

    Traced, the attempt (send and record) is a client span in the job's trace: a child of the
    dispatch hint's span when the fan-out sent the hint, else of the job's stored context,
    linked to the hint (the scheduler's re-hint of a due delivery is a trace of its own)."""
    claim = claim_delivery(delivery_id)
    if isinstance(claim, NotClaimed):
        return claim
    with tracing.step_span(
        "webhook.deliver",
        trace_context=claim.trace_context,
        kind=SpanKind.CLIENT,
        attributes={
            "delivery.id": str(claim.delivery_id),
            "delivery.attempt": claim.attempt,
            "delivery.endpoint_id": str(claim.endpoint_id),
            "http.request.method": "POST",
            **({"extraction.job_id": str(claim.job_id)} if claim.job_id else {}),
        },
    ) as span:
        outcome = send(claim)
        state = record_outcome(claim, outcome)
        span.set_attributes(
            {
                "delivery.outcome": outcome.outcome,
                "delivery.state": state,
                **({"http.response.status_code": outcome.http_status} if outcome.http_status is not None else {}),
            }
        )
    return state
