"""An e-invoice as an ``invoice.v1`` answer, every value evidenced in its rendering.

No value is guessed: a field the XML does not carry is null, an amount is the XML's decimal
(``64.`` written as ``64``), and a value that is not what its type needs (a comma decimal in a
broken file) is passed on as written, for validation to name.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from extraction.einvoice.model import AllowanceCharge, EInvoice
from extraction.einvoice.rendering import Rendering, iban_of

_NULL: dict[str, Any] = {"value": None, "evidence": None}
# What invoice.v2 adds to invoice.v1 (extraction/validation/schema.py), dropped for a v1 job.
_V2_ONLY = ("buyer", "buyer_reference", "order_reference", "payment_terms", "allowances", "charges", "tax_breakdown")
_V2_ONLY_LINE = ("tax_category", "price_base_quantity", "allowances", "charges")
_V2_ONLY_TOTALS = ("line_total", "allowance_total", "charge_total", "rounding")


def _decimal(text: str) -> str:
    try:
        return format(Decimal(text), "f")
    except InvalidOperation:
        return text


def _compact(text: str) -> str:
    return re.sub(r"\s", "", text)


def invoice_v1_answer(invoice: EInvoice, rendering: Rendering, *, page: int) -> dict[str, Any]:
    """The answer as invoice.v1, with evidence on ``page`` (the page that holds ``rendering``)."""
    return invoice_answer(invoice, rendering, page=page, schema="invoice.v1")


def invoice_answer(invoice: EInvoice, rendering: Rendering, *, page: int, schema: str) -> dict[str, Any]:
    """The answer in ``schema`` (invoice.v1 or invoice.v2), evidence on ``page``."""
    answer = _v2_answer(invoice, rendering, page=page)
    if schema == "invoice.v2":
        return answer
    if schema != "invoice.v1":
        raise ValueError(f"unknown extraction schema {schema!r}")
    v1 = {key: value for key, value in answer.items() if key not in _V2_ONLY}
    v1["schema"] = "invoice.v1"
    v1["lines"] = [{k: v for k, v in line.items() if k not in _V2_ONLY_LINE} for line in answer["lines"]]
    v1["totals"] = {k: v for k, v in answer["totals"].items() if k not in _V2_ONLY_TOTALS}
    return v1


def _v2_answer(invoice: EInvoice, rendering: Rendering, *, page: int) -> dict[str, Any]:
    def field(path: str, value: str | None) -> dict[str, Any]:
        if value is None or path not in rendering.spans:
            return dict(_NULL)
        start, end = rendering.spans[path]
        quote = rendering.text[start:end]
        return {"value": value, "evidence": {"page": page, "start": start, "end": end, "quote": quote}}

    def printed(path: str) -> str | None:
        span = rendering.spans.get(path)
        return rendering.text[span[0] : span[1]] if span else None

    def as_written(path: str) -> dict[str, Any]:
        return field(path, printed(path))

    def amount(path: str) -> dict[str, Any]:
        text = printed(path)
        return field(path, _decimal(text) if text is not None else None)

    def identifier(path: str) -> dict[str, Any]:
        text = printed(path)
        return field(path, _compact(text) if text is not None else None)

    def adjustments(prefix: str, kind: str, count: int) -> list[dict[str, Any]]:
        return [
            {
                "amount": amount(f"{prefix}{kind}[{n}].amount"),
                "base_amount": amount(f"{prefix}{kind}[{n}].base_amount"),
                "percentage": amount(f"{prefix}{kind}[{n}].percentage"),
                "reason": as_written(f"{prefix}{kind}[{n}].reason"),
                "reason_code": as_written(f"{prefix}{kind}[{n}].reason_code"),
                "tax_category": as_written(f"{prefix}{kind}[{n}].tax_category"),
                "tax_rate": amount(f"{prefix}{kind}[{n}].tax_rate"),
            }
            for n in range(count)
        ]

    def counted(entries: tuple[AllowanceCharge, ...]) -> tuple[int, int]:
        charges = sum(1 for entry in entries if entry.is_charge)
        return len(entries) - charges, charges

    allowances, charges = counted(invoice.allowances_charges)
    lines = []
    for index, line in enumerate(invoice.lines):
        prefix = f"lines[{index}]"
        line_allowances, line_charges = counted(line.allowances_charges)
        lines.append(
            {
                "description": as_written(f"{prefix}.description"),
                "quantity": amount(f"{prefix}.quantity"),
                "unit_price": amount(f"{prefix}.unit_price"),
                "net_amount": amount(f"{prefix}.net_amount"),
                "tax_rate": amount(f"{prefix}.tax_rate"),
                # EN 16931 has no line VAT amount: VAT is computed per category (BG-23).
                "tax_amount": dict(_NULL),
                "tax_category": as_written(f"{prefix}.tax_category"),
                "price_base_quantity": amount(f"{prefix}.price_base_quantity"),
                "allowances": adjustments(f"{prefix}.", "allowances", line_allowances),
                "charges": adjustments(f"{prefix}.", "charges", line_charges),
            }
        )
    iban = next((a.account_id for a in invoice.accounts if iban_of(a.account_id)), None)
    return {
        "schema": "invoice.v2",
        "document_type": field("document_type", "credit_note" if invoice.is_credit_note else "invoice"),
        "supplier": {
            "name": as_written("supplier.name"),
            "vat_id": identifier("supplier.vat_id"),
            "iban": field("supplier.iban", _compact(iban.text) if iban else None),
        },
        "buyer": {"name": as_written("buyer.name"), "vat_id": identifier("buyer.vat_id")},
        "invoice_number": as_written("invoice_number"),
        "issue_date": as_written("issue_date"),
        "due_date": as_written("due_date"),
        "currency": as_written("currency"),
        "buyer_reference": as_written("buyer_reference"),
        "order_reference": as_written("order_reference"),
        "payment_terms": as_written("payment_terms"),
        "lines": lines,
        "allowances": adjustments("", "allowances", allowances),
        "charges": adjustments("", "charges", charges),
        "tax_breakdown": [
            {
                "category": as_written(f"tax_breakdown[{n}].category"),
                "rate": amount(f"tax_breakdown[{n}].rate"),
                "taxable_amount": amount(f"tax_breakdown[{n}].taxable_amount"),
                "tax_amount": amount(f"tax_breakdown[{n}].tax_amount"),
                "exemption_reason": as_written(f"tax_breakdown[{n}].exemption_reason"),
                "exemption_reason_code": as_written(f"tax_breakdown[{n}].exemption_reason_code"),
            }
            for n in range(len(invoice.tax_breakdown))
        ],
        "totals": {
            "net": amount("totals.net"),
            "tax": amount("totals.tax"),
            "gross": amount("totals.gross"),
            "prepaid": amount("totals.prepaid"),
            "amount_due": amount("totals.amount_due"),
            "line_total": amount("totals.line_total"),
            "allowance_total": amount("totals.allowance_total"),
            "charge_total": amount("totals.charge_total"),
            "rounding": amount("totals.rounding"),
        },
    }
