"""The published OpenAPI document describes the API a client can call."""

from __future__ import annotations

import json
import re

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.files.uploadedfile import SimpleUploadedFile

from config.openapi import problem_responses_hook
from tests.factories import make_job

ENDPOINTS = {
    "/api/v1/documents": {"post"},
    "/api/v1/documents/{document_id}": {"get"},
    "/api/v1/extraction-jobs": {"get", "post"},
    "/api/v1/extraction-jobs/{job_id}": {"get"},
}


def _schema_of(client) -> dict:
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200, response.content
    return json.loads(response.content)


@pytest.fixture
def schema(client) -> dict:
    return _schema_of(client)


def test_schema_is_an_openapi_3_document(schema):
    assert schema["openapi"].startswith("3.")
    assert schema["info"]["title"] == "Invoice extraction API"


def test_schema_lists_every_endpoint_with_its_methods(schema):
    for path, methods in ENDPOINTS.items():
        assert path in schema["paths"], sorted(schema["paths"])
        assert methods <= set(schema["paths"][path]), (path, sorted(schema["paths"][path]))


def test_schema_requires_the_idempotency_key_on_accept(schema):
    parameters = schema["paths"]["/api/v1/extraction-jobs"]["post"]["parameters"]
    [key] = [p for p in parameters if p["name"] == "Idempotency-Key"]
    assert (key["in"], key["required"]) == ("header", True)


def test_schema_documents_the_job_request_fields(schema):
    request_body = schema["paths"]["/api/v1/extraction-jobs"]["post"]["requestBody"]["content"]["application/json"]
    ref = request_body["schema"]["$ref"].rsplit("/", 1)[-1]
    properties = schema["components"]["schemas"][ref]["properties"]
    assert {"document_id", "schema", "options"} <= set(properties)


def test_a_jobs_result_is_documented_as_invoice_v1_or_v2(schema):
    detail = schema["paths"]["/api/v1/extraction-jobs/{job_id}"]["get"]["responses"]["200"]
    components = schema["components"]["schemas"]
    assert detail["content"]["application/json"]["schema"]["properties"]["result"] == {
        "$ref": "#/components/schemas/JobResult"
    }
    output = components["JobResult"]["properties"]["output"]

    assert output == {"oneOf": [{"$ref": "#/components/schemas/InvoiceV1"}, {"$ref": "#/components/schemas/InvoiceV2"}]}
    v2 = components["InvoiceV2"]["properties"]
    assert {"allowances", "charges", "tax_breakdown", "buyer", "payment_terms"} <= set(v2)
    assert v2["allowances"]["items"] == {"$ref": "#/components/schemas/AllowanceOrCharge"}
    assert "allowances" not in components["InvoiceV1"]["properties"]
    assert "$defs" not in json.dumps(components)


def test_each_fields_trust_is_documented_on_the_job_and_in_the_completed_webhook(schema):
    components = schema["components"]["schemas"]
    fields = components["Validation"]["properties"]["fields"]
    trust = components["FieldTrust"]["properties"]

    assert components["JobResult"]["properties"]["validation"] == {"$ref": "#/components/schemas/Validation"}
    assert fields["additionalProperties"] == {"$ref": "#/components/schemas/FieldTrust"}
    assert trust["status"]["enum"] == ["verified", "derived", "conflicting", "unverified", "missing"]
    assert trust["sources"]["items"]["enum"] == ["einvoice", "rules", "model", "reviewer"]
    body = schema["webhooks"]["extraction.completed.v1"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["properties"]["data"]["properties"]["result"] == {"$ref": "#/components/schemas/JobResult"}


# --- The error contract: every status an operation can answer, and only those ---------------

PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
JOBS = "/api/v1/extraction-jobs"
ENDPOINT = "/api/v1/webhook-endpoints/{endpoint_id}"


def _operations(schema: dict):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def _problem_types(response: dict) -> set[str]:
    [(media_type, content)] = response["content"].items()
    assert media_type == "application/problem+json"
    problem, narrowed = content["schema"]["allOf"]
    assert problem == PROBLEM_REF
    return set(narrowed["properties"]["type"]["enum"])


def _error_statuses(operation: dict) -> set[str]:
    return {status for status in operation["responses"] if int(status) >= 400}


def test_every_error_answer_is_a_problem_of_the_documented_types(schema):
    for path, method, operation in _operations(schema):
        for status in _error_statuses(operation):
            response = operation["responses"][status]
            types = _problem_types(response)
            assert types, (method, path, status)
            narrowed = response["content"]["application/problem+json"]["schema"]["allOf"][1]
            assert narrowed["properties"]["status"] == {"enum": [int(status)]}
            for problem_type in types:
                assert f"`{problem_type}`" in response["description"], (method, path, status, problem_type)


def test_the_problem_component_names_the_members_the_server_sends(schema):
    problem = schema["components"]["schemas"]["Problem"]
    assert problem["required"] == ["type", "title", "status", "detail"]
    assert {"type", "title", "status", "detail", "instance"} <= set(problem["properties"])
    # The extension members of validation-error, idempotency-key-conflict, tenant-limit-exceeded, payload-too-large.
    assert {"errors", "job_id", "limit", "current", "maximum", "limit_bytes"} <= set(problem["properties"])


def test_the_webhook_endpoint_detail_documents_404_for_an_unknown_or_foreign_id(schema):
    for method in ("get", "delete"):
        responses = schema["paths"][ENDPOINT][method]["responses"]
        assert _problem_types(responses["404"]) == {"/problems/not-found"}
        assert "another tenant's id" in responses["404"]["description"]


def test_accepting_a_job_documents_each_status_it_can_answer(schema):
    operation = schema["paths"][JOBS]["post"]
    assert _error_statuses(operation) == {"400", "401", "403", "406", "409", "413", "415", "422", "429", "503"}
    responses = operation["responses"]
    assert _problem_types(responses["400"]) == {
        "/problems/idempotency-key-missing",
        "/problems/idempotency-key-invalid",
        "/problems/malformed-request-body",
        "/problems/validation-error",
    }
    assert _problem_types(responses["409"]) == {"/problems/idempotency-key-conflict"}
    assert _problem_types(responses["413"]) == {"/problems/payload-too-large"}
    assert _problem_types(responses["415"]) == {"/problems/unsupported-media-type"}
    assert _problem_types(responses["422"]) == {"/problems/unknown-document"}
    assert _problem_types(responses["429"]) == {"/problems/tenant-limit-exceeded"}
    assert _problem_types(responses["503"]) == {"/problems/accept-capacity-exhausted"}
    retry_after = {
        "description": "Seconds to wait before trying again.",
        "required": True,
        "schema": {"type": "integer", "minimum": 0},
    }
    assert responses["429"]["headers"] == {"Retry-After": retry_after}
    assert responses["503"]["headers"] == {"Retry-After": retry_after}
    assert set(responses["202"]["headers"]) == {"Location", "Idempotent-Replayed"}


def test_statuses_an_operation_cannot_answer_are_not_documented(schema):
    # No id in the path and no cursor: nothing to be missing.
    assert "404" not in schema["paths"][JOBS]["post"]["responses"]
    assert "404" not in schema["paths"]["/api/v1/webhook-endpoints"]["get"]["responses"]
    # No body read: nothing too large, of the wrong type or malformed.
    rotate = schema["paths"][f"{ENDPOINT}/rotate-secret"]["post"]["responses"]
    assert _error_statuses({"responses": rotate}) == {"401", "403", "404", "406"}
    assert _error_statuses(schema["paths"][ENDPOINT]["get"]) == {"401", "403", "404", "406"}
    # Of the job and document operations, only accepting a job is rate limited or shed.
    for path, methods in ENDPOINTS.items():
        for method in methods - ({"post"} if path == JOBS else set()):
            assert not {"429", "503"} & _error_statuses(schema["paths"][path][method]), (method, path)


def test_every_operation_documents_401_403_and_406(schema):
    for path, method, operation in _operations(schema):
        responses = operation["responses"]
        assert _problem_types(responses["406"]) == {"/problems/not-acceptable"}
        assert _problem_types(responses["401"]) == {"/problems/not-authenticated", "/problems/authentication-failed"}
        assert "/problems/permission-denied" in _problem_types(responses["403"]), (method, path)


def test_a_role_the_operation_needs_is_named_in_its_403(schema):
    assert "below admin" in schema["paths"][ENDPOINT]["delete"]["responses"]["403"]["description"]
    assert "below operator" in schema["paths"][ENDPOINT]["get"]["responses"]["403"]["description"]


def test_the_job_list_documents_its_filters_and_their_errors(schema):
    operation = schema["paths"][JOBS]["get"]
    parameters = {p["name"]: p["schema"] for p in operation["parameters"]}
    assert parameters["page_size"] == {"type": "integer", "minimum": 1, "maximum": 500}
    assert parameters["cursor"] == {"type": "string"}
    assert _problem_types(operation["responses"]["404"]) == {"/problems/not-found"}  # a forged cursor
    assert _problem_types(operation["responses"]["400"]) == {"/problems/validation-error"}


# --- Request bodies: what the serializers refuse, the schema refuses -------------------------

STRICT_REQUESTS = {
    ("/api/v1/extraction-jobs", "post", "application/json"): "JobCreateRequest",
    ("/api/v1/documents", "post", "multipart/form-data"): "DocumentUploadRequest",
    ("/api/v1/webhook-endpoints", "post", "application/json"): "EndpointCreateRequest",
}


def test_request_bodies_that_refuse_unknown_fields_say_so(schema):
    components = schema["components"]["schemas"]
    for (path, method, media_type), name in STRICT_REQUESTS.items():
        ref = schema["paths"][path][method]["requestBody"]["content"][media_type]["schema"]
        assert ref == {"$ref": f"#/components/schemas/{name}"}
        assert components[name]["additionalProperties"] is False
    assert components["JobOptionsRequest"]["additionalProperties"] is False


def test_an_upload_is_a_non_empty_binary_file(schema):
    file = schema["components"]["schemas"]["DocumentUploadRequest"]["properties"]["file"]
    assert (file["type"], file["format"], file["minLength"]) == ("string", "binary", 1)


def test_job_options_follow_the_settings_in_force(client, settings):
    settings.MODEL_POLICIES = {**settings.MODEL_POLICIES, "precise": dict(settings.MODEL_POLICIES["default"])}
    settings.JOB_MIN_DEADLINE_SECONDS = 120
    options = _schema_of(client)["components"]["schemas"]["JobOptionsRequest"]["properties"]
    assert options["model_policy"]["enum"] == sorted(settings.MODEL_POLICIES)
    assert (options["deadline_seconds"]["minimum"], options["deadline_seconds"]["maximum"]) == (
        120,
        settings.JOB_DEFAULT_DEADLINE_SECONDS,
    )


def test_the_idempotency_key_schema_is_what_the_server_takes(schema):
    [key] = [p for p in schema["paths"][JOBS]["post"]["parameters"] if p["name"] == "Idempotency-Key"]
    pattern = re.compile(key["schema"]["pattern"])
    assert (key["schema"]["minLength"], key["schema"]["maxLength"]) == (1, 255)
    assert pattern.search("k-1") and pattern.search("a b") and pattern.search("~")
    assert not any(pattern.search(k) for k in ("", " k", "k ", "k\t1", "clé", "k\x7f"))


# --- Answers that are what the schema promises -----------------------------------------------


@pytest.mark.django_db
def test_a_problem_instance_is_a_uri_reference_whatever_the_path(tenant):
    response = tenant.client.get("/api/v1/documents/caf\u00e9 \u0004")
    assert response.status_code == 404
    assert response.json()["instance"] == "/api/v1/documents/caf%C3%A9%20%04"


@pytest.mark.django_db
@pytest.mark.parametrize("page_size", ["0", "501", "-1", "ten", "\u00b2", ""])
def test_a_page_size_outside_the_documented_range_is_a_validation_error(tenant, page_size):
    response = tenant.client.get(JOBS, {"page_size": page_size})
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["type"] == "/problems/validation-error"
    assert set(response.json()["errors"]) == {"page_size"}


@pytest.mark.django_db
@pytest.mark.parametrize("page_size", ["1", "500"])
def test_a_page_size_inside_the_documented_range_is_taken(tenant, page_size):
    make_job(tenant.tenant)
    make_job(tenant.tenant)
    response = tenant.client.get(JOBS, {"page_size": page_size})
    assert response.status_code == 200
    assert len(response.json()["results"]) == min(int(page_size), 2)


@pytest.mark.django_db
def test_an_upload_of_more_parts_than_the_server_reads_is_the_documented_bad_request(tenant, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 3
    fields = {f"field{i}": "x" for i in range(5)}
    response = tenant.client.post("/api/v1/documents", {**fields, "file": SimpleUploadedFile("a.txt", b"text")})
    assert response.status_code == 400
    assert response.json()["type"] == "/problems/bad-request"
    assert "/problems/bad-request" in _problem_types(
        _schema_of(tenant.client)["paths"]["/api/v1/documents"]["post"]["responses"]["400"]
    )


def test_an_error_answer_declared_without_a_problem_type_stops_the_schema():
    schema = {"paths": {"/api/v1/things": {"get": {"responses": {"200": {}, "409": {"description": "Conflict"}}}}}}
    with pytest.raises(ImproperlyConfigured, match="GET /api/v1/things documents 409 without a problem type"):
        problem_responses_hook(schema)


@pytest.mark.django_db
def test_an_accept_header_the_api_cannot_satisfy_is_the_documented_406(tenant):
    response = tenant.client.get(JOBS, HTTP_ACCEPT="text/html")
    assert response.status_code == 406
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["type"] == "/problems/not-acceptable"
