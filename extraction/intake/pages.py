"""A document's pages as images: how many it has.

Evidence boxes (extraction.intake.geometry) are fractions of a page; the pages counted here are
the ones an image can be shown of: a PDF's pages, an image's frames. XML and plain-text uploads
count their printed pages.
"""

from __future__ import annotations

from typing import IO

from PIL import Image
from pypdf import PdfReader

from extraction.intake.text import IMAGE_TYPES, PDF, PLAIN_TEXT, XML


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
