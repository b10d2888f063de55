"""The status API (API-1): the authoritative job status, execution internals for operators
only, and a tenant's job list with a state filter and cursor pagination."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken, Role
from extraction.models import ExtractionJob, JobState
from tests.factories import JOBS_URL, accepted_job, upload_document


def client_for_role(tenant, role: str) -> APIClient:
    _, raw = ApiToken.issue(tenant=tenant, role=role)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def running_job(tenant_a) -> ExtractionJob:
    """A job a worker holds: the execution detail that only operators may see is filled in."""
    doc = upload_document(tenant_a.client)
    job_id = accepted_job(tenant_a.client, "k-1", doc["id"])
    ExtractionJob.objects.filter(pk=job_id).update(
        state=JobState.RUNNING,
        state_version=3,
        attempt=2,
        fence=7,
        lease_owner="worker-host-17",
        lease_until=timezone.now() + timedelta(seconds=30),
    )
    return ExtractionJob.objects.get(pk=job_id)


def test_status_answers_the_job_as_accepted(tenant_a):
    doc = upload_document(tenant_a.client)
    job_id = accepted_job(tenant_a.client, "k-1", doc["id"])
    response = tenant_a.client.get(f"{JOBS_URL}/{job_id}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["job_id"] == job_id
    assert (body["state"], body["state_version"]) == (JobState.ACCEPTED, 1)
    assert body["status_url"] == f"{JOBS_URL}/{job_id}"
    assert body["document"] == {"id": doc["id"], "version": doc["version"]}
    assert body["schema"] == "invoice.v1"
    for timestamp in ("created_at", "updated_at", "deadline_at"):
        assert timezone.datetime.fromisoformat(body[timestamp])
    assert timezone.datetime.fromisoformat(body["deadline_at"]) > timezone.datetime.fromisoformat(body["created_at"])
    assert body["result"] is None and body["error"] is None


def test_status_follows_the_job(tenant_a, running_job):
    body = tenant_a.client.get(f"{JOBS_URL}/{running_job.pk}").json()
    assert (body["state"], body["state_version"]) == (JobState.RUNNING, 3)


@pytest.mark.parametrize("role", [Role.OPERATOR, Role.ADMIN])
def test_operators_see_the_execution_detail(tenant_a, running_job, role):
    body = client_for_role(tenant_a.tenant, role).get(f"{JOBS_URL}/{running_job.pk}").json()
    execution = body["execution"]
    assert (execution["attempt"], execution["fence"], execution["lease_owner"]) == (2, 7, "worker-host-17")
    assert timezone.datetime.fromisoformat(execution["lease_until"]) == running_job.lease_until


@pytest.mark.parametrize("role", [Role.MEMBER, Role.REVIEWER])
def test_members_do_not_see_the_execution_detail(tenant_a, running_job, role):
    client = client_for_role(tenant_a.tenant, role)
    response = client.get(f"{JOBS_URL}/{running_job.pk}")
    assert response.status_code == 200, response.content
    assert response.json()["state"] == JobState.RUNNING
    assert "execution" not in response.json()
    assert b"worker-host-17" not in response.content
    listed = client.get(JOBS_URL).json()["results"]
    assert [job["job_id"] for job in listed] == [str(running_job.pk)]
    assert "execution" not in listed[0]


def test_list_shows_operators_the_execution_detail(tenant_a, running_job):
    [listed] = client_for_role(tenant_a.tenant, Role.OPERATOR).get(JOBS_URL).json()["results"]
    assert listed["execution"]["fence"] == 7


def test_list_filters_by_state(tenant_a):
    doc = upload_document(tenant_a.client)
    ids = [accepted_job(tenant_a.client, f"k-{n}", doc["id"]) for n in range(4)]
    ExtractionJob.objects.filter(pk__in=ids[:2]).update(state=JobState.READY)

    ready = tenant_a.client.get(JOBS_URL, {"state": "READY"}).json()["results"]
    assert sorted(job["job_id"] for job in ready) == sorted(ids[:2])
    assert {job["state"] for job in ready} == {"READY"}
    accepted = tenant_a.client.get(JOBS_URL, {"state": "ACCEPTED"}).json()["results"]
    assert sorted(job["job_id"] for job in accepted) == sorted(ids[2:])
    assert tenant_a.client.get(JOBS_URL, {"state": "SUCCEEDED"}).json()["results"] == []


def walk(client: APIClient, url: str, params: dict[str, Any]) -> list[list[str]]:
    pages: list[list[str]] = []
    response = client.get(url, params)
    while True:
        assert response.status_code == 200, response.content
        pages.append([job["job_id"] for job in response.json()["results"]])
        next_url = response.json()["next"]
        if next_url is None:
            return pages
        response = client.get(next_url)


def test_cursor_pagination_visits_every_job_once_newest_first(tenant_a):
    doc = upload_document(tenant_a.client)
    ids = [accepted_job(tenant_a.client, f"k-{n}", doc["id"]) for n in range(7)]
    # Distinct creation times, so "newest first" has one right answer.
    base = timezone.now()
    for age, job_id in enumerate(reversed(ids)):
        ExtractionJob.objects.filter(pk=job_id).update(created_at=base - timedelta(seconds=age))

    pages = walk(tenant_a.client, JOBS_URL, {"page_size": 3})
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [job_id for page in pages for job_id in page] == list(reversed(ids))


def test_cursor_pagination_with_equal_creation_times_loses_and_repeats_nothing(tenant_a):
    # Jobs accepted in one transaction share now(); the cursor must still page through them.
    doc = upload_document(tenant_a.client)
    ids = [accepted_job(tenant_a.client, f"k-{n}", doc["id"]) for n in range(7)]
    assert ExtractionJob.objects.values("created_at").distinct().count() == 1
    pages = walk(tenant_a.client, JOBS_URL, {"page_size": 2})
    seen = [job_id for page in pages for job_id in page]
    assert sorted(seen) == sorted(ids)


def test_cursor_pagination_keeps_the_state_filter(tenant_a):
    doc = upload_document(tenant_a.client)
    ids = [accepted_job(tenant_a.client, f"k-{n}", doc["id"]) for n in range(5)]
    ExtractionJob.objects.filter(pk__in=ids[:3]).update(state=JobState.READY)
    pages = walk(tenant_a.client, JOBS_URL, {"state": "READY", "page_size": 2})
    assert sorted(job_id for page in pages for job_id in page) == sorted(ids[:3])


def test_previous_link_returns_to_the_first_page(tenant_a):
    doc = upload_document(tenant_a.client)
    ids = [accepted_job(tenant_a.client, f"k-{n}", doc["id"]) for n in range(3)]
    # Distinct creation times: DRF's cursor keeps only the first ordering field as its position,
    # so a previous link cannot step back through a run of equal timestamps.
    base = timezone.now()
    for age, job_id in enumerate(ids):
        ExtractionJob.objects.filter(pk=job_id).update(created_at=base - timedelta(seconds=age))
    first = tenant_a.client.get(JOBS_URL, {"page_size": 2}).json()
    second = tenant_a.client.get(first["next"]).json()
    assert first["previous"] is None
    back = tenant_a.client.get(second["previous"]).json()
    assert [job["job_id"] for job in back["results"]] == [job["job_id"] for job in first["results"]]
