"""A document's pages as images: how many it has, and each one rendered as a PNG.

Evidence boxes (extraction.intake.geometry) are fractions of a page, so they overlay these
images at any resolution. A PDF page is rendered as the text was read: its media box, its
rotation applied (pdftoppm's defaults, and pdfplumber's frame for the glyph positions); an
image's frame is served as Tesseract read it, pixels as stored (no EXIF rotation). XML and
plain-text uploads have no page image.

A document version never changes, so a rendered page is kept in storage under its document,
version, page and resolution and served from there afterwards.
"""

from __future__ import annotations

import io
import math
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from PIL import Image
from pypdf import PdfReader

from extraction.intake.text import IMAGE_TYPES, PDF, PLAIN_TEXT, XML
from extraction.models import Document

PAGE_IMAGE_MIN_DPI = 36
PAGE_IMAGE_MAX_DPI = 200
PAGE_IMAGE_DEFAULT_DPI = 100
# Rendering runs in the web process while the client waits: a hostile page must give up well
# before gunicorn's 30 s worker timeout kills the worker instead.
RENDER_TIMEOUT_SECONDS = 20
# A poster-sized page at 200 dpi would be gigabytes of pixels: a page larger than this is
# rendered at a lower resolution instead.
MAX_PAGE_PIXELS = 25_000_000
# Modes PNG stores as they are; any other (CMYK, YCbCr) is converted to RGB.
_PNG_MODES = frozenset({"1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"})


class NoPageImage(Exception):
    """The document has no page image: an XML or plain-text upload, or bytes that cannot be
    rendered."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PageOutOfRange(Exception):
    def __init__(self, page: int, page_count: int) -> None:
        super().__init__(f"Page {page} is out of range: the document has {page_count} page(s).")
        self.page = page
        self.page_count = page_count


def count_pages(stream: IO[bytes], content_type: str) -> int | None:
    """How many pages a document of ``content_type`` has, read from ``stream`` (from its start);
    None if the bytes cannot be counted (extraction will say what is wrong with them)."""
    stream.seek(0)
    if content_type == XML:
        return 1  # the printed e-invoice
    if content_type == PLAIN_TEXT:
        return 1 + sum(chunk.count(b"\f") for chunk in iter(lambda: stream.read(1024 * 1024), b""))
    try:
        if content_type == PDF:
            reader = PdfReader(stream)
            if reader.is_encrypted and not reader.decrypt(""):
                return None
            return len(reader.pages)
        if content_type in IMAGE_TYPES:
            with Image.open(stream) as image:
                # The frames text extraction reads one page each of (ImageSequence).
                return int(getattr(image, "n_frames", 1))
    except Exception:  # noqa: BLE001 - pypdf and PIL raise many types on malformed files; none is ours
        return None
    return None


@dataclass(frozen=True)
class PageImage:
    """Page ``page`` of ``document`` as a PNG at ``dpi`` (None: an image upload, served at its
    own size whatever resolution was asked for)."""

    document: Document
    page: int
    dpi: int | None

    @property
    def storage_name(self) -> str:
        size = "" if self.dpi is None else f"-{self.dpi}dpi"
        return f"page-images/{self.document.pk}/{self.document.version}/{self.page}{size}.png"

    @property
    def etag(self) -> str:
        # The version is immutable and names the bytes: the same page at the same resolution
        # is the same image, so the tag needs no read of it.
        size = "" if self.dpi is None else f"-{self.dpi}"
        return f'"{self.document.version}-{self.page}{size}"'

    def png(self) -> bytes:
        """The image: from storage, or rendered and stored there on first use. Raises
        :class:`NoPageImage` if the bytes cannot be rendered."""
        name = self.storage_name
        if default_storage.exists(name):
            with default_storage.open(name, "rb") as handle:
                return handle.read()
        data = _document_bytes(self.document)
        png = _pdf_page_png(data, self.page, self.dpi) if self.dpi is not None else _image_frame_png(data, self.page)
        saved = default_storage.save(name, ContentFile(png))
        if saved != name:
            default_storage.delete(saved)  # a concurrent request stored the same image first
        return png


def page_image(document: Document, *, page: int, dpi: int) -> PageImage:
    """Page ``page`` (1-based) of ``document`` at ``dpi``, not rendered yet (:meth:`PageImage.png`).

    Raises :class:`NoPageImage` for a document without page images and :class:`PageOutOfRange`.
    A document uploaded before pages were counted is counted here, once.
    """
    if document.content_type in (XML, PLAIN_TEXT):
        raise NoPageImage("An XML or plain-text document has no page image.")
    if document.content_type != PDF and document.content_type not in IMAGE_TYPES:
        raise NoPageImage(f"A {document.content_type} document has no page image.")
    page_count = document.page_count
    if page_count is None:
        page_count = count_pages(io.BytesIO(_document_bytes(document)), document.content_type)
        if page_count is None:
            raise NoPageImage("The document's pages cannot be read.")
        Document.objects.filter(pk=document.pk, page_count__isnull=True).update(page_count=page_count)
    if not 1 <= page <= page_count:
        raise PageOutOfRange(page, page_count)
    return PageImage(document, page, dpi if document.content_type == PDF else None)


def _document_bytes(document: Document) -> bytes:
    with default_storage.open(document.storage_name, "rb") as handle:
        return handle.read()


def _pdf_page_png(data: bytes, page: int, dpi: int) -> bytes:
    try:
        box = PdfReader(io.BytesIO(data)).pages[page - 1].mediabox
        pixels = float(box.width) * float(box.height) * (dpi / 72) ** 2
    except Exception:  # noqa: BLE001 - pypdf raises many types on malformed files; pdftoppm decides below
        pixels = 0
    if pixels > MAX_PAGE_PIXELS:
        dpi = max(1, math.floor(dpi * math.sqrt(MAX_PAGE_PIXELS / pixels)))
    with tempfile.TemporaryDirectory(prefix="page-image-") as workdir:
        pdf_path = Path(workdir) / "document.pdf"
        pdf_path.write_bytes(data)
        try:
            rendered = subprocess.run(
                ["pdftoppm", "-png", "-r", str(dpi), "-f", str(page), "-l", str(page), "-singlefile", str(pdf_path)],
                check=True,
                capture_output=True,
                timeout=RENDER_TIMEOUT_SECONDS,
            )
        except subprocess.CalledProcessError as error:
            detail = error.stderr.decode("utf-8", "replace").strip()[:200]
            raise NoPageImage(f"Page {page} cannot be rendered: {detail}") from None
        except subprocess.TimeoutExpired:
            raise NoPageImage(f"Page {page} took too long to render.") from None
    if not rendered.stdout:
        raise NoPageImage(f"Page {page} cannot be rendered.")
    return rendered.stdout


def _image_frame_png(data: bytes, page: int) -> bytes:
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.seek(page - 1)
            frame = image.copy()
    except Exception as error:  # noqa: BLE001 - PIL raises many types on malformed files
        raise NoPageImage(f"The image cannot be decoded ({type(error).__name__}).") from None
    if frame.mode not in _PNG_MODES:
        frame = frame.convert("RGB")
    buffer = io.BytesIO()
    frame.save(buffer, format="PNG")
    return buffer.getvalue()
