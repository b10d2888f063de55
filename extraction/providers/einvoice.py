"""The ``einvoice`` provider: a document's e-invoice XML read into the job's schema, no model call.

Its answer is exact and free, so it needs no capacity and no tokens; the worker still validates
it like any other (a structured invoice can be wrong too). Every field's evidence points into the
page that prints the XML (:attr:`DocumentText.einvoice_page`), and the element each value was
read from is kept beside the result.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from decimal import Decimal, InvalidOperation
from typing import Any

from extraction.einvoice import EInvoice, RefusedXml, read_einvoice
from extraction.einvoice.answer import invoice_answer
from extraction.einvoice.model import Line
from extraction.einvoice.rendering import Rendering, render
from extraction.intake.text import DocumentText
from extraction.providers.builtin.readings import (
    groups_thousands_with_spaces,
    read_amounts,
    read_dates,
    uses_decimal_comma,
    writes_month_first,
)
from extraction.validation.evidence import find_quote
from extraction.validation.policy import NO_TERMS, AmountDueTerms
from extraction.validation.schema import InvoiceV1, parse_invoice

PROVIDER_NAME = "einvoice"


@dataclass(frozen=True)
class EInvoiceAnswer:
    output: dict[str, Any]  # in the job's schema
    profile: str  # "XRechnung (UBL)", "Factur-X EN 16931", "UBL-TR e-Fatura", ...
    specification: str | None  # BT-24 as the XML states it
    elements: dict[str, str]  # field path -> XPath of the element it was read from
    latency_ms: int
    # A Factur-X PDF's values where its visible pages print them too: field path -> evidence.
    visible: dict[str, dict[str, Any]]
    # An invoice.v1 answer's document-level allowance and charge totals the XML states and v1
    # has no place for ("allowance_total", "charge_total"; none when zero or a v2 answer).
    omitted_from_v1: dict[str, str] = dataclass_field(default_factory=dict)
    # Invoice lines the XML writes that bill nothing (a section heading, a note): left out of
    # the answer's lines (extraction.einvoice.model.items_and_layout), each with its element.
    layout_lines: tuple[dict[str, str | None], ...] = ()
    # What the XML adds to its amount due beyond what the answer's schema holds.
    amount_due_terms: AmountDueTerms = NO_TERMS

    def provenance(self) -> dict[str, Any]:
        """What the result keeps about where its values came from."""
        provenance: dict[str, Any] = {
            "profile": self.profile,
            "specification": self.specification,
            "elements": dict(self.elements),
        }
        if self.visible:
            provenance["visible"] = dict(self.visible)
        if self.omitted_from_v1:
            provenance["omitted_from_v1"] = dict(self.omitted_from_v1)
        if self.layout_lines:
            provenance["layout_lines"] = [dict(line) for line in self.layout_lines]
        if self.amount_due_terms.third_party_paid:
            provenance["third_party_paid"] = format(self.amount_due_terms.third_party_paid, "f")
        if not self.amount_due_terms.states_prepaid:
            provenance["states_prepaid"] = False
        return provenance


def answer_from_einvoice(xml: bytes, document: DocumentText, *, schema: str) -> EInvoiceAnswer | None:
    """The answer the XML states in ``schema``, or None when ``document``'s e-invoice page is not this XML's
    printing (text extracted by an older renderer, or no such page): then the evidence could
    not be checked against the stored text, and the document goes the model's way instead."""
    started = time.monotonic()
    page = document.einvoice_page
    if page is None or not 1 <= page <= len(document.pages):
        return None
    try:
        invoice = read_einvoice(xml)
    except RefusedXml:
        return None
    rendering = render(invoice)
    if rendering.text != document.pages[page - 1]:
        return None
    output = invoice_answer(invoice, rendering, page=page, schema=schema)
    return EInvoiceAnswer(
        output=output,
        profile=invoice.profile,
        specification=invoice.specification,
        elements=dict(rendering.elements),
        latency_ms=round((time.monotonic() - started) * 1000),
        visible=_visible_spans(parse_invoice(json.dumps(output), schema=schema), document),
        omitted_from_v1=_omitted_from_v1(invoice, rendering, page) if schema == "invoice.v1" else {},
        layout_lines=tuple(_layout_line(line) for line in invoice.layout_lines),
        amount_due_terms=AmountDueTerms(
            third_party_paid=sum((_amount(paid.text) for paid in invoice.third_party_payments), Decimal(0)),
            states_prepaid=invoice.states_prepaid,
        ),
    )


def _amount(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:
        return Decimal(0)  # not a number: the amount due check then names the gap


def _layout_line(line: Line) -> dict[str, str | None]:
    """What the result says of a line left out as layout: its text and the element it is in."""
    read = line.name or line.line_id
    return {"text": line.name.text if line.name else None, "element": read.path if read else None}


def _omitted_from_v1(invoice: EInvoice, rendering: Rendering, page: int) -> dict[str, str]:
    """The document-level allowance and charge totals a v1 answer cannot carry: read as the v2
    answer of the same XML states them, so the policy adds up a v1 answer as the XML does."""
    totals = invoice_answer(invoice, rendering, page=page, schema="invoice.v2")["totals"]
    omitted = {}
    for name in ("allowance_total", "charge_total"):
        value = (totals.get(name) or {}).get("value")
        if value is not None and Decimal(value) != 0:
            omitted[name] = value
    return omitted


_AMOUNT_LEAVES = ("quantity", "unit_price", "net_amount", "tax_rate", "amount", "taxable_amount", "tax_amount")


def _visible_spans(answer: InvoiceV1, document: DocumentText) -> dict[str, dict[str, Any]]:
    """Where a PDF's visible pages print the XML's values: amounts and dates by their value in the
    page's own conventions ("1.908,78", "05.03.2018"), other values as written. A value printed
    nowhere visible has no entry (visible_matches_embedded judges the money among them)."""
    if not document.embeds_einvoice:
        return {}
    visible = document.for_providers()
    text = visible.full_text
    decimal_comma, month_first, spaces = (
        uses_decimal_comma(text),
        writes_month_first(text),
        groups_thousands_with_spaces(text),
    )
    found: dict[str, dict[str, Any]] = {}
    for path, field in answer.fields():
        value = field.value
        if value is None:
            continue
        leaf = path.rsplit(".", 1)[-1]
        span: tuple[int, int, int] | None = None
        if path.startswith("totals.") or leaf in _AMOUNT_LEAVES:
            span = _printed_amount(visible, value, decimal_comma, spaces)
        elif leaf in ("issue_date", "due_date"):
            span = next(
                (
                    (number, d.start, d.end)
                    for number, page in enumerate(visible.pages, start=1)
                    for d in read_dates(page, month_first)
                    if d.value.isoformat() == value
                ),
                None,
            )
        elif leaf != "document_type":
            span = find_quote(visible, value, page=1, near=0)
        if span is not None:
            number, start, end = span
            found[path] = {"page": number, "start": start, "end": end, "quote": visible.pages[number - 1][start:end]}
    return found


def _printed_amount(
    document: DocumentText, value: str, decimal_comma: bool, spaces: bool
) -> tuple[int, int, int] | None:
    try:
        wanted = abs(Decimal(value))
    except ArithmeticError:
        return None
    for number, page in enumerate(document.pages, start=1):
        for amount in read_amounts(page, decimal_comma, space_grouping=spaces):
            if abs(amount.value) == wanted:
                return number, amount.start, amount.end
    return None
