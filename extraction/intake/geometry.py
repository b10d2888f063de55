"""Where a page string's words are printed: the geometry behind evidence boxes.

A page's geometry lists its words in reading order. Each :class:`WordBox` names the span of the
page string it covers, the line of the page string it is on, and its box on the page as
fractions of the page's width and height, origin top left, so a box overlays an image of the
page at any resolution. :func:`boxes_for` turns an evidence span into one box per printed line.

Geometry comes from the PDF text layer's glyph positions (pdfplumber) or from Tesseract's word
boxes, and is aligned to the page strings afterwards: the strings themselves are never built
from it, so capturing geometry cannot move an evidence offset. A page without geometry (a
plain-text upload, the printed e-invoice XML) is None.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

# 4 decimals of a page is a tenth of a point on A4: finer than any glyph edge.
_PRECISION = 4


class WordBox(NamedTuple):
    """One word: page string offsets [start, end), its box (fractions, origin top left) and the
    0-based line of the page string it is on (one line of the string is one printed line)."""

    start: int
    end: int
    x0: float
    y0: float
    x1: float
    y1: float
    line: int


# A page's words in reading order (ascending start); stored as JSON, one list per word.
PageGeometry = tuple[WordBox, ...]


class OcrWord(NamedTuple):
    """A word as Tesseract reports it: its text and its box in the image's pixels."""

    text: str
    left: int
    top: int
    width: int
    height: int


def _fraction(value: float, origin: float, extent: float) -> float:
    # Glyphs may stick out of the page (clipped text): the box stays on the page.
    return round(min(max((value - origin) / extent, 0.0), 1.0), _PRECISION)


def text_layer_geometry(
    textmap: Sequence[tuple[str, Mapping[str, Any] | None]],
    page_text: str,
    page_bbox: tuple[float, float, float, float],
) -> PageGeometry | None:
    """The words of ``page_text``, a tidied text layer, placed by the glyphs of the pdfplumber
    textmap (``page.get_textmap(layout=True).tuples``) the text was read from.

    The clean-up between the textmap and the page string only drops or turns whitespace into
    newlines, so the n-th non-whitespace character of the page is the n-th of the textmap: that
    is the alignment, and a page where the counts differ gets no geometry rather than a wrong
    one. ``page_bbox`` is pdfplumber's ``page.bbox`` (the media box, top-origin, rotation
    applied), the frame of both the glyph coordinates and the rendered page.
    """
    left, top, right, bottom = page_bbox
    width, height = right - left, bottom - top
    glyphs = [glyph for letter, glyph in textmap if not letter.isspace()]
    offsets = [index for index, letter in enumerate(page_text) if not letter.isspace()]
    if width <= 0 or height <= 0 or len(glyphs) != len(offsets):
        return None
    words: list[WordBox] = []
    line, counted_to = 0, 0
    first = 0
    while first < len(offsets):
        last = first
        while last + 1 < len(offsets) and offsets[last + 1] == offsets[last] + 1:
            last += 1
        start, end = offsets[first], offsets[last] + 1
        line += page_text.count("\n", counted_to, start)
        counted_to = start
        placed = [glyph for glyph in glyphs[first : last + 1] if glyph is not None]
        if placed:
            words.append(
                WordBox(
                    start,
                    end,
                    _fraction(min(glyph["x0"] for glyph in placed), left, width),
                    _fraction(min(glyph["top"] for glyph in placed), top, height),
                    _fraction(max(glyph["x1"] for glyph in placed), left, width),
                    _fraction(max(glyph["bottom"] for glyph in placed), top, height),
                    line,
                )
            )
        first = last + 1
    return tuple(words)


def tesseract_words(tsv: str) -> list[OcrWord]:
    """The words of Tesseract's TSV output (``image_to_data``'s format), in its reading order."""
    rows = tsv.splitlines()
    if not rows:
        return []
    columns = {name: index for index, name in enumerate(rows[0].split("\t"))}
    words: list[OcrWord] = []
    for row in rows[1:]:
        cells = row.split("\t")
        if len(cells) != len(columns) or cells[columns["level"]] != "5":
            continue
        text = cells[columns["text"]].strip()
        if text:
            left, top, width, height = (int(cells[columns[name]]) for name in ("left", "top", "width", "height"))
            words.append(OcrWord(text, left, top, width, height))
    return words


def _token_at_or_after(text: str, token: str, start: int) -> int | None:
    """Where ``token`` next stands as a whole whitespace-separated token of ``text``."""
    at = text.find(token, start)
    while at != -1:
        end = at + len(token)
        if (at == 0 or text[at - 1].isspace()) and (end == len(text) or text[end].isspace()):
            return at
        at = text.find(token, at + 1)
    return None


def ocr_geometry(words: Iterable[OcrWord], page_text: str, image_size: tuple[int, int]) -> PageGeometry | None:
    """The words Tesseract boxed, placed in ``page_text`` (its tidied text of the same image).

    Words are searched in order, each from where the previous one ended, as whole tokens; a word
    the text does not have there is left out, never guessed.
    """
    width, height = image_size
    if width <= 0 or height <= 0:
        return None
    placed: list[WordBox] = []
    cursor, line, counted_to = 0, 0, 0
    for word in words:
        start = _token_at_or_after(page_text, word.text, cursor)
        if start is None:
            continue
        end = start + len(word.text)
        line += page_text.count("\n", counted_to, start)
        counted_to, cursor = start, end
        placed.append(
            WordBox(
                start,
                end,
                _fraction(word.left, 0, width),
                _fraction(word.top, 0, height),
                _fraction(word.left + word.width, 0, width),
                _fraction(word.top + word.height, 0, height),
                line,
            )
        )
    return tuple(placed)


def boxes_for(page: PageGeometry | None, start: int, end: int) -> list[list[float]] | None:
    """The boxes ``[x0, y0, x1, y1]`` (fractions, origin top left) of the page string span
    [start, end): one per printed line the span covers, the union of the words it touches there,
    in reading order. None when the page has no geometry or no word of the span was placed.

    A word the span covers only in part counts whole: word boxes are the finest geometry kept.
    """
    if page is None or start >= end:
        return None
    lines: dict[int, list[float]] = {}
    for word in page:
        if word.start >= end:
            break  # words are in reading order
        if word.end <= start:
            continue
        box = lines.get(word.line)
        if box is None:
            lines[word.line] = [word.x0, word.y0, word.x1, word.y1]
        else:
            box[:] = [min(box[0], word.x0), min(box[1], word.y0), max(box[2], word.x1), max(box[3], word.y1)]
    return list(lines.values()) or None


def geometry_to_json(geometry: Sequence[PageGeometry | None] | None) -> list[list[list[float]] | None] | None:
    """What ``ExtractedText.geometry`` stores: per page a list of ``[start, end, x0, y0, x1, y1,
    line]`` lists, or null for a page without geometry."""
    if geometry is None:
        return None
    return [None if page is None else [list(word) for word in page] for page in geometry]


def geometry_from_json(
    stored: Sequence[Sequence[Sequence[float]] | None] | None,
) -> tuple[PageGeometry | None, ...] | None:
    """The inverse of :func:`geometry_to_json`; None for a text stored before geometry was kept."""
    if stored is None:
        return None
    return tuple(
        None
        if page is None
        else tuple(
            WordBox(int(start), int(end), x0, y0, x1, y1, int(line)) for start, end, x0, y0, x1, y1, line in page
        )
        for page in stored
    )
