"""Factur-X PDFs made for tests: a real PDF's visible pages with an XML of our choosing attached."""

from __future__ import annotations

import io
from pathlib import Path

from pypdf import PdfReader, PdfWriter

from extraction.intake.text import einvoice_xml_of

INVOICES = Path(__file__).resolve().parent.parent / "testdata" / "invoices"
ELEKTRON_PDF = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Elektron.pdf"


def facturx_with_xml(xml: bytes, pdf: Path = ELEKTRON_PDF) -> bytes:
    """``pdf``'s visible pages with ``xml`` attached as its factur-x.xml."""
    writer = PdfWriter()
    for page in PdfReader(pdf).pages:
        writer.add_page(page)
    writer.add_attachment("factur-x.xml", xml)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def elektron_xml() -> bytes:
    xml = einvoice_xml_of(ELEKTRON_PDF.read_bytes(), "application/pdf")
    assert xml is not None
    return xml


def line_two_costs_100_more(xml: bytes) -> bytes:
    """The Elektron XML of a different invoice, consistent in itself: line 2 is 222.50 instead of
    122.50, so the net is 352.10, the VAT 66.90 and the gross and amount due 419.00."""
    for old, new in ((b"122.5<", b"222.5<"), (b"252.1<", b"352.1<"), (b">47.9<", b">66.9<"), (b">300<", b">419<")):
        assert old in xml
        xml = xml.replace(old, new)
    return xml
