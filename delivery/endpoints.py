"""A tenant's webhook endpoints: registration, verification, secret rotation, disabling (DLV-4).

An endpoint is only ever a URL the tenant registered (never one from a job payload), vetted
by the egress rule when registered and again before every send, and it receives events only
after it answered a signed ``webhook.verification.v1`` event with 2xx.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Now

from accounts.models import Tenant
from delivery import egress, fan_out, scheduling, signing
from delivery.models import (
    SUBSCRIBABLE_TYPES,
    DeliveryState,
    EndpointStatus,
    WebhookEndpoint,
    WebhookSecret,
)

logger = logging.getLogger("delivery")


class InvalidEndpoint(ValueError):
    """The URL or the event types cannot be registered."""


@dataclass(frozen=True)
class IssuedSecret:
    """A new signing secret, shown to the tenant once and never again."""

    key_id: str
    secret: str


@dataclass(frozen=True)
class Registration:
    endpoint: WebhookEndpoint
    secret: IssuedSecret
    verification_delivery_id: uuid.UUID


def vet_endpoint_url(url: str) -> str:
    try:
        egress.vet_url(url)
    except egress.EgressRefused as exc:
        raise InvalidEndpoint(str(exc)) from exc
    return url


def check_event_types(event_types: Sequence[str]) -> list[str]:
    types = list(dict.fromkeys(event_types))
    unknown = [t for t in types if t not in SUBSCRIBABLE_TYPES]
    if not types or unknown:
        raise InvalidEndpoint(f"event_types must be a non-empty list of {', '.join(SUBSCRIBABLE_TYPES)}")
    return types


def _add_secret(endpoint_id: uuid.UUID) -> IssuedSecret:
    text, raw = signing.new_secret()
    key_id = signing.new_key_id()
    WebhookSecret.objects.create(
        endpoint_id=endpoint_id, key_id=key_id, sealed=signing.seal(raw, context=f"{endpoint_id}/{key_id}")
    )
    return IssuedSecret(key_id=key_id, secret=text)


def register_endpoint(*, tenant: Tenant, url: str, event_types: Sequence[str], description: str = "") -> Registration:
    """Create an endpoint (pending verification) with its first secret, and send it the
    signed verification event. The URL is vetted (name resolution) before the transaction."""
    vet_endpoint_url(url)
    types = check_event_types(event_types)
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.create(
            tenant=tenant, url=url, event_types=types, description=description[:200]
        )
        secret = _add_secret(endpoint.pk)
        delivery_id = fan_out.create_verification_delivery(endpoint_id=endpoint.pk, tenant_id=tenant.pk)
    endpoint.refresh_from_db()
    scheduling.publish_dispatch_hints([delivery_id])
    logger.info("webhook endpoint registered", extra={"endpoint_id": str(endpoint.pk), "tenant": tenant.slug})
    return Registration(endpoint=endpoint, secret=secret, verification_delivery_id=delivery_id)


def request_verification(endpoint: WebhookEndpoint) -> uuid.UUID:
    """Send a new verification event: its 2xx (re)activates a pending, flagged or disabled
    endpoint. The URL is vetted again first."""
    vet_endpoint_url(endpoint.url)
    with transaction.atomic():
        delivery_id = fan_out.create_verification_delivery(endpoint_id=endpoint.pk, tenant_id=endpoint.tenant_id)
    scheduling.publish_dispatch_hints([delivery_id])
    return delivery_id


def rotate_secret(endpoint: WebhookEndpoint) -> tuple[IssuedSecret, str | None]:
    """A new current secret. The previous one keeps signing (a second ``v1,`` signature)
    for ``WEBHOOK_SECRET_ROTATION_WINDOW_SECONDS``; a key rotated out earlier stops now, so
    at most two keys sign. Returns the new secret and the previous key id."""
    window = settings.WEBHOOK_SECRET_ROTATION_WINDOW_SECONDS
    secrets = WebhookSecret.objects.filter(endpoint_id=endpoint.pk)
    with transaction.atomic():
        # Serialize rotations of one endpoint: the partial unique index would refuse the loser anyway.
        WebhookEndpoint.objects.select_for_update().filter(pk=endpoint.pk).exists()
        secrets.filter(expires_at__gt=Now()).update(expires_at=Now())  # rotated out earlier: stops now
        current = secrets.filter(expires_at__isnull=True)
        previous_key_id = current.values_list("key_id", flat=True).first()
        current.update(expires_at=Now() + timedelta(seconds=window))
        secret = _add_secret(endpoint.pk)
    logger.info("webhook secret rotated", extra={"endpoint_id": str(endpoint.pk), "key_id": secret.key_id})
    return secret, previous_key_id


def disable_endpoint(endpoint: WebhookEndpoint, *, reason: str) -> bool:
    """Stop sending to an endpoint. Its deliveries are kept (and sent if it is verified again),
    except verification events, which are cancelled. True if this call disabled it."""
    with transaction.atomic():
        changed = (
            WebhookEndpoint.objects.filter(pk=endpoint.pk)
            .exclude(status=EndpointStatus.DISABLED)
            .update(status=EndpointStatus.DISABLED, disabled_reason=reason[:500])
        )
        endpoint.deliveries.filter(is_verification=True, state=DeliveryState.PENDING).update(
            state=DeliveryState.FAILED, last_error="endpoint disabled"
        )
    return bool(changed)


def reset_circuit(endpoint: WebhookEndpoint) -> None:
    """An operator's override: send again now (e.g. after the ERP announced it is back)."""
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        circuit_state="closed", circuit_open_until=None, retry_not_before=None, consecutive_failures=0
    )
