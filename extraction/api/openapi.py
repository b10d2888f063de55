"""The invoice schemas in the published OpenAPI document.

The job views answer hand-built bodies (``responses={200: dict}``), so the extraction result's
shape is added here: ``InvoiceV1`` and ``InvoiceV2`` as components, written from the same JSON
schemas the model providers send, and the job's ``result.output`` as one of them.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from extraction.validation.schema import invoice_v1_json_schema, invoice_v2_json_schema

_DETAIL_PATH = "/api/v1/extraction-jobs/{job_id}"


def _as_component(schema: dict[str, Any], defs: dict[str, str]) -> dict[str, Any]:
    text = json.dumps({key: value for key, value in schema.items() if key != "$defs"})
    for name, component in defs.items():
        text = text.replace(f'"#/$defs/{name}"', f'"#/components/schemas/{component}"')
    return json.loads(text)


def invoice_schemas(result: dict[str, Any], **_hook_arguments: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]); the
    generator, request and public flag it is also given change nothing here."""
    result = copy.deepcopy(result)
    defs = {"evidence": "Evidence", "adjustment": "AllowanceOrCharge"}
    v1, v2 = invoice_v1_json_schema(), invoice_v2_json_schema()
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Evidence"] = _as_component(v1["$defs"]["evidence"], defs)
    schemas["AllowanceOrCharge"] = _as_component(v2["$defs"]["adjustment"], defs)
    schemas["InvoiceV1"] = _as_component(v1, defs)
    schemas["InvoiceV2"] = _as_component(v2, defs)
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
