"""Document text: what the extractor and the evidence checks read. Real files from testdata/."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pytest
from PIL import Image
from pypdf import PdfReader, PdfWriter

from extraction.intake.text import (
    SOURCE_OCR,
    SOURCE_PDF_MIXED,
    SOURCE_PDF_TEXT_LAYER,
    SOURCE_TEXT,
    UnreadableDocument,
    embedded_invoice_xml,
    extract_document_text,
)
from tests.factories import INVOICES
from tests.golden import assert_golden, in_other_process

EINFACH_PDF = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Einfach.pdf"
FACTURX_PDF = INVOICES / "factur-x-python/fixtures/pdf/invoice_EN16931.pdf"
OYO_PNG = INVOICES / "invoice2data/compare/oyo.png"


def _rasterize(pdf: Path, page: int, dpi: int = 150) -> Image.Image:
    """A page of a PDF as the image a scanner would produce (pdftoppm, as production OCR uses)."""
    png = subprocess.run(
        ["pdftoppm", "-r", str(dpi), "-gray", "-png", "-singlefile", "-f", str(page), "-l", str(page), str(pdf)],
        check=True,
        capture_output=True,
    ).stdout
    image = Image.open(io.BytesIO(png))
    image.load()
    return image


def _image_only_pdf(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PDF", resolution=150)
    return buffer.getvalue()


def test_plain_text_pages_split_on_form_feed():
    document = extract_document_text(b"Rechnung 1\r\nSumme 10,00\fSeite 2\n", "text/plain; charset=utf-8")

    assert document.source == SOURCE_TEXT
    assert document.pages == ("Rechnung 1\nSumme 10,00", "Seite 2\n")
    assert document.span(2, 0, 5) == "Seite"


def test_plain_text_that_is_not_utf8_is_unreadable():
    with pytest.raises(UnreadableDocument, match="UTF-8"):
        extract_document_text(b"Rechnung \xfc\xff", "text/plain")


def test_pdf_text_layer_keeps_reading_order_and_pages():
    document = extract_document_text(EINFACH_PDF.read_bytes(), "application/pdf")

    assert document.source == SOURCE_PDF_TEXT_LAYER
    assert len(document.pages) == 2
    assert document.pages[0].split()[:4] == ["Beispiel-Rechnungen", "für", "ZUGFeRD", "2.2,"]
    assert "Handelsrechnung (380) Nr. 471102 vom 05.03.2018" in document.pages[0]
    # Layout is kept: a label and its amount share a line.
    assert any(line.split() == ["Bruttosumme", "529,87"] for line in document.pages[1].splitlines())


_EINFACH_PAGES = f"""
import json
from pathlib import Path
from extraction.intake.text import extract_document_text
document = extract_document_text(Path({str(EINFACH_PDF)!r}).read_bytes(), "application/pdf")
print(json.dumps({{"source": document.source, "pages": list(document.pages)}}))
"""


def test_same_bytes_always_give_the_same_pages():
    # Evidence offsets are stored against these pages: they must not change between processes
    # (hash order) or releases without anyone noticing.
    document = extract_document_text(EINFACH_PDF.read_bytes(), "application/pdf")
    answer = {"source": document.source, "pages": list(document.pages)}

    assert_golden("einfach_pdf_pages.json", answer)
    assert in_other_process(_EINFACH_PAGES, hash_seed=1) == in_other_process(_EINFACH_PAGES, hash_seed=2) == answer


def test_png_invoice_is_read_by_ocr():
    document = extract_document_text(OYO_PNG.read_bytes(), "image/png")

    assert document.source == SOURCE_OCR
    assert len(document.pages) == 1
    assert "PAYMENT RECEIPT" in document.pages[0]
    assert "IBZY2087" in document.pages[0]


def test_pdf_page_without_text_layer_is_ocrd_and_the_rest_read_from_the_layer():
    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(EINFACH_PDF.read_bytes())), pages=[0])
    writer.append(PdfReader(io.BytesIO(_image_only_pdf(_rasterize(EINFACH_PDF, 2, dpi=200)))))
    buffer = io.BytesIO()
    writer.write(buffer)

    document = extract_document_text(buffer.getvalue(), "application/pdf")

    assert document.source == SOURCE_PDF_MIXED
    assert "Handelsrechnung (380) Nr. 471102" in document.pages[0]
    assert "Bruttosumme" in document.pages[1]
    assert "529,87" in document.pages[1]


def test_multi_page_tiff_gives_one_page_per_frame():
    first, second = _rasterize(EINFACH_PDF, 1, dpi=200), _rasterize(EINFACH_PDF, 2, dpi=200)
    buffer = io.BytesIO()
    first.save(buffer, format="TIFF", save_all=True, append_images=[second])

    document = extract_document_text(buffer.getvalue(), "image/tiff")

    assert document.source == SOURCE_OCR
    assert len(document.pages) == 2
    assert "Lieferant" in document.pages[0]
    assert "Zahlbetrag" in document.pages[1]


def test_pdf_that_needs_a_password_is_unreadable():
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(EINFACH_PDF.read_bytes())))
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="AES-128")
    buffer = io.BytesIO()
    writer.write(buffer)

    with pytest.raises(UnreadableDocument, match="encrypted"):
        extract_document_text(buffer.getvalue(), "application/pdf")


def test_pdf_restricted_only_by_an_owner_password_is_read():
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(EINFACH_PDF.read_bytes())))
    writer.encrypt(user_password="", owner_password="owner", algorithm="AES-128")
    buffer = io.BytesIO()
    writer.write(buffer)

    document = extract_document_text(buffer.getvalue(), "application/pdf")

    assert "Bruttosumme" in document.pages[1]


@pytest.mark.parametrize(
    "data",
    [
        EINFACH_PDF.read_bytes()[:3000],  # truncated download
        b"%PDF-1.7\n" + b"\x00garbage" * 200,  # a header and nothing else
        b"<html>not a pdf</html>",
    ],
    ids=["truncated", "garbage-after-header", "html"],
)
def test_corrupt_pdf_is_unreadable(data):
    with pytest.raises(UnreadableDocument):
        extract_document_text(data, "application/pdf")


def test_document_without_any_text_is_unreadable():
    blank = io.BytesIO()
    Image.new("L", (1200, 1600), color=255).save(blank, format="PNG")

    with pytest.raises(UnreadableDocument, match="no text"):
        extract_document_text(blank.getvalue(), "image/png")
    with pytest.raises(UnreadableDocument, match="no text"):
        extract_document_text(b" \n\f\n ", "text/plain")


def test_corrupt_image_and_unknown_type_are_unreadable():
    with pytest.raises(UnreadableDocument, match="image"):
        extract_document_text(b"\x89PNG\r\n\x1a\nbroken", "image/png")
    with pytest.raises(UnreadableDocument, match="unsupported"):
        extract_document_text(b"PK\x03\x04", "application/zip")


def test_embedded_factur_x_xml_is_found():
    found = embedded_invoice_xml(FACTURX_PDF.read_bytes())

    assert found is not None
    name, xml = found
    assert name == "factur-x.xml"
    # The research helper extracted the same attachment and checked it against the PDF's /CheckSum.
    assert xml == FACTURX_PDF.with_name("invoice_EN16931.embedded.xml").read_bytes()


def test_embedded_xrechnung_xml_is_found_under_its_own_name():
    found = embedded_invoice_xml((INVOICES / "zugferd-corpus/XML-Rechnung/FX/XRECHNUNG_Einfach.pdf").read_bytes())

    assert found is not None
    assert found[0] == "xrechnung.xml"
    assert b"CrossIndustryInvoice" in found[1]


def test_pdf_without_invoice_attachment_or_not_a_pdf_has_no_embedded_xml():
    assert embedded_invoice_xml((INVOICES / "invoice2data/compare/coolblue1.pdf").read_bytes()) is None
    assert embedded_invoice_xml(b"not a pdf") is None
