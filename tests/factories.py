"""The shared test objects, made one way each: tenants (with an API token and a client),
documents, jobs in a given state, and submissions through the API.

Jobs reach their state the way production gets them there (``accept_job``, ingress taking the
requested event in, a worker's claim and completion), so every row, event and charge a test
may look at exists. Only ``make_ready_jobs`` writes rows directly, for tests that need
thousands of them."""

from __future__ import annotations

import io
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import F
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken, Role, Tenant, TenantUsage, create_tenant
from extraction.events import EventType
from extraction.execution import lifecycle
from extraction.intake.acceptance import JobRequest, accept_job
from extraction.intake.documents import store_document
from extraction.intake.text import DocumentText
from extraction.models import AttemptOutcome, Document, ExtractionJob, JobState, OutboxEvent
from extraction.providers.base import ProviderRequest
from tests.system import ROOT

INVOICES = ROOT / "testdata" / "invoices"

# Passes every validation check (valid VAT id and IBAN, totals add up).
SAMPLE_TEXT = (
    "ACME Supplies GmbH\nVAT ID: DE136695976\nIBAN: DE89 3704 0044 0532 0130 00\n"
    "Invoice number: INV-2026-001\nInvoice date: 2026-11-02\nDue date: 2026-12-02\nCurrency: EUR\n"
    "Widget 2 x 50.00 = 100.00\nNet total: 100.00 EUR\nVAT 19%: 19.00 EUR\nTotal: 119.00 EUR\n"
)

# What make_job completes a job with unless told otherwise: a minimal invoice.v1 answer.
SAMPLE_OUTPUT: dict[str, Any] = {
    "schema": "invoice.v1",
    "invoice_number": {"value": "INV-2026-001", "evidence": None},
    "supplier": {"name": {"value": "ACME Supplies GmbH", "evidence": None}},
    "currency": {"value": "EUR", "evidence": None},
    "totals": {"gross": {"value": "119.00", "evidence": None}},
}

_STATE_ORDER = (JobState.ACCEPTED, JobState.READY, JobState.RUNNING)
_COMPLETED = (JobState.SUCCEEDED, JobState.REVIEW_REQUIRED)


@dataclass(frozen=True)
class TenantContext:
    """A tenant, one raw API token of it, and an API client sending that token."""

    tenant: Tenant
    token: str
    client: APIClient


def unique_slug(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def unique_invoice() -> bytes:
    """The sample invoice with its own invoice number: distinct bytes, so its own document."""
    return SAMPLE_TEXT.replace("INV-2026-001", f"INV-{uuid.uuid4().hex[:12].upper()}").encode()


def make_tenant(slug: str | None = None, **fields: Any) -> Tenant:
    """A tenant with its usage row; ``fields`` set its limits or weight (``max_in_flight=1``)."""
    tenant = create_tenant(slug=slug or unique_slug())
    if fields:
        Tenant.objects.filter(pk=tenant.pk).update(**fields)
        tenant.refresh_from_db()
    return tenant


def make_tenant_context(slug: str | None = None, *, role: str = Role.ADMIN, **limits: Any) -> TenantContext:
    """A tenant with an API token of ``role`` and a client that sends it."""
    tenant = make_tenant(slug, **limits)
    _, raw = ApiToken.issue(tenant=tenant, role=role)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return TenantContext(tenant=tenant, token=raw, client=client)


def make_document(tenant: Tenant, *, content: bytes | None = None, filename: str = "invoice.txt") -> Document:
    """A stored document (bytes in storage, the row through store_document); by default a
    sample invoice of its own."""
    document, _ = store_document(tenant=tenant, upload=io.BytesIO(content or unique_invoice()), filename=filename)
    return document


def take_in(job_id: uuid.UUID | str) -> None:
    """ACCEPTED → READY the way ingress does it: the requested event is taken in."""
    event = OutboxEvent.objects.get(job_id=job_id, event_type=EventType.REQUESTED)
    assert lifecycle.take_in_requested_event(event_id=event.event_id, payload=event.payload) == "taken_in"


def make_job(
    tenant: Tenant,
    *,
    state: str = JobState.READY,
    document: Document | None = None,
    model_policy: str = "default",
    priority: str = "batch",
    options: dict[str, Any] | None = None,
    deadline_seconds: int = 3600,
    key: str | None = None,
    available_at: datetime | None = None,
    output: dict[str, Any] | None = None,
    validation: dict[str, Any] | None = None,
    policy_version: str = "test",
    worker_id: str = "test-worker",
    schema: str = "invoice.v1",
) -> ExtractionJob:
    """One job in ``state``, reached honestly:

    1. ACCEPTED: ``accept_job`` (job row, requested event, first job event, tenant charged).
    2. READY: ingress takes the requested event in; ``available_at`` then moves its
       availability (the one direct write, for tests about waiting and ageing).
    3. RUNNING: a worker claims it; the claim must be this job, so no other runnable job of
       ``model_policy`` may be due before it.
    4. SUCCEEDED or REVIEW_REQUIRED: the worker completes it with ``output`` and ``validation``.
    """
    if state not in (*_STATE_ORDER, *_COMPLETED):
        raise ValueError(f"make_job cannot reach {state} honestly; move the job there in the test")
    accepted = accept_job(
        tenant=tenant,
        idempotency_key=key or uuid.uuid4().hex,
        request=JobRequest(
            document=document or make_document(tenant),
            schema=schema,
            model_policy=model_policy,
            options=options or {},
            priority_class=priority,
            deadline_seconds=deadline_seconds,
        ),
    )
    if state != JobState.ACCEPTED:
        take_in(accepted.job_id)
    if available_at is not None:
        ExtractionJob.objects.filter(pk=accepted.job_id).update(available_at=available_at)
    if state in (JobState.RUNNING, *_COMPLETED):
        claim = lifecycle.claim_next_job(worker_id=worker_id, policies=[model_policy])
        assert claim is not None and claim.job_id == accepted.job_id, "another runnable job was claimed first"
        if state in _COMPLETED:
            review_required = state == JobState.REVIEW_REQUIRED
            outcome = AttemptOutcome.REVIEW_REQUIRED if review_required else AttemptOutcome.SUCCEEDED
            assert lifecycle.complete_job(
                claim,
                review_required=review_required,
                output=SAMPLE_OUTPUT if output is None else output,
                validation=validation if validation is not None else {"ok": True},
                policy_version=policy_version,
                report=lifecycle.AttemptReport(outcome=outcome),
            )
    return ExtractionJob.objects.get(pk=accepted.job_id)


def make_ready_jobs(
    tenant: Tenant,
    count: int,
    *,
    priority: str = "batch",
    available_at: datetime | None = None,
    step: timedelta = timedelta(0),
) -> list[ExtractionJob]:
    """``count`` READY jobs written directly (as ingress would leave them), the tenant charged
    for them: for tests that need thousands. The n-th becomes available at
    ``available_at + n * step`` (default: an hour ago)."""
    doc = Document.objects.create(
        tenant=tenant, sha256=uuid.uuid4().hex * 2, size=10, content_type="text/plain", storage_name="x"
    )
    start = available_at or timezone.now() - timedelta(hours=1)
    deadline = timezone.now() + timedelta(days=1)
    jobs = [
        ExtractionJob(
            tenant=tenant,
            document=doc,
            document_version=doc.version,
            idempotency_key=uuid.uuid4().hex,
            request_hash="0" * 64,
            schema="invoice.v1",
            model_policy="default",
            priority_class=priority,
            state=JobState.READY,
            state_version=2,
            max_attempts=5,
            available_at=start + i * step,
            deadline_at=deadline,
            estimated_tokens=6000,
            byte_size=10,
        )
        for i in range(count)
    ]
    ExtractionJob.objects.bulk_create(jobs, batch_size=2000)
    TenantUsage.objects.filter(tenant=tenant).update(pending_jobs=F("pending_jobs") + count)
    return jobs


DOCUMENTS_URL = "/api/v1/documents"
JOBS_URL = "/api/v1/extraction-jobs"
# A small text invoice for the API tests that look at acceptance, not at extraction.
SMALL_INVOICE = b"Invoice 42\nSupplier: Acme\nTotal 10.00 EUR\n"


def upload_document(client: APIClient, content: bytes = SMALL_INVOICE, *, name: str = "i.txt") -> dict[str, Any]:
    """POST a document as a client does; its representation (201 asserted)."""
    response = client.post(DOCUMENTS_URL, {"file": SimpleUploadedFile(name, content)}, format="multipart")
    assert response.status_code == 201, response.content
    return response.json()


def request_job(client: APIClient, key: str, document_id: str | None = None, *, body: dict[str, Any] | None = None):
    """POST an extraction job request under Idempotency-Key ``key``; the response, whatever it
    is (``body`` replaces the default ``{"document_id": document_id}``)."""
    return client.post(
        JOBS_URL, body if body is not None else {"document_id": document_id}, format="json", HTTP_IDEMPOTENCY_KEY=key
    )


def accepted_job(client: APIClient, key: str, document_id: str) -> str:
    """Request a job that must be accepted (202 asserted); its id."""
    response = request_job(client, key, document_id)
    assert response.status_code == 202, response.content
    return response.json()["job_id"]


def submit(
    ctx: TenantContext,
    *,
    content: bytes | None = None,
    key: str | None = None,
    options: dict[str, Any] | None = None,
    schema: str | None = None,
) -> str:
    """Upload ``content`` (default: the sample invoice with a number of its own, so that jobs
    submitted one after another are not each other's duplicates) and request its extraction
    through the API, as a client does: the job's id."""
    document = upload_document(ctx.client, content or unique_invoice(), name="invoice.txt")
    body: dict[str, Any] = {"document_id": document["id"]}
    if options:
        body["options"] = options
    if schema:
        body["schema"] = schema
    response = request_job(ctx.client, key or uuid.uuid4().hex, body=body)
    assert response.status_code == 202, response.content
    return response.json()["job_id"]


def provider_request(
    document: DocumentText,
    *,
    job_id: str = "job-1",
    attempt: int = 1,
    timeout_seconds: float = 10.0,
    max_output_tokens: int = 4000,
    schema: str = "invoice.v1",
    model: str = "sim-model",
) -> ProviderRequest:
    """What the worker hands a provider for ``document``: the simulator's model, a short deadline."""
    return ProviderRequest(
        job_id=job_id,
        attempt=attempt,
        document=document,
        schema=schema,
        model=model,
        max_output_tokens=max_output_tokens,
        timeout_seconds=timeout_seconds,
    )
