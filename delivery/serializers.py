"""Input validation and output shapes of the webhook-endpoint API. No business rules here."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rest_framework import serializers

from config.serializers import StrictSerializer
from delivery.endpoints import IssuedSecret
from delivery.models import SUBSCRIBABLE_TYPES, Delivery, WebhookEndpoint


class EndpointCreateSerializer(StrictSerializer):
    url = serializers.CharField(max_length=2048, trim_whitespace=False)
    # min_length restates allow_empty=False (checked first, with its own message) for the
    # OpenAPI schema, which reads only the lengths.
    event_types = serializers.ListField(
        child=serializers.ChoiceField(choices=SUBSCRIBABLE_TYPES),
        allow_empty=False,
        min_length=1,
        max_length=len(SUBSCRIBABLE_TYPES),
    )
    description = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def endpoint_body(endpoint: WebhookEndpoint, *, keys: list[dict[str, Any]]) -> dict[str, Any]:
    """An endpoint as shown after creation: never a secret, only the key ids that sign."""
    return {
        "id": str(endpoint.pk),
        "url": endpoint.url,
        "description": endpoint.description,
        "event_types": list(endpoint.event_types),
        "status": endpoint.status,
        "disabled_reason": endpoint.disabled_reason or None,
        "verified_at": _iso(endpoint.verified_at),
        "circuit_state": endpoint.circuit_state,
        "consecutive_failures": endpoint.consecutive_failures,
        "signing_keys": keys,
        "created_at": _iso(endpoint.created_at),
    }


def secret_body(secret: IssuedSecret) -> dict[str, str]:
    return {"key_id": secret.key_id, "secret": secret.secret}


def delivery_body(delivery: Delivery) -> dict[str, Any]:
    return {
        "delivery_id": str(delivery.pk),
        "event_id": str(delivery.event_id),
        "event_type": delivery.event_type,
        "state": delivery.state,
        "attempts": delivery.attempts,
        "next_attempt_at": _iso(delivery.next_attempt_at) if delivery.state == "pending" else None,
        "last_status": delivery.last_status,
        "last_error": delivery.last_error or None,
        "delivered_at": _iso(delivery.delivered_at),
        "created_at": _iso(delivery.created_at),
    }
