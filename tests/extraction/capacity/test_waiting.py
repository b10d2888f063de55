""" "Why is my job waiting?": every reason, produced by real job rows, the real lifecycle and
worker code, and the real Redis limiter (a pool of its own per test)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import pytest
from django.db.models import F
from django.db.models.functions import Now

from accounts.models import Tenant
from extraction.capacity import limiter, waiting
from extraction.execution import lifecycle
from extraction.execution.attempt import execute_attempt
from extraction.execution.lifecycle import AttemptReport
from extraction.execution.outcomes import AttemptResult
from extraction.execution.runtime import WorkerRuntime
from extraction.models import (
    AttemptOutcome,
    ExtractionJob,
    JobEvent,
    JobState,
    OutboxEvent,
)
from tests.factories import make_job, make_tenant

POLICY = "p-wait"
RESERVED_TOKENS = 1000


@pytest.fixture
def make_pool(transactional_db, settings):
    """Configure a pool with these limits, unique to the test, with a clean Redis budget."""
    made: list[str] = []

    def make(**limits) -> str:
        name = f"wait-{uuid.uuid4().hex[:10]}"
        settings.PROVIDER_POOLS = {
            name: {
                "provider": "builtin",
                "model": "builtin-rules-1",
                "max_output_tokens": 500,
                "requests_per_minute": 600,
                "tokens_per_minute": 600_000,
                "max_in_flight": 30,
                "reserved_tokens": RESERVED_TOKENS,
                **limits,
            }
        }
        settings.MODEL_POLICIES = {
            POLICY: {"provider_pool": name, "reserved_tokens": RESERVED_TOKENS, "price_per_1k_tokens_micros": 0},
        }
        limiter.reset_pool(name)
        made.append(name)
        return name

    yield make
    for name in made:
        limiter.reset_pool(name)


@pytest.fixture
def committed_tenant(transactional_db) -> Tenant:
    return make_tenant()


def parse(iso: str) -> datetime:
    return datetime.fromisoformat(iso)


def test_accepted_job_waits_for_ingress(make_pool, committed_tenant, settings):
    make_pool()
    job = make_job(committed_tenant, state=JobState.ACCEPTED, model_policy=POLICY)

    explained = waiting.explain_wait(job)
    assert explained == {
        "waiting_for": "ingress",
        "until": None,
        "detail": {"requested_event": "unpublished", "publish_attempts": 0, "last_error": None},
    }

    # Published but never taken in: recovery makes it READY INGRESS_RECOVERY_SECONDS later at the latest.
    OutboxEvent.objects.filter(job_id=job.pk).update(published_at=Now())
    published = OutboxEvent.objects.get(job_id=job.pk).published_at
    explained = waiting.explain_wait(job)
    assert explained["waiting_for"] == "ingress"
    assert explained["detail"]["requested_event"] == "published"
    assert parse(explained["until"]) == published + timedelta(seconds=settings.INGRESS_RECOVERY_SECONDS)


def test_failed_attempt_waits_for_its_retry_backoff(make_pool, committed_tenant):
    make_pool()
    make_job(committed_tenant, model_policy=POLICY)
    claim = lifecycle.claim_next_job(worker_id="w1", policies=[POLICY])
    assert (
        lifecycle.retry_or_fail(
            claim,
            report=AttemptReport(outcome=AttemptOutcome.PROVIDER_ERROR, http_status=503),
            retry=True,
            delay_seconds=120,
            error_class="provider_error",
        )
        == "retry"
    )
    job = ExtractionJob.objects.get(pk=claim.job_id)

    explained = waiting.explain_wait(job)
    assert explained["waiting_for"] == "retry_backoff"
    assert parse(explained["until"]) == job.available_at
    assert explained["detail"] == {
        "attempt": 1,
        "max_attempts": job.max_attempts,
        "last_outcome": "provider_error",
        "error_class": "provider_error",
    }


def test_job_handed_back_by_the_worker_names_the_pool_dimension(make_pool, committed_tenant):
    pool = make_pool(requests_per_minute=1)
    # Another worker took the pool's only request slot this minute.
    assert isinstance(limiter.acquire(limiter.pool_limits(pool), tokens=10), limiter.Permit)
    make_job(committed_tenant, model_policy=POLICY)
    claim = lifecycle.claim_next_job(worker_id="w1", policies=[POLICY])
    assert execute_attempt(claim, WorkerRuntime("w1")) == AttemptResult.DEFERRED
    job = ExtractionJob.objects.get(pk=claim.job_id)
    assert job.state == JobState.READY

    explained = waiting.explain_wait(job)
    assert explained["waiting_for"] == "capacity"
    assert parse(explained["until"]) == job.available_at
    assert explained["detail"]["pool"] == pool
    assert explained["detail"]["dimension"] == "rpm"
    assert explained["detail"]["live"]["requests_last_minute"] == 1
    assert explained["detail"]["live"]["requests_per_minute"] == 1


def test_pool_cooldown_is_named_with_its_end(make_pool, committed_tenant):
    pool = make_pool()
    job = make_job(committed_tenant, model_policy=POLICY)
    limiter.start_cooldown(pool, seconds=30)
    before = datetime.now().astimezone()

    explained = waiting.explain_wait(job)
    assert explained["waiting_for"] == "capacity"
    assert explained["detail"]["dimension"] == "cooldown"
    until = parse(explained["until"])
    assert before + timedelta(seconds=27) < until < before + timedelta(seconds=33)


def test_full_in_flight_pool_is_named(make_pool, committed_tenant):
    pool = make_pool(max_in_flight=1)
    assert isinstance(limiter.acquire(limiter.pool_limits(pool), tokens=10), limiter.Permit)
    job = make_job(committed_tenant, model_policy=POLICY)

    explained = waiting.explain_wait(job)
    assert explained["waiting_for"] == "capacity"
    assert explained["detail"]["dimension"] == "in_flight"
    assert explained["until"] is None
    assert explained["detail"]["live"]["in_flight"] == 1


def test_spent_token_window_is_named(make_pool, committed_tenant):
    pool = make_pool(tokens_per_minute=1500)
    # 1,000 tokens used this minute; this job's 1,000-token reservation would pass 1,500.
    assert isinstance(limiter.acquire(limiter.pool_limits(pool), tokens=1000), limiter.Permit)
    job = make_job(committed_tenant, model_policy=POLICY)

    explained = waiting.explain_wait(job)
    assert explained["waiting_for"] == "capacity"
    assert explained["detail"]["dimension"] == "tpm"


def test_tenant_at_its_in_flight_cap_is_named(make_pool, committed_tenant):
    make_pool()
    Tenant.objects.filter(pk=committed_tenant.pk).update(max_in_flight=1)
    make_job(committed_tenant, model_policy=POLICY)
    make_job(committed_tenant, model_policy=POLICY)
    running = lifecycle.claim_next_job(worker_id="w1", policies=[POLICY])
    waiting_job = ExtractionJob.objects.exclude(pk=running.job_id).get(tenant=committed_tenant)

    explained = waiting.explain_wait(waiting_job)
    assert explained == {
        "waiting_for": "tenant_in_flight_cap",
        "until": None,
        "detail": {"running": 1, "max_in_flight": 1},
    }


def test_eligible_job_nobody_claims_waits_for_a_worker(make_pool, committed_tenant):
    pool = make_pool()
    job = make_job(committed_tenant, model_policy=POLICY)
    assert waiting.explain_wait(job)["waiting_for"] == "next_claim"

    # Eligible for longer than the grace: its availability and its READY event moved back
    # (the explanation reads the database clock, so the rows are what time passing changes).
    back = timedelta(seconds=waiting.NO_WORKER_GRACE_SECONDS + 10)
    ExtractionJob.objects.filter(pk=job.pk).update(available_at=F("available_at") - back)
    JobEvent.objects.filter(job_id=job.pk).update(created_at=F("created_at") - back)
    job.refresh_from_db()
    explained = waiting.explain_wait(job)
    assert explained["waiting_for"] == "no_worker"
    assert explained["detail"]["pool"] == pool
    assert explained["detail"]["eligible_for_seconds"] > waiting.NO_WORKER_GRACE_SECONDS + 10


def test_running_job_is_not_waiting(make_pool, committed_tenant):
    make_pool()
    make_job(committed_tenant, model_policy=POLICY)
    claim = lifecycle.claim_next_job(worker_id="w1", policies=[POLICY])
    assert waiting.explain_wait(ExtractionJob.objects.get(pk=claim.job_id)) is None
