from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile

from extraction.models import ExtractionJob, OutboxEvent


def test_upload_then_accept_writes_job_and_outbox_row(tenant_a):
    upload = SimpleUploadedFile("a.txt", b"Invoice 42\nTotal 10.00 EUR\n", content_type="application/pdf")
    doc = tenant_a.client.post("/api/v1/documents", {"file": upload}, format="multipart")
    assert doc.status_code == 201, doc.content
    assert doc.json()["content_type"] == "text/plain"  # sniffed, not the client's claim
    resp = tenant_a.client.post(
        "/api/v1/extraction-jobs", {"document_id": doc.json()["id"]}, format="json", HTTP_IDEMPOTENCY_KEY="k-1"
    )
    assert resp.status_code == 202, resp.content
    job_id = resp.json()["job_id"]
    assert resp["Location"] == f"/api/v1/extraction-jobs/{job_id}"
    assert ExtractionJob.objects.filter(pk=job_id).count() == 1
    assert OutboxEvent.objects.filter(job_id=job_id, event_type="extraction.requested.v1").count() == 1
