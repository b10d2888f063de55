"""The quotes answer format (:mod:`extraction.providers.quoted_answer`), as the "model" writes it.

A request whose schema is the quotes schema gets each field's text as printed instead of the
``invoice.v1`` answer: the built-in extractor's answer, faults already applied to it, with every
field's evidence quote in place of its value. A value a fault changed (an invented IBAN, a value
an injection set) is no longer what its quote says, so the "model" writes the value itself: a
quote printed nowhere, or printed where the injection put it, as a real model would copy it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extraction.providers.quoted_answer import (
    HEADER_FIELDS,
    LINE_FIELDS,
    QUOTES_SCHEMA_NAME,
    TOTAL_FIELDS,
    quotes_json_schema,
)

QUOTES_PROPERTIES = frozenset(quotes_json_schema()["properties"])
# The invoice.v1 answer's own top-level keys; anything else (an obeyed injection's
# ``callback_url``) the "model" adds to its quotes answer as well.
_INVOICE_KEYS = frozenset(
    {"schema", "document_type", "supplier", "lines", "totals"}
    | {path for path, _ in HEADER_FIELDS.values() if "." not in path}
)


def wants_quotes(response_format: Any) -> bool:
    """Does the request ask for the quotes answer (by the schema's name, or by its properties)?"""
    if not isinstance(response_format, Mapping):
        return False
    json_schema = response_format.get("json_schema")
    schemas = [response_format.get("schema")]
    if isinstance(json_schema, Mapping):
        if json_schema.get("name") == QUOTES_SCHEMA_NAME:
            return True
        schemas.append(json_schema.get("schema"))
    for schema in schemas:
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        if isinstance(properties, Mapping) and frozenset(properties) == QUOTES_PROPERTIES:
            return True
    return False


def quotes_answer(answer: Mapping[str, Any], original: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The quotes answer for an ``invoice.v1`` ``answer``.

    ``original`` is the answer before a fault changed it: where a value differs from the
    original's, the quote is the value (what the evidence quotes no longer says it).
    """
    original = answer if original is None else original
    document_type = _field(answer, "document_type")
    kind = document_type.get("value")
    quotes: dict[str, Any] = {
        # The schema allows no null here; the prompt says "invoice" unless it is a credit note. A
        # value an injection set goes through as it is, as an obedient model would write it.
        "document_type": "invoice" if kind is None else kind,
        "document_title": _evidence_quote(document_type),
    }
    for key, (path, _reading) in HEADER_FIELDS.items():
        quotes[key] = _quote(answer, original, path.split("."))
    lines = answer.get("lines") if isinstance(answer.get("lines"), list) else []
    quotes["lines"] = [
        {key: _quote(answer, original, ["lines", index, key]) for key in LINE_FIELDS} for index in range(len(lines))
    ]
    for key in TOTAL_FIELDS:
        quotes[key] = _quote(answer, original, ["totals", key])
    for key, value in answer.items():
        if key not in _INVOICE_KEYS and key not in quotes:
            quotes[key] = value
    return quotes


def _node(answer: Any, path: list[Any]) -> Any:
    node = answer
    for part in path:
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and part < len(node) else None
        else:
            node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _field(answer: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    field = answer.get(key)
    return field if isinstance(field, Mapping) else {}


def _evidence_quote(field: Mapping[str, Any]) -> str | None:
    evidence = field.get("evidence")
    quote = evidence.get("quote") if isinstance(evidence, Mapping) else None
    return quote if isinstance(quote, str) and quote.strip() else None


def _quote(answer: Mapping[str, Any], original: Mapping[str, Any], path: list[Any]) -> str | None:
    field = _node(answer, path)
    if not isinstance(field, Mapping):
        return None if field is None else str(field)
    value = field.get("value")
    if value is None:
        return None
    before = _node(original, path)
    quote = _evidence_quote(field)
    if quote is not None and isinstance(before, Mapping) and before.get("value") == value:
        return quote
    return str(value)
