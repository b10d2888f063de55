"""Durable acceptance (ACC-1..5): one job and one outbox row per (tenant, idempotency key),
replays answer the same job, a reused key with another request is 409 — also under races."""

from __future__ import annotations

import dataclasses
import threading
import uuid
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from accounts.models import TenantUsage
from extraction.events import EventType
from extraction.intake.acceptance import JobRequest
from extraction.models import Document, ExtractionJob, JobEvent, JobState, OutboxEvent
from tests.factories import JOBS_URL, SMALL_INVOICE, request_job, upload_document


def written_rows() -> tuple[int, int, int]:
    return ExtractionJob.objects.count(), OutboxEvent.objects.count(), JobEvent.objects.count()


def test_accept_answers_202_with_location_and_status_url(tenant_a):
    doc = upload_document(tenant_a.client)
    response = request_job(tenant_a.client, "k-1", body={"document_id": doc["id"]})
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["state"] == JobState.ACCEPTED
    assert body["status_url"] == f"{JOBS_URL}/{body['job_id']}"
    assert response["Location"] == body["status_url"]
    assert "Idempotent-Replayed" not in response


def test_accepted_job_is_durable_with_its_outbox_event_and_budget(tenant_a):
    doc = upload_document(tenant_a.client)
    job_id = request_job(tenant_a.client, "k-1", body={"document_id": doc["id"]}).json()["job_id"]

    job = ExtractionJob.objects.get(pk=job_id)
    assert (job.tenant_id, str(job.document_id), str(job.document_version)) == (
        tenant_a.tenant.pk,
        doc["id"],
        doc["version"],
    )
    assert (job.state, job.state_version, job.attempt, job.idempotency_key) == (JobState.ACCEPTED, 1, 0, "k-1")
    assert job.byte_size == doc["size"]

    [event] = OutboxEvent.objects.filter(job_id=job_id)
    assert event.event_type == EventType.REQUESTED
    assert event.payload["job_id"] == job_id and event.published_at is None
    [history] = JobEvent.objects.filter(job_id=job_id)
    assert (history.state_version, history.to_state) == (1, JobState.ACCEPTED)

    usage = TenantUsage.objects.get(tenant=tenant_a.tenant)
    assert (usage.pending_jobs, usage.pending_bytes, usage.reserved_tokens) == (1, doc["size"], job.estimated_tokens)


def test_same_key_same_request_replays_the_same_job(tenant_a):
    doc = upload_document(tenant_a.client)
    body = {"document_id": doc["id"], "options": {"priority": "interactive"}}
    first = request_job(tenant_a.client, "k-1", body=body)
    again = request_job(tenant_a.client, "k-1", body=body)
    assert again.status_code == 202, again.content
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["job_id"] == first.json()["job_id"]
    assert again["Location"] == first["Location"]
    assert written_rows() == (1, 1, 1)
    assert TenantUsage.objects.get(tenant=tenant_a.tenant).pending_jobs == 1


def test_replay_answers_the_jobs_current_state(tenant_a):
    doc = upload_document(tenant_a.client)
    job_id = request_job(tenant_a.client, "k-1", body={"document_id": doc["id"]}).json()["job_id"]
    ExtractionJob.objects.filter(pk=job_id).update(state=JobState.READY, state_version=2)
    assert request_job(tenant_a.client, "k-1", body={"document_id": doc["id"]}).json()["state"] == JobState.READY


def test_defaults_written_out_are_the_same_request_as_defaults_omitted(tenant_a):
    doc = upload_document(tenant_a.client)
    first = request_job(tenant_a.client, "k-1", body={"document_id": doc["id"]})
    explicit = {
        "document_id": doc["id"].upper(),
        "schema": "invoice.v1",
        "options": {"model_policy": "default", "priority": "batch", "deadline_seconds": 24 * 3600},
    }
    again = request_job(tenant_a.client, "k-1", body=explicit)
    assert again.status_code == 202, again.content
    assert again.json()["job_id"] == first.json()["job_id"]


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"priority": "interactive"}, id="priority"),
        pytest.param({"deadline_seconds": 3600}, id="deadline"),
        pytest.param({"model_policy": "precise"}, id="model-policy"),
    ],
)
def test_same_key_other_options_is_409(tenant_a, settings, options):
    settings.MODEL_POLICIES = {**settings.MODEL_POLICIES, "precise": dict(settings.MODEL_POLICIES["default"])}
    doc = upload_document(tenant_a.client)
    first = request_job(tenant_a.client, "k-1", body={"document_id": doc["id"]})
    conflict = request_job(tenant_a.client, "k-1", body={"document_id": doc["id"], "options": options})
    assert conflict.status_code == 409, conflict.content
    assert conflict["Content-Type"] == "application/problem+json"
    assert conflict.json()["type"] == "/problems/idempotency-key-conflict"
    assert conflict.json()["job_id"] == first.json()["job_id"]
    assert written_rows() == (1, 1, 1)


def test_same_key_other_document_is_409(tenant_a):
    doc = upload_document(tenant_a.client)
    other = upload_document(tenant_a.client, SMALL_INVOICE + b"Page 2\n")
    request_job(tenant_a.client, "k-1", body={"document_id": doc["id"]})
    conflict = request_job(tenant_a.client, "k-1", body={"document_id": other["id"]})
    assert conflict.status_code == 409, conflict.content
    assert written_rows() == (1, 1, 1)


def test_same_key_after_the_document_version_changed_is_409(tenant_a):
    doc = upload_document(tenant_a.client)
    request_job(tenant_a.client, "k-1", body={"document_id": doc["id"]})
    # Same document id, new immutable object version: a different input, so a different request.
    Document.objects.filter(pk=doc["id"]).update(version=uuid.uuid4())
    conflict = request_job(tenant_a.client, "k-1", body={"document_id": doc["id"]})
    assert conflict.status_code == 409, conflict.content
    assert written_rows() == (1, 1, 1)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"schema": "invoice.v2"}, id="schema"),
        pytest.param({"model_policy": "precise"}, id="model-policy"),
        pytest.param({"priority_class": "interactive"}, id="priority"),
        pytest.param({"deadline_seconds": 60}, id="deadline"),
        pytest.param({"options": {"language": "de"}}, id="options"),
    ],
)
def test_request_hash_covers_everything_that_affects_the_result(tenant_a, change):
    document = Document(tenant=tenant_a.tenant, sha256="0" * 64, size=1, content_type="text/plain")
    request = JobRequest(
        document=document,
        schema="invoice.v1",
        model_policy="default",
        options={},
        priority_class="batch",
        deadline_seconds=3600,
    )
    assert dataclasses.replace(request, **change).request_hash() != request.request_hash()
    assert dataclasses.replace(request).request_hash() == request.request_hash()


def test_request_hash_covers_the_document_version(tenant_a):
    document = Document(tenant=tenant_a.tenant, sha256="0" * 64, size=1, content_type="text/plain")
    request = JobRequest(
        document=document,
        schema="invoice.v1",
        model_policy="default",
        options={},
        priority_class="batch",
        deadline_seconds=3600,
    )
    newer = Document(id=document.id, tenant=tenant_a.tenant, sha256="0" * 64, size=1, content_type="text/plain")
    assert newer.version != document.version
    assert dataclasses.replace(request, document=newer).request_hash() != request.request_hash()


def test_same_key_in_two_tenants_makes_two_jobs(tenant_a, tenant_b):
    a = request_job(tenant_a.client, "shared-key", body={"document_id": upload_document(tenant_a.client)["id"]})
    b = request_job(tenant_b.client, "shared-key", body={"document_id": upload_document(tenant_b.client)["id"]})
    assert (a.status_code, b.status_code) == (202, 202)
    assert a.json()["job_id"] != b.json()["job_id"]
    assert "Idempotent-Replayed" not in b
    assert written_rows() == (2, 2, 2)


def test_distinct_keys_make_distinct_jobs(tenant_a):
    doc = upload_document(tenant_a.client)
    ids = {request_job(tenant_a.client, f"k-{n}", body={"document_id": doc["id"]}).json()["job_id"] for n in range(3)}
    assert len(ids) == 3
    assert written_rows() == (3, 3, 3)
    assert OutboxEvent.objects.filter(job_id__in=ids).count() == 3


# --- Races: real threads, each with its own database connection --------------------------------


def race(n: int, token: str, key: str, bodies: list[dict[str, Any]]) -> list[Any]:
    """POST ``bodies[i]`` from thread i, all released at once; returns the responses in order."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def worker(i: int) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        try:
            barrier.wait(timeout=10)
            results[i] = request_job(client, key, body=bodies[i])
        except Exception as exc:  # noqa: BLE001 - reported by the test, not lost in the thread
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    errors = [r for r in results if isinstance(r, Exception)]
    assert not errors, errors
    return results


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_identical_requests_make_one_job_and_one_outbox_row(tenant_a):
    doc = upload_document(tenant_a.client)
    responses = race(20, tenant_a.token, "race-1", [{"document_id": doc["id"]}] * 20)
    assert [r.status_code for r in responses] == [202] * 20
    assert len({r.json()["job_id"] for r in responses}) == 1
    assert sum(r.has_header("Idempotent-Replayed") for r in responses) == 19
    assert written_rows() == (1, 1, 1)
    assert TenantUsage.objects.get(tenant=tenant_a.tenant).pending_jobs == 1


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_same_key_different_bodies_make_one_job_and_nineteen_409(tenant_a):
    doc = upload_document(tenant_a.client)
    bodies = [{"document_id": doc["id"], "options": {"deadline_seconds": 3600 + i}} for i in range(20)]
    responses = race(20, tenant_a.token, "race-2", bodies)
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [202] + [409] * 19
    [winner] = [r for r in responses if r.status_code == 202]
    assert {r.json()["job_id"] for r in responses if r.status_code == 409} == {winner.json()["job_id"]}
    assert written_rows() == (1, 1, 1)
    assert TenantUsage.objects.get(tenant=tenant_a.tenant).pending_jobs == 1
