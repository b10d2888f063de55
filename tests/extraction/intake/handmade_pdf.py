"""A one-page PDF written by hand, whose glyph boxes can be worked out on paper.

The text is set in Helvetica, one of the 14 standard fonts, so every reader (pdfminer, poppler)
takes the glyph widths and the descender from the same Adobe metrics: a glyph's box runs from
its pen position to the pen position plus its width, and vertically from baseline - 0.207 em to
that plus 1 em.
"""

from __future__ import annotations

# Adobe's Helvetica advance widths (per 1000 em) of the characters the tests print.
HELVETICA_WIDTHS = {
    " ": 278,
    "-": 333,
    ".": 278,
    "0": 556,
    "1": 556,
    "2": 556,
    "4": 556,
    "I": 278,
    "N": 722,
    "T": 611,
    "V": 667,
    "a": 556,
    "c": 500,
    "e": 556,
    "i": 222,
    "l": 222,
    "n": 556,
    "o": 556,
    "t": 278,
    "v": 500,
}
HELVETICA_DESCENT = 0.207  # of an em, below the baseline

FONT_SIZE = 12
# (text, x, baseline y) in PDF user space (origin bottom left), on a US Letter page.
LINES = (("Invoice no INV-42", 72, 720), ("Total 10.00", 72, 700))
LETTER = (0, 0, 612, 792)


def text_width(text: str, size: float = FONT_SIZE) -> float:
    return sum(HELVETICA_WIDTHS[ch] for ch in text) * size / 1000


def handmade_pdf(
    lines: tuple[tuple[str, float, float], ...] = LINES, *, media_box: tuple[float, ...] = LETTER, rotate: int = 0
) -> bytes:
    """A PDF of one page printing ``lines`` in 12 pt Helvetica, with a correct cross-reference table."""
    content = b"\n".join(
        b"BT /F1 %d Tf %s %s Td (%s) Tj ET" % (FONT_SIZE, _num(x), _num(y), text.encode("latin-1"))
        for text, x, y in lines
    )
    box = b" ".join(_num(value) for value in media_box)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [%s] /Rotate %d" % (box, rotate)
        + b" /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
    ]
    pdf = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(pdf))
        pdf += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(pdf)
    pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    pdf += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    pdf += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return pdf


def _num(value: float) -> bytes:
    return (b"%d" % value) if float(value).is_integer() else (b"%.3f" % value)
