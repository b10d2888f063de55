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
from extraction.events import WebhookType
from extraction.validation.fields import FieldStatus, ReadingSource
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


def _validation_schemas() -> dict[str, Any]:
    """The verdict stored with a result: what a client acts on (``review_required``, ``reasons``)
    and each field's trust (extraction.validation.fields), which says what it may post unseen."""
    field_trust = {
        "type": "object",
        "required": ["status", "blocking", "sources", "checks", "failed", "relocated", "element"],
        "properties": {
            "status": {
                "type": "string",
                "enum": [status.value for status in FieldStatus],
                "description": "verified: printed at its evidence (or typed by a reviewer) and every check "
                "that read it passed; derived: computed from other fields by a stated rule; conflicting: two "
                "readings disagree; unverified: a check that read it failed, or no one looked for its "
                "evidence; missing: null where the policy needs a value.",
            },
            "blocking": {
                "type": "boolean",
                "description": "Whether this field's status decides the review: a job goes to review exactly "
                "when a blocking field is neither verified nor derived.",
            },
            "sources": {
                "type": "array",
                "items": {"type": "string", "enum": [source.value for source in ReadingSource]},
                "description": "The readings that gave this value (two when a second reading agreed).",
            },
            "checks": {"type": "array", "items": {"type": "string"}, "description": "The checks that read it."},
            "failed": {"type": "array", "items": {"type": "string"}, "description": "Those that put it in doubt."},
            "relocated": {
                "type": "boolean",
                "description": "Its evidence was moved to where its quote is printed.",
            },
            "element": {
                "type": ["string", "null"],
                "description": "The e-invoice XML element (an XPath) the value was read from.",
            },
        },
    }
    validation = {
        "type": "object",
        "properties": {
            "policy_version": {"type": "string"},
            "review_required": {"type": "boolean"},
            "reasons": {"type": "array", "items": {"type": "string"}},
            "checks": {"type": "array", "items": {"type": "object"}},
            "fields": {
                "type": "object",
                "description": "Each field's trust, keyed by its path as the checks name it "
                "(invoice_number, totals.gross, lines[0].net_amount). A null field no check needs is not listed.",
                "additionalProperties": {"$ref": "#/components/schemas/FieldTrust"},
            },
        },
    }
    return {"FieldTrust": field_trust, "Validation": validation}


def _completed_webhook() -> dict[str, Any]:
    """The body an ``extraction.completed.v1`` webhook posts (delivery.fan_out.event_body)."""
    return {
        "post": {
            "summary": "A job's result, sent to each subscribed endpoint once it is decided.",
            "requestBody": {
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "properties": {
                                "type": {"const": WebhookType.COMPLETED.value},
                                "timestamp": {"type": "string", "format": "date-time"},
                                "data": {
                                    "type": "object",
                                    "properties": {
                                        "job_id": {"type": "string", "format": "uuid"},
                                        "state": {"type": "string"},
                                        "result": {"$ref": "#/components/schemas/JobResult"},
                                    },
                                },
                            },
                        }
                    }
                }
            },
            "responses": {"2XX": {"description": "Received (and deduplicated by webhook-id)."}},
        }
    }


def _batch_completed_webhook() -> dict[str, Any]:
    """The body an ``extraction.batch_completed.v1`` webhook posts (delivery.fan_out.batch_event_body)."""
    return {
        "post": {
            "summary": "A batch whose every job (and every part of a split one) has finished, sent once.",
            "requestBody": {
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "required": ["type", "timestamp", "data"],
                            "properties": {
                                "type": {"const": WebhookType.BATCH_COMPLETED.value},
                                "timestamp": {"type": "string", "format": "date-time"},
                                "data": {
                                    "type": "object",
                                    "required": [
                                        "event_id",
                                        "batch_id",
                                        "idempotency_key",
                                        "file_count",
                                        "counts",
                                        "completed_at",
                                        "links",
                                    ],
                                    "properties": {
                                        "event_id": {"type": "string", "format": "uuid"},
                                        "batch_id": {"type": "string", "format": "uuid"},
                                        "idempotency_key": {"type": "string"},
                                        "file_count": {"type": "integer", "minimum": 0},
                                        "counts": {
                                            "type": "object",
                                            "description": "How many of the batch's jobs ended in each state (a "
                                            "split job as SPLIT, its parts by their own states), and `refused`, "
                                            "the files refused with a problem; only the entries that occurred.",
                                            "additionalProperties": {"type": "integer", "minimum": 1},
                                        },
                                        "completed_at": {"type": "string", "format": "date-time"},
                                        "links": {
                                            "type": "object",
                                            "properties": {"self": {"type": "string"}},
                                        },
                                    },
                                },
                            },
                        }
                    }
                }
            },
            "responses": {"2XX": {"description": "Received (and deduplicated by webhook-id)."}},
        }
    }


def invoice_schemas(result: dict[str, Any], **_hook_arguments: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"], before
    config.openapi.problem_responses_hook); the generator, request and public flag it is also
    given change nothing here."""
    result = copy.deepcopy(result)
    defs = {"evidence": "Evidence", "adjustment": "AllowanceOrCharge"}
    v1, v2 = invoice_v1_json_schema(), invoice_v2_json_schema()
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Evidence"] = _as_component(v1["$defs"]["evidence"], defs)
    # A stored result's evidence also says where on the page it is printed (no model is asked).
    schemas["Evidence"]["properties"]["boxes"] = {
        "type": ["array", "null"],
        "description": "One [x0, y0, x1, y1] per printed line the quote covers, fractions of the page's width "
        "and height, origin top left, to draw on GET /api/v1/documents/{id}/pages/{n}.png; null where the "
        "page has no geometry (a plain-text upload, the printed e-invoice XML).",
        "items": {
            "type": "array",
            "items": {"type": "number", "minimum": 0, "maximum": 1},
            "minItems": 4,
            "maxItems": 4,
        },
    }
    schemas["AllowanceOrCharge"] = _as_component(v2["$defs"]["adjustment"], defs)
    schemas["InvoiceV1"] = _as_component(v1, defs)
    schemas["InvoiceV2"] = _as_component(v2, defs)
    schemas.update(_validation_schemas())
    schemas["JobResult"] = {
        "type": ["object", "null"],
        "description": "The stored result, in the schema the job was accepted with.",
        "properties": {
            "output": {
                "oneOf": [{"$ref": "#/components/schemas/InvoiceV1"}, {"$ref": "#/components/schemas/InvoiceV2"}]
            },
            "validation": {"$ref": "#/components/schemas/Validation"},
        },
    }
    webhooks = result.setdefault("webhooks", {})
    webhooks[WebhookType.COMPLETED.value] = _completed_webhook()
    webhooks[WebhookType.BATCH_COMPLETED.value] = _batch_completed_webhook()
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
                        "result": {"$ref": "#/components/schemas/JobResult"},
                    },
                }
            }
        }
    return result
