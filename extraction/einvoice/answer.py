"""An e-invoice as an ``invoice.v1`` answer, every value evidenced in its rendering.

No value is guessed: a field the XML does not carry is null, an amount is the XML's decimal
(``64.`` written as ``64``), and a value that is not what its type needs (a comma decimal in a
broken file) is passed on as written, for validation to name.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from extraction.einvoice.model import EInvoice
from extraction.einvoice.rendering import Rendering, iban_of

SCHEMA_ID = "invoice.v1"
_NULL: dict[str, Any] = {"value": None, "evidence": None}


def _decimal(text: str) -> str:
    try:
        return format(Decimal(text), "f")
    except InvalidOperation:
        return text


def _compact(text: str) -> str:
    return re.sub(r"\s", "", text)


def invoice_v1_answer(invoice: EInvoice, rendering: Rendering, *, page: int) -> dict[str, Any]:
    """The answer, with evidence on ``page``: the page of the document that holds ``rendering``."""

    def field(path: str, value: str | None) -> dict[str, Any]:
        if value is None or path not in rendering.spans:
            return dict(_NULL)
        start, end = rendering.spans[path]
        quote = rendering.text[start:end]
        return {"value": value, "evidence": {"page": page, "start": start, "end": end, "quote": quote}}

    def as_written(path: str) -> dict[str, Any]:
        span = rendering.spans.get(path)
        return field(path, rendering.text[span[0] : span[1]] if span else None)

    def amount(path: str) -> dict[str, Any]:
        span = rendering.spans.get(path)
        return field(path, _decimal(rendering.text[span[0] : span[1]]) if span else None)

    iban_account = next((a.account_id for a in invoice.accounts if iban_of(a.account_id)), None)
    return {
        "schema": SCHEMA_ID,
        "document_type": field("document_type", "credit_note" if invoice.is_credit_note else "invoice"),
        "supplier": {
            "name": as_written("supplier.name"),
            "vat_id": field("supplier.vat_id", _compact(invoice.seller.vat_id.text) if invoice.seller.vat_id else None),
            "iban": field("supplier.iban", _compact(iban_account.text) if iban_account else None),
        },
        "invoice_number": as_written("invoice_number"),
        "issue_date": as_written("issue_date"),
        "due_date": as_written("due_date"),
        "currency": as_written("currency"),
        "lines": [
            {
                "description": as_written(f"lines[{index}].description"),
                "quantity": amount(f"lines[{index}].quantity"),
                "unit_price": amount(f"lines[{index}].unit_price"),
                "net_amount": amount(f"lines[{index}].net_amount"),
                "tax_rate": amount(f"lines[{index}].tax_rate"),
                # EN 16931 has no line VAT amount: VAT is computed per category (BG-23).
                "tax_amount": dict(_NULL),
            }
            for index in range(len(invoice.lines))
        ],
        "totals": {
            "net": amount("totals.net"),
            "tax": amount("totals.tax"),
            "gross": amount("totals.gross"),
            "prepaid": amount("totals.prepaid"),
            "amount_due": amount("totals.amount_due"),
        },
    }
