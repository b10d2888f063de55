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

import json
import logging
import random
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.db.models.functions import Now
from kombu import Connection
from opentelemetry.trace import SpanKind

from config import tracing
from config.backoff import full_jitter, parse_retry_after
from config.outages import Outage
from config.sql import load_statements
from config.topology import DELIVERY, queue_depth
from delivery import egress, signing
from delivery.models import (
    VERIFICATION_TYPE,
    WEBHOOK_TYPES,
    AttemptOutcome,
    CircuitState,
    DeliveryState,
    EndpointStatus,
    WebhookSecret,
    delivery_id_for,
)
from extraction.api.serializers import result_body
from extraction.events import WEBHOOK_JOB_STATES, WebhookType
from extraction.models import ExtractionJob, OutboxEvent

SQL = load_statements(Path(__file__).with_suffix(".sql"))
logger = logging.getLogger("delivery")

DISPATCH_TASK = "delivery.dispatch"
AUTH_FAILURES_TO_FLAG = 3
SNIPPET_CHARS = 512
MAX_RETRY_AFTER_SECONDS = 24 * 3600
# A hinted delivery is not hinted again for this long (the hint may still be queued).
REHINT_SECONDS = 30.0
SCHEDULE_CAP = 500


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
        "state": WEBHOOK_JOB_STATES[webhook_type].value,
        "state_version": int(outbox.payload["state_version"]),
        "schema": job.schema,
        "document": {"id": str(job.document_id), "version": str(job.document_version)},
    }
    if webhook_type == WebhookType.COMPLETED:
        data["result"] = result_body(job)
    elif webhook_type == WebhookType.FAILED:
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

    Traced as a child of the consumer's span (the relay's message carried the job's trace).
    """
    with tracing.step_span("delivery.fan_out", attributes={"extraction.event_id": str(event_id)}) as span:
        fan_out = _fan_out(event_id)
        span.set_attributes({"delivery.fan_out.outcome": fan_out.outcome, "delivery.created": len(fan_out.created)})
    return fan_out


def _fan_out(event_id: uuid.UUID) -> FanOut:
    with transaction.atomic():
        outbox = OutboxEvent.objects.filter(pk=event_id).first()
        if outbox is None:
            return FanOut("unknown_event")
        webhook_type = WEBHOOK_TYPES.get(outbox.event_type)
        if webhook_type is None or outbox.job_id is None:
            return FanOut("not_a_webhook_event")
        tracing.annotate({"extraction.job_id": str(outbox.job_id)})
        with connection.cursor() as cursor:
            cursor.execute(SQL["webhook_event_exists"], {"event": event_id})
            if cursor.fetchone() is None:
                body = signing.serialize_body(event_body(outbox, webhook_type)).decode()
                cursor.execute(
                    SQL["insert_webhook_event"],
                    {
                        "event": event_id,
                        "tenant": outbox.tenant_id,
                        "type": webhook_type,
                        "job": outbox.job_id,
                        "body": body,
                    },
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
            SQL["subscribed_endpoints"],
            {"tenant": tenant_id, "type": webhook_type, "disabled": EndpointStatus.DISABLED},
        )
        endpoint_ids = [row[0] for row in cursor.fetchall()]
    created = []
    for endpoint_id in endpoint_ids:
        cursor.execute(
            SQL["insert_delivery"],
            {
                "id": delivery_id_for(event_id, endpoint_id),
                "event": event_id,
                "endpoint": endpoint_id,
                "tenant": tenant_id,
                "type": webhook_type,
                "verification": verification,
                "pending": DeliveryState.PENDING,
                "max_attempts": settings.WEBHOOK_MAX_ATTEMPTS,
            },
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
        cursor.execute(SQL["database_now"])
        body["timestamp"] = _iso(cursor.fetchone()[0])
        cursor.execute(
            SQL["insert_verification_event"],
            {
                "event": event_id,
                "tenant": tenant_id,
                "type": VERIFICATION_TYPE,
                "body": signing.serialize_body(body).decode(),
            },
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
            SQL["lock_due_delivery"], {"id": delivery_id, "pending": DeliveryState.PENDING, "traced": tracing.enabled()}
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
            job_id,
            trace_context,
        ) = row
        if status != EndpointStatus.ACTIVE and not is_verification:
            return "endpoint_not_active"
        if _held(cursor, delivery_id, endpoint_id, due_at, circuit, open_until, not_before, now):
            # Its due time stays: the scheduler hints no delivery of a held endpoint, and when the
            # endpoint may go again, the longest-waiting delivery is first in line.
            cursor.execute(SQL["hold_delivery"], {"id": delivery_id, "pending": DeliveryState.PENDING})
            return "held"
        if attempts >= max_attempts:
            cursor.execute(
                SQL["fail_spent_delivery"],
                {"id": delivery_id, "pending": DeliveryState.PENDING, "failed": DeliveryState.FAILED},
            )
            return "attempts_spent"
        cursor.execute(
            SQL["start_attempt"],
            {
                "id": delivery_id,
                "lease": lease_seconds(),
                "pending": DeliveryState.PENDING,
                "sending": DeliveryState.SENDING,
            },
        )
        (attempt,) = cursor.fetchone()
        cursor.execute(
            SQL["insert_attempt"], {"id": delivery_id, "number": attempt, "in_flight": AttemptOutcome.IN_FLIGHT}
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
        job_id=job_id,
        trace_context=json.loads(trace_context) if isinstance(trace_context, str) else trace_context,
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
    if circuit == CircuitState.CLOSED:
        return False
    if open_until is not None and open_until > now:
        return True
    cursor.execute(
        SQL["older_pending_delivery"],
        {"endpoint": endpoint_id, "due_at": due_at, "id": delivery_id, "pending": DeliveryState.PENDING},
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
            "half_open": CircuitState.HALF_OPEN,
        },
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
                "pending": DeliveryState.PENDING,
                "sending": DeliveryState.SENDING,
                "delivered": DeliveryState.DELIVERED,
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
            SQL["endpoint_delivered"],
            {
                "verify": claim.is_verification,
                "id": claim.endpoint_id,
                "active": EndpointStatus.ACTIVE,
                "closed": CircuitState.CLOSED,
            },
        )
        row = cursor.fetchone()
        return row[0] if row else claim.endpoint_status
    cursor.execute(
        SQL["endpoint_failed"],
        {
            "counted": 1 if outcome.counts_against_endpoint else 0,
            "auth": outcome.auth_failure,
            "threshold": settings.WEBHOOK_CIRCUIT_FAILURES,
            "cap": settings.WEBHOOK_RETRY_CAP_SECONDS,
            "open_seconds": settings.WEBHOOK_CIRCUIT_OPEN_SECONDS,
            "throttle": outcome.retry_after if outcome.throttled else None,
            "gone": outcome.gone,
            "auth_flag": AUTH_FAILURES_TO_FLAG,
            "disable_after": settings.WEBHOOK_AUTO_DISABLE_DAYS * 86400,
            "id": claim.endpoint_id,
            "active": EndpointStatus.ACTIVE,
            "flagged": EndpointStatus.FLAGGED,
            "disabled": EndpointStatus.DISABLED,
            "open": CircuitState.OPEN,
            "half_open": CircuitState.HALF_OPEN,
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
    """Claim, send, record one delivery. Returns what happened (for logs and tests).

    Traced, the attempt (send and record) is a client span in the job's trace: a child of the
    dispatch hint's span when the fan-out sent the hint, else of the job's stored context,
    linked to the hint (the scheduler's re-hint of a due delivery is a trace of its own)."""
    claim = claim_delivery(delivery_id)
    if isinstance(claim, str):
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


# --- the durable scheduler's part ----------------------------------------------------------------------


def reap_expired_delivery_leases(*, limit: int = 500) -> int:
    """SENDING rows whose sender vanished: the outcome is unknown, so the same delivery (same
    webhook-id) goes again; the receiver's inbox absorbs a duplicate."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            SQL["reap_expired_leases"],
            {
                "limit": limit,
                "pending": DeliveryState.PENDING,
                "sending": DeliveryState.SENDING,
                "failed": DeliveryState.FAILED,
                "in_flight": AttemptOutcome.IN_FLIGHT,
                "unknown": AttemptOutcome.UNKNOWN,
            },
        )
        return cursor.rowcount


def take_due_deliveries(*, limit: int) -> list[uuid.UUID]:
    """Due deliveries whose endpoint may be sent to now, not hinted in the last
    ``REHINT_SECONDS``; marks them hinted (uses ``delivery_due_idx``)."""
    if limit <= 0:
        return []
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            SQL["take_due_deliveries"],
            {
                "rehint": REHINT_SECONDS,
                "limit": limit,
                "pending": DeliveryState.PENDING,
                "active": EndpointStatus.ACTIVE,
            },
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
    except Exception as exc:  # noqa: BLE001 - Outage.failed logs a bug with its traceback
        _hint_broker.failed(exc, consequence="delivery hints are dropped; the scheduler hints due deliveries again")
    else:
        _hint_broker.succeeded()
    return sent


_hint_broker = Outage(logger, "RabbitMQ (delivery hints)")


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


def _filter_params(f: DeliveryFilter) -> dict[str, Any]:
    """The parameters of redeliver's statements: a filter not given is NULL ("any")."""
    return {
        "states": list(f.states),
        "tenant": f.tenant_id,
        "endpoint": f.endpoint_id,
        "type": f.event_type,
        "job": f.job_id,
        "since": f.since,
        "until": f.until,
        "ids": list(f.delivery_ids) or None,
    }


def redeliver(f: DeliveryFilter, *, dry_run: bool = False) -> list[uuid.UUID]:
    """Put matching FAILED (or DELIVERED, for a replay) deliveries back to PENDING, due now,
    with a fresh attempt budget. Same delivery ids: an ERP that has them answers 2xx again
    without a second effect. SENDING and PENDING rows are never touched."""
    states = tuple(s for s in f.states if s in (DeliveryState.FAILED, DeliveryState.DELIVERED))
    params = _filter_params(DeliveryFilter(**{**f.__dict__, "states": states}))
    with transaction.atomic(), connection.cursor() as cursor:
        if dry_run:
            cursor.execute(SQL["redeliverable_deliveries"], params)
            return [row[0] for row in cursor.fetchall()]
        cursor.execute(
            SQL["redeliver"],
            {**params, "budget": settings.WEBHOOK_MAX_ATTEMPTS, "pending": DeliveryState.PENDING},
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
        cursor.execute(SQL["endpoint_subscription"], {"endpoint": endpoint_id})
        row = cursor.fetchone()
        if row is None:
            return []
        tenant_id, types = row
        cursor.execute(
            SQL["events_missing_a_delivery"],
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
        cursor.execute(SQL["expedite_delivery"], {"id": delivery_id, "pending": DeliveryState.PENDING})
        return cursor.rowcount == 1
