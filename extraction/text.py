"""Document text with stable positions: one string per page, offsets are indexes into it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DocumentText:
    pages: tuple[str, ...]
    source: str = "text"          # "text", "pdf_text_layer", "ocr"

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
