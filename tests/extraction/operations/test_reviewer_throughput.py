"""Reviewer throughput in the SLO report: decisions per hour of the window, seconds per
decision (from the later of entering review and the reviewer's previous decision), fields
corrected per decision, in total and per reviewer, with exact figures."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from accounts.models import Tenant
from extraction.execution import lifecycle
from extraction.models import AttemptOutcome, ExtractionJob
from tests.extraction.operations.history import claim, complete, relive, unpaid, waiting_job
from tests.factories import SAMPLE_OUTPUT, make_tenant


def _report(since: datetime, until: datetime, tenant: Tenant, *, text: bool = False) -> Any:
    out = StringIO()
    fmt = "text" if text else "json"
    call_command(
        "slo_report",
        *["--since", since.isoformat(), "--until", until.isoformat(), "--tenant", tenant.slug, "--format", fmt],
        stdout=out,
    )
    return out.getvalue() if text else json.loads(out.getvalue())


def _reviewed(tenant: Tenant, reviewer_id: int, accepted_at: datetime, offsets: list[float], **decision: Any) -> None:
    """A job the rules sent to review and a reviewer decided: its events at ``offsets`` seconds
    after ``accepted_at`` (accepted, taken in, claimed, review, decision)."""
    job_id = waiting_job(tenant)
    complete(claim(job_id), unpaid(AttemptOutcome.REVIEW_REQUIRED), review=True)
    corrected = decision.get("corrected", [])
    assert lifecycle.decide_review(
        job_id=job_id,
        seen_state_version=ExtractionJob.objects.get(pk=job_id).state_version,
        reviewer_id=reviewer_id,
        approve=decision.get("approve", True),
        before=SAMPLE_OUTPUT,
        after=None,
        validation={"review": {"corrected_fields": corrected}} if decision.get("approve", True) else {},
    )
    relive(job_id, accepted_at, offsets)


def _user(name: str) -> int:
    return get_user_model().objects.create_user(username=f"{name}-{uuid.uuid4().hex[:6]}", is_staff=True).pk


@pytest.mark.django_db
def test_reviewer_throughput_gives_exact_figures_per_reviewer_and_in_total():
    until = timezone.now().replace(microsecond=0) - timedelta(minutes=30)
    since = until - timedelta(hours=2)
    tenant = make_tenant()
    rita, bob = _user("rita"), _user("bob")
    # Rita: 300 s (from entering review; her first decision), then 360 s and 440 s (each from
    # her previous decision, which came after the job entered review).
    _reviewed(tenant, rita, since, [0, 1, 2, 100, 400], corrected=["totals.gross", "totals.net"])
    _reviewed(tenant, rita, since + timedelta(seconds=60), [0, 1, 2, 100, 700])
    _reviewed(tenant, rita, since + timedelta(seconds=120), [0, 1, 2, 100, 1080], approve=False)
    # Bob: 600 s from entering review, one field corrected; his next decision is after the window.
    _reviewed(tenant, bob, since, [0, 1, 2, 50, 650], corrected=["supplier.iban"])
    _reviewed(tenant, bob, until - timedelta(seconds=60), [0, 1, 2, 10, 200], corrected=["invoice_number"])
    # Another tenant's decision in the window (after his first) is not this tenant's work.
    _reviewed(make_tenant(), bob, since, [0, 1, 2, 2900, 3000])

    figures = _report(since, until, tenant)["reviewers"]

    rita_name, bob_name = (get_user_model().objects.get(pk=pk).username for pk in (rita, bob))
    assert figures == {
        "decisions": 4,
        "reviewers": 2,
        "decisions_per_hour": 2.0,
        # 300, 360, 440 and 600 s
        "seconds_per_decision": {"count": 4, "p50": 400.0, "p95": pytest.approx(576.0), "p99": pytest.approx(595.2)},
        "fields_corrected": 3,
        "fields_corrected_per_decision": 0.75,
        "by_reviewer": [
            {
                "reviewer": rita_name,
                "decisions": 3,
                "decisions_per_hour": 1.5,
                "median_seconds_per_decision": 360.0,
                "fields_corrected_per_decision": pytest.approx(2 / 3),
            },
            {
                "reviewer": bob_name,
                "decisions": 1,
                "decisions_per_hour": 0.5,
                "median_seconds_per_decision": 600.0,
                "fields_corrected_per_decision": 1.0,
            },
        ],
    }
    text = _report(since, until, tenant, text=True)
    assert (
        "Reviewer throughput: 4 decisions by 2 reviewers in the window (2.00 per hour); median 400.000 s per "
        "decision; 3 fields corrected (0.75 per decision)"
    ) in text
    assert f"  {rita_name}: 3 decisions (1.50 per hour), median 360.000 s per decision, 0.67 fields" in text
