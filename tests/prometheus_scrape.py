"""What the shipped monitoring and autoscaling read, checked against a real scrape of /metrics:
the metric names a PromQL expression reads, the names a scrape serves, and the rows that give
every family the database collectors read a sample. tests/config/test_monitoring.py (the
dashboard and the alert rules) and tests/cluster/test_manifests.py (KEDA's queries and the
PrometheusRule) share it."""

from __future__ import annotations

import re
import uuid

from prometheus_client.parser import text_string_to_metric_families

from delivery.models import (
    Delivery,
    DeliveryAttempt,
    DeliveryAttemptOutcome,
    DeliveryState,
    EndpointStatus,
    WebhookEndpoint,
    WebhookEvent,
)
from extraction.execution import lifecycle
from extraction.models import AttemptOutcome, JobState
from tests.factories import make_job, make_tenant_context, submit

# --- PromQL: the metric names an expression reads ------------------------------------------------

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"' + r"|'(?:[^'\\]|\\.)*'")
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
# An identifier that is not called: a function is always followed by "(".
_IDENTIFIER = re.compile(r"(?<![\w$.])([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "group_left", "group_right", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: what is left once strings, label matchers,
    ranges and grouping clauses are taken out, minus function calls and keywords."""
    for pattern in (_STRING, _MATCHERS, _RANGE, _GROUPING):
        expr = pattern.sub(" ", expr)
    return {name for name in _IDENTIFIER.findall(expr) if name.lower() not in _KEYWORDS}


# --- a real scrape ---------------------------------------------------------------------------------


def served_names(text: str) -> tuple[set[str], set[str]]:
    """(every sample name a family of the scrape can carry, the names that carry a sample now)."""
    declared: set[str] = set()
    sampled: set[str] = set()
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "summary": ("", "_count", "_sum")}
    for family in text_string_to_metric_families(text):
        declared.update(family.name + suffix for suffix in suffixes.get(family.type, ("",)))
        sampled.update(sample.name for sample in family.samples)
    return declared, sampled


def give_every_family_a_row() -> None:
    """A job in review, one that ran to SUCCEEDED through the lifecycle, one accepted through
    the API; an endpoint, a due delivery and a 401 in its attempt ledger."""
    ctx = make_tenant_context()
    make_job(ctx.tenant, state=JobState.REVIEW_REQUIRED)
    ran = make_job(ctx.tenant)
    claim = lifecycle.claim_next_job(worker_id="monitoring-test", policies=["default"])
    assert claim is not None and claim.job_id == ran.pk
    assert lifecycle.complete_job(
        claim,
        review_required=False,
        output={},
        validation={},
        policy_version="t",
        report=lifecycle.AttemptReport(outcome=AttemptOutcome.SUCCEEDED),
    )
    submit(ctx)
    endpoint = WebhookEndpoint.objects.create(
        tenant=ctx.tenant,
        url="https://erp.example/hooks",
        event_types=["extraction.completed.v1"],
        status=EndpointStatus.ACTIVE,
    )
    event = WebhookEvent.objects.create(
        event_id=uuid.uuid4(), tenant=ctx.tenant, event_type="extraction.completed.v1", body="{}"
    )
    delivery = Delivery.objects.create(
        id=uuid.uuid4(),
        event=event,
        endpoint=endpoint,
        tenant=ctx.tenant,
        event_type=event.event_type,
        state=DeliveryState.PENDING,
        max_attempts=15,
    )
    DeliveryAttempt.objects.create(
        delivery=delivery, number=1, outcome=DeliveryAttemptOutcome.HTTP_ERROR, http_status=401
    )
