"""The published OpenAPI document describes the API a client can call."""

from __future__ import annotations

import json

import pytest

ENDPOINTS = {
    "/api/v1/documents": {"post"},
    "/api/v1/documents/{document_id}": {"get"},
    "/api/v1/extraction-jobs": {"get", "post"},
    "/api/v1/extraction-jobs/{job_id}": {"get"},
}


@pytest.fixture
def schema(client) -> dict:
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200, response.content
    return json.loads(response.content)


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
    output = detail["content"]["application/json"]["schema"]["properties"]["result"]["properties"]["output"]
    components = schema["components"]["schemas"]

    assert output == {"oneOf": [{"$ref": "#/components/schemas/InvoiceV1"}, {"$ref": "#/components/schemas/InvoiceV2"}]}
    v2 = components["InvoiceV2"]["properties"]
    assert {"allowances", "charges", "tax_breakdown", "buyer", "payment_terms"} <= set(v2)
    assert v2["allowances"]["items"] == {"$ref": "#/components/schemas/AllowanceOrCharge"}
    assert "allowances" not in components["InvoiceV1"]["properties"]
    assert "$defs" not in json.dumps(components)
