"""Redelivery by filter as an operator action: the same webhook-ids sent again, audited like
the job actions (extraction.bulk.actions.record_action), from the API, the admin and the
management command alike."""

from __future__ import annotations

import uuid
from dataclasses import asdict
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.openapi import problems
from config.parsers import BoundedJSONParser
from config.problems import Problem
from config.serializers import StrictSerializer
from delivery import replay, scheduling
from delivery.models import SUBSCRIBABLE_TYPES, DeliveryState
from extraction.api.operator_actions import BELOW_OPERATOR, created, operator_principal, request_actor
from extraction.bulk import actions
from extraction.models import OperatorActionKind


def redeliver_webhooks(
    f: replay.DeliveryFilter, *, tenant_id: uuid.UUID | None, actor: actions.Actor, dry_run: bool = False
) -> actions.ActionReport:
    """Put the deliveries ``f`` matches back to PENDING (replay.redeliver), recorded as an
    operator action, and hint the delivery workers after the COMMIT."""
    redelivered: list[uuid.UUID] = []

    def run() -> list[uuid.UUID]:
        redelivered.extend(replay.redeliver(f, dry_run=dry_run))
        return redelivered

    report = actions.record_action(
        tenant_id=tenant_id,
        kind=OperatorActionKind.REDELIVER_WEBHOOKS,
        actor=actor,
        action_filter=_filter_json(f),
        dry_run=dry_run,
        run=run,
    )
    if not dry_run:
        scheduling.publish_dispatch_hints(redelivered)
    return report


def _filter_json(f: replay.DeliveryFilter) -> dict[str, Any]:
    """The members of the filter that were given (the audit's record of it)."""
    return {key: value for key, value in asdict(f).items() if key != "tenant_id" and value not in (None, ())}


class RedeliverFilterSerializer(StrictSerializer):
    states = serializers.ListField(
        child=serializers.ChoiceField(choices=[DeliveryState.FAILED, DeliveryState.DELIVERED]),
        required=False,
        min_length=1,
    )
    endpoint_id = serializers.UUIDField(required=False)
    event_type = serializers.ChoiceField(choices=SUBSCRIBABLE_TYPES, required=False)
    job_id = serializers.UUIDField(required=False)
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        since, until = attrs.get("since"), attrs.get("until")
        if since is not None and until is not None and since >= until:
            raise serializers.ValidationError({"until": ["Must be later than since."]})
        return attrs


class RedeliverSerializer(StrictSerializer):
    filter = RedeliverFilterSerializer()
    dry_run = serializers.BooleanField(default=False)


class WebhookRedeliverView(APIView):
    """Send the tenant's failed (or delivered) deliveries matching the filter again."""

    parser_classes = [BoundedJSONParser]

    @extend_schema(
        request=RedeliverSerializer,
        responses={
            201: dict,
            **problems(
                {
                    **BELOW_OPERATOR,
                    400: {"validation-error": "The filter names an unknown member or state, or ends before it starts."},
                }
            ),
        },
        operation_id="v1_webhook_deliveries_redeliver",
    )
    def post(self, request: Request) -> Response:
        principal = operator_principal(request)
        if not isinstance(request.data, dict):
            raise Problem("The body must be a JSON object.", slug="validation-error", title="The request is not valid")
        serializer = RedeliverSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        given = serializer.validated_data["filter"]
        f = replay.DeliveryFilter(
            tenant_id=principal.tenant.pk,
            endpoint_id=given.get("endpoint_id"),
            states=tuple(given.get("states", [DeliveryState.FAILED])),
            event_type=given.get("event_type"),
            job_id=given.get("job_id"),
            since=given.get("since"),
            until=given.get("until"),
        )
        report = redeliver_webhooks(
            f,
            tenant_id=principal.tenant.pk,
            actor=request_actor(request, principal),
            dry_run=serializer.validated_data["dry_run"],
        )
        return created(report)
