"""Bad requests to the accept endpoint: each answers a clear 4xx problem with a stable type,
never a 500, and writes nothing."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import RequestFactory

from accounts.models import TenantUsage
from config.problems import handler500
from extraction.models import ExtractionJob, JobEvent, OutboxEvent

JOBS_URL = "/api/v1/extraction-jobs"
PROBLEM = "application/problem+json"
DOC = "$DOC"  # replaced by the id of a document the tenant uploaded


@dataclass(frozen=True)
class BadRequest:
    body: Any  # a JSON value, or raw bytes sent as they are
    status: int
    problem_type: str
    key: str | None = "k-1"
    content_type: str = "application/json"

    def encoded(self, document_id: str) -> bytes:
        raw = self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()
        return raw.replace(DOC.encode(), document_id.encode())


def case(id: str, body: Any, status: int, slug: str, **kwargs: Any):
    return pytest.param(BadRequest(body, status, f"/problems/{slug}", **kwargs), id=id)


VALID = {"document_id": DOC}
DEEPLY_NESTED = b'{"document_id": "' + DOC.encode() + b'", "options": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"

BAD_REQUESTS = [
    # Idempotency-Key
    case("key-missing", VALID, 400, "idempotency-key-missing", key=None),
    case("key-empty", VALID, 400, "idempotency-key-invalid", key=""),
    case("key-too-long", VALID, 400, "idempotency-key-invalid", key="k" * 256),
    case("key-non-ascii", VALID, 400, "idempotency-key-invalid", key="clé-1"),
    case("key-control-character", VALID, 400, "idempotency-key-invalid", key="k\t1"),
    case("key-delete-character", VALID, 400, "idempotency-key-invalid", key="k\x7f"),
    # The body is not a JSON object
    case("malformed-json", b'{"document_id": ', 400, "malformed-request-body"),
    case("not-utf8", b'{"document_id": "\xff\xfe"}', 400, "malformed-request-body"),
    case(
        "nan-literal",
        b'{"document_id": "' + DOC.encode() + b'", "options": {"deadline_seconds": NaN}}',
        400,
        "malformed-request-body",
    ),
    case("deeply-nested", DEEPLY_NESTED, 400, "malformed-request-body"),
    case("array-body", [VALID], 400, "validation-error"),
    case("string-body", "document", 400, "validation-error"),
    case("null-body", None, 400, "validation-error"),
    case("empty-body", b"", 400, "validation-error"),
    case(
        "form-encoded",
        b"document_id=x",
        415,
        "unsupported-media-type",
        content_type="application/x-www-form-urlencoded",
    ),
    case("text-plain", b'{"document_id": "x"}', 415, "unsupported-media-type", content_type="text/plain"),
    # Fields: missing, unknown, wrong types, out of range
    case("document-id-missing", {"schema": "invoice.v1"}, 400, "validation-error"),
    case("document-id-not-a-uuid", {"document_id": "invoice.pdf"}, 400, "validation-error"),
    case("document-id-number", {"document_id": 123}, 400, "validation-error"),
    case("document-id-boolean", {"document_id": True}, 400, "validation-error"),
    case("document-id-object", {"document_id": {"id": DOC}}, 400, "validation-error"),
    case("document-id-null", {"document_id": None}, 400, "validation-error"),
    case("unknown-field", {**VALID, "callback_url": "http://127.0.0.1/"}, 400, "validation-error"),
    case("schema-unknown", {**VALID, "schema": "invoice.v9"}, 400, "validation-error"),
    case("schema-number", {**VALID, "schema": 1}, 400, "validation-error"),
    case("schema-null", {**VALID, "schema": None}, 400, "validation-error"),
    case("options-string", {**VALID, "options": "fast"}, 400, "validation-error"),
    case("options-array", {**VALID, "options": []}, 400, "validation-error"),
    case("options-null", {**VALID, "options": None}, 400, "validation-error"),
    case("options-unknown-field", {**VALID, "options": {"temperature": 0.2}}, 400, "validation-error"),
    case("priority-unknown", {**VALID, "options": {"priority": "urgent"}}, 400, "validation-error"),
    case("model-policy-unknown", {**VALID, "options": {"model_policy": "gpt-9"}}, 400, "validation-error"),
    case("deadline-text", {**VALID, "options": {"deadline_seconds": "soon"}}, 400, "validation-error"),
    case("deadline-fraction", {**VALID, "options": {"deadline_seconds": 61.5}}, 400, "validation-error"),
    case("deadline-boolean", {**VALID, "options": {"deadline_seconds": True}}, 400, "validation-error"),
    case("deadline-too-short", {**VALID, "options": {"deadline_seconds": 1}}, 400, "validation-error"),
    # JSON true or false only: DRF's BooleanField alone would take 0, 1, "yes" and "on".
    case("split-bundles-zero", {**VALID, "options": {"split_bundles": 0}}, 400, "validation-error"),
    case("split-bundles-text", {**VALID, "options": {"split_bundles": "false"}}, 400, "validation-error"),
    case("deadline-too-long", {**VALID, "options": {"deadline_seconds": 10**9}}, 400, "validation-error"),
    case("deadline-huge-number", {**VALID, "options": {"deadline_seconds": 10**4000}}, 400, "validation-error"),
    # References and size
    case("unknown-document", {"document_id": "00000000-0000-4000-8000-000000000000"}, 422, "unknown-document"),
    case("body-over-the-limit", {**VALID, "padding": "x" * 70_000}, 413, "payload-too-large"),
]


@pytest.fixture
def document_id(tenant_a) -> str:
    upload = SimpleUploadedFile("i.txt", b"Invoice 42\nTotal 10.00 EUR\n")
    response = tenant_a.client.post("/api/v1/documents", {"file": upload}, format="multipart")
    assert response.status_code == 201, response.content
    return response.json()["id"]


@pytest.mark.parametrize("bad", BAD_REQUESTS)
def test_bad_request_is_a_problem_and_writes_nothing(tenant_a, document_id, bad: BadRequest):
    headers = {} if bad.key is None else {"HTTP_IDEMPOTENCY_KEY": bad.key}
    response = tenant_a.client.generic(
        "POST", JOBS_URL, bad.encoded(document_id), content_type=bad.content_type, **headers
    )
    assert response.status_code == bad.status, response.content
    assert response["Content-Type"] == PROBLEM
    body = response.json()
    assert body["type"] == bad.problem_type
    assert body["status"] == bad.status
    assert body["title"] and body["detail"]
    assert (ExtractionJob.objects.count(), OutboxEvent.objects.count(), JobEvent.objects.count()) == (0, 0, 0)
    assert TenantUsage.objects.get(tenant=tenant_a.tenant).pending_jobs == 0


def test_the_valid_request_of_the_table_is_accepted(tenant_a, document_id):
    # Guards the table: its failures come from the one thing each case breaks.
    response = tenant_a.client.post(
        JOBS_URL, {"document_id": document_id}, format="json", HTTP_IDEMPOTENCY_KEY="k" * 255
    )
    assert response.status_code == 202, response.content


def test_validation_problem_names_the_bad_fields(tenant_a, document_id):
    response = tenant_a.client.post(
        JOBS_URL,
        {"document_id": document_id, "colour": "red", "options": {"priority": "urgent"}},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k-1",
    )
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert set(errors) == {"colour"}  # unknown fields are reported before the known ones are checked


@pytest.mark.parametrize(
    ("method", "path", "status", "problem_type"),
    [
        ("put", JOBS_URL, 405, "/problems/method-not-allowed"),
        ("delete", f"{JOBS_URL}/00000000-0000-4000-8000-000000000000", 405, "/problems/method-not-allowed"),
        ("get", f"{JOBS_URL}/not-a-uuid", 404, "/problems/not-found"),
        ("get", "/api/v1/no-such-endpoint", 404, "/problems/not-found"),
        ("get", f"{JOBS_URL}?state=DONE", 400, "/problems/validation-error"),
        ("get", f"{JOBS_URL}?cursor=cD1nYXJiYWdl", 404, "/problems/not-found"),  # position "garbage"
    ],
)
def test_other_client_errors_are_problems(tenant_a, method, path, status, problem_type):
    response = getattr(tenant_a.client, method)(path)
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    assert response.json()["type"] == problem_type


def test_server_error_is_a_problem():
    response = handler500(RequestFactory().post(JOBS_URL))
    assert response.status_code == 500
    assert response["Content-Type"] == PROBLEM
    assert json.loads(response.content)["type"] == "/problems/internal-error"


def test_json_limit_below_the_upload_memory_limit_is_also_413(tenant_a, document_id, settings):
    settings.API_MAX_JSON_BODY_BYTES = 50
    response = tenant_a.client.post(
        JOBS_URL,
        {"document_id": document_id, "options": {"priority": "interactive"}},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k-1",
    )
    assert response.status_code == 413, response.content
    assert response.json()["type"] == "/problems/payload-too-large"
    assert response.json()["limit_bytes"] == 50
    assert ExtractionJob.objects.count() == 0
