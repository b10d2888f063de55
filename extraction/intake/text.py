"""Document text with stable positions: one string per page, offsets are indexes into it.

:func:`extract_document_text` turns an uploaded document's bytes into :class:`DocumentText`.
Every evidence span a model reports is checked against these page strings (VAL-1), so the
same bytes must always give the same pages: the text layer is read with fixed settings,
OCR runs with fixed settings, and the clean-up below is pure string work.
"""

from __future__ import annotations

import io
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pdfplumber
import pytesseract
from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect
from PIL import Image, ImageSequence, UnidentifiedImageError
from pypdf import PdfReader
from pypdf.errors import PdfReadError

from extraction.einvoice import RefusedXml, read_einvoice
from extraction.einvoice.rendering import render
from extraction.intake.geometry import PageGeometry, ocr_geometry, tesseract_words, text_layer_geometry

# Sources, as stored with the text; prompt.py requires [a-z_]+.
SOURCE_TEXT = "text"
SOURCE_PDF_TEXT_LAYER = "pdf_text_layer"
SOURCE_OCR = "ocr"
SOURCE_PDF_MIXED = "pdf_text_layer_and_ocr"
SOURCE_EINVOICE = "einvoice_xml"

PDF = "application/pdf"
PLAIN_TEXT = "text/plain"
XML = "application/xml"
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/jpg", "image/tiff"})

# One uniform block with the gaps kept (--psm 6, preserve_interword_spaces) reads an invoice
# row by row like the PDF text layer does, so a label and its amount stay on one line; the
# default automatic layout splits them into separate blocks.
OCR_CONFIG = "--psm 6 -c preserve_interword_spaces=1"

# 300 dpi is Tesseract's recommended input resolution; lower loses small print on invoices.
OCR_DPI = 300
# Rasterising one page must not hang a worker on a hostile PDF.
RASTERIZE_TIMEOUT_SECONDS = 120

# Structured-invoice attachments, in order of preference (Factur-X/ZUGFeRD 2.x, XRechnung,
# ZUGFeRD 1.0). Any other .xml attachment is accepted only if it looks like an invoice.
_INVOICE_XML_NAMES = ("factur-x.xml", "zugferd-invoice.xml", "xrechnung.xml", "zugferd_invoice.xml")
_INVOICE_XML_ROOTS = re.compile(rb"<(?:\w+:)?(?:CrossIndustryInvoice|CrossIndustryDocument|Invoice|CreditNote)\b")


class UnreadableDocument(Exception):
    """The document holds no text we can read: corrupt, password-protected, empty, or a type
    we do not handle. Retrying cannot help; the reason is stored with the job."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class DocumentText:
    pages: tuple[str, ...]
    source: str = SOURCE_TEXT  # one of the SOURCE_* constants
    # The page that prints the document's e-invoice XML (extraction.einvoice.rendering): the
    # only page of an XML upload, the page after the visible ones of a Factur-X/ZUGFeRD PDF.
    einvoice_page: int | None = None
    # Where each page's words are printed (extraction.intake.geometry), one entry per page, None
    # for a page without any; None for the whole document when it was not captured (a text
    # stored before geometry was kept). Not part of equality: the same pages are the same text.
    geometry: tuple[PageGeometry | None, ...] | None = field(default=None, compare=False, repr=False)

    def page_geometry(self, page: int) -> PageGeometry | None:
        """The geometry of page (1-based), if the document has any there."""
        if self.geometry is None or not 1 <= page <= len(self.geometry):
            return None
        return self.geometry[page - 1]

    @property
    def embeds_einvoice(self) -> bool:
        """Whether the document shows pages of its own beside its printed e-invoice (a
        Factur-X/ZUGFeRD PDF), rather than being only that (an XML upload) or having none."""
        return self.einvoice_page is not None and self.source != SOURCE_EINVOICE

    def for_providers(self) -> DocumentText:
        """What a model or the rules read: the document as sent. A PDF's printed e-invoice page
        is left out (it is the last page, so the other pages keep their numbers and a
        provider's evidence holds in this document too); an XML upload is only that page."""
        page = self.einvoice_page
        if page is None or not self.embeds_einvoice:
            return self
        geometry = None if self.geometry is None else self.geometry[: page - 1]
        return DocumentText(pages=self.pages[: page - 1], source=self.source, geometry=geometry)

    def part(self, first: int, last: int) -> DocumentText:
        """A bundle's part (pages ``first`` to ``last``, 1-based) as its job reads it: the pages
        before it are blank and the ones after it gone, so page numbers stay the document's (the
        evidence of a part points at the pages the reviewer sees) and nothing of another
        invoice is read. A part has no e-invoice: the XML of a split document says nothing about
        which part it is, so it must not answer for any (extraction.execution.splitting)."""
        visible = self.for_providers()
        last = min(last, len(visible.pages))
        pages = ("",) * (first - 1) + visible.pages[first - 1 : last]
        geometry = None
        if visible.geometry is not None:
            geometry = (None,) * (first - 1) + visible.geometry[first - 1 : last]
        return DocumentText(pages=pages, source=visible.source, geometry=geometry)

    @property
    def full_text(self) -> str:
        return "\n\f".join(self.pages)

    def span(self, page: int, start: int, end: int) -> str | None:
        """The text at page (1-based) [start, end), or None if the reference is out of range."""
        if not 1 <= page <= len(self.pages):
            return None
        text = self.pages[page - 1]
        if not 0 <= start <= end <= len(text):
            return None
        return text[start:end]


def extract_document_text(data: bytes, content_type: str, *, ocr_language: str = "eng") -> DocumentText:
    """The pages of a document, read from its text layer where it has one and by OCR otherwise.

    ``content_type`` may carry parameters (``text/plain; charset=utf-8``); ``ocr_language`` is a
    Tesseract language list such as ``"eng"`` or ``"deu+eng"``. Raises :class:`UnreadableDocument`.
    """
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type == PLAIN_TEXT:
        document = _plain_text(data)
    elif media_type == XML:
        document = DocumentText(
            pages=(_einvoice_page(data),), source=SOURCE_EINVOICE, einvoice_page=1, geometry=(None,)
        )
    elif media_type == PDF:
        document = _pdf_text(data, ocr_language)
    elif media_type in IMAGE_TYPES:
        read = _image_text(data, ocr_language)
        document = DocumentText(
            pages=tuple(page.text for page in read),
            source=SOURCE_OCR,
            geometry=tuple(page.geometry for page in read),
        )
    else:
        raise UnreadableDocument(f"unsupported content type {media_type!r}")
    if not any(page.strip() for page in document.pages):
        raise UnreadableDocument("the document contains no text")
    return document


def embedded_invoice_xml(data: bytes) -> tuple[str, bytes] | None:
    """The Factur-X/ZUGFeRD/XRechnung XML attached to a PDF, as (file name, bytes), if any.

    Returns None for a PDF without such an attachment and for bytes that are not a readable PDF
    (text extraction reports those; this is only a shortcut to better data).
    """
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not _decrypts_with_empty_password(reader):
            return None
        attachments = {name: contents for name, contents in reader.attachments.items() if contents}
    except Exception:  # noqa: BLE001 - pypdf raises many types on malformed files; none is ours to handle
        return None
    by_lower_name = {name.lower(): name for name in sorted(attachments)}
    for preferred in _INVOICE_XML_NAMES:
        if preferred in by_lower_name:
            name = by_lower_name[preferred]
            return name, attachments[name][0]
    for lower, name in sorted(by_lower_name.items()):
        contents = attachments[name][0]
        if lower.endswith(".xml") and _INVOICE_XML_ROOTS.search(contents[:4096]):
            return name, contents
    return None


def _einvoice_page(xml: bytes) -> str:
    """The e-invoice printed as text; :class:`UnreadableDocument` if the XML is refused."""
    try:
        return render(read_einvoice(xml)).text
    except RefusedXml as refused:
        raise UnreadableDocument(f"e-invoice XML refused: {refused.reason}") from None


def with_embedded_einvoice(document: DocumentText, xml: bytes | None) -> DocumentText:
    """A Factur-X/ZUGFeRD PDF's pages and, after them, its embedded ``xml`` printed as a page.

    The visible pages stay first and unchanged (:meth:`DocumentText.for_providers`); no
    attachment, or one we refuse to read, leaves the PDF as it is, since its text is still an
    invoice.
    """
    if xml is None:
        return document
    try:
        page = render(read_einvoice(xml)).text
    except RefusedXml:
        return document
    geometry = None if document.geometry is None else (*document.geometry, None)
    return DocumentText(
        pages=(*document.pages, page),
        source=document.source,
        einvoice_page=len(document.pages) + 1,
        geometry=geometry,
    )


def einvoice_xml_of(data: bytes, content_type: str) -> bytes | None:
    """The e-invoice XML a document is or carries: itself for an XML upload, the attachment of a
    Factur-X/ZUGFeRD PDF; None for anything else."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type == XML:
        return data
    if media_type == PDF:
        attached = embedded_invoice_xml(data)
        return attached[1] if attached else None
    return None


def _plain_text(data: bytes) -> DocumentText:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise UnreadableDocument(f"text/plain document is not valid UTF-8 (byte {error.start})") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    pages = tuple(text.split("\f"))
    return DocumentText(pages=pages, source=SOURCE_TEXT, geometry=(None,) * len(pages))


class ReadPage(NamedTuple):
    """A page as read: its string and where its words are printed."""

    text: str
    geometry: PageGeometry | None


def _pdf_text(data: bytes, ocr_language: str) -> DocumentText:
    _reject_locked_pdf(data)
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            # extract_text(layout=True) is this textmap's string; the textmap also holds each
            # character's glyph, so the page is laid out once for both.
            textmaps = [(page.get_textmap(layout=True), page.bbox) for page in pdf.pages]
    except (PDFPasswordIncorrect, PDFEncryptionError):
        raise UnreadableDocument("the PDF is encrypted") from None
    except Exception as error:  # noqa: BLE001 - pdfminer's parse errors have no common base class
        raise UnreadableDocument(f"the PDF cannot be parsed ({type(error).__name__})") from None
    if not textmaps:
        raise UnreadableDocument("the PDF has no pages")
    layer = [_text_layer_page(textmap.as_string, textmap.tuples, bbox) for textmap, bbox in textmaps]
    blank = [index for index, page in enumerate(layer) if not page.text.strip()]
    if not blank:
        return _document_of(layer, SOURCE_PDF_TEXT_LAYER)
    pages = list(layer)
    with tempfile.TemporaryDirectory(prefix="pdf-ocr-") as workdir:
        pdf_path = Path(workdir) / "document.pdf"
        pdf_path.write_bytes(data)
        for index in blank:
            image = _rasterize_pdf_page(pdf_path, index + 1)
            pages[index] = _ocr(image, ocr_language)
    source = SOURCE_OCR if len(blank) == len(layer) else SOURCE_PDF_MIXED
    return _document_of(pages, source)


def _text_layer_page(
    layout_text: str,
    textmap: Sequence[tuple[str, Mapping[str, Any] | None]],
    bbox: tuple[float, float, float, float],
) -> ReadPage:
    text = _tidy(layout_text)
    return ReadPage(text, text_layer_geometry(textmap, text, bbox))


def _document_of(pages: list[ReadPage], source: str) -> DocumentText:
    return DocumentText(
        pages=tuple(page.text for page in pages), source=source, geometry=tuple(page.geometry for page in pages)
    )


def _reject_locked_pdf(data: bytes) -> None:
    """Raise UnreadableDocument for bytes that are not a PDF or need a password to open.

    A PDF encrypted with an empty user password (permissions only) is common and readable.
    """
    if b"%PDF-" not in data[:1024]:
        raise UnreadableDocument("not a PDF file (no %PDF header)")
    try:
        reader = PdfReader(io.BytesIO(data))
        locked = reader.is_encrypted and not _decrypts_with_empty_password(reader)
    except Exception as error:  # noqa: BLE001 - pypdf raises many types on malformed files
        raise UnreadableDocument(f"the PDF cannot be parsed ({type(error).__name__})") from None
    if locked:
        raise UnreadableDocument("the PDF is encrypted with a password")


def _decrypts_with_empty_password(reader: PdfReader) -> bool:
    try:
        return bool(reader.decrypt(""))
    except (PdfReadError, NotImplementedError, ValueError):
        return False


def _rasterize_pdf_page(pdf_path: Path, page_number: int) -> Image.Image:
    prefix = pdf_path.with_name(f"page-{page_number}")
    try:
        subprocess.run(
            [
                "pdftoppm",
                "-r",
                str(OCR_DPI),
                "-gray",
                "-png",
                "-singlefile",
                "-f",
                str(page_number),
                "-l",
                str(page_number),
                str(pdf_path),
                str(prefix),
            ],
            check=True,
            capture_output=True,
            timeout=RASTERIZE_TIMEOUT_SECONDS,
        )
    except subprocess.CalledProcessError as error:
        detail = error.stderr.decode("utf-8", "replace").strip()[:200]
        raise UnreadableDocument(f"page {page_number} cannot be rendered for OCR: {detail}") from None
    except subprocess.TimeoutExpired:
        raise UnreadableDocument(f"page {page_number} took too long to render for OCR") from None
    with Image.open(prefix.with_suffix(".png")) as image:
        image.load()
        return image


def _image_text(data: bytes, ocr_language: str) -> tuple[ReadPage, ...]:
    try:
        with Image.open(io.BytesIO(data)) as image:
            # Multi-page TIFF: one page per frame; PNG/JPEG have one frame.
            return tuple(_ocr(frame.copy(), ocr_language) for frame in ImageSequence.Iterator(image))
    except (UnidentifiedImageError, OSError, SyntaxError) as error:
        raise UnreadableDocument(f"the image cannot be decoded ({type(error).__name__})") from None


def _ocr(image: Image.Image, language: str) -> ReadPage:
    if image.mode not in ("L", "RGB"):
        image = image.convert("RGB")
    text, tsv = _tesseract(image, language)
    page = _tidy(text)
    return ReadPage(page, ocr_geometry(tesseract_words(tsv), page, image.size))


def _tesseract(image: Image.Image, language: str) -> tuple[str, str]:
    """One recognition, rendered twice: the text exactly as ``pytesseract.image_to_string`` returns
    it (same image file, command and decoding) and the TSV of word boxes ``image_to_data`` reads.

    Both renderers print the same recognised page, so the text is the one read before word
    boxes were kept, at the cost of a single OCR run rather than two.
    """
    with pytesseract.pytesseract.save(image) as (output_base, input_path):
        pytesseract.pytesseract.run_tesseract(
            input_path, output_base, "txt tsv", language, f"{OCR_CONFIG} -c tessedit_create_tsv=1"
        )
        text = Path(f"{output_base}.txt").read_bytes().decode("utf-8")
        tsv = Path(f"{output_base}.tsv").read_bytes().decode("utf-8")
    return text, tsv


def _tidy(text: str) -> str:
    """Drop layout padding: trailing blanks, runs of empty lines and the common left margin."""
    lines = [line.rstrip() for line in text.replace("\f", "").splitlines()]
    margin = min((len(line) - len(line.lstrip(" ")) for line in lines if line), default=0)
    lines = [line[margin:] for line in lines]
    tidy = re.sub(r"\n{3,}", "\n\n", "\n".join(lines))
    return tidy.strip("\n")
