"""A document of more pages than DOCUMENT_MAX_PAGES (a bundle of 500 pages, issue #27) is refused
before it is stored: alone with a 422 problem, and in a batch alone, the rest accepted."""

from __future__ import annotations

import io

from django.core.files.uploadedfile import SimpleUploadedFile
from pypdf import PdfWriter

from extraction.models import Document, ExtractionJob
from tests.extraction.api.test_batches import SAMPLES, post_batch, problem_types, sample_files

PROBLEM = "application/problem+json"


def _blank_pdf(pages: int) -> bytes:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=595, height=842)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def test_a_bundle_of_500_pages_is_refused_with_422_and_not_stored(tenant_a, settings):
    assert settings.DOCUMENT_MAX_PAGES == 300

    response = tenant_a.client.post(
        "/api/v1/documents", {"file": SimpleUploadedFile("month.pdf", _blank_pdf(500))}, format="multipart"
    )

    assert response.status_code == 422
    assert response["Content-Type"] == PROBLEM
    assert response.json() == {
        "type": "/problems/document-too-many-pages",
        "title": "Too many pages",
        "status": 422,
        "detail": "The document has 500 pages; a document may have at most 300.",
        "pages": 500,
        "limit_pages": 300,
        "instance": "/api/v1/documents",
    }
    assert not Document.objects.exists()


def test_a_document_of_exactly_the_limit_is_stored(tenant_a, settings):
    settings.DOCUMENT_MAX_PAGES = 12

    response = tenant_a.client.post(
        "/api/v1/documents", {"file": SimpleUploadedFile("twelve.pdf", _blank_pdf(12))}, format="multipart"
    )

    assert response.status_code == 201, response.content
    assert response.json()["page_count"] == 12


def test_a_bundle_over_the_page_limit_in_a_batch_is_refused_alone(tenant_a, settings):
    settings.DOCUMENT_MAX_PAGES = 20
    files = [*sample_files(SAMPLES[:1]), SimpleUploadedFile("month.pdf", _blank_pdf(21)), *sample_files(SAMPLES[1:2])]

    response = post_batch(tenant_a.client, files=files)

    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["accepted"], body["refused"]) == (2, 1)
    assert problem_types(body) == [None, "/problems/document-too-many-pages", None]
    assert body["items"][1]["problem"]["detail"] == "The document has 21 pages; a document may have at most 20."
    assert ExtractionJob.objects.count() == 2
    assert Document.objects.count() == 2
