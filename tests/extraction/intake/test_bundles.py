"""Where one invoice ends and the next begins: real sample PDFs, concatenated as a scanner or an
ERP export would hand them over, read as the worker reads them."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from pypdf import PdfWriter

from extraction.intake.bundles import (
    BundleSplit,
    PageNumber,
    Signal,
    find_page_number,
    mixed_invoice_signs,
    split_bundle,
    split_document,
)
from extraction.intake.text import PDF, embedded_invoice_xml, extract_document_text, with_embedded_einvoice
from tests.factories import INVOICES

FX = INVOICES / "zugferd-corpus/XML-Rechnung/FX"
FNFE = INVOICES / "zugferd-corpus/ZUGFeRDv2/correct/FNFE-factur-x-examples"
INTARSYS = INVOICES / "zugferd-corpus/ZUGFeRDv2/correct/intarsys/EXTENDED"
COMPARE = INVOICES / "invoice2data/compare"


def bundle_of(*pdfs: Path, attach: Path | None = None) -> bytes:
    """The PDFs one after another; ``attach``'s embedded invoice XML attached to the whole."""
    writer = PdfWriter()
    for pdf in pdfs:
        writer.append(pdf)
    if attach is not None:
        name, xml = embedded_invoice_xml(attach.read_bytes()) or ("", b"")
        writer.add_attachment(name, xml)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _read_as_worker(data: bytes):
    text = extract_document_text(data, PDF)
    attached = embedded_invoice_xml(data)
    return with_embedded_einvoice(text, attached[1]) if attached else text


def _split(*pdfs: Path) -> BundleSplit:
    return split_document(_read_as_worker(bundle_of(*pdfs)))


def _ranges(split: BundleSplit) -> list[tuple[int, int]]:
    return [(part.first, part.last) for part in split.parts]


def test_two_invoices_split_where_the_second_begins():
    # Elektron's third page follows its totals (payment details): it stays with its invoice.
    split = _split(FX / "EN16931_Elektron.pdf", COMPARE / "free_fiber.pdf")

    assert _ranges(split) == [(1, 3), (4, 5)]
    assert not split.uncertain


@pytest.mark.parametrize(
    ("pdf", "pages"),
    [
        (FX / "EN16931_Miete.pdf", 4),  # "Seite 1 von 4" .. "Seite 4 von 4"
        (INTARSYS / "zugferd_2p0_EXTENDED_Warenrechnung.pdf", 3),  # no page numbers, number on page 1 only
        (COMPARE / "QualityHosting.pdf", 2),  # the letterhead, VAT id and number again on page 2
    ],
    ids=lambda value: value.name if isinstance(value, Path) else str(value),
)
def test_a_multi_page_invoice_stays_one_part(pdf, pages):
    split = _split(pdf)

    assert _ranges(split) == [(1, pages)]
    assert not split.uncertain


def test_same_supplier_neighbours_split_on_their_invoice_numbers():
    # Both from MUSTERLIEFERANT GMBH, VAT id DE123456789, three pages each, no page numbers.
    split = _split(
        INTARSYS / "zugferd_2p0_EXTENDED_Kostenrechnung.pdf", INTARSYS / "zugferd_2p0_EXTENDED_Warenrechnung.pdf"
    )

    assert _ranges(split) == [(1, 3), (4, 6)]
    assert Signal.INVOICE_NUMBER_CHANGED in split.parts[1].signals
    assert Signal.SUPPLIER_VAT_ID_CHANGED not in split.parts[1].signals


def test_page_one_of_two_splits_invoices_that_repeat_number_and_supplier():
    # Same supplier, same number 471102, same first page: only "Seite 1 von 2" tells them apart.
    split = _split(FX / "EN16931_Einfach.pdf", FX / "EN16931_Einfach_DueDate.pdf")

    assert _ranges(split) == [(1, 2), (3, 4)]
    assert split.parts[1].signals >= {Signal.PAGE_NUMBER_RESET, Signal.PAGE_COUNT_COMPLETE, Signal.SAME_INVOICE_NUMBER}


def test_page_one_of_one_splits_twin_printings_of_one_invoice():
    # The BASIC WL and MINIMUM printings of FA-2017-0010 print the same page, "Page 1 / 1".
    split = _split(FNFE / "Facture_FR_BASICWL.pdf", FNFE / "Facture_FR_MINIMUM.pdf")

    assert _ranges(split) == [(1, 1), (2, 2)]


def test_an_invoice_scanned_twice_is_two_parts():
    # No page numbers, same number and supplier: a full header after the part's totals starts anew.
    split = _split(COMPARE / "coolblue1.pdf", COMPARE / "coolblue1.pdf")

    assert _ranges(split) == [(1, 1), (2, 2)]
    assert split.parts[1].signals == {
        Signal.INVOICE_HEADER,
        Signal.SAME_INVOICE_NUMBER,
        Signal.TOTALS_CLOSED,
    }


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("Total 10.00\n                      Page 1 of 2", PageNumber(1, 2)),
        ("Handelsregisternummer: H A 123\n\n        Seite 2 von 3", PageNumber(2, 3)),
        ("                                  Page: 1 / 1", PageNumber(1, 1)),
        ("Facture n° 2022089083 - Page 1/1", PageNumber(1, 1)),
        ("page 2 sur 2", PageNumber(2, 2)),
        ("Sayfa 1/3", PageNumber(1, 3)),
        ("Rechnung                                    Seite 2", PageNumber(2, None)),
        ("Summe 34,73\n   2 / 3   \n", PageNumber(2, 3)),
        ("Gültig bis 17:39 Uhr Abschnitt: 1/4", None),  # a fraction inside a line is no page number
        ("Account Activity Page.", None),
        ("Page 3 of 2", None),
    ],
)
def test_page_numbers_as_invoices_print_them(text, number):
    assert find_page_number(text) == number


def test_no_pages_no_parts():
    split = split_bundle([])

    assert split.parts == ()
    assert split.boundaries == ()


def test_a_one_page_document_is_one_part():
    split = _split(COMPARE / "saeco.pdf")

    assert _ranges(split) == [(1, 1)]
    assert split.junctions == ()


def test_the_printed_einvoice_is_not_a_page_of_the_bundle():
    # The bundle carries Einfach's factur-x.xml; the worker prints it as a third page.
    text = _read_as_worker(
        bundle_of(FX / "EN16931_Einfach.pdf", COMPARE / "coolblue1.pdf", attach=FX / "EN16931_Einfach.pdf")
    )
    assert (len(text.pages), text.einvoice_page) == (4, 4)

    split = split_document(text)

    assert _ranges(split) == [(1, 2), (3, 3)]


def test_five_hundred_pages_split_in_one_pass():
    # Six invoices, eleven pages, over and over: each invoice's neighbours differ in number.
    cycle = [
        INTARSYS / "zugferd_2p0_EXTENDED_Kostenrechnung.pdf",
        COMPARE / "coolblue1.pdf",
        INTARSYS / "zugferd_2p0_EXTENDED_Warenrechnung.pdf",
        COMPARE / "coolblue2.pdf",
        FX / "EN16931_Einfach.pdf",
        COMPARE / "AzureInterior.pdf",
    ]
    texts = [extract_document_text(pdf.read_bytes(), PDF).pages for pdf in cycle]
    pages: list[str] = []
    starts: list[int] = []
    while len(pages) + 11 <= 500:
        for invoice in texts:
            starts.append(len(pages) + 1)
            pages.extend(invoice)

    began = time.perf_counter()
    split = split_bundle(pages)
    whole = time.perf_counter() - began
    tenth = min(_timed(pages[:55]) for _ in range(3))

    assert (len(pages), split.boundaries) == (495, tuple(starts[1:]))
    # Nine times the pages: about nine times the time; work per page pair would be eighty-one.
    assert whole < 30 * tenth


def _timed(pages: list[str]) -> float:
    began = time.perf_counter()
    split_bundle(pages)
    return time.perf_counter() - began


# --- a part read again, unweighed (extraction.validation.bundle_parts) ------------------------


def _pages(*pdfs: Path) -> tuple[str, ...]:
    return _read_as_worker(bundle_of(*pdfs)).for_providers().pages


def test_the_pages_of_one_invoice_show_no_sign_of_another():
    pages = _pages(FX / "EN16931_Elektron.pdf", COMPARE / "free_fiber.pdf")
    assert mixed_invoice_signs(pages[0:3], first=1) is None  # Elektron, 3 pages
    assert mixed_invoice_signs(pages[3:5], first=4) is None  # free_fiber, 2 pages


def test_two_invoice_numbers_in_a_part_are_named_by_page():
    pages = _pages(FX / "EN16931_Elektron.pdf", COMPARE / "free_fiber.pdf")
    signs = mixed_invoice_signs(pages, first=1)
    assert signs is not None
    assert signs.invoice_numbers == {1: "181301674", 4: "562044387", 5: "562044387"}
    # Elektron's "3 of 3" is followed by more pages; free_fiber's header comes after totals.
    assert (signs.after_complete_count, signs.headers_after_totals) == ((4,), (4,))


def test_numbering_that_restarts_inside_a_part_is_a_sign():
    pages = _pages(FX / "EN16931_Elektron.pdf", FX / "EN16931_Elektron.pdf")
    signs = mixed_invoice_signs(pages, first=1)
    assert signs is not None
    assert signs.invoice_numbers == {}  # the same invoice twice: one number
    assert signs.numbering_restarts == (4,)
