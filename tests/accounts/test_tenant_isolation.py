"""Tenant scope (API-1): another tenant's object answers exactly like one that does not exist —
404 with a problem body, never 403 and never the object."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from accounts.models import ApiToken, Membership, Role
from extraction.models import ExtractionJob, OutboxEvent
from tests.factories import DOCUMENTS_URL, JOBS_URL, request_job, upload_document


@pytest.fixture
def a_objects(tenant_a) -> dict[str, Any]:
    """Tenant A's document and job, which tenant B must not be able to see."""
    document = upload_document(tenant_a.client)
    job_id = request_job(tenant_a.client, "a-1", document["id"]).json()["job_id"]
    return {"document": document, "job_id": job_id}


def problem_without_instance(response) -> dict[str, Any]:
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    body.pop("instance", None)  # echoes the requested path
    return body


def assert_same_as_missing(client: APIClient, url: str, missing_url: str) -> None:
    theirs = client.get(url)
    missing = client.get(missing_url)
    assert theirs.status_code == missing.status_code == 404, theirs.content
    assert problem_without_instance(theirs) == problem_without_instance(missing)
    assert problem_without_instance(theirs)["type"] == "/problems/not-found"


def test_other_tenants_document_is_404_like_a_missing_one(tenant_b, a_objects):
    doc = a_objects["document"]
    assert_same_as_missing(tenant_b.client, f"{DOCUMENTS_URL}/{doc['id']}", f"{DOCUMENTS_URL}/{uuid.uuid4()}")
    response = tenant_b.client.get(f"{DOCUMENTS_URL}/{doc['id']}")
    assert doc["sha256"].encode() not in response.content
    assert doc["version"].encode() not in response.content


def test_other_tenants_job_is_404_like_a_missing_one(tenant_b, a_objects):
    job_id = a_objects["job_id"]
    assert_same_as_missing(tenant_b.client, f"{JOBS_URL}/{job_id}", f"{JOBS_URL}/{uuid.uuid4()}")
    assert a_objects["document"]["id"].encode() not in tenant_b.client.get(f"{JOBS_URL}/{job_id}").content


def test_owner_still_reads_its_own_objects(tenant_a, a_objects):
    assert tenant_a.client.get(f"{DOCUMENTS_URL}/{a_objects['document']['id']}").status_code == 200
    assert tenant_a.client.get(f"{JOBS_URL}/{a_objects['job_id']}").status_code == 200


def test_an_operator_of_another_tenant_sees_nothing_either(tenant_b, a_objects):
    _, raw = ApiToken.issue(tenant=tenant_b.tenant, role=Role.OPERATOR)
    operator = APIClient()
    operator.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert operator.get(f"{JOBS_URL}/{a_objects['job_id']}").status_code == 404
    assert operator.get(JOBS_URL).json()["results"] == []


def test_a_session_user_of_another_tenant_sees_nothing(tenant_b, a_objects):
    user = get_user_model().objects.create_user(username="bea", password="correct-horse-battery")
    Membership.objects.create(user=user, tenant=tenant_b.tenant, role=Role.ADMIN)
    client = APIClient()
    client.force_login(user)
    assert client.get(f"{JOBS_URL}/{a_objects['job_id']}").status_code == 404
    assert client.get(f"{DOCUMENTS_URL}/{a_objects['document']['id']}").status_code == 404
    assert client.get(JOBS_URL).json()["results"] == []


def test_job_list_shows_only_the_callers_jobs(tenant_a, tenant_b, a_objects):
    b_job = request_job(tenant_b.client, "b-1", upload_document(tenant_b.client)["id"]).json()["job_id"]
    b_listed = tenant_b.client.get(JOBS_URL).json()["results"]
    assert [job["job_id"] for job in b_listed] == [b_job]
    assert tenant_b.client.get(JOBS_URL, {"state": "ACCEPTED"}).json()["results"] == b_listed
    a_listed = tenant_a.client.get(JOBS_URL).json()["results"]
    assert [job["job_id"] for job in a_listed] == [a_objects["job_id"]]


def test_accepting_with_another_tenants_document_is_like_an_unknown_document(tenant_b, a_objects):
    theirs = request_job(tenant_b.client, "b-1", a_objects["document"]["id"])
    missing = request_job(tenant_b.client, "b-2", str(uuid.uuid4()))
    assert theirs.status_code == missing.status_code == 422, theirs.content
    assert problem_without_instance(theirs) == problem_without_instance(missing)
    assert ExtractionJob.objects.filter(tenant=tenant_b.tenant).count() == 0
    assert OutboxEvent.objects.filter(tenant=tenant_b.tenant).count() == 0


def test_replaying_another_tenants_key_makes_a_job_of_ones_own(tenant_b, a_objects):
    response = request_job(tenant_b.client, "a-1", upload_document(tenant_b.client)["id"])
    assert response.status_code == 202, response.content
    assert response.json()["job_id"] != a_objects["job_id"]
    assert ExtractionJob.objects.get(pk=response.json()["job_id"]).tenant_id == tenant_b.tenant.pk
