"""Admission (BP-1): a tenant past one of its limits gets 429 naming it, the system past its
backlog bound gets 503; both carry Retry-After and write nothing."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import Tenant, TenantUsage
from extraction.models import ExtractionJob, JobEvent, OutboxEvent
from tests.factories import SMALL_INVOICE, make_tenant_context, request_job, upload_document

# The default model policy reserves 6,000 tokens at 2,000 micros per 1,000 tokens.
TOKENS_PER_JOB = 6000
SPEND_PER_JOB = 12_000


def snapshot(tenant: Tenant) -> tuple[Any, ...]:
    usage = TenantUsage.objects.get(tenant=tenant)
    return (
        ExtractionJob.objects.count(),
        OutboxEvent.objects.count(),
        JobEvent.objects.count(),
        usage.pending_jobs,
        usage.pending_bytes,
        usage.reserved_tokens,
        usage.spent_today_micros,
    )


def set_limits(tenant: Tenant, **limits: int) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(**limits)


def assert_refused(response, *, status: int, problem_type: str) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert int(response["Retry-After"]) > 0
    body = response.json()
    assert body["type"] == problem_type
    return body


@pytest.mark.parametrize(
    ("limits", "limit_name"),
    [
        pytest.param({"max_pending_jobs": 1}, "pending_jobs", id="pending-jobs"),
        pytest.param({"max_pending_bytes": len(SMALL_INVOICE) * 2 - 1}, "pending_bytes", id="pending-bytes"),
        pytest.param({"max_reserved_tokens": TOKENS_PER_JOB * 2 - 1}, "reserved_tokens", id="reserved-tokens"),
        pytest.param({"daily_spend_limit_micros": SPEND_PER_JOB * 2 - 1}, "daily_spend", id="daily-spend"),
    ],
)
def test_tenant_over_a_limit_gets_429_naming_it_and_nothing_is_written(tenant_a, limits, limit_name):
    set_limits(tenant_a.tenant, **limits)
    doc = upload_document(tenant_a.client)
    assert request_job(tenant_a.client, "k-1", doc["id"]).status_code == 202  # room for exactly one
    before = snapshot(tenant_a.tenant)

    body = assert_refused(
        request_job(tenant_a.client, "k-2", doc["id"]), status=429, problem_type="/problems/tenant-limit-exceeded"
    )
    assert body["limit"] == limit_name
    assert limit_name in body["detail"]
    assert snapshot(tenant_a.tenant) == before
    assert not ExtractionJob.objects.filter(idempotency_key="k-2").exists()


def test_a_refused_key_can_be_used_once_room_frees_up(tenant_a):
    set_limits(tenant_a.tenant, max_pending_jobs=0)
    doc = upload_document(tenant_a.client)
    assert request_job(tenant_a.client, "k-1", doc["id"]).status_code == 429
    set_limits(tenant_a.tenant, max_pending_jobs=1)
    response = request_job(tenant_a.client, "k-1", doc["id"])
    assert response.status_code == 202, response.content
    assert "Idempotent-Replayed" not in response


def test_spend_already_made_today_counts_against_the_daily_limit(tenant_a):
    set_limits(tenant_a.tenant, daily_spend_limit_micros=SPEND_PER_JOB * 10)
    TenantUsage.objects.filter(tenant=tenant_a.tenant).update(
        spend_day=timezone.now().date(), spent_today_micros=SPEND_PER_JOB * 10 - SPEND_PER_JOB + 1
    )
    doc = upload_document(tenant_a.client)
    body = assert_refused(
        request_job(tenant_a.client, "k-1", doc["id"]), status=429, problem_type="/problems/tenant-limit-exceeded"
    )
    assert body["limit"] == "daily_spend"


def test_yesterdays_spend_does_not_count_today(tenant_a):
    set_limits(tenant_a.tenant, daily_spend_limit_micros=SPEND_PER_JOB)
    yesterday = timezone.now().date() - timedelta(days=1)
    TenantUsage.objects.filter(tenant=tenant_a.tenant).update(spend_day=yesterday, spent_today_micros=SPEND_PER_JOB)
    doc = upload_document(tenant_a.client)
    assert request_job(tenant_a.client, "k-1", doc["id"]).status_code == 202


def test_one_tenant_at_its_limit_does_not_limit_another(tenant_a, tenant_b):
    set_limits(tenant_a.tenant, max_pending_jobs=0)
    assert request_job(tenant_a.client, "k-1", upload_document(tenant_a.client)["id"]).status_code == 429
    assert request_job(tenant_b.client, "k-1", upload_document(tenant_b.client)["id"]).status_code == 202


def test_replay_of_an_accepted_key_is_202_while_the_tenant_is_at_its_limit(tenant_a):
    set_limits(tenant_a.tenant, max_pending_jobs=1)
    doc = upload_document(tenant_a.client)
    first = request_job(tenant_a.client, "k-1", doc["id"])
    assert request_job(tenant_a.client, "k-2", doc["id"]).status_code == 429
    before = snapshot(tenant_a.tenant)
    replay = request_job(tenant_a.client, "k-1", doc["id"])
    assert replay.status_code == 202, replay.content
    assert replay["Idempotent-Replayed"] == "true"
    assert replay.json()["job_id"] == first.json()["job_id"]
    assert snapshot(tenant_a.tenant) == before


def test_global_backlog_over_its_bound_is_503_and_nothing_is_written(tenant_a, tenant_b, settings):
    request_job(tenant_b.client, "k-1", upload_document(tenant_b.client)["id"])
    settings.GLOBAL_MAX_PENDING_JOBS = 1  # tenant_b's job fills the system
    doc = upload_document(tenant_a.client)
    before = snapshot(tenant_a.tenant)
    assert_refused(
        request_job(tenant_a.client, "k-1", doc["id"]), status=503, problem_type="/problems/accept-capacity-exhausted"
    )
    assert snapshot(tenant_a.tenant) == before


def test_replay_is_202_while_the_system_is_over_its_backlog_bound(tenant_a, settings):
    doc = upload_document(tenant_a.client)
    first = request_job(tenant_a.client, "k-1", doc["id"])
    settings.GLOBAL_MAX_PENDING_JOBS = 1
    replay = request_job(tenant_a.client, "k-1", doc["id"])
    assert replay.status_code == 202, replay.content
    assert replay.json()["job_id"] == first.json()["job_id"]
    assert request_job(tenant_a.client, "k-2", doc["id"]).status_code == 503


def test_same_key_other_request_is_still_409_while_over_the_backlog_bound(tenant_a, settings):
    doc = upload_document(tenant_a.client)
    request_job(tenant_a.client, "k-1", doc["id"])
    settings.GLOBAL_MAX_PENDING_JOBS = 1
    other = upload_document(tenant_a.client, SMALL_INVOICE + b"p2")
    assert request_job(tenant_a.client, "k-1", other["id"]).status_code == 409


@pytest.mark.django_db(transaction=True)
def test_concurrent_accepts_never_pass_the_pending_jobs_limit(db):
    tenant = make_tenant_context("racer", max_pending_jobs=5)
    doc = upload_document(tenant.client)
    barrier = threading.Barrier(20)
    statuses: list[Any] = [None] * 20

    def worker(i: int) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {tenant.token}")
        try:
            barrier.wait(timeout=10)
            statuses[i] = request_job(client, f"k-{i}", doc["id"]).status_code
        except Exception as exc:  # noqa: BLE001 - reported by the test, not lost in the thread
            statuses[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(statuses, key=str) == [202] * 5 + [429] * 15
    assert (ExtractionJob.objects.count(), OutboxEvent.objects.count()) == (5, 5)
    assert TenantUsage.objects.get(tenant=tenant.tenant).pending_jobs == 5
