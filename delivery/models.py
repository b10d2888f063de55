"""Getting results out: webhook endpoints, their secrets, the events sent, and deliveries.

Delivery is its own state machine (DLV-1), independent of the job's:

    PENDING ──claim──▶ SENDING ──2xx──▶ DELIVERED
       ▲                  │
       └──retry (backoff)─┤──410 / attempts spent──▶ FAILED
       └──lease expired───┘      (an operator's redeliver puts FAILED or DELIVERED back to PENDING)

Transitions live in :mod:`delivery.dispatch` (claim and outcome), :mod:`delivery.scheduling`
(expired leases) and :mod:`delivery.replay` (redelivery), each one a guarded UPDATE whose row
count decides; :mod:`delivery.fan_out` creates the rows. The reference ERP's own tables are in
:mod:`delivery.erp.models`.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

from accounts.models import Tenant
from extraction import events

# Re-exported for the API schema's enum name (settings.SPECTACULAR_SETTINGS) and delivery's own
# modules; the catalogue declares them.
WEBHOOK_TYPES = events.WEBHOOK_TYPES
SUBSCRIBABLE_TYPES = events.SUBSCRIBABLE_TYPES
VERIFICATION_TYPE = events.WebhookType.VERIFICATION.value
# Namespace of the deterministic delivery ids: uuid5(event_id/endpoint_id) is stable for the
# pair even if two fan-outs of the same event race.
DELIVERY_ID_NAMESPACE = uuid.UUID("6f1c3c0e-5b8e-4f1e-9a57-2d7f0c4b8e11")


def delivery_id_for(event_id: uuid.UUID, endpoint_id: uuid.UUID) -> uuid.UUID:
    return uuid.uuid5(DELIVERY_ID_NAMESPACE, f"{event_id}/{endpoint_id}")


class EndpointStatus(models.TextChoices):
    PENDING_VERIFICATION = "pending_verification"  # registered; waits for a 2xx to a signed verification event
    ACTIVE = "active"
    FLAGGED = "flagged"  # repeated 401/403: a configuration alarm; held until verified again
    DISABLED = "disabled"  # deleted by the tenant, 410 Gone, or failing for days


class CircuitState(models.TextChoices):
    CLOSED = "closed"
    OPEN = "open"  # nothing is sent before circuit_open_until
    HALF_OPEN = "half_open"  # one probe in flight until circuit_open_until


class WebhookEndpoint(models.Model):
    """A tenant's registered, verified receiver (DLV-4: never a URL from a job payload)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.CharField(max_length=2048)
    description = models.CharField(max_length=200, blank=True, default="")
    event_types = ArrayField(models.CharField(max_length=64))
    status = models.CharField(
        max_length=24, choices=EndpointStatus.choices, default=EndpointStatus.PENDING_VERIFICATION
    )
    disabled_reason = models.TextField(blank=True, default="")
    verified_at = models.DateTimeField(null=True, blank=True)
    # Health: reset by any 2xx. 429s do not count (the receiver is alive and asked us to wait).
    consecutive_failures = models.PositiveIntegerField(default=0)
    auth_failures = models.PositiveIntegerField(default=0)
    failing_since = models.DateTimeField(null=True, blank=True)
    circuit_state = models.CharField(max_length=16, choices=CircuitState.choices, default=CircuitState.CLOSED)
    circuit_open_until = models.DateTimeField(null=True, blank=True)
    retry_not_before = models.DateTimeField(null=True, blank=True, help_text="Set from a 429's Retry-After.")
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "webhook_endpoints"
        constraints = [
            models.CheckConstraint(condition=Q(status__in=EndpointStatus.values), name="endpoint_status_valid"),
            models.CheckConstraint(condition=Q(circuit_state__in=CircuitState.values), name="endpoint_circuit_valid"),
            models.CheckConstraint(condition=Q(event_types__len__gt=0), name="endpoint_has_event_types"),
        ]
        indexes = [
            # fan_out_event: the tenant's endpoints that still take events.
            models.Index(
                fields=["tenant"], name="endpoint_tenant_live_idx", condition=~Q(status=EndpointStatus.DISABLED)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.url} ({self.status})"


class WebhookSecret(models.Model):
    """One signing key of an endpoint. The current key has no ``expires_at``; a rotated-out
    key signs alongside the new one until it expires (two ``v1,`` signatures)."""

    id = models.BigAutoField(primary_key=True)
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="secrets")
    key_id = models.CharField(max_length=32, unique=True)
    sealed = models.TextField(help_text="AES-GCM sealed key bytes; the whsec_ text is shown once, at creation.")
    created_at = models.DateTimeField(db_default=Now())
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "webhook_secrets"
        constraints = [
            # At most one current key per endpoint: two concurrent rotations cannot both win.
            models.UniqueConstraint(
                fields=["endpoint"], condition=Q(expires_at__isnull=True), name="secret_one_current_per_endpoint"
            ),
        ]

    def context(self) -> str:
        return f"{self.endpoint_id}/{self.key_id}"


class WebhookEvent(models.Model):
    """The body of one event, serialized once: every delivery and every attempt of it sends
    these exact bytes. ``event_id`` is the outbox event's id (or a fresh one for a
    verification event)."""

    event_id = models.UUIDField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    event_type = models.CharField(max_length=64)
    job_id = models.UUIDField(null=True, blank=True)
    body = models.TextField()
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "webhook_events"
        indexes = [
            # replay_events: a tenant's events in a time window.
            models.Index(fields=["tenant", "created_at"], name="webhook_event_tenant_time_idx"),
        ]


class DeliveryState(models.TextChoices):
    PENDING = "pending"
    SENDING = "sending"
    DELIVERED = "delivered"
    FAILED = "failed"


class Delivery(models.Model):
    """One event to one endpoint. ``id`` is the ``webhook-id``: stable across every attempt
    and every redelivery, so the receiver deduplicates on it (DLV-2)."""

    id = models.UUIDField(primary_key=True, editable=False)
    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="deliveries")
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    event_type = models.CharField(max_length=64)
    is_verification = models.BooleanField(default=False)
    state = models.CharField(max_length=16, choices=DeliveryState.choices, default=DeliveryState.PENDING)
    attempts = models.PositiveIntegerField(default=0, help_text="Attempts made; also the fence of the current one.")
    max_attempts = models.PositiveIntegerField()
    next_attempt_at = models.DateTimeField(db_default=Now())
    lease_until = models.DateTimeField(null=True, blank=True)
    hinted_at = models.DateTimeField(null=True, blank=True)
    last_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    response_snippet = models.TextField(blank=True, default="")
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "webhook_deliveries"
        verbose_name_plural = "deliveries"
        constraints = [
            models.UniqueConstraint(fields=["event", "endpoint"], name="delivery_unique_event_endpoint"),
            models.CheckConstraint(condition=Q(state__in=DeliveryState.values), name="delivery_state_valid"),
            models.CheckConstraint(
                condition=~Q(state=DeliveryState.SENDING) | Q(lease_until__isnull=False),
                name="delivery_sending_has_lease",
            ),
            models.CheckConstraint(
                condition=Q(attempts__lte=models.F("max_attempts")), name="delivery_attempts_bounded"
            ),
        ]
        indexes = [
            # schedule_due_deliveries: pending deliveries by due time. hinted_at and lease_until
            # stay out of it, so the scheduler's marks are HOT updates.
            models.Index(fields=["next_attempt_at"], name="delivery_due_idx", condition=Q(state=DeliveryState.PENDING)),
            # claim_delivery: the half-open probe goes to the endpoint's longest-waiting delivery.
            models.Index(
                fields=["endpoint", "next_attempt_at"],
                name="delivery_endpoint_due_idx",
                condition=Q(state=DeliveryState.PENDING),
            ),
            # reap_expired_delivery_leases (called by schedule_due_deliveries): the few SENDING rows.
            models.Index(fields=["lease_until"], name="delivery_sending_idx", condition=Q(state=DeliveryState.SENDING)),
            # The endpoint's delivery log (API, admin) and redeliver_webhooks' filters.
            models.Index(fields=["endpoint", "-created_at"], name="delivery_endpoint_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} → {self.endpoint_id} ({self.state})"


class DeliveryAttemptOutcome(models.TextChoices):
    IN_FLIGHT = "in_flight"
    DELIVERED = "delivered"
    HTTP_ERROR = "http_error"  # an answer other than 2xx (3xx included: never followed)
    TIMEOUT = "timeout"
    CONNECTION_ERROR = "connection_error"
    EGRESS_REFUSED = "egress_refused"  # the URL now resolves to a refused address: nothing was sent
    UNKNOWN = "unknown"  # the sender's lease expired before it recorded an answer


class DeliveryAttempt(models.Model):
    id = models.BigAutoField(primary_key=True)
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField(db_default=Now())
    ended_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(
        max_length=24, choices=DeliveryAttemptOutcome.choices, default=DeliveryAttemptOutcome.IN_FLIGHT
    )
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    retry_after_seconds = models.FloatField(null=True, blank=True)
    elapsed_ms = models.PositiveIntegerField(null=True, blank=True)
    response_snippet = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")

    class Meta:
        db_table = "webhook_delivery_attempts"
        constraints = [
            models.UniqueConstraint(fields=["delivery", "number"], name="delivery_attempt_unique_number"),
            models.CheckConstraint(
                condition=Q(outcome__in=DeliveryAttemptOutcome.values), name="delivery_attempt_outcome_valid"
            ),
        ]
