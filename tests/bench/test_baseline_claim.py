"""The capacity benchmark's baseline claim (bench/baseline_claim.sql), which production does not
have: swapped in for the fair claim, it takes the oldest runnable job whoever owns it, and
records what the fair claim records."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from bench import capacity_lib
from extraction.execution import lifecycle
from extraction.models import Attempt, ExtractionJob, JobEvent, JobState
from tests.factories import TenantContext, make_job, make_tenant_context

pytestmark = pytest.mark.django_db(transaction=True)


def _ready(ctx: TenantContext, minutes_ago: int) -> str:
    job = make_job(ctx.tenant, state=JobState.READY)
    ExtractionJob.objects.filter(pk=job.pk).update(available_at=timezone.now() - timedelta(minutes=minutes_ago))
    return str(job.pk)


def test_the_fifo_baseline_takes_the_oldest_job_whoever_owns_it(tenant: TenantContext, monkeypatch):
    other = make_tenant_context()
    busy_first, busy_second, idle = _ready(tenant, 3), _ready(tenant, 2), _ready(other, 1)
    assert str(lifecycle.claim_next_job(worker_id="w").job_id) == busy_first
    assert str(lifecycle.claim_next_job(worker_id="w").job_id) == idle  # fair: the idle tenant next
    ExtractionJob.objects.filter(pk=idle).update(state=JobState.READY, lease_until=None, attempt=0)

    monkeypatch.setattr(lifecycle, "CLAIM", capacity_lib.claim_statement("fifo"))
    claim = lifecycle.claim_next_job(worker_id="w")

    assert claim is not None and str(claim.job_id) == busy_second and claim.more_eligible
    assert JobEvent.objects.filter(job_id=busy_second, to_state="RUNNING", reason="claimed").count() == 1
    assert Attempt.objects.get(job_id=busy_second).outcome == "running"


def test_fair_is_production_s_own_claim():
    assert capacity_lib.claim_statement("fair") == lifecycle.CLAIM == lifecycle.SQL["claim_fair"]
