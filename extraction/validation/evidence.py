"""Evidence: what a quote shows, and evidence re-found in the document.

What a quote supports (:func:`quote_supports`) reads numbers and dates in every printed
convention (:func:`printed_numbers`, :func:`printed_dates`), currency signs and codes, tax
identifiers and text; the evidence checks of the validation policy ask it.

A model's quote is trusted, its character offsets are not.

Small models quote the right text but count characters badly. Before validation, every piece of
evidence whose span does not hold its quote is moved to where that quote is printed: on its own
page nearest the claimed offset, else on any page; failing an exact match, where the same words
are printed with different whitespace (a line break the model wrote as a space), and then the
quote becomes the document's own text. A quote printed nowhere keeps its evidence as given, and
the evidence checks report it (VAL-2): relocation never invents a span.
"""

from __future__ import annotations

import datetime
import json
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from extraction.intake.geometry import boxes_for
from extraction.intake.text import DocumentText
from extraction.validation.locale import CURRENCY_SIGNS, MONTHS, full_year, number_readings
from extraction.validation.schema import InvoiceV1
from extraction.validation.suppliers import normalize_vat_id


@dataclass(frozen=True)
class Relocation:
    field: str
    claimed: tuple[int, int, int]  # page, start, end as the model gave them
    found: tuple[int, int, int]
    whitespace_differs: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "claimed": list(self.claimed),
            "found": list(self.found),
            "whitespace_differs": self.whitespace_differs,
        }


def with_boxes(output: dict[str, Any], document: DocumentText) -> dict[str, Any]:
    """``output`` (an answer as JSON) with every evidence's ``boxes``: where on its page its quote
    is printed, one box per printed line, or None where the page has no geometry (a plain-text
    upload, the printed e-invoice XML). Taken from the evidence as it finally is, so boxes follow
    relocation."""
    boxed: dict[str, Any] = json.loads(json.dumps(output))
    for evidence in _evidences(boxed):
        evidence["boxes"] = boxes_for(document.page_geometry(evidence["page"]), evidence["start"], evidence["end"])
    return boxed


def _evidences(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        evidence = node.get("evidence")
        if isinstance(evidence, dict):
            yield evidence
        for key, value in node.items():
            if key != "evidence":
                yield from _evidences(value)
    elif isinstance(node, list):
        for item in node:
            yield from _evidences(item)


def relocate_evidence(invoice: InvoiceV1, document: DocumentText) -> tuple[InvoiceV1, list[Relocation]]:
    """``invoice`` with every misplaced quote moved to where it is printed, and what moved."""
    relocations: list[Relocation] = []
    data = invoice.to_json_dict()
    for path, field in invoice.fields():
        evidence = field.evidence
        if evidence is None or not evidence.quote.strip():
            continue
        if document.span(evidence.page, evidence.start, evidence.end) == evidence.quote:
            continue
        found = find_quote(document, evidence.quote, page=evidence.page, near=evidence.start)
        if found is None:
            continue
        page, start, end = found
        quote = document.pages[page - 1][start:end]
        node_at(data, path)["evidence"] = {"page": page, "start": start, "end": end, "quote": quote}
        relocations.append(
            Relocation(path, (evidence.page, evidence.start, evidence.end), found, quote != evidence.quote)
        )
    if not relocations:
        return invoice, []
    return InvoiceV1.model_validate(data, by_alias=True), relocations


def find_quote(document: DocumentText, quote: str, *, page: int, near: int) -> tuple[int, int, int] | None:
    """(page, start, end) of ``quote`` in the document: exact before whitespace-insensitive, the
    claimed page before the others, the occurrence nearest ``near`` on the claimed page."""
    pages = [page] if 1 <= page <= len(document.pages) else []
    pages += [number for number in range(1, len(document.pages) + 1) if number != page]
    # Whole words and whole numbers only: "19" is not evidence found inside "2019", nor ".9000"
    # inside "9,9000".
    before = _BEFORE.get(_kind(quote[0]), "")
    after = _AFTER.get(_kind(quote[-1]), "")
    for body in (re.escape(quote), _whitespace_insensitive(quote)):
        pattern = before + body + after
        for number in pages:
            text = document.pages[number - 1]
            spans = [(m.start(), m.end()) for m in re.finditer(pattern, text)]
            if spans:
                start, end = min(spans, key=lambda span: abs(span[0] - near)) if number == page else spans[0]
                return number, start, end
    return None


# Lookarounds by the kind of character a quote starts or ends with.
_BEFORE = {"digit": r"(?<!\w)(?<!\d[.,])", "separator": r"(?<!\d)", "letter": r"(?<!\w)"}
# A number may run into its unit ("5Unit(s)", "20Stk"), never into more digits.
_AFTER = {"digit": r"(?![\d_])(?![.,]\d)", "separator": r"(?!\d)", "letter": r"(?!\w)"}


def _kind(character: str) -> str:
    if character.isdigit():
        return "digit"
    if character in ".,":
        return "separator"
    return "letter" if character.isalpha() else "other"


def _whitespace_insensitive(quote: str) -> str:
    return r"\s+".join(re.escape(word) for word in quote.split())


def node_at(data: dict[str, Any], path: str) -> dict[str, Any]:
    """The field node at a check's path (``"lines[2].net_amount"``) in an answer as JSON."""
    node: Any = data
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    return node


# --- what a quote supports ---------------------------------------------------------------------


# Numbers as printed: "1.234,50", "1,234.50", "1 234,50", "-7,67", "(7.67)", "7.67-", "19 %".
_NUMBER = re.compile(
    r"(?P<neg>[-−–](?:\s?[^\d\s]{0,3}\s?)?|\(\s?[^\d\s]{0,3}\s?)?"
    r"(?P<digits>\d(?:[\d.,'’\u00a0\u202f ]*\d)?)(?P<trail>-|\s?\))?"
)


def printed_numbers(quote: str) -> set[Decimal]:
    """Every reading of every number in ``quote``: a lone "1,234" is 1234 or 1.234."""
    found: set[Decimal] = set()
    for match in _NUMBER.finditer(quote):
        leading = bool(match["neg"] and match["neg"].strip()[:1] in "-−–(")
        negative = leading or bool(match["trail"])
        digits = match["digits"]
        for reading in number_readings(digits):
            found.add(-reading if negative else reading)
        pieces = digits.split()
        if len(pieces) > 1:
            # A space is a thousands separator ("1 234,50") or a gap between two numbers
            # ("20 9,90"): read it both ways. A leading sign belongs to the first number only.
            for position, piece in enumerate(pieces):
                for reading in number_readings(piece):
                    found.add(-reading if leading and position == 0 else reading)
    return found


def _supports_amount(value: str, quote: str, magnitude_only: bool) -> bool:
    try:
        amount = Decimal(value.strip())
    except InvalidOperation:
        return False
    printed = printed_numbers(quote)
    if amount in printed:
        return True
    return magnitude_only and amount >= 0 and -amount in printed


def printed_dates(quote: str) -> set[datetime.date]:
    """Every date ``quote`` can be read as: ISO, YYYYMMDD, day-first and month-first numeric
    dates with 2- or 4-digit years, and dates with a month name in the languages seen on
    invoices (``"20. März 2018"``, ``"March 20, 2023"``)."""
    dates: set[datetime.date] = set()
    # Turkish capital "İ" casefolds to "i" and a combining dot, which would split "EKİM" in two.
    text = unicodedata.normalize("NFKC", quote).casefold().replace("\u0307", "")

    def add(year: int, month: int, day: int) -> None:
        try:
            dates.add(datetime.date(full_year(year), month, day))
        except ValueError:
            pass

    for y, m, d in re.findall(r"(?<!\d)(\d{4})[-./](\d{1,2})[-./](\d{1,2})(?!\d)", text):
        add(int(y), int(m), int(d))
    for y, m, d in re.findall(r"(?<!\d)(\d{4})(\d{2})(\d{2})(?!\d)", text):
        add(int(y), int(m), int(d))
    for a, b, y in re.findall(r"(?<!\d)(\d{1,2})[-./](\d{1,2})[-./](\d{4}|\d{2})(?!\d)", text):
        add(int(y), int(b), int(a))
        add(int(y), int(a), int(b))
    words = re.findall(r"[^\W\d_]+", text)
    months = {MONTHS[word] for word in words if word in MONTHS}
    if months:
        numbers = [int(n) for n in re.findall(r"\d+", text)]
        years = [n for n in numbers if n >= 1900] or [full_year(n) for n in numbers if n < 100]
        for month in months:
            for year in years:
                for day in numbers:
                    if 1 <= day <= 31:
                        add(year, month, day)
    return dates


def _supports_date(value: str, quote: str, _magnitude_only: bool) -> bool:
    try:
        return datetime.date.fromisoformat(value.strip()) in printed_dates(quote)
    except ValueError:
        return False


# Single-character signs count wherever they stand, also glued to letters ("TTC€", "US$").
_SIGN_CHARACTERS = re.compile("[" + "".join(re.escape(sign) for sign in CURRENCY_SIGNS if len(sign) == 1) + "]")


def _supports_currency(value: str, quote: str, _magnitude_only: bool) -> bool:
    code = value.strip().upper()
    if re.search(rf"(?<![A-Z]){re.escape(code)}(?![A-Z])", quote.upper()):
        return True
    tokens = set(re.findall(r"[^\s\d.,:;()]+\.?", quote.casefold())) | set(_SIGN_CHARACTERS.findall(quote))
    tokens |= {token.rstrip(".") for token in tokens}
    return any(code in CURRENCY_SIGNS.get(token, ()) for token in tokens)


def _supports_identifier(value: str, quote: str, _magnitude_only: bool) -> bool:
    wanted = normalize_vat_id(value)
    return bool(wanted) and wanted in normalize_vat_id(unicodedata.normalize("NFKC", quote))


def _comparable_text(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _supports_text(value: str, quote: str, _magnitude_only: bool) -> bool:
    wanted = _comparable_text(value).strip(" .,:;#")
    return bool(wanted) and wanted in _comparable_text(quote)


_SUPPORTS: dict[str, Callable[[str, str, bool], bool]] = {
    "amount": _supports_amount,
    "date": _supports_date,
    "currency": _supports_currency,
    "identifier": _supports_identifier,
    "text": _supports_text,
}


def quote_supports(kind: str, value: str, quote: str, *, magnitude_only: bool = False) -> bool:
    """Whether ``quote``, as printed, shows ``value`` of a field of ``kind`` (amount, date,
    currency, identifier, text). ``magnitude_only``: an amount may be printed with the opposite
    sign (a credit note's amounts, a prepaid amount)."""
    return _SUPPORTS[kind](value, quote, magnitude_only)
