"""Where one invoice ends and the next begins in a document that holds several (issue #27).

A scan batch or an ERP's monthly export arrives as one PDF; :func:`split_document` tells which
pages belong together, from what the pages print: page numbers ("Seite 1 von 2", "Page 2 / 2",
"1/3"); the invoice number, supplier VAT id and name the built-in extractor's readers find on
each page; an invoice number at the top of a page (a header); and the totals that close an
invoice. It reads text only, page by page, so it costs about what one reading of the document by
the rules costs.

Each junction between two pages is scored: every signal adds or subtracts its weight
(:data:`WEIGHTS`), and a junction whose score reaches :data:`BOUNDARY_SCORE` starts a new part.
Page numbering weighs most, being the document's own statement of where it starts; then a
different invoice number, and a first page's header (the number at the top, the supplier named by
VAT id or name); a different VAT id, the part's closing totals and the supplier's name only tip a
junction that other signals leave open. A junction decided by a small margin, or where the
invoice changes on a page numbered as a continuation, is *uncertain*: the part that holds it
deserves a second reader (a model) or review. A part that misses pages or holds another
invoice's mostly fails its arithmetic and goes to review like any other job.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import NamedTuple

from extraction.intake.text import DocumentText
from extraction.providers.builtin.identifiers import find_invoice_number, find_vat_id
from extraction.providers.builtin.layout import prepare
from extraction.providers.builtin.parties import find_supplier_name, line_parties
from extraction.providers.builtin.totals import find_totals
from extraction.validation.suppliers import comparable_name


class Signal(StrEnum):
    """What a page, read beside the one before it, says about a boundary between them."""

    # For a boundary
    PAGE_NUMBER_RESET = "page_number_reset"  # the page is numbered 1 ("Page 1 of 2", "Seite 1", "1/3")
    PAGE_COUNT_COMPLETE = "page_count_complete"  # the page before was the last its count announced ("2 von 2")
    INVOICE_NUMBER_CHANGED = "invoice_number_changed"  # another invoice number than the part's
    SUPPLIER_VAT_ID_CHANGED = "supplier_vat_id_changed"  # another supplier VAT id than the part's
    SUPPLIER_NAME_CHANGED = "supplier_name_changed"  # another supplier name than the part's
    INVOICE_HEADER = "invoice_header"  # an invoice number near the top, the supplier named: a first page
    INVOICE_NUMBER_AT_TOP = "invoice_number_at_top"  # an invoice number near the top, no supplier
    TOTALS_CLOSED = "totals_closed"  # the part has printed its gross total or amount due already
    # Against one
    PAGE_NUMBER_CONTINUES = "page_number_continues"  # numbered one after the page before ("2 von 3" after "1 von 3")
    PAGE_COUNT_OPEN = "page_count_open"  # the page before announced more pages ("1 von 3"), this one has no number
    NOT_FIRST_PAGE = "not_first_page"  # numbered past 1 ("Page 2 / 2") with no numbered page before to follow
    SAME_INVOICE_NUMBER = "same_invoice_number"  # the part's invoice number again


WEIGHTS: dict[Signal, int] = {
    Signal.PAGE_NUMBER_RESET: 10,
    Signal.PAGE_COUNT_COMPLETE: 6,
    Signal.INVOICE_NUMBER_CHANGED: 8,
    Signal.SUPPLIER_VAT_ID_CHANGED: 5,
    Signal.SUPPLIER_NAME_CHANGED: 2,
    # A first page states who issues the invoice and which it is; a continuation page repeats the
    # number at most, and a header with the same number after the part's totals is an invoice
    # issued (or scanned) again, which must not join the first.
    Signal.INVOICE_HEADER: 8,
    Signal.INVOICE_NUMBER_AT_TOP: 4,
    Signal.TOTALS_CLOSED: 2,
    Signal.PAGE_NUMBER_CONTINUES: -10,
    Signal.PAGE_COUNT_OPEN: -6,
    Signal.NOT_FIRST_PAGE: -6,
    # Weighs less than a change: an invoice issued or scanned twice prints its number twice (and
    # the sample sets reuse numbers), so it yields to a page count that restarts or to a header
    # after the part's totals.
    Signal.SAME_INVOICE_NUMBER: -4,
}
# A junction scoring this much starts a new part: a page number alone does it, a different
# invoice number or a header alone does, a different VAT id needs the part's totals beside it.
BOUNDARY_SCORE = 6
# Decided by a small margin (a boundary under 8, a continuation over 1) a junction is uncertain;
# so is one where the invoice or supplier changes on a page numbered as a continuation.
CLEAR_BOUNDARY_SCORE = 8
CLEAR_CONTINUATION_SCORE = 1
_IDENTITY_CHANGES = frozenset({Signal.INVOICE_NUMBER_CHANGED, Signal.SUPPLIER_VAT_ID_CHANGED})
_NUMBERED_CONTINUATION = frozenset({Signal.PAGE_NUMBER_CONTINUES, Signal.PAGE_COUNT_OPEN, Signal.NOT_FIRST_PAGE})
# How far down a page an invoice number still counts as its header; letterheads and address
# blocks push it to about line 12 on the sample invoices.
HEADER_LINES = 20


class PageNumber(NamedTuple):
    """A page's printed number: "Seite 2 von 3" is (2, 3), "Seite 2" is (2, None)."""

    page: int
    total: int | None


@dataclass(frozen=True, slots=True)
class _PageReading:
    """What one page says about the invoice it belongs to; None where it says nothing."""

    number: PageNumber | None
    invoice_number: str | None
    invoice_number_line: int | None  # the page's line (0-based) the invoice number is printed on
    vat_id: str | None
    supplier_name: str | None
    closes_totals: bool


@dataclass(frozen=True, slots=True)
class Junction:
    """The evidence between page ``page`` - 1 and page ``page`` (1-based), and what it decided."""

    page: int
    signals: frozenset[Signal]
    score: int
    boundary: bool
    uncertain: bool
    # The second reader (a model, extraction.execution.splitting) decided this uncertain
    # junction; ``boundary`` is its answer, not the score's.
    second_reader: bool = False


@dataclass(frozen=True, slots=True)
class Part:
    """One invoice's pages, ``first`` to ``last`` (1-based, inclusive), with the signals that
    started it (none for the first part) and whether any of its junctions was uncertain."""

    first: int
    last: int
    signals: frozenset[Signal]
    uncertain: bool

    @property
    def page_count(self) -> int:
        return self.last - self.first + 1


@dataclass(frozen=True, slots=True)
class BundleSplit:
    """The parts of a document, in page order, and the junction evidence behind them (one per
    page after the first). No pages, no parts."""

    parts: tuple[Part, ...]
    junctions: tuple[Junction, ...]

    @property
    def uncertain(self) -> bool:
        return any(part.uncertain for part in self.parts)

    @property
    def boundaries(self) -> tuple[int, ...]:
        """The pages that start a part, after the first."""
        return tuple(part.first for part in self.parts[1:])


def split_document(document: DocumentText, *, second_reading: frozenset[int] | None = None) -> BundleSplit:
    """The invoices in a document's pages, as the service extracted them.

    A Factur-X/ZUGFeRD PDF's embedded XML is printed as a page after the visible ones
    (``DocumentText.einvoice_page``); it is no page of the PDF and is left out, so part pages are
    the PDF's page numbers. An XML upload is one e-invoice: one part.
    """
    return split_bundle(document.for_providers().pages, second_reading=second_reading)


def split_bundle(pages: Sequence[str], *, second_reading: frozenset[int] | None = None) -> BundleSplit:
    """The invoices in ``pages`` (each page's text, in order), as page ranges.

    1. Read each page on its own: its printed page number, and the invoice number, supplier VAT
       id and name and totals the built-in extractor's readers find on it.
    2. For each page after the first, score the signals it and the page before give, against
       the current part: the last invoice number, VAT id and name its pages showed, and whether
       it printed its totals.
    3. Start a new part where the score reaches :data:`BOUNDARY_SCORE`; its identity is then the
       new page's. ``second_reading``: the pages a second reader (a model) says begin an
       invoice; it decides the uncertain junctions, and the parts after them are scored as it
       decided.

    One pass, each page read once: time and memory grow with the text, not with its square.
    """
    if not pages:
        return BundleSplit(parts=(), junctions=())
    readings = [_read_page(text) for text in pages]
    junctions: list[Junction] = []
    starts: list[tuple[int, frozenset[Signal]]] = [(1, frozenset())]
    part = _Part.starting_with(readings[0])
    for page in range(2, len(readings) + 1):
        junction = _junction(page, readings[page - 2], readings[page - 1], part)
        if second_reading is not None and junction.uncertain:
            junction = replace(junction, boundary=page in second_reading, second_reader=True)
        junctions.append(junction)
        if junction.boundary:
            starts.append((page, junction.signals))
            part = _Part.starting_with(readings[page - 1])
        else:
            part = part.followed_by(readings[page - 1])
    parts = []
    for index, (first, signals) in enumerate(starts):
        last = starts[index + 1][0] - 1 if index + 1 < len(starts) else len(readings)
        # junctions[k] sits before page k + 2: this part's own start and the ones inside it.
        inside = junctions[max(first - 2, 0) : last - 1]
        uncertain = any(junction.uncertain for junction in inside)
        parts.append(Part(first=first, last=last, signals=signals, uncertain=uncertain))
    return BundleSplit(parts=tuple(parts), junctions=tuple(junctions))


@dataclass(frozen=True, slots=True)
class MixedInvoiceSigns:
    """What a bundle's part prints that says it holds more than one invoice (page numbers are
    the document's): the invoice number each page prints, when two differ; pages after the
    first numbered 1 ("Page 1 of 2"); pages after one whose count was complete ("2 of 2"); and
    pages printing an invoice's header (its number near the top, the supplier named) after the
    part printed its closing totals."""

    invoice_numbers: dict[int, str]
    numbering_restarts: tuple[int, ...]
    after_complete_count: tuple[int, ...]
    headers_after_totals: tuple[int, ...]

    def as_dict(self) -> dict[str, object]:
        return {
            "invoice_numbers": self.invoice_numbers,
            "numbering_restarts": list(self.numbering_restarts),
            "after_complete_count": list(self.after_complete_count),
            "headers_after_totals": list(self.headers_after_totals),
        }


def mixed_invoice_signs(pages: Sequence[str], *, first: int) -> MixedInvoiceSigns | None:
    """A part's pages (``pages[0]`` is document page ``first``) read each on its own, as the
    detector reads them, but not weighed: each sign of :class:`MixedInvoiceSigns` is another
    invoice inside the part whatever else the pages say. None when none shows. This catches what
    the detector's weighing let through (page numbers running on across an export's invoices
    outweigh a new number) and what a second reader or a wrong split put together; it cannot see
    a part that lost pages."""
    readings = [_read_page(text) for text in pages]
    numbers = {first + index: r.invoice_number for index, r in enumerate(readings) if r.invoice_number}
    if len(set(numbers.values())) < 2:
        numbers = {}
    restarts, after_count, headers = [], [], []
    totals_printed = False
    for index, reading in enumerate(readings):
        page = first + index
        if index > 0:
            before = readings[index - 1].number
            if reading.number is not None and reading.number.page == 1:
                restarts.append(page)
            if before is not None and before.total is not None and before.page == before.total:
                after_count.append(page)
            header = reading.invoice_number_line is not None and reading.invoice_number_line < HEADER_LINES
            if totals_printed and header and (reading.vat_id or reading.supplier_name):
                headers.append(page)
        totals_printed = totals_printed or reading.closes_totals
    if not (numbers or restarts or after_count or headers):
        return None
    return MixedInvoiceSigns(numbers, tuple(restarts), tuple(after_count), tuple(headers))


# --- one page ----------------------------------------------------------------------------------

# "Page 2 of 3", "Seite 2 von 3", "Page: 1 / 1", "page 1 sur 2", "Pagina 1 van 2", "Sayfa 1/2",
# "Seite 2": a page word, its number and perhaps the total.
PAGE_LABEL = re.compile(
    r"(?<![^\W\d_])(?:page|seite|blatt|pagina|página|sayfa|pag\.)\s*:?\s*(\d{1,4})"
    r"(?:\s*(?:of|von|aus|sur|de|van|di|/)\s*(\d{1,4}))?(?!\d)(?![^\W\d_])",
    re.IGNORECASE,
)
# "2/3" or "2 / 3" alone on its line: a footer. Elsewhere it is as often a fraction, a date or a
# section ("Abschnitt: 1/4").
BARE_PAGE_NUMBER = re.compile(r"^\s*(\d{1,4})\s*/\s*(\d{1,4})\s*$", re.MULTILINE)
# Every way a page number is read, group 1 the page and group 2 the total (eval/bundles.py blanks
# what they match to measure the detector on pages that print no numbers).
PAGE_NUMBER_PATTERNS = (PAGE_LABEL, BARE_PAGE_NUMBER)


def find_page_number(text: str) -> PageNumber | None:
    """The page number a page prints, if any: one with its total over one without, the last of
    them (footers come last); a number past its total is a misreading and does not count."""
    found: list[tuple[int, PageNumber]] = []
    for pattern in PAGE_NUMBER_PATTERNS:
        for match in pattern.finditer(text):
            page = int(match[1])
            total = int(match[2]) if match[2] else None
            if page >= 1 and (total is None or page <= total):
                found.append((match.start(), PageNumber(page, total)))
    if not found:
        return None
    counted = [item for item in found if item[1].total is not None]
    return max(counted or found, key=lambda item: item[0])[1]


def _read_page(text: str) -> _PageReading:
    """One page's signals, read by the built-in extractor's readers on that page alone."""
    ctx = prepare(DocumentText(pages=(text,)))
    parties = line_parties(ctx.lines)
    number = find_invoice_number(ctx)
    vat_id = find_vat_id(ctx, parties)
    name = find_supplier_name(ctx, parties)
    totals = find_totals(ctx)
    return _PageReading(
        number=find_page_number(text),
        invoice_number=_comparable_number(number.value) if number else None,
        invoice_number_line=number.line if number else None,
        vat_id=vat_id.value if vat_id else None,
        supplier_name=(comparable_name(name.value) or None) if name else None,
        closes_totals=totals["gross"] is not None or totals["amount_due"] is not None,
    )


def _comparable_number(value: str) -> str:
    return re.sub(r"[\s#]+", "", value).upper()


# --- one junction ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Part:
    """The invoice the current part is: the last invoice number, VAT id and name its pages showed,
    and whether it has printed its closing totals."""

    invoice_number: str | None
    vat_id: str | None
    supplier_name: str | None
    totals_closed: bool

    @classmethod
    def starting_with(cls, page: _PageReading) -> _Part:
        return cls(page.invoice_number, page.vat_id, page.supplier_name, page.closes_totals)

    def followed_by(self, page: _PageReading) -> _Part:
        return _Part(
            page.invoice_number or self.invoice_number,
            page.vat_id or self.vat_id,
            page.supplier_name or self.supplier_name,
            page.closes_totals or self.totals_closed,
        )


def _junction(page: int, before: _PageReading, this: _PageReading, part: _Part) -> Junction:
    signals = _page_number_signals(before.number, this.number)
    if this.invoice_number and part.invoice_number:
        same = this.invoice_number == part.invoice_number
        signals.add(Signal.SAME_INVOICE_NUMBER if same else Signal.INVOICE_NUMBER_CHANGED)
    if this.vat_id and part.vat_id and this.vat_id != part.vat_id:
        signals.add(Signal.SUPPLIER_VAT_ID_CHANGED)
    if this.supplier_name and part.supplier_name and this.supplier_name != part.supplier_name:
        signals.add(Signal.SUPPLIER_NAME_CHANGED)
    if this.invoice_number_line is not None and this.invoice_number_line < HEADER_LINES:
        signals.add(Signal.INVOICE_HEADER if this.vat_id or this.supplier_name else Signal.INVOICE_NUMBER_AT_TOP)
    if part.totals_closed:
        signals.add(Signal.TOTALS_CLOSED)
    score = sum(WEIGHTS[signal] for signal in signals)
    close = CLEAR_CONTINUATION_SCORE < score < CLEAR_BOUNDARY_SCORE
    conflict = bool(signals & _IDENTITY_CHANGES and signals & _NUMBERED_CONTINUATION)
    return Junction(
        page=page,
        signals=frozenset(signals),
        score=score,
        boundary=score >= BOUNDARY_SCORE,
        uncertain=close or conflict,
    )


def _page_number_signals(before: PageNumber | None, this: PageNumber | None) -> set[Signal]:
    signals: set[Signal] = set()
    if before is not None and before.total is not None:
        if before.page == before.total:
            signals.add(Signal.PAGE_COUNT_COMPLETE)
        elif this is None:
            signals.add(Signal.PAGE_COUNT_OPEN)
    if this is None:
        return signals
    if this.page == 1:
        signals.add(Signal.PAGE_NUMBER_RESET)
    elif (
        before is not None
        and this.page == before.page + 1
        and (this.total is None or before.total is None or this.total == before.total)
    ):
        signals.add(Signal.PAGE_NUMBER_CONTINUES)
    else:
        signals.add(Signal.NOT_FIRST_PAGE)
    return signals
