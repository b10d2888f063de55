"""Evidence on the page: where each word of a page string is printed, and the boxes of a span.

Geometry is captured while the text is read and never changes the page strings: every corpus
document still reads exactly as it did before geometry was kept (a golden file written by the
code before it), so stored evidence offsets keep pointing at the same text.
"""

from __future__ import annotations

import hashlib
import io
import re
import subprocess
from pathlib import Path

import pdfplumber
import pytesseract
import pytest
from django.db import IntegrityError, transaction
from PIL import Image

from extraction.execution.attempt import load_document_text
from extraction.intake.geometry import (
    OcrWord,
    WordBox,
    boxes_for,
    geometry_from_json,
    geometry_to_json,
    ocr_geometry,
    tesseract_words,
    text_layer_geometry,
)
from extraction.intake.text import (
    OCR_CONFIG,
    SOURCE_OCR,
    SOURCE_PDF_TEXT_LAYER,
    DocumentText,
    embedded_invoice_xml,
    extract_document_text,
    with_embedded_einvoice,
)
from extraction.models import ExtractedText
from extraction.review.decisions import document_text_of
from tests.einvoice_files import elektron_xml
from tests.extraction.intake.handmade_pdf import FONT_SIZE, HELVETICA_DESCENT, LINES, handmade_pdf, text_width
from tests.factories import INVOICES, make_document, make_job
from tests.golden import assert_golden

EINFACH_PDF = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Einfach.pdf"
FACTURX_PDF = INVOICES / "factur-x-python/fixtures/pdf/invoice_EN16931.pdf"
OYO_PNG = INVOICES / "invoice2data/compare/oyo.png"
PAGE_WIDTH, PAGE_HEIGHT = 612, 792  # US Letter, the hand-made PDF's page


def _word_box(line: int, text: str, word: str, start: int) -> WordBox:
    """What a word of the hand-made PDF's ``line`` must get, worked out from Helvetica's metrics:
    ``start`` is its offset in the page string."""
    printed, x, baseline = LINES[line]
    left = x + text_width(printed[: printed.index(word)])
    top = PAGE_HEIGHT - (baseline - HELVETICA_DESCENT * FONT_SIZE + FONT_SIZE)
    return WordBox(
        start,
        start + len(word),
        round(left / PAGE_WIDTH, 4),
        round(top / PAGE_HEIGHT, 4),
        round((left + text_width(word)) / PAGE_WIDTH, 4),
        round((top + FONT_SIZE) / PAGE_HEIGHT, 4),
        text.count("\n", 0, start),
    )


def _expected_words(text: str) -> tuple[WordBox, ...]:
    words = []
    for line, (printed, _, _) in enumerate(LINES):
        for word in printed.split():
            start = text.index(word, words[-1].end if words else 0)
            words.append(_word_box(line, text, word, start))
    return tuple(words)


# --- the text layer ---------------------------------------------------------------------------


def test_each_word_of_a_text_layer_page_gets_the_box_its_glyphs_are_printed_in():
    document = extract_document_text(handmade_pdf(), "application/pdf")

    [text] = document.pages
    assert document.source == SOURCE_PDF_TEXT_LAYER
    assert text == "Invoice no INV-42\nTotal 10.00"
    assert document.geometry == (_expected_words(text),)
    # The invoice number, worked out by hand: x from 72 + 58.704 pt (the width of "Invoice no ")
    # to + 37.344 pt, y from the em box of a 12 pt line on the 720 pt baseline.
    assert document.page_geometry(1)[2] == WordBox(11, 17, 0.2125, 0.0789, 0.2735, 0.094, 0)


def test_a_media_box_that_does_not_start_at_the_origin_gives_the_same_fractions():
    shifted = tuple((text, x + 100, y + 100) for text, x, y in LINES)

    document = extract_document_text(handmade_pdf(shifted, media_box=(100, 100, 712, 892)), "application/pdf")

    assert document.pages == ("Invoice no INV-42\nTotal 10.00",)
    assert document.geometry == (_expected_words(document.pages[0]),)


def test_a_rotated_page_boxes_the_word_where_the_rendered_page_shows_it():
    # /Rotate 90 turns the page clockwise for display: the top edge of the page as written
    # becomes the right edge, so a word's box is its written box turned the same way.
    document = extract_document_text(handmade_pdf((("INV-42", 72, 720),), rotate=90), "application/pdf")

    words = document.page_geometry(1)
    assert "".join(document.pages[0].split()) == "INV-42"
    bottom = 720 - HELVETICA_DESCENT * FONT_SIZE
    assert boxes_for(words, 0, len(document.pages[0])) == [
        [
            round(bottom / PAGE_HEIGHT, 4),
            round(72 / PAGE_WIDTH, 4),
            round((bottom + FONT_SIZE) / PAGE_HEIGHT, 4),
            round((72 + text_width("INV-42")) / PAGE_WIDTH, 4),
        ]
    ]


def test_a_text_layer_that_does_not_align_with_its_page_string_gets_no_geometry():
    glyph = {"x0": 10, "x1": 20, "top": 10, "bottom": 22}
    textmap = [("A", glyph), ("B", glyph)]

    assert text_layer_geometry(textmap, "AB", (0, 0, 100, 100)) == (WordBox(0, 2, 0.1, 0.1, 0.2, 0.22, 0),)
    assert text_layer_geometry(textmap, "ABC", (0, 0, 100, 100)) is None


def test_a_glyph_outside_the_page_is_boxed_at_the_page_edge():
    textmap = [("A", {"x0": -5, "x1": 10, "top": 90, "bottom": 130})]

    assert text_layer_geometry(textmap, "A", (0, 0, 100, 100)) == (WordBox(0, 1, 0.0, 0.9, 0.1, 1.0, 0),)


# --- OCR ----------------------------------------------------------------------------------------

TSV = (
    "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"
    "1\t1\t0\t0\t0\t0\t0\t0\t1000\t500\t-1\t\n"
    "4\t1\t1\t1\t1\t0\t100\t50\t600\t40\t-1\t\n"
    "5\t1\t1\t1\t1\t1\t100\t50\t200\t40\t96.5\tTotal\n"
    "5\t1\t1\t1\t1\t2\t500\t50\t200\t40\t91.0\t110\n"
    "5\t1\t1\t1\t1\t3\t720\t50\t10\t40\t12.0\t \n"
)


def test_tesseract_words_are_its_level_5_rows_with_text():
    assert tesseract_words(TSV) == [OcrWord("Total", 100, 50, 200, 40), OcrWord("110", 500, 50, 200, 40)]


def test_ocr_words_are_placed_in_order_as_whole_tokens_and_a_missing_word_is_left_out():
    text = "Total    110\nNet 10"
    words = [
        OcrWord("Total", 100, 50, 200, 40),
        OcrWord("10", 500, 50, 200, 40),  # not a token of line 1 ("110" is): found on line 2
        OcrWord("Gross", 100, 120, 100, 40),  # not in the text at all: left out, not guessed
        OcrWord("Net", 100, 100, 100, 40),  # before "10" in the text: the search went past it
    ]

    assert ocr_geometry(words, text, (1000, 500)) == (
        WordBox(0, 5, 0.1, 0.1, 0.3, 0.18, 0),
        WordBox(17, 19, 0.5, 0.1, 0.7, 0.18, 1),
    )


def _rasterize(pdf: bytes, dpi: int) -> Image.Image:
    png = subprocess.run(
        ["pdftoppm", "-r", str(dpi), "-gray", "-png", "-singlefile", "-f", "1", "-l", "1", "-"],
        input=pdf,
        check=True,
        capture_output=True,
    ).stdout
    image = Image.open(io.BytesIO(png))
    image.load()
    return image


def test_an_ocr_word_is_boxed_where_the_text_layer_prints_it():
    pdf = handmade_pdf()
    scan = io.BytesIO()
    _rasterize(pdf, 300).save(scan, format="PNG")

    read = extract_document_text(scan.getvalue(), "image/png")
    layer = extract_document_text(pdf, "application/pdf")

    assert read.source == SOURCE_OCR
    start = read.pages[0].index("INV-42")
    [ink] = boxes_for(read.page_geometry(1), start, start + len("INV-42"))
    [em] = boxes_for(layer.page_geometry(1), 11, 17)
    # Tesseract boxes the ink, the text layer the em square around it: the same word, the ink
    # inside the em box give or take a pixel of the 300 dpi scan (0.0004 of the page).
    assert ink[0] == pytest.approx(em[0], abs=0.004) and ink[2] == pytest.approx(em[2], abs=0.004)
    assert em[1] - 0.0005 <= ink[1] < ink[3] <= em[3] + 0.0005


def test_one_tesseract_run_reads_the_text_image_to_string_reads():
    # Text and word boxes come from one recognition (two renderers): the page string must be
    # what image_to_string alone returned before word boxes were kept.
    for path in (OYO_PNG, INVOICES / "invoice2data/compare/FlipkartInvoice.png"):
        with Image.open(path) as image:
            image.load()
            frame = image.convert("RGB") if image.mode not in ("L", "RGB") else image.copy()
        alone = pytesseract.image_to_string(frame, lang="eng", config=OCR_CONFIG)
        document = extract_document_text(path.read_bytes(), "image/png")

        assert document.pages[0] == _tidy_like_text_py(alone), path.name
        assert len(document.page_geometry(1)) == len(document.pages[0].split()), path.name


def _tidy_like_text_py(text: str) -> str:
    # The clean-up extract_document_text applies (extraction.intake.text._tidy), stated again
    # so this test compares with an independent reading.
    lines = [line.rstrip() for line in text.replace("\f", "").splitlines()]
    margin = min((len(line) - len(line.lstrip(" ")) for line in lines if line), default=0)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(line[margin:] for line in lines)).strip("\n")


# --- pages without geometry, and the document as a whole -----------------------------------------


def test_plain_text_and_an_xml_upload_have_no_geometry():
    text = extract_document_text(b"Invoice 1\fTotal 10.00\n", "text/plain")
    xml = extract_document_text(elektron_xml(), "application/xml")

    assert text.geometry == (None, None)
    assert xml.geometry == (None,)
    assert boxes_for(text.page_geometry(1), 0, 7) is None
    assert boxes_for(xml.page_geometry(1), 0, 7) is None


def test_the_printed_einvoice_page_of_a_factur_x_pdf_has_no_geometry_and_providers_keep_the_rest():
    data = FACTURX_PDF.read_bytes()
    document = with_embedded_einvoice(extract_document_text(data, "application/pdf"), embedded_invoice_xml(data)[1])

    assert document.einvoice_page == len(document.pages) == 2
    assert document.page_geometry(2) is None and document.page_geometry(1)
    assert document.for_providers().geometry == document.geometry[:1]


def test_geometry_takes_no_part_in_equality():
    with_geometry = extract_document_text(handmade_pdf(), "application/pdf")

    assert with_geometry == DocumentText(pages=with_geometry.pages, source=SOURCE_PDF_TEXT_LAYER)
    assert hash(with_geometry) == hash(DocumentText(pages=with_geometry.pages, source=SOURCE_PDF_TEXT_LAYER))


# --- the boxes of a span ------------------------------------------------------------------------

PAGE = (
    WordBox(0, 7, 0.1, 0.1, 0.2, 0.12, 0),  # "Invoice"
    WordBox(8, 10, 0.21, 0.1, 0.25, 0.12, 0),  # "no"
    WordBox(11, 17, 0.26, 0.1, 0.35, 0.125, 0),  # "INV-42"
    WordBox(19, 24, 0.1, 0.2, 0.18, 0.22, 2),  # "Total"
    WordBox(25, 30, 0.3, 0.2, 0.4, 0.22, 2),  # "10.00"
)


def test_a_span_inside_one_line_is_one_box_around_its_words():
    assert boxes_for(PAGE, 8, 17) == [[0.21, 0.1, 0.35, 0.125]]


def test_a_span_over_two_printed_lines_is_one_box_per_line_in_reading_order():
    assert boxes_for(PAGE, 11, 30) == [[0.26, 0.1, 0.35, 0.125], [0.1, 0.2, 0.4, 0.22]]


def test_a_word_the_span_covers_in_part_counts_whole():
    assert boxes_for(PAGE, 13, 15) == [[0.26, 0.1, 0.35, 0.125]]


def test_a_span_that_touches_no_placed_word_has_no_boxes():
    assert boxes_for(PAGE, 17, 19) is None  # the blank line between
    assert boxes_for(PAGE, 5, 5) is None  # empty
    assert boxes_for(None, 0, 7) is None  # a page without geometry
    assert boxes_for((), 0, 7) is None  # a page where no word could be placed


def test_geometry_survives_its_json_form():
    geometry = (PAGE, None, ())

    assert geometry_from_json(geometry_to_json(geometry)) == geometry
    assert geometry_to_json(geometry)[0][2] == [11, 17, 0.26, 0.1, 0.35, 0.125, 0]
    assert geometry_from_json(None) is None


# --- stored with the text -------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)  # the worker's steps give their connection back
def test_the_stored_text_keeps_the_geometry_and_hands_it_back(tenant_a):
    document = make_document(tenant_a.tenant, content=handmade_pdf(), filename="handmade.pdf")

    loaded = load_document_text(document.pk, ocr_language="eng")

    row = ExtractedText.objects.get(document=document)
    expected = (_expected_words(loaded.pages[0]),)
    assert loaded.geometry == expected
    assert row.geometry == geometry_to_json(expected)
    assert document_text_of(make_job(tenant_a.tenant, document=document)).geometry == expected


@pytest.mark.django_db(transaction=True)  # the worker's steps give their connection back
def test_a_text_stored_before_geometry_was_kept_has_none(tenant_a):
    document = make_document(tenant_a.tenant)
    ExtractedText.objects.create(document=document, pages=["Invoice 1"], source="text")

    assert load_document_text(document.pk, ocr_language="eng").geometry is None
    assert document_text_of(make_job(tenant_a.tenant, document=document)).page_geometry(1) is None


@pytest.mark.django_db
def test_the_database_refuses_geometry_that_is_not_one_entry_per_page(tenant_a):
    document = make_document(tenant_a.tenant)

    with pytest.raises(IntegrityError, match="document_text_geometry_per_page"), transaction.atomic():
        ExtractedText.objects.create(document=document, pages=["a", "b"], source="text", geometry=[None])


# --- the page strings did not move ----------------------------------------------------------------

CORPUS = sorted(path for path in INVOICES.rglob("*") if path.suffix.lower() in {".pdf", ".png"} and path.is_file())


def _page_digests(path: Path) -> dict[str, object]:
    content_type = "application/pdf" if path.suffix.lower() == ".pdf" else "image/png"
    document = extract_document_text(path.read_bytes(), content_type)
    return {
        "source": document.source,
        "pages": [hashlib.sha256(page.encode()).hexdigest() for page in document.pages],
        "geometry_pages": [page is not None for page in document.geometry],
    }


def test_every_corpus_document_reads_as_it_did_before_geometry_was_kept():
    # tests/golden/corpus_page_digests.json was written by the text extraction before geometry
    # capture (one pdfplumber extract_text and one image_to_string per page): each page string
    # of every sample PDF and image, by digest. Evidence offsets stored with results index these.
    digests = {str(path.relative_to(INVOICES)): _page_digests(path) for path in CORPUS}
    pages = {name: {"source": entry["source"], "pages": entry["pages"]} for name, entry in digests.items()}

    assert_golden("corpus_page_digests.json", pages)
    assert all(all(entry["geometry_pages"]) for entry in digests.values())


def test_the_text_layer_string_is_pdfplumbers_extract_text():
    with pdfplumber.open(EINFACH_PDF) as pdf:
        layout = [_tidy_like_text_py(page.extract_text(layout=True)) for page in pdf.pages]

    assert list(extract_document_text(EINFACH_PDF.read_bytes(), "application/pdf").pages) == layout
