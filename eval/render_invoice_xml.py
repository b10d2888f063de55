"""The XML-only cases of the test data as the accuracy harness sees them: the page text the
product prints for an uploaded e-invoice (:mod:`extraction.einvoice.rendering`) and, as the
ground truth, the ``invoice.v1`` answer the XML states, every evidence span exact.

Run as a script to see a rendering: ``python eval/render_invoice_xml.py FILE.xml``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from extraction.einvoice import EInvoice, read_einvoice
from extraction.einvoice.answer import invoice_answer
from extraction.einvoice.model import CREDIT_NOTE_CODES
from extraction.einvoice.rendering import render

__all__ = ["CREDIT_NOTE_CODES", "RenderedInvoice", "render_invoice_xml"]


@dataclass(frozen=True)
class RenderedInvoice:
    text: str
    truth: dict[str, Any]  # invoice.v1 with exact evidence
    structured: EInvoice
    truth_v2: dict[str, Any]  # the same in invoice.v2: allowances, charges, VAT breakdown too


def render_invoice_xml(data: bytes) -> RenderedInvoice:
    structured = read_einvoice(data)
    rendering = render(structured)
    return RenderedInvoice(
        text=rendering.text,
        truth=invoice_answer(structured, rendering, page=1, schema="invoice.v1"),
        structured=structured,
        truth_v2=invoice_answer(structured, rendering, page=1, schema="invoice.v2"),
    )


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        print(render_invoice_xml(Path(argument).read_bytes()).text)
