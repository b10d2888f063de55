"""The delivery state machine: fan-out, claim, send, record, schedule, redeliver (DLV-1, DLV-5).

Every step is a short transaction; the HTTP request happens between two of them, never
inside one. A delivery row is the authority: Celery messages that name it are hints, so a
duplicate hint finds the row claimed (SKIP LOCKED / state guard) and a lost hint is re-sent
by :func:`schedule_due_deliveries`.

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

import logging
import random
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.db.models.functions import Now
from kombu import Connection

from config.backoff import full_jitter, parse_retry_after
from config.topology import DELIVERY, queue_depth
from delivery import egress, signing
from delivery.models import (
    VERIFICATION_TYPE,
    WEBHOOK_TYPES,
    AttemptOutcome,
    DeliveryState,
    EndpointStatus,
    WebhookSecret,
    delivery_id_for,
)
from extraction.api.serializers import result_body
from extraction.models import ExtractionJob, OutboxEvent

logger = logging.getLogger("delivery")

DISPATCH_TASK = "delivery.dispatch"
AUTH_FAILURES_TO_FLAG = 3
SNIPPET_CHARS = 512
MAX_RETRY_AFTER_SECONDS = 24 * 3600
# A hinted delivery is not hinted again for this long (the hint may still be queued).
REHINT_SECONDS = 30.0
SCHEDULE_CAP = 500
JOB_STATES = {
    "extraction.completed.v1": "SUCCEEDED",
    "extraction.review_required.v1": "REVIEW_REQUIRED",
    "extraction.failed.v1": "FAILED_TERMINAL",
}


def lease_seconds() -> float:
    # The request's total deadline, plus name resolution and the two short transactions.
    return 2 * settings.WEBHOOK_TIMEOUT_SECONDS + 10


def backoff_seconds(attempt: int, *, rng: random.Random | None = None) -> float:
    return full_jitter(
        attempt, base=settings.WEBHOOK_RETRY_BASE_SECONDS, cap=settings.WEBHOOK_RETRY_CAP_SECONDS, rng=rng
    )


# --- fan-out ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FanOut:
    outcome: str  # "fanned_out" | "unknown_event" | "not_a_webhook_event"
    created: tuple[uuid.UUID, ...] = ()


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def event_body(outbox: OutboxEvent, webhook_type: str) -> dict[str, Any]:
    """The webhook body of an outbox event, from PostgreSQL (the message is not authority).

    Only a completed event carries invoice data (the result's output and validation); a
    review-required or failed event says which job and which state, nothing more."""
    if outbox.job_id is None:
        raise ValueError(f"outbox event {outbox.event_id} names no job: it has no webhook body")
    job = ExtractionJob.objects.select_related("result").get(pk=outbox.job_id)
    data: dict[str, Any] = {
        "event_id": str(outbox.event_id),
        "job_id": str(job.pk),
        "idempotency_key": job.idempotency_key,
        "state": JOB_STATES[webhook_type],
        "state_version": int(outbox.payload["state_version"]),
        "schema": job.schema,
        "document": {"id": str(job.document_id), "version": str(job.document_version)},
    }
    if webhook_type == "extraction.completed.v1":
        data["result"] = result_body(job)
    elif webhook_type == "extraction.failed.v1":
        data["error"] = {"class": outbox.payload.get("error_class") or job.error_class}
    return {"type": webhook_type, "timestamp": _iso(outbox.created_at), "data": data}


def fan_out_event(event_id: uuid.UUID) -> FanOut:
    """One delivery per subscribed endpoint of the event's tenant, idempotently.

    1. Reload the outbox event by id; unknown → "unknown_event".
    2. Serialize its body once into ``webhook_events`` (ON CONFLICT DO NOTHING: a second
       fan-out reuses the first one's bytes).
    3. Insert a delivery per endpoint subscribed to the type and not disabled, with the
       deterministic id uuid5(event, endpoint) (ON CONFLICT DO NOTHING).
    Returns the ids created now, for dispatch hints after COMMIT.
    """
    with transaction.atomic():
        outbox = OutboxEvent.objects.filter(pk=event_id).first()
        if outbox is None:
            return FanOut("unknown_event")
        webhook_type = WEBHOOK_TYPES.get(outbox.event_type)
        if webhook_type is None or outbox.job_id is None:
            return FanOut("not_a_webhook_event")
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM webhook_events WHERE event_id = %s", [event_id])
            if cursor.fetchone() is None:
                body = signing.serialize_body(event_body(outbox, webhook_type)).decode()
                cursor.execute(
                    "INSERT INTO webhook_events (event_id, tenant_id, event_type, job_id, body, created_at) "
                    "VALUES (%s, %s, %s, %s, %s, now()) ON CONFLICT (event_id) DO NOTHING",
                    [event_id, outbox.tenant_id, webhook_type, outbox.job_id, body],
                )
            created = _insert_deliveries(
                cursor, event_id=event_id, tenant_id=outbox.tenant_id, webhook_type=webhook_type
            )
    return FanOut("fanned_out", tuple(created))


def _insert_deliveries(
    cursor,
    *,
    event_id: uuid.UUID,
    tenant_id: uuid.UUID,
    webhook_type: str,
    endpoint_ids: Sequence[uuid.UUID] | None = None,
    verification: bool = False,
) -> list[uuid.UUID]:
    if endpoint_ids is None:
        cursor.execute(
            "SELECT id FROM webhook_endpoints WHERE tenant_id = %s AND status <> 'disabled' AND %s = ANY(event_types)",
            [tenant_id, webhook_type],
        )
        endpoint_ids = [row[0] for row in cursor.fetchall()]
    created = []
    for endpoint_id in endpoint_ids:
        cursor.execute(
            """
            INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, event_type, is_verification, state,
                                            attempts, max_attempts, next_attempt_at, last_error, response_snippet,
                                            created_at, updated_at)
            VALUES (%s, %s, %s, %s, %s, %s, 'pending', 0, %s, now(), '', '', now(), now())
            ON CONFLICT (event_id, endpoint_id) DO NOTHING
            RETURNING id
            """,  # clauses are fixed strings; values are parameters
            [
                delivery_id_for(event_id, endpoint_id),
                event_id,
                endpoint_id,
                tenant_id,
                webhook_type,
                verification,
                settings.WEBHOOK_MAX_ATTEMPTS,
            ],
        )
        row = cursor.fetchone()
        if row is not None:
            created.append(row[0])
    return created


def create_verification_delivery(*, endpoint_id: uuid.UUID, tenant_id: uuid.UUID) -> uuid.UUID:
    """A signed ``webhook.verification.v1`` event for one endpoint; its 2xx activates it.
    Call inside the transaction that changes the endpoint."""
    event_id = uuid.uuid4()
    body = {
        "type": VERIFICATION_TYPE,
        "timestamp": None,
        "data": {"endpoint_id": str(endpoint_id), "challenge": uuid.uuid4().hex},
    }
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        body["timestamp"] = _iso(cursor.fetchone()[0])
        cursor.execute(
            "INSERT INTO webhook_events (event_id, tenant_id, event_type, job_id, body, created_at) "
            "VALUES (%s, %s, %s, NULL, %s, now())",
            [event_id, tenant_id, VERIFICATION_TYPE, signing.serialize_body(body).decode()],
        )
        (delivery_id,) = _insert_deliveries(
            cursor,
            event_id=event_id,
            tenant_id=tenant_id,
            webhook_type=VERIFICATION_TYPE,
            endpoint_ids=[endpoint_id],
            verification=True,
        )
    return delivery_id


# --- claim, send, record ---------------------------------------------------------------------------


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


def claim_delivery(delivery_id: uuid.UUID) -> ClaimedDelivery | str:
    """Take one due delivery for one attempt, or say why not.

    1. Lock the row if PENDING and due (SKIP LOCKED: a duplicate hint walks away).
    2. Gate on the endpoint: active (a verification delivery: any status), not throttled by a
       429, circuit closed — or open past its time, where the endpoint's longest-waiting
       delivery takes the half-open probe by a guarded update. Otherwise "held", due as before.
    3. PENDING → SENDING with attempts+1 (the fence) and a lease; an attempt row in flight.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT d.attempts, d.max_attempts, d.is_verification, ev.body, d.tenant_id, d.next_attempt_at,
                   e.id, e.url, e.status, e.circuit_state, e.circuit_open_until, e.retry_not_before, now()
              FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
              JOIN webhook_events ev ON ev.event_id = d.event_id
             WHERE d.id = %s AND d.state = 'pending' AND d.next_attempt_at <= now()
               FOR UPDATE OF d SKIP LOCKED
            """,
            [delivery_id],
        )
        row = cursor.fetchone()
        if row is None:
            return "not_due"
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
        ) = row
        if status != EndpointStatus.ACTIVE and not is_verification:
            return "endpoint_not_active"
        if _held(cursor, delivery_id, endpoint_id, due_at, circuit, open_until, not_before, now):
            # Its due time stays: the scheduler hints no delivery of a held endpoint, and when the
            # endpoint may go again, the longest-waiting delivery is first in line.
            cursor.execute(
                "UPDATE webhook_deliveries SET hinted_at = NULL, updated_at = now() "
                "WHERE id = %s AND state = 'pending'",
                [delivery_id],
            )
            return "held"
        if attempts >= max_attempts:
            cursor.execute(
                "UPDATE webhook_deliveries SET state = 'failed', updated_at = now() "
                "WHERE id = %s AND state = 'pending'",
                [delivery_id],
            )
            return "attempts_spent"
        cursor.execute(
            """
            UPDATE webhook_deliveries
               SET state = 'sending', attempts = attempts + 1, lease_until = now() + make_interval(secs => %s),
                   updated_at = now()
             WHERE id = %s AND state = 'pending'
            RETURNING attempts
            """,
            [lease_seconds(), delivery_id],
        )
        (attempt,) = cursor.fetchone()
        cursor.execute(
            "INSERT INTO webhook_delivery_attempts (delivery_id, number, started_at, outcome, response_snippet, error) "
            "VALUES (%s, %s, now(), 'in_flight', '', '')",
            [delivery_id, attempt],
        )
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
    )


def _held(
    cursor,
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
    if circuit == "closed":
        return False
    if open_until is not None and open_until > now:
        return True
    cursor.execute(
        """
        SELECT EXISTS (SELECT 1 FROM webhook_deliveries
                        WHERE endpoint_id = %s AND state = 'pending' AND (next_attempt_at, id) < (%s, %s))
        """,
        [endpoint_id, due_at, delivery_id],
    )
    if cursor.fetchone()[0]:
        return True
    cursor.execute(
        """
        UPDATE webhook_endpoints
           SET circuit_state = 'half_open', circuit_open_until = now() + make_interval(secs => %s)
         WHERE id = %s AND circuit_state = %s AND circuit_open_until IS NOT DISTINCT FROM %s
        """,
        [lease_seconds(), endpoint_id, circuit, open_until],
    )
    return cursor.rowcount == 0  # another delivery took the probe


@dataclass(frozen=True)
class Outcome:
    outcome: str  # an AttemptOutcome value
    http_status: int | None = None
    retry_after: float | None = None
    snippet: str = ""
    error: str = ""
    elapsed_ms: int | None = None

    @property
    def delivered(self) -> bool:
        return self.outcome == AttemptOutcome.DELIVERED

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
        return Outcome(AttemptOutcome.DELIVERED, response.status, snippet=snippet, elapsed_ms=response.elapsed_ms)
    retry_after = None
    if response.status in (429, 503):
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        if retry_after is not None:
            retry_after = min(retry_after, MAX_RETRY_AFTER_SECONDS)
    error = f"HTTP {response.status}"
    if 300 <= response.status < 400:
        error += f" redirect to {response.headers.get('location', '?')[:200]!r} not followed"
    return Outcome(
        AttemptOutcome.HTTP_ERROR,
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
        return Outcome(AttemptOutcome.EGRESS_REFUSED, error=f"egress refused: {exc}"[:1000])
    headers = signing.signed_headers(
        claim.keys, webhook_id=str(claim.delivery_id), timestamp=claim.timestamp, body=claim.body
    )
    try:
        response = egress.post(
            target,
            claim.body,
            headers,
            timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
            max_response_bytes=settings.WEBHOOK_MAX_RESPONSE_BYTES,
        )
    except egress.EgressTimeout as exc:
        return Outcome(AttemptOutcome.TIMEOUT, error=str(exc)[:1000])
    except egress.EgressConnectionError as exc:
        return Outcome(AttemptOutcome.CONNECTION_ERROR, error=str(exc)[:1000])
    return classify(response)


def record_outcome(claim: ClaimedDelivery, outcome: Outcome, *, delay_seconds: float | None = None) -> str:
    """Write one attempt's outcome, in one transaction, under the attempt fence.

    1. Close the attempt row.
    2. The delivery: DELIVERED, FAILED (410 or budget spent) or PENDING at the next time —
       guarded on ``attempts`` (a reaped-and-reclaimed delivery is not ours any more; a
       reaped one still PENDING is, and a late 2xx still counts).
    3. The endpoint: counters, circuit, throttle, status (410, auth alarm, auto-disable).
    Returns the delivery's new state, or "stale".
    """
    delay = backoff_seconds(claim.attempt) if delay_seconds is None else delay_seconds
    if outcome.retry_after is not None:
        delay = max(delay, outcome.retry_after)  # never sooner than the receiver asked
    final = outcome.gone or claim.attempt >= claim.max_attempts
    state = DeliveryState.DELIVERED if outcome.delivered else DeliveryState.FAILED if final else DeliveryState.PENDING
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE webhook_delivery_attempts
               SET ended_at = now(), outcome = %s, http_status = %s, retry_after_seconds = %s, elapsed_ms = %s,
                   response_snippet = %s, error = %s
             WHERE delivery_id = %s AND number = %s
            """,
            [
                outcome.outcome,
                outcome.http_status,
                outcome.retry_after,
                outcome.elapsed_ms,
                outcome.snippet,
                outcome.error,
                claim.delivery_id,
                claim.attempt,
            ],
        )
        cursor.execute(
            """
            UPDATE webhook_deliveries
               SET state = %(state)s, lease_until = NULL, hinted_at = NULL, last_status = %(status)s,
                   last_error = %(error)s, response_snippet = %(snippet)s, updated_at = now(),
                   delivered_at = CASE WHEN %(state)s = 'delivered' THEN now() ELSE delivered_at END,
                   next_attempt_at = CASE WHEN %(state)s = 'pending'
                                          THEN now() + make_interval(secs => %(delay)s) ELSE next_attempt_at END
             WHERE id = %(id)s AND attempts = %(attempt)s AND state IN ('sending', 'pending')
            """,
            {
                "state": state,
                "status": outcome.http_status,
                "error": outcome.error,
                "snippet": outcome.snippet,
                "delay": delay,
                "id": claim.delivery_id,
                "attempt": claim.attempt,
            },
        )
        if cursor.rowcount == 0:
            logger.info("stale delivery outcome discarded", extra=claim.log_extra())
            return "stale"
        endpoint_status = _record_endpoint_health(cursor, claim, outcome)
    _log_outcome(claim, outcome, state, endpoint_status)
    return state


def _record_endpoint_health(cursor, claim: ClaimedDelivery, outcome: Outcome) -> str:
    if outcome.delivered:
        cursor.execute(
            """
            UPDATE webhook_endpoints
               SET consecutive_failures = 0, auth_failures = 0, failing_since = NULL, circuit_state = 'closed',
                   circuit_open_until = NULL, updated_at = now(),
                   status = CASE WHEN %(verify)s THEN 'active' ELSE status END,
                   verified_at = CASE WHEN %(verify)s THEN now() ELSE verified_at END,
                   disabled_reason = CASE WHEN %(verify)s THEN '' ELSE disabled_reason END
             WHERE id = %(id)s
               -- A healthy endpoint is not written at all: every delivery to it would otherwise
               -- queue on this one row's lock until the previous one commits.
               AND (%(verify)s OR consecutive_failures <> 0 OR auth_failures <> 0 OR failing_since IS NOT NULL
                    OR circuit_state <> 'closed')
            RETURNING status
            """,
            {"verify": claim.is_verification, "id": claim.endpoint_id},
        )
        row = cursor.fetchone()
        return row[0] if row else claim.endpoint_status
    counted = 1 if outcome.counts_against_endpoint else 0
    cursor.execute(
        """
        UPDATE webhook_endpoints AS e
           SET consecutive_failures = e.consecutive_failures + %(counted)s,
               failing_since = CASE WHEN %(counted)s = 1 THEN coalesce(e.failing_since, now()) ELSE e.failing_since END,
               auth_failures = CASE WHEN %(auth)s THEN e.auth_failures + 1 ELSE 0 END,
               circuit_state = CASE
                   WHEN %(counted)s = 1 AND (e.circuit_state = 'half_open'
                                             OR e.consecutive_failures + 1 >= %(threshold)s) THEN 'open'
                   ELSE e.circuit_state END,
               circuit_open_until = CASE
                   WHEN %(counted)s = 1 AND (e.circuit_state = 'half_open'
                                             OR e.consecutive_failures + 1 >= %(threshold)s)
                   THEN now() + make_interval(secs => least(%(cap)s, %(open)s * power(2, least(10, greatest(0,
                            e.consecutive_failures + 1 - %(threshold)s)))))
                   ELSE e.circuit_open_until END,
               retry_not_before = CASE WHEN %(throttle)s::float8 IS NOT NULL
                   THEN now() + make_interval(secs => %(throttle)s) ELSE e.retry_not_before END,
               status = CASE
                   WHEN %(gone)s THEN 'disabled'
                   WHEN e.status = 'active' AND %(auth)s AND e.auth_failures + 1 >= %(auth_flag)s THEN 'flagged'
                   WHEN e.status = 'active' AND %(counted)s = 1
                        AND coalesce(e.failing_since, now()) <= now() - make_interval(secs => %(disable_after)s)
                   THEN 'disabled'
                   ELSE e.status END,
               disabled_reason = CASE
                   WHEN %(gone)s THEN 'The endpoint answered 410 Gone.'
                   WHEN e.status = 'active' AND %(auth)s AND e.auth_failures + 1 >= %(auth_flag)s
                   THEN 'The endpoint refused our signature (401/403) repeatedly: check its secret.'
                   WHEN e.status = 'active' AND %(counted)s = 1
                        AND coalesce(e.failing_since, now()) <= now() - make_interval(secs => %(disable_after)s)
                   THEN 'Failing since ' || to_char(e.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') || ' UTC.'
                   ELSE e.disabled_reason END,
               updated_at = now()
         WHERE e.id = %(id)s
        RETURNING e.status
        """,
        {
            "counted": counted,
            "auth": outcome.auth_failure,
            "threshold": settings.WEBHOOK_CIRCUIT_FAILURES,
            "cap": settings.WEBHOOK_RETRY_CAP_SECONDS,
            "open": settings.WEBHOOK_CIRCUIT_OPEN_SECONDS,
            "throttle": outcome.retry_after if outcome.throttled else None,
            "gone": outcome.gone,
            "auth_flag": AUTH_FAILURES_TO_FLAG,
            "disable_after": settings.WEBHOOK_AUTO_DISABLE_DAYS * 86400,
            "id": claim.endpoint_id,
        },
    )
    return cursor.fetchone()[0]


def _log_outcome(claim: ClaimedDelivery, outcome: Outcome, state: str, endpoint_status: str) -> None:
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


def deliver(delivery_id: uuid.UUID) -> str:
    """Claim, send, record one delivery. Returns what happened (for logs and tests)."""
    claim = claim_delivery(delivery_id)
    if isinstance(claim, str):
        return claim
    outcome = send(claim)
    return record_outcome(claim, outcome)


# --- the durable scheduler's part ----------------------------------------------------------------------


def reap_expired_delivery_leases(*, limit: int = 500) -> int:
    """SENDING rows whose sender vanished: the outcome is unknown, so the same delivery (same
    webhook-id) goes again; the receiver's inbox absorbs a duplicate."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            WITH expired AS (
                UPDATE webhook_deliveries
                   SET state = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'pending' END,
                       lease_until = NULL, hinted_at = NULL, next_attempt_at = now(), updated_at = now(),
                       last_error = 'lease expired before the outcome was recorded'
                 WHERE id IN (SELECT id FROM webhook_deliveries
                               WHERE state = 'sending' AND lease_until < now()
                               ORDER BY lease_until LIMIT %s FOR UPDATE SKIP LOCKED)
                RETURNING id, attempts)
            UPDATE webhook_delivery_attempts AS a
               SET outcome = 'unknown', ended_at = now(), error = 'lease expired before the outcome was recorded'
              FROM expired
             WHERE a.delivery_id = expired.id AND a.number = expired.attempts AND a.outcome = 'in_flight'
            """,
            [limit],
        )
        return cursor.rowcount


def take_due_deliveries(*, limit: int) -> list[uuid.UUID]:
    """Due deliveries whose endpoint may be sent to now, not hinted in the last
    ``REHINT_SECONDS``; marks them hinted (uses ``delivery_due_idx``)."""
    if limit <= 0:
        return []
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE webhook_deliveries SET hinted_at = now()
             WHERE id IN (
                   SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
                    WHERE d.state = 'pending' AND d.next_attempt_at <= now()
                      AND (d.hinted_at IS NULL OR d.hinted_at < now() - make_interval(secs => %(rehint)s))
                      AND (e.status = 'active' OR d.is_verification)
                      AND (e.circuit_open_until IS NULL OR e.circuit_open_until <= now())
                      AND (e.retry_not_before IS NULL OR e.retry_not_before <= now())
                    ORDER BY d.next_attempt_at
                    LIMIT %(limit)s
                      FOR UPDATE OF d SKIP LOCKED)
            RETURNING id
            """,
            {"rehint": REHINT_SECONDS, "limit": limit},
        )
        return [row[0] for row in cursor.fetchall()]


def publish_dispatch_hints(delivery_ids: Iterable[uuid.UUID], *, broker: Connection | None = None) -> int:
    """Publish one ``delivery.dispatch`` message per id. Hints only: a failure is logged and
    the scheduler re-hints from PostgreSQL."""
    from config.celery import app

    sent = 0
    try:
        for delivery_id in delivery_ids:
            app.send_task(
                DISPATCH_TASK,
                kwargs={"delivery_id": str(delivery_id)},
                queue=DELIVERY,
                routing_key=DELIVERY,
                connection=broker,
            )
            sent += 1
    except Exception:
        logger.warning("could not publish a delivery hint; the scheduler will", exc_info=True)
    return sent


def schedule_due_deliveries(broker: Connection) -> int:
    """The scheduler tick's delivery sweep. Returns the hints published.

    1. Reap expired SENDING leases (unknown outcome → PENDING, same id).
    2. Take due deliveries of sendable endpoints, as many as the delivery queue has room for
       (waiting messages count against ``SCHEDULE_CAP``, so an outage's backlog is not
       re-published every tick), and publish a dispatch hint for each.
    """
    reap_expired_delivery_leases()
    room = SCHEDULE_CAP - queue_depth(broker, DELIVERY)
    return publish_dispatch_hints(take_due_deliveries(limit=room), broker=broker)


# --- operators: redeliver and replay ---------------------------------------------------------------------


@dataclass(frozen=True)
class DeliveryFilter:
    tenant_id: uuid.UUID | None = None
    endpoint_id: uuid.UUID | None = None
    states: tuple[str, ...] = (DeliveryState.FAILED,)
    event_type: str | None = None
    job_id: uuid.UUID | None = None
    since: datetime | None = None
    until: datetime | None = None
    delivery_ids: tuple[uuid.UUID, ...] = field(default=())


def _filter_sql(f: DeliveryFilter) -> tuple[str, dict[str, Any]]:
    clauses = ["d.state = ANY(%(states)s)", "NOT d.is_verification"]
    params: dict[str, Any] = {"states": list(f.states)}
    for column, value in (
        ("d.tenant_id", f.tenant_id),
        ("d.endpoint_id", f.endpoint_id),
        ("d.event_type", f.event_type),
        ("ev.job_id", f.job_id),
    ):
        if value is not None:
            key = column.replace(".", "_")
            clauses.append(f"{column} = %({key})s")
            params[key] = value
    if f.since is not None:
        clauses.append("d.created_at >= %(since)s")
        params["since"] = f.since
    if f.until is not None:
        clauses.append("d.created_at < %(until)s")
        params["until"] = f.until
    if f.delivery_ids:
        clauses.append("d.id = ANY(%(ids)s)")
        params["ids"] = list(f.delivery_ids)
    return " AND ".join(clauses), params


def redeliver(f: DeliveryFilter, *, dry_run: bool = False) -> list[uuid.UUID]:
    """Put matching FAILED (or DELIVERED, for a replay) deliveries back to PENDING, due now,
    with a fresh attempt budget. Same delivery ids: an ERP that has them answers 2xx again
    without a second effect. SENDING and PENDING rows are never touched."""
    states = tuple(s for s in f.states if s in (DeliveryState.FAILED, DeliveryState.DELIVERED))
    where, params = _filter_sql(DeliveryFilter(**{**f.__dict__, "states": states}))
    with transaction.atomic(), connection.cursor() as cursor:
        if dry_run:
            cursor.execute(
                f"SELECT d.id FROM webhook_deliveries d JOIN webhook_events ev ON ev.event_id = d.event_id "
                f"WHERE {where}",
                params,
            )
            return [row[0] for row in cursor.fetchall()]
        cursor.execute(
            f"""
            UPDATE webhook_deliveries AS d
               SET state = 'pending', next_attempt_at = now(), hinted_at = NULL, lease_until = NULL,
                   max_attempts = d.attempts + %(budget)s, updated_at = now()
              FROM webhook_events ev
             WHERE ev.event_id = d.event_id AND {where}
            RETURNING d.id
            """,
            {**params, "budget": settings.WEBHOOK_MAX_ATTEMPTS},
        )
        ids = [row[0] for row in cursor.fetchall()]
    logger.info("deliveries put back for redelivery", extra={"count": len(ids)})
    return ids


def replay_events(
    *,
    endpoint_id: uuid.UUID,
    since: datetime | None = None,
    until: datetime | None = None,
    event_type: str | None = None,
    dry_run: bool = False,
) -> list[uuid.UUID]:
    """Create the deliveries an endpoint never had (it was registered, or re-enabled, after
    the events) for its tenant's events in a window, of the types it subscribes to."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT tenant_id, event_types FROM webhook_endpoints WHERE id = %s", [endpoint_id])
        row = cursor.fetchone()
        if row is None:
            return []
        tenant_id, types = row
        cursor.execute(
            """
            SELECT ev.event_id, ev.event_type FROM webhook_events ev
             WHERE ev.tenant_id = %(tenant)s AND ev.event_type = ANY(%(types)s)
               AND (%(since)s::timestamptz IS NULL OR ev.created_at >= %(since)s)
               AND (%(until)s::timestamptz IS NULL OR ev.created_at < %(until)s)
               AND (%(type)s::text IS NULL OR ev.event_type = %(type)s)
               AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                                WHERE d.event_id = ev.event_id AND d.endpoint_id = %(endpoint)s)
             ORDER BY ev.created_at
            """,
            {
                "tenant": tenant_id,
                "types": list(types),
                "since": since,
                "until": until,
                "type": event_type,
                "endpoint": endpoint_id,
            },
        )
        events = cursor.fetchall()
        if dry_run:
            return [delivery_id_for(event_id, endpoint_id) for event_id, _ in events]
        created: list[uuid.UUID] = []
        for event_id, webhook_type in events:
            created += _insert_deliveries(
                cursor, event_id=event_id, tenant_id=tenant_id, webhook_type=webhook_type, endpoint_ids=[endpoint_id]
            )
    return created


def expedite(delivery_id: uuid.UUID) -> bool:
    """Make a PENDING delivery due now (an operator or the demo set-up waiting on it)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE webhook_deliveries SET next_attempt_at = now(), hinted_at = NULL "
            "WHERE id = %s AND state = 'pending'",
            [delivery_id],
        )
        return cursor.rowcount == 1
