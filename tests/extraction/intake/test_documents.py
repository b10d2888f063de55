"""Document upload: the type comes from the bytes, identity from the digest (ACC-4), and the
size limit is enforced while the upload streams in."""

from __future__ import annotations

import hashlib
import struct
import zlib
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from extraction.models import Document

DOCUMENTS_URL = "/api/v1/documents"
PROBLEM = "application/problem+json"


def _png_1x1() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)  # 1x1, 8-bit greyscale
    pixels = zlib.compress(b"\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


MINIMAL_PDF = (
    b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"
    b"1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
    b"2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n"
    b"3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>\nendobj\n"
    b"trailer\n<< /Root 1 0 R >>\n%%EOF\n"
)
PNG = _png_1x1()
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9"
TIFF_LITTLE_ENDIAN = b"II*\x00\x08\x00\x00\x00\x00\x00"
TIFF_BIG_ENDIAN = b"MM\x00*\x00\x00\x00\x08\x00\x00"
# A UTF-8 text longer than the sniffed sample whose "€" (3 bytes) straddles the sample's end.
LONG_UTF8_TEXT = b"a" * 8190 + "€ total\n".encode()


def upload(client, content: bytes, *, name: str = "invoice.bin", content_type: str = "application/octet-stream"):
    return client.post(
        DOCUMENTS_URL, {"file": SimpleUploadedFile(name, content, content_type=content_type)}, format="multipart"
    )


def stored_files(settings) -> list[Path]:
    root = Path(settings.MEDIA_ROOT)
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(MINIMAL_PDF, "application/pdf", id="pdf"),
        pytest.param(PNG, "image/png", id="png"),
        pytest.param(JPEG, "image/jpeg", id="jpeg"),
        pytest.param(TIFF_LITTLE_ENDIAN, "image/tiff", id="tiff-little-endian"),
        pytest.param(TIFF_BIG_ENDIAN, "image/tiff", id="tiff-big-endian"),
        pytest.param(b"Invoice 42\r\nTotal\t10.00 EUR\n", "text/plain", id="ascii-text"),
        pytest.param("Rechnung Nr. 7 – Gesamt 12,00 €\n".encode(), "text/plain", id="utf8-text"),
        pytest.param(LONG_UTF8_TEXT, "text/plain", id="utf8-char-cut-by-the-sample"),
        pytest.param(b'<?xml version="1.0" encoding="UTF-8"?>\n<Invoice/>', "application/xml", id="xml-declaration"),
        pytest.param(
            b"\xef\xbb\xbf\n  <ubl:Invoice xmlns:ubl='u'/>", "application/xml", id="bom-and-prefixed-ubl-root"
        ),
        pytest.param(b"<rsm:CrossIndustryInvoice xmlns:rsm='u'>", "application/xml", id="cii-root"),
        pytest.param(b"<b>Invoice 42</b> total 10.00 EUR\n", "text/plain", id="text-starting-with-a-tag"),
        pytest.param(b"<InvoiceNumber> 42\n", "text/plain", id="text-starting-with-a-longer-name"),
    ],
)
def test_accepted_type_is_sniffed_from_the_bytes(tenant_a, content, expected):
    response = upload(tenant_a.client, content)
    assert response.status_code == 201, response.content
    assert response.json()["content_type"] == expected
    assert Document.objects.get(pk=response.json()["id"]).content_type == expected


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"PK\x03\x04\x14\x00\x00\x00\x08\x00", id="zip"),
        pytest.param(b"GIF89a\x01\x00\x01\x00\x80\x00\x00", id="gif"),
        pytest.param(b"\x7fELF\x02\x01\x01\x00", id="executable"),
        pytest.param(b"Invoice\x00\x00\x01total", id="text-with-nul"),
        pytest.param(b"\x1b[31mInvoice\x1b[0m", id="terminal-escapes"),
        pytest.param("Café au lait, total 10".encode("latin-1"), id="latin1-text"),
        pytest.param(b"Total: 10 caf\xe9", id="latin1-text-ending-in-a-lead-byte"),
    ],
)
def test_unsupported_bytes_are_415_and_nothing_is_stored(tenant_a, settings, content):
    response = upload(tenant_a.client, content, name="invoice.pdf", content_type="application/pdf")
    assert response.status_code == 415, response.content
    assert response["Content-Type"] == PROBLEM
    assert response.json()["type"] == "/problems/unsupported-document-type"
    assert Document.objects.count() == 0
    assert stored_files(settings) == []


def test_client_content_type_and_name_are_ignored(tenant_a):
    response = upload(tenant_a.client, PNG, name="invoice.pdf", content_type="application/pdf")
    assert response.status_code == 201, response.content
    assert response.json()["content_type"] == "image/png"


def test_upload_answers_identity_and_digest(tenant_a, settings):
    response = upload(tenant_a.client, MINIMAL_PDF)
    assert response.status_code == 201, response.content
    body = response.json()
    assert {"id", "version", "sha256", "size", "content_type"} <= set(body)
    assert body["sha256"] == hashlib.sha256(MINIMAL_PDF).hexdigest()
    assert body["size"] == len(MINIMAL_PDF)
    [stored] = stored_files(settings)
    assert stored.read_bytes() == MINIMAL_PDF


def test_get_document_returns_what_upload_answered(tenant_a):
    created = upload(tenant_a.client, MINIMAL_PDF).json()
    response = tenant_a.client.get(f"{DOCUMENTS_URL}/{created['id']}")
    assert response.status_code == 200, response.content
    assert response.json() == created


def test_same_bytes_twice_is_the_same_document_version(tenant_a):
    first = upload(tenant_a.client, MINIMAL_PDF, name="a.pdf").json()
    second = upload(tenant_a.client, MINIMAL_PDF, name="renamed.pdf")
    assert second.status_code == 201, second.content
    assert (second.json()["id"], second.json()["version"]) == (first["id"], first["version"])
    assert Document.objects.count() == 1


def test_other_bytes_are_another_document(tenant_a):
    first = upload(tenant_a.client, MINIMAL_PDF).json()
    second = upload(tenant_a.client, MINIMAL_PDF + b"\n").json()
    assert second["id"] != first["id"]
    assert second["sha256"] != first["sha256"]


def test_same_bytes_in_two_tenants_are_two_documents(tenant_a, tenant_b):
    a = upload(tenant_a.client, MINIMAL_PDF).json()
    b = upload(tenant_b.client, MINIMAL_PDF).json()
    assert a["id"] != b["id"]
    assert Document.objects.filter(sha256=a["sha256"]).count() == 2


def test_document_at_the_size_limit_is_accepted(tenant_a, settings):
    settings.DOCUMENT_MAX_BYTES = 1024
    response = upload(tenant_a.client, b"x" * 1024)
    assert response.status_code == 201, response.content
    assert response.json()["size"] == 1024


def test_document_over_the_size_limit_is_413_and_not_stored(tenant_a, settings):
    settings.DOCUMENT_MAX_BYTES = 1024
    response = upload(tenant_a.client, b"x" * 1025)
    assert response.status_code == 413, response.content
    assert response["Content-Type"] == PROBLEM
    assert response.json()["type"] == "/problems/payload-too-large"
    assert response.json()["limit_bytes"] == 1024
    assert Document.objects.count() == 0
    assert stored_files(settings) == []


def test_declared_length_far_over_the_limit_is_413(tenant_a, settings):
    settings.DOCUMENT_MAX_BYTES = 1024
    response = upload(tenant_a.client, b"x" * 200_000)
    assert response.status_code == 413, response.content
    assert response.json()["type"] == "/problems/payload-too-large"
    assert Document.objects.count() == 0


@pytest.mark.parametrize(
    ("data", "problem_type"),
    [
        pytest.param({}, "/problems/validation-error", id="no-file"),
        pytest.param({"file": SimpleUploadedFile("empty.txt", b"")}, "/problems/validation-error", id="empty-file"),
        pytest.param({"file": "not a file"}, "/problems/validation-error", id="file-as-text-field"),
        pytest.param(
            {"file": SimpleUploadedFile("a.txt", b"hello"), "tenant": "b"},
            "/problems/validation-error",
            id="unknown-field",
        ),
    ],
)
def test_bad_upload_form_is_400(tenant_a, data, problem_type):
    response = tenant_a.client.post(DOCUMENTS_URL, data, format="multipart")
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == PROBLEM
    assert response.json()["type"] == problem_type
    assert Document.objects.count() == 0


def test_upload_as_json_is_415(tenant_a):
    response = tenant_a.client.post(DOCUMENTS_URL, {"file": "SGVsbG8="}, format="json")
    assert response.status_code == 415, response.content
    assert response.json()["type"] == "/problems/unsupported-media-type"
