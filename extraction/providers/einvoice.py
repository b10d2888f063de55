"""The ``einvoice`` provider: a document's e-invoice XML read into the job's schema, no model call.

Its answer is exact and free, so it needs no capacity and no tokens; the worker still validates
it like any other (a structured invoice can be wrong too). Every field's evidence points into the
page that prints the XML (:attr:`DocumentText.einvoice_page`), and the element each value was
read from is kept beside the result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from extraction.einvoice import RefusedXml, read_einvoice
from extraction.einvoice.answer import invoice_answer
from extraction.einvoice.rendering import render
from extraction.intake.text import DocumentText

PROVIDER_NAME = "einvoice"


@dataclass(frozen=True)
class EInvoiceAnswer:
    output: dict[str, Any]  # in the job's schema
    profile: str  # "XRechnung (UBL)", "Factur-X EN 16931", "UBL-TR e-Fatura", ...
    specification: str | None  # BT-24 as the XML states it
    elements: dict[str, str]  # field path -> XPath of the element it was read from
    latency_ms: int

    def provenance(self) -> dict[str, Any]:
        """What the result keeps about where its values came from."""
        return {"profile": self.profile, "specification": self.specification, "elements": dict(self.elements)}


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
    return EInvoiceAnswer(
        output=invoice_answer(invoice, rendering, page=page, schema=schema),
        profile=invoice.profile,
        specification=invoice.specification,
        elements=dict(rendering.elements),
        latency_ms=round((time.monotonic() - started) * 1000),
    )
