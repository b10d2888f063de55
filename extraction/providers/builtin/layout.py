"""The text model the rules work on: the document's lines with their page offsets, values found
in them with the span they were read from, and the document prepared once for every finder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from extraction.intake.text import DocumentText
from extraction.providers.builtin.readings import (
    Amount,
    DateMatch,
    amount_pattern,
    groups_thousands_with_spaces,
    read_amounts,
    read_dates,
    uses_decimal_comma,
    writes_month_first,
)


@dataclass(frozen=True)
class TextLine:
    page: int  # 1-based
    number: int  # position in the whole document, for "before/after" and distance
    start: int  # offset of the line's first character in its page
    text: str


@dataclass(frozen=True)
class Found:
    """A normalized value and the span of page text it was read from."""

    value: str
    page: int
    start: int
    end: int
    rank: int = 0  # lower is a better source (label strength), compared within a field
    line: int = 0  # TextLine.number, later is nearer the end of the document


def document_lines(document: DocumentText) -> list[TextLine]:
    lines: list[TextLine] = []
    for page_number, page in enumerate(document.pages, start=1):
        offset = 0
        for text in page.split("\n"):
            lines.append(TextLine(page=page_number, number=len(lines), start=offset, text=text))
            offset += len(text) + 1
    return lines


def found_at(line: TextLine, start: int, end: int, value: str, rank: int = 0) -> Found:
    """A value read from line.text[start:end]."""
    return Found(
        value=value, page=line.page, start=line.start + start, end=line.start + end, rank=rank, line=line.number
    )


def invoice_field(document: DocumentText, found: Found | None) -> dict[str, Any]:
    """An invoice.v1 field: the value and its evidence, or null and null."""
    if found is None:
        return {"value": None, "evidence": None}
    quote = document.pages[found.page - 1][found.start : found.end]
    return {
        "value": found.value,
        "evidence": {"page": found.page, "start": found.start, "end": found.end, "quote": quote},
    }


def magnitude(found: Found | None) -> Found | None:
    """The value without its minus sign, read from the same span."""
    if found is None or not found.value.startswith("-"):
        return found
    return Found(found.value[1:], found.page, found.start, found.end, found.rank, found.line)


@dataclass
class Context:
    """The whole document, prepared once: its lines and the conventions its numbers follow."""

    document: DocumentText
    lines: list[TextLine]
    decimal_comma: bool
    month_first: bool
    space_grouping: bool = False

    def amounts(self, line: TextLine, start: int = 0, end: int | None = None) -> list[Amount]:
        return read_amounts(line.text, self.decimal_comma, start, end, space_grouping=self.space_grouping)

    @property
    def amount_pattern(self) -> re.Pattern[str]:
        """How this document prints an amount, for finding one by position (under a heading)."""
        return amount_pattern(space_grouping=self.space_grouping)

    def dates(self, line: TextLine) -> list[DateMatch]:
        return read_dates(line.text, self.month_first)

    def below(self, line: TextLine, count: int = 3) -> Iterator[TextLine]:
        """The next non-empty lines on the same page."""
        seen = 0
        for other in self.lines[line.number + 1 :]:
            if other.page != line.page or seen >= count:
                return
            if other.text.strip():
                seen += 1
                yield other


def prepare(document: DocumentText) -> Context:
    text = document.full_text
    decimal_comma = uses_decimal_comma(text)
    return Context(
        document=document,
        lines=document_lines(document),
        decimal_comma=decimal_comma,
        month_first=writes_month_first(text),
        space_grouping=decimal_comma and groups_thousands_with_spaces(text),
    )


def label_pattern(*alternatives: str) -> re.Pattern[str]:
    # A label ends at a word boundary only if it ends in a letter: "n°562044387" is fine.
    return re.compile(
        r"(?<![^\W_])(?:" + "|".join(alternatives) + r")(?:(?<=[^\W_])(?![^\W_])|(?<![^\W_]))", re.IGNORECASE
    )


def column_value(
    ctx: Context, line: TextLine, start: int, end: int, pattern: re.Pattern[str]
) -> tuple[TextLine, re.Match[str]] | None:
    """A value printed under a column heading: the first match of ``pattern`` in the next lines
    that overlaps the heading's horizontal extent (layout text keeps columns aligned)."""
    for other in ctx.below(line, count=3):
        for match in pattern.finditer(other.text):
            if match.start() < end + 2 and match.end() > start - 2:
                return other, match
    return None
