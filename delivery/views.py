"""The webhook-endpoint API: thin views that parse, load by id, call one domain function.

Tenant admins register, rotate, verify and disable endpoints; operators may read them.
"""

from __future__ import annotations

import uuid

from django.db.models import Q
from django.db.models.functions import Now
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Principal, Role
from accounts.permissions import request_principal
from config.openapi import problems
from config.parsers import BoundedJSONParser
from config.problems import Problem
from delivery import endpoints
from delivery.models import DeliveryState, WebhookEndpoint, WebhookSecret
from delivery.serializers import (
    EndpointCreateSerializer,
    delivery_body,
    endpoint_body,
    secret_body,
)

DELIVERY_LIST_LIMIT = 100


def _principal(request: Request, needed: str) -> Principal:
    principal = request_principal(request)
    if not principal.has_role(needed):
        raise Problem(
            f"This needs the {needed} role.", slug="permission-denied", title="Permission denied", status_code=403
        )
    return principal


def _endpoint(request: Request, endpoint_id: uuid.UUID, needed: str) -> WebhookEndpoint:
    principal = _principal(request, needed)
    endpoint = WebhookEndpoint.objects.filter(tenant=principal.tenant, pk=endpoint_id).first()
    if endpoint is None:
        # Another tenant's endpoint answers exactly like a missing one.
        raise Problem("No such webhook endpoint.", slug="not-found", title="Not found", status_code=404)
    return endpoint


def _keys(endpoint: WebhookEndpoint) -> list[dict]:
    valid = WebhookSecret.objects.filter(endpoint=endpoint).filter(Q(expires_at__isnull=True) | Q(expires_at__gt=Now()))
    return [
        {
            "key_id": s.key_id,
            "created_at": s.created_at.isoformat(),
            "expires_at": s.expires_at.isoformat() if s.expires_at else None,
        }
        for s in valid.order_by("-created_at", "-id")
    ]


def _invalid(exc: endpoints.InvalidEndpoint) -> Problem:
    return Problem(str(exc), slug="invalid-webhook-endpoint", title="Webhook endpoint refused", status_code=422)


def _below(needed: str) -> dict[int, dict[str, str]]:
    return {403: {"permission-denied": f"The token's role is below {needed}."}}


_REFUSED_URL = {422: {"invalid-webhook-endpoint": "The URL fails the egress rule (https, public address, port)."}}


class WebhookEndpointListCreateView(APIView):
    parser_classes = [BoundedJSONParser]

    @extend_schema(
        request=EndpointCreateSerializer,
        parameters=[
            OpenApiParameter(
                "Location", str, OpenApiParameter.HEADER, response=[201], description="The endpoint's URL."
            )
        ],
        responses={201: dict, **problems({**_below(Role.ADMIN), **_REFUSED_URL})},
    )
    def post(self, request: Request) -> Response:
        principal = _principal(request, Role.ADMIN)
        serializer = EndpointCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            registration = endpoints.register_endpoint(
                tenant=principal.tenant,
                url=data["url"],
                event_types=data["event_types"],
                description=data["description"],
            )
        except endpoints.InvalidEndpoint as exc:
            raise _invalid(exc) from exc
        endpoint = registration.endpoint
        body = {**endpoint_body(endpoint, keys=_keys(endpoint)), **secret_body(registration.secret)}
        return Response(
            body, status=status.HTTP_201_CREATED, headers={"Location": f"/api/v1/webhook-endpoints/{endpoint.pk}"}
        )

    @extend_schema(operation_id="v1_webhook_endpoints_list", responses={200: dict, **problems(_below(Role.OPERATOR))})
    def get(self, request: Request) -> Response:
        principal = _principal(request, Role.OPERATOR)
        rows = WebhookEndpoint.objects.filter(tenant=principal.tenant).order_by("-created_at")[:200]
        return Response({"results": [endpoint_body(e, keys=_keys(e)) for e in rows]})


class WebhookEndpointDetailView(APIView):
    @extend_schema(responses={200: dict, **problems(_below(Role.OPERATOR))})
    def get(self, request: Request, endpoint_id: uuid.UUID) -> Response:
        endpoint = _endpoint(request, endpoint_id, Role.OPERATOR)
        return Response(endpoint_body(endpoint, keys=_keys(endpoint)))

    @extend_schema(
        description=(
            "Disables the endpoint: it stays readable (status `disabled`, its deliveries kept) and a"
            " verification turns it on again."
        ),
        responses={204: None, **problems(_below(Role.ADMIN))},
    )
    def delete(self, request: Request, endpoint_id: uuid.UUID) -> Response:
        endpoint = _endpoint(request, endpoint_id, Role.ADMIN)
        endpoints.disable_endpoint(endpoint, reason="Disabled by the tenant.")
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookEndpointRotateSecretView(APIView):
    @extend_schema(request=None, responses={200: dict, **problems(_below(Role.ADMIN))})
    def post(self, request: Request, endpoint_id: uuid.UUID) -> Response:
        endpoint = _endpoint(request, endpoint_id, Role.ADMIN)
        secret, previous = endpoints.rotate_secret(endpoint)
        return Response({**secret_body(secret), "previous_key_id": previous, "signing_keys": _keys(endpoint)})


class WebhookEndpointVerifyView(APIView):
    @extend_schema(request=None, responses={202: dict, **problems({**_below(Role.ADMIN), **_REFUSED_URL})})
    def post(self, request: Request, endpoint_id: uuid.UUID) -> Response:
        endpoint = _endpoint(request, endpoint_id, Role.ADMIN)
        try:
            delivery_id = endpoints.request_verification(endpoint)
        except endpoints.InvalidEndpoint as exc:
            raise _invalid(exc) from exc
        return Response({"verification_delivery_id": str(delivery_id)}, status=status.HTTP_202_ACCEPTED)


class WebhookEndpointDeliveriesView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("state", str, enum=DeliveryState.values)],
        responses={
            200: dict,
            **problems({**_below(Role.OPERATOR), 400: {"validation-error": "`state` is not a delivery state."}}),
        },
    )
    def get(self, request: Request, endpoint_id: uuid.UUID) -> Response:
        endpoint = _endpoint(request, endpoint_id, Role.OPERATOR)
        deliveries = endpoint.deliveries.order_by("-created_at")
        state = request.query_params.get("state")
        if state is not None:
            if state not in DeliveryState.values:
                raise Problem(
                    f"Unknown state {state!r}.",
                    slug="validation-error",
                    title="The request is not valid",
                    extra={"errors": {"state": [f"Must be one of {', '.join(DeliveryState.values)}."]}},
                )
            deliveries = deliveries.filter(state=state)
        return Response({"results": [delivery_body(d) for d in deliveries[:DELIVERY_LIST_LIMIT]]})
