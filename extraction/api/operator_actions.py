"""Operators' bulk actions over the API: re-run or cancel the tenant's jobs by filter, and read
the audit of every action (these two, and delivery's redelivery). Thin views: parse, check the
operator role, call one function of :mod:`extraction.bulk.actions`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Principal, Role
from accounts.permissions import request_principal
from config.openapi import problems
from config.parsers import BoundedJSONParser
from config.problems import Problem
from config.serializers import StrictSerializer
from extraction.bulk import actions
from extraction.models import JobState, OperatorAction

ACTION_LIST_LIMIT = 100

# What every bulk action may answer besides its 201 (authentication, bodies and ids are
# documented by config.openapi from the view's mechanics).
BELOW_OPERATOR = {403: {"permission-denied": "The caller's role is below operator."}}
JOB_ACTION_PROBLEMS = problems(
    {
        **BELOW_OPERATOR,
        400: {"validation-error": "The filter names an unknown member or state, or ends before it starts."},
        422: {"too-many-matches": "The filter matches more jobs than one action may touch; `limit` says how many."},
    }
)


def operator_principal(request: Request) -> Principal:
    principal = request_principal(request)
    if not principal.has_role(Role.OPERATOR):
        raise Problem(
            "Bulk actions need the operator role.", slug="permission-denied", title="Permission denied", status_code=403
        )
    return principal


def request_actor(request: Request, principal: Principal) -> actions.Actor:
    """The audit's name for who is calling: the signed-in user, or the API token's id."""
    if principal.user_id is not None:
        return actions.Actor(name=f"user:{request._request.user.get_username()}", channel="api")
    return actions.Actor(name=f"token:{principal.token_id}", channel="api")


def too_many(exc: actions.TooManyMatches) -> Problem:
    return Problem(
        str(exc), slug="too-many-matches", title="Filter too broad", status_code=422, extra={"limit": exc.limit}
    )


def action_url(action_id: Any) -> str:
    return reverse("operator-action-detail", args=[action_id])


def report_body(report: actions.ActionReport) -> dict[str, Any]:
    return {
        "action_id": str(report.action_id),
        "kind": report.kind,
        "dry_run": report.dry_run,
        "matched": report.matched,
        "outcomes": report.outcomes,
        "action_url": action_url(report.action_id),
    }


def created(report: actions.ActionReport) -> Response:
    """Every action, a dry run too, leaves an audit record: 201 with its address."""
    body = report_body(report)
    return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["action_url"]})


class JobFilterSerializer(StrictSerializer):
    states = serializers.ListField(child=serializers.ChoiceField(choices=JobState.choices), required=False)
    created_since = serializers.DateTimeField(required=False)
    created_until = serializers.DateTimeField(required=False)
    reason = serializers.CharField(required=False, max_length=64)
    policy_version = serializers.CharField(required=False, max_length=32)
    # As many ids as fit in a request body (BoundedJSONParser's limit); a larger set is a filter.
    job_ids = serializers.ListField(child=serializers.UUIDField(), required=False, max_length=1000)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        since, until = attrs.get("created_since"), attrs.get("created_until")
        if since is not None and until is not None and since >= until:
            raise serializers.ValidationError({"created_until": ["Must be later than created_since."]})
        return attrs


class JobActionSerializer(StrictSerializer):
    filter = JobFilterSerializer()
    dry_run = serializers.BooleanField(default=False)


def job_filter(data: dict[str, Any]) -> actions.JobFilter:
    return actions.JobFilter(
        states=tuple(data.get("states", ())),
        created_since=data.get("created_since"),
        created_until=data.get("created_until"),
        reason=data.get("reason"),
        policy_version=data.get("policy_version"),
        job_ids=tuple(data.get("job_ids", ())),
    )


def perform_job_action(request: Request, run: Callable[..., actions.ActionReport]) -> Response:
    principal = operator_principal(request)
    if not isinstance(request.data, dict):
        raise Problem("The body must be a JSON object.", slug="validation-error", title="The request is not valid")
    serializer = JobActionSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    data = serializer.validated_data
    try:
        report = run(
            tenant_id=principal.tenant.pk,
            job_filter=job_filter(data["filter"]),
            actor=request_actor(request, principal),
            dry_run=data["dry_run"],
        )
    except actions.TooManyMatches as exc:
        raise too_many(exc) from exc
    return created(report)


class JobRerunView(APIView):
    """Re-run extraction for failed and review-waiting jobs matching the filter."""

    parser_classes = [BoundedJSONParser]

    @extend_schema(
        request=JobActionSerializer,
        responses={201: dict, **JOB_ACTION_PROBLEMS},
        operation_id="v1_extraction_jobs_rerun",
    )
    def post(self, request: Request) -> Response:
        return perform_job_action(request, actions.rerun_jobs)


class JobCancelView(APIView):
    """Cancel waiting and running jobs matching the filter."""

    parser_classes = [BoundedJSONParser]

    @extend_schema(
        request=JobActionSerializer,
        responses={201: dict, **JOB_ACTION_PROBLEMS},
        operation_id="v1_extraction_jobs_cancel",
    )
    def post(self, request: Request) -> Response:
        return perform_job_action(request, actions.cancel_jobs)


def action_body(action: OperatorAction, outcomes: dict[str, int] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "action_id": str(action.pk),
        "kind": action.kind,
        "actor": action.actor,
        "channel": action.channel,
        "filter": action.filter,
        "dry_run": action.dry_run,
        "status": action.status,
        "matched": action.matched,
        "changed": action.changed,
        "created_at": action.created_at.isoformat(),
        "finished_at": action.finished_at.isoformat() if action.finished_at else None,
        "action_url": action_url(action.pk),
    }
    if outcomes is not None:
        body["outcomes"] = outcomes
    return body


class OperatorActionListView(APIView):
    @extend_schema(responses={200: dict, **problems(BELOW_OPERATOR)}, operation_id="v1_operator_actions_list")
    def get(self, request: Request) -> Response:
        principal = operator_principal(request)
        recent = OperatorAction.objects.filter(tenant=principal.tenant).order_by("-created_at", "-id")
        return Response({"results": [action_body(a) for a in recent[:ACTION_LIST_LIMIT]]})


class OperatorActionDetailView(APIView):
    @extend_schema(
        responses={
            200: dict,
            **problems({**BELOW_OPERATOR, 404: {"not-found": "No action of this tenant has this id."}}),
        },
        operation_id="v1_operator_actions_retrieve",
    )
    def get(self, request: Request, action_id: Any) -> Response:
        principal = operator_principal(request)
        action = OperatorAction.objects.filter(tenant=principal.tenant, pk=action_id).first()
        if action is None:
            raise Problem("No such operator action.", slug="not-found", title="Not found", status_code=404)
        return Response(action_body(action, actions.action_outcomes(action.pk)))
