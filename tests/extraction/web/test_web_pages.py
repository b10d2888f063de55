"""The UI's server side: the job page (tenant-scoped, review link for reviewers only), the
document-text read API (404 across tenants) and WebSocket tickets."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import Membership, Role
from extraction.models import ExtractedText, ExtractionJob, JobState
from tests.factories import submit


def logged_in(tenant, role: str, *, enforce_csrf_checks: bool = False) -> Client:
    user = get_user_model().objects.create_user(username=f"u-{uuid.uuid4().hex[:8]}", password="pw-123456789")
    Membership.objects.create(user=user, tenant=tenant, role=role)
    client = Client(enforce_csrf_checks=enforce_csrf_checks)
    client.force_login(user)
    return client


@pytest.fixture
def waiting_for_review(tenant_a) -> str:
    job_id = submit(tenant_a)
    ExtractionJob.objects.filter(pk=job_id).update(state=JobState.REVIEW_REQUIRED, state_version=4)
    return job_id


def test_reviewer_sees_a_link_to_the_admin_review_screen(tenant_a, waiting_for_review):
    page = logged_in(tenant_a.tenant, Role.REVIEWER).get(f"/jobs/{waiting_for_review}/")
    assert page.status_code == 200
    assert f'href="/admin/extraction/extractionjob/{waiting_for_review}/review/"' in page.content.decode()


def test_member_gets_no_review_link(tenant_a, waiting_for_review):
    page = logged_in(tenant_a.tenant, Role.MEMBER).get(f"/jobs/{waiting_for_review}/")
    assert page.status_code == 200
    assert "/admin/extraction/" not in page.content.decode()


def test_job_page_of_another_tenant_is_404(tenant_a, tenant_b):
    job_b = submit(tenant_b)
    assert logged_in(tenant_a.tenant, Role.ADMIN).get(f"/jobs/{job_b}/").status_code == 404


def test_job_page_needs_a_login(tenant_a):
    job = submit(tenant_a)
    page = Client().get(f"/jobs/{job}/")
    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/")


def test_document_text_names_the_page_that_prints_the_e_invoice(tenant_a):
    job = submit(tenant_a)
    document_id = ExtractionJob.objects.get(pk=job).document_id
    ExtractedText.objects.create(
        document_id=document_id, pages=["Rechnung 1", "INVOICE (type 380)"], source="pdf_text_layer", einvoice_page=2
    )

    body = tenant_a.client.get(f"/api/v1/extraction-jobs/{job}/document-text").json()

    assert (body["pages"], body["einvoice_page"]) == (["Rechnung 1", "INVOICE (type 380)"], 2)


def test_document_text_is_served_to_the_owner_only(tenant_a, tenant_b):
    job = submit(tenant_a)
    url = f"/api/v1/extraction-jobs/{job}/document-text"
    assert tenant_a.client.get(url).status_code == 404  # not extracted yet
    document_id = ExtractionJob.objects.get(pk=job).document_id
    ExtractedText.objects.create(document_id=document_id, pages=["<b>Total</b> 1.00", "page two"], source="text")

    body = tenant_a.client.get(url).json()
    assert body["pages"] == ["<b>Total</b> 1.00", "page two"]
    assert body["document_id"] == str(document_id)
    assert body["einvoice_page"] is None
    other = tenant_b.client.get(url)
    assert other.status_code == 404
    assert (
        other.json()["detail"]
        == tenant_b.client.get(f"/api/v1/extraction-jobs/{uuid.uuid4()}/document-text").json()["detail"]
    )


def test_ticket_needs_authentication_and_csrf_for_sessions(tenant_a):
    assert Client().post("/api/v1/notification-tickets").status_code == 401
    browser = logged_in(tenant_a.tenant, Role.MEMBER, enforce_csrf_checks=True)
    assert browser.post("/api/v1/notification-tickets").status_code == 403  # no CSRF token
    created = tenant_a.client.post("/api/v1/notification-tickets")
    assert created.status_code == 201
    body = created.json()
    assert body["subprotocols"] == ["jobs.v1", f"ticket.{body['ticket']}"]
    assert body["ws_url"] == "ws://testserver:8001/ws/jobs/"
