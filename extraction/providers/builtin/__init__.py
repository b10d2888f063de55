"""The built-in extractor: deterministic rules over the document text, no model account needed.

It returns an ``invoice.v1`` dict in which every value carries evidence that is exactly the page
text it was read from (normalized: "1.234,50" -> "1234.50"); what the rules cannot find is null.
"""

from __future__ import annotations

import json
import time
from typing import Any

from extraction.intake.text import DocumentText
from extraction.providers.base import ProviderRequest, ProviderResponse
from extraction.providers.builtin.header import find_currency, find_document_type, find_due_date, find_issue_date
from extraction.providers.builtin.identifiers import find_iban, find_invoice_number, find_vat_id
from extraction.providers.builtin.layout import invoice_field, magnitude, prepare
from extraction.providers.builtin.line_items import LINE_FIELDS, find_line_items
from extraction.providers.builtin.parties import find_supplier_name, line_parties
from extraction.providers.builtin.totals import TOTAL_LABELS, find_totals
from extraction.validation.schema import SCHEMA_ID

# What the attempt ledger records as the provider: the rules, not a model.
PROVIDER_NAME = "builtin"

__all__ = ["BuiltinProvider", "extract_invoice"]


def extract_invoice(document: DocumentText) -> dict[str, Any]:
    """An ``invoice.v1`` dict for the document, every value with its evidence or null."""
    ctx = prepare(document)
    parties = line_parties(ctx.lines)
    document_type = find_document_type(ctx)
    totals = find_totals(ctx)
    line_items = find_line_items(ctx)
    amounts = [f for f in totals.values() if f]
    amounts += [f for item in line_items for kind, f in item.items() if f and kind != "description"]
    if document_type and document_type.value == "credit_note" and any(f.value.startswith("-") for f in amounts):
        # A credit note printed with minus signs: invoice.v1 follows EN 16931, where the
        # document type carries the direction and a credit note's amounts are positive.
        totals = {kind: magnitude(f) for kind, f in totals.items()}
        line_items = [
            {kind: magnitude(f) if kind != "description" else f for kind, f in item.items()} for item in line_items
        ]
    return {
        "schema": SCHEMA_ID,
        "document_type": invoice_field(document, document_type),
        "supplier": {
            "name": invoice_field(document, find_supplier_name(ctx, parties)),
            "vat_id": invoice_field(document, find_vat_id(ctx, parties)),
            "iban": invoice_field(document, find_iban(ctx, parties)),
        },
        "invoice_number": invoice_field(document, find_invoice_number(ctx)),
        "issue_date": invoice_field(document, find_issue_date(ctx)),
        "due_date": invoice_field(document, find_due_date(ctx)),
        "currency": invoice_field(document, find_currency(ctx)),
        "lines": [{kind: invoice_field(document, item.get(kind)) for kind in LINE_FIELDS} for item in line_items],
        "totals": {kind: invoice_field(document, totals.get(kind)) for kind in TOTAL_LABELS},
    }


class BuiltinProvider:
    """The rule-based extractor behind the Provider interface: no network, no account, no cost."""

    name = PROVIDER_NAME

    def extract(self, request: ProviderRequest) -> ProviderResponse:
        started = time.monotonic()
        output_text = json.dumps(extract_invoice(request.document), ensure_ascii=False)
        latency_ms = round((time.monotonic() - started) * 1000)
        return ProviderResponse(
            output_text=output_text,
            model=request.model or self.name,
            # No tokenizer here: about four characters per token, the usual rule of thumb.
            input_tokens=len(request.document.full_text) // 4,
            output_tokens=len(output_text) // 4,
            latency_ms=latency_ms,
        )
