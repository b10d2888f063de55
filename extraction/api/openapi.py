"""The invoice schemas in the published OpenAPI document.

The job views answer hand-built bodies (``responses={200: dict}``), so the extraction result's
shape is added here: ``InvoiceV1`` and ``InvoiceV2`` as components, written from the same JSON
schemas the model providers send, and the job's ``result.output`` as one of them. So are what
drf-spectacular cannot read from the code: the job options that settings decide (the model
policies, the deadline's bounds, read when the schema is generated), an upload's non-empty
file, the link from an upload to its document, and the document text's own 404.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from django.conf import settings

from config.openapi import document_problem_types
from extraction.validation.schema import invoice_v1_json_schema, invoice_v2_json_schema

_DETAIL_PATH = "/api/v1/extraction-jobs/{job_id}"
_DOCUMENT_TEXT_PATH = "/api/v1/extraction-jobs/{job_id}/document-text"
_UPLOAD_PATH = "/api/v1/documents"


def _as_component(schema: dict[str, Any], defs: dict[str, str]) -> dict[str, Any]:
    text = json.dumps({key: value for key, value in schema.items() if key != "$defs"})
    for name, component in defs.items():
        text = text.replace(f'"#/$defs/{name}"', f'"#/components/schemas/{component}"')
    return json.loads(text)


def _job_options_from_settings(schemas: dict[str, Any]) -> None:
    # JobOptionsSerializer checks these against settings when it validates; the schema says
    # the same values, so a request the schema allows is one the server takes.
    properties = schemas.get("JobOptionsRequest", {}).get("properties", {})
    if "model_policy" in properties:
        properties["model_policy"]["enum"] = sorted(settings.MODEL_POLICIES)
    if "deadline_seconds" in properties:
        properties["deadline_seconds"]["minimum"] = settings.JOB_MIN_DEADLINE_SECONDS
        properties["deadline_seconds"]["maximum"] = settings.JOB_DEFAULT_DEADLINE_SECONDS


def invoice_schemas(result: dict[str, Any], **_hook_arguments: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"], before
    config.openapi.problem_responses_hook); the generator, request and public flag it is also
    given change nothing here."""
    result = copy.deepcopy(result)
    defs = {"evidence": "Evidence", "adjustment": "AllowanceOrCharge"}
    v1, v2 = invoice_v1_json_schema(), invoice_v2_json_schema()
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Evidence"] = _as_component(v1["$defs"]["evidence"], defs)
    schemas["AllowanceOrCharge"] = _as_component(v2["$defs"]["adjustment"], defs)
    schemas["InvoiceV1"] = _as_component(v1, defs)
    schemas["InvoiceV2"] = _as_component(v2, defs)
    _job_options_from_settings(schemas)
    upload_file = schemas.get("DocumentUploadRequest", {}).get("properties", {}).get("file")
    if upload_file is not None:
        upload_file["minLength"] = 1  # allow_empty_file=False
        upload_file["description"] = "A PDF, PNG, JPEG, TIFF, XML or UTF-8 text document."
    uploaded = result.get("paths", {}).get(_UPLOAD_PATH, {}).get("post", {}).get("responses", {}).get("201")
    if uploaded is not None:
        uploaded["links"] = {
            "GetDocument": {"operationId": "v1_documents_retrieve", "parameters": {"document_id": "$response.body#/id"}}
        }
    document_text = result.get("paths", {}).get(_DOCUMENT_TEXT_PATH, {}).get("get")
    if document_text is not None:
        document_problem_types(
            document_text, "404", {"document-text-not-ready": "The document's text has not been extracted yet."}
        )
    detail = result.get("paths", {}).get(_DETAIL_PATH, {}).get("get")
    if detail is not None:
        detail["responses"]["200"]["content"] = {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "schema": {"type": "string", "enum": ["invoice.v1", "invoice.v2"]},
                        "result": {
                            "type": ["object", "null"],
                            "description": "The stored result, in the schema the job was accepted with.",
                            "properties": {
                                "output": {
                                    "oneOf": [
                                        {"$ref": "#/components/schemas/InvoiceV1"},
                                        {"$ref": "#/components/schemas/InvoiceV2"},
                                    ]
                                }
                            },
                        },
                    },
                }
            }
        }
    return result
