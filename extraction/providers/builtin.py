"""The built-in extractor: deterministic rules over the document text, no model account needed.

It reads what a person would look for on an invoice (labelled values such as "Rechnungsnr.",
"Total HT", "IBAN", typed patterns such as EU VAT ids and IBANs, and the column layout that
the text layer keeps) and returns an ``invoice.v1`` dict. Every value carries evidence whose
quote is exactly ``document.pages[page - 1][start:end]``; a value the rules cannot find is null
with null evidence, never guessed. Values are normalized (``"1.234,50"`` -> ``"1234.50"``,
``"05.03.2018"`` -> ``"2018-03-05"``, ``"€"`` -> ``"EUR"``) while the quote stays as printed.
"""
from __future__ import annotations

import contextlib
import datetime
import itertools
import json
import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from extraction.providers.base import ProviderRequest, ProviderResponse
from extraction.validation.schema import SCHEMA_ID
from extraction.intake.text import DocumentText

# --------------------------------------------------------------------------------------------
# Text model: lines with their page offsets, and values found in them.


@dataclass(frozen=True)
class TextLine:
    page: int        # 1-based
    number: int      # position in the whole document, for "before/after" and distance
    start: int       # offset of the line's first character in its page
    text: str


@dataclass(frozen=True)
class Found:
    """A normalized value and the span of page text it was read from."""

    value: str
    page: int
    start: int
    end: int
    rank: int = 0          # lower is a better source (label strength), compared within a field
    line: int = 0          # TextLine.number, later is nearer the end of the document


def _lines(document: DocumentText) -> list[TextLine]:
    lines: list[TextLine] = []
    for page_number, page in enumerate(document.pages, start=1):
        offset = 0
        for text in page.split("\n"):
            lines.append(TextLine(page=page_number, number=len(lines), start=offset, text=text))
            offset += len(text) + 1
    return lines


def _found(line: TextLine, start: int, end: int, value: str, rank: int = 0) -> Found:
    """A value read from line.text[start:end]."""
    return Found(value=value, page=line.page, start=line.start + start, end=line.start + end,
                 rank=rank, line=line.number)


def _field(document: DocumentText, found: Found | None) -> dict[str, Any]:
    if found is None:
        return {"value": None, "evidence": None}
    quote = document.pages[found.page - 1][found.start:found.end]
    return {"value": found.value,
            "evidence": {"page": found.page, "start": found.start, "end": found.end, "quote": quote}}


# --------------------------------------------------------------------------------------------
# Numbers

# An amount as printed: optional sign, digits with optional thousands groups ("1.234", "1,234",
# "1'234", "1 234" with a no-break space) and optional decimals. The look-arounds keep it from
# starting or ending inside a word, a date ("05.03.2018") or an id ("DE123456789").
_AMOUNT = re.compile(
    r"(?<![\w.,/\-−])(?P<sign>[-−–]\s?)?"
    r"(?P<number>\d{1,3}(?:[.,'\u00a0\u202f]\d{3})+(?:[.,]\d{1,4})?|\d+(?:[.,]\d{1,4})?)"
    r"(?![\w/]|[.,]\d)(?P<percent>\s?%)?"
)


@dataclass(frozen=True)
class Amount:
    value: Decimal
    start: int
    end: int
    percent: bool


def _parse_number(text: str, decimal_comma: bool) -> Decimal | None:
    """A printed number as a Decimal. ``decimal_comma`` settles "1.234" versus "1,234"."""
    digits = text.replace("\u00a0", "").replace("\u202f", "").replace("'", "")
    separators = [c for c in digits if c in ".,"]
    if separators:
        last = digits.rfind(separators[-1])
        decimals = len(digits) - last - 1
        if len(set(separators)) == 2:
            decimal_separator = separators[-1]
        elif len(separators) > 1:
            decimal_separator = None            # "1.234.567": thousands only
        elif decimals != 3:
            decimal_separator = separators[-1]  # "9,90", "9,9000"
        else:
            decimal_separator = "," if decimal_comma else "."
        thousands = {".", ","} - {decimal_separator}
        for separator in thousands:
            digits = digits.replace(separator, "")
        if decimal_separator:
            digits = digits.replace(decimal_separator, ".")
    try:
        return Decimal(digits)
    except InvalidOperation:
        return None


def _amounts(text: str, decimal_comma: bool, start: int = 0, end: int | None = None) -> list[Amount]:
    found = []
    for match in _AMOUNT.finditer(text, start, len(text) if end is None else end):
        value = _parse_number(match["number"], decimal_comma)
        if value is None:
            continue
        if match["sign"]:
            value = -value
        found.append(Amount(value=value, start=match.start(), end=match.end(), percent=bool(match["percent"])))
    return found


def _decimal_text(value: Decimal) -> str:
    if value == 0:
        value = abs(value)           # "-0,00" is printed for an empty deduction
    return format(value, "f")


def _uses_decimal_comma(text: str) -> bool:
    """Whether the document writes 12,50 rather than 12.50 (dates masked so 05.03.2018 does not count)."""
    text = _NUMERIC_DATE.sub(" ", text)
    commas = len(re.findall(r"\d,\d{2}(?!\d)", text))
    points = len(re.findall(r"\d\.\d{2}(?!\d)", text))
    return commas > points


# --------------------------------------------------------------------------------------------
# Dates

_MONTHS = {
    # English
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
    # German
    "januar": 1, "jänner": 1, "februar": 2, "märz": 3, "maerz": 3, "mai": 5, "juni": 6, "juli": 7,
    "oktober": 10, "dezember": 12, "okt": 10, "dez": 12, "mär": 3,
    # French
    "janvier": 1, "février": 2, "fevrier": 2, "mars": 3, "avril": 4, "juin": 6, "juillet": 7,
    "août": 8, "aout": 8, "septembre": 9, "octobre": 10, "novembre": 11, "décembre": 12, "decembre": 12,
    # Dutch
    "januari": 1, "februari": 2, "maart": 3, "mei": 5, "augustus": 8,
    # Spanish and Italian
    "enero": 1, "febrero": 2, "marzo": 3, "abril": 4, "mayo": 5, "junio": 6, "julio": 7, "agosto": 8,
    "septiembre": 9, "octubre": 10, "noviembre": 11, "diciembre": 12, "gennaio": 1, "febbraio": 2,
    "aprile": 4, "maggio": 5, "giugno": 6, "luglio": 7, "settembre": 9, "ottobre": 10, "dicembre": 12,
}
_MONTH_NAMES = "|".join(sorted(map(re.escape, _MONTHS), key=len, reverse=True))
_NUMERIC_DATE = re.compile(r"(?<![\d.,/-])(\d{1,2})([./-])(\d{1,2})\2(\d{4}|\d{2})(?![\d/]|[.,-]\d)")
_ISO_DATE = re.compile(r"(?<![\d.])(\d{4})-(\d{2})-(\d{2})(?!\d)")
_DAY_MONTH_NAME = re.compile(
    rf"(?<!\d)(\d{{1,2}})(?:\.|er|st|nd|rd|th)?\s*(?:de\s+)?({_MONTH_NAMES})\.?,?\s+(?:de\s+)?(\d{{4}})(?!\d)",
    re.IGNORECASE)
_MONTH_NAME_DAY = re.compile(
    rf"(?<![^\W\d_])({_MONTH_NAMES})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\s*,?\s*(\d{{4}})(?!\d)", re.IGNORECASE)


@dataclass(frozen=True)
class DateMatch:
    value: datetime.date
    start: int
    end: int


def _dates(text: str, month_first: bool) -> list[DateMatch]:
    found: list[DateMatch] = []

    def add(match: re.Match[str], year: int, month: int, day: int) -> None:
        if year < 100:
            year += 2000 if year < 70 else 1900
        with contextlib.suppress(ValueError):   # 31.02.: not a date, whatever it looks like
            found.append(DateMatch(datetime.date(year, month, day), match.start(), match.end()))

    for match in _ISO_DATE.finditer(text):
        add(match, int(match[1]), int(match[2]), int(match[3]))
    for match in _NUMERIC_DATE.finditer(text):
        first, second = int(match[1]), int(match[3])
        if match[2] == "/" and month_first:
            first, second = second, first
        add(match, int(match[4]), second, first)
    for match in _DAY_MONTH_NAME.finditer(text):
        add(match, int(match[3]), _MONTHS[match[2].lower()], int(match[1]))
    for match in _MONTH_NAME_DAY.finditer(text):
        add(match, int(match[3]), _MONTHS[match[1].lower()], int(match[2]))
    found.sort(key=lambda date: (date.start, -date.end))
    # Keep the longest match at each place ("7. Mai 2014" rather than nothing overlapping it).
    kept: list[DateMatch] = []
    for date in found:
        if not kept or date.start >= kept[-1].end:
            kept.append(date)
    return kept


def _month_first(text: str) -> bool:
    """US-style 03/20/2023? Decided by any slash date that only reads one way, else by "$"."""
    for match in _NUMERIC_DATE.finditer(text):
        if match[2] != "/":
            continue
        if int(match[1]) > 12:
            return False
        if int(match[3]) > 12:
            return True
    return "$" in text and "€" not in text


# --------------------------------------------------------------------------------------------
# The whole document, prepared once


@dataclass
class _Context:
    document: DocumentText
    lines: list[TextLine]
    decimal_comma: bool
    month_first: bool

    def amounts(self, line: TextLine, start: int = 0, end: int | None = None) -> list[Amount]:
        return _amounts(line.text, self.decimal_comma, start, end)

    def dates(self, line: TextLine) -> list[DateMatch]:
        return _dates(line.text, self.month_first)

    def below(self, line: TextLine, count: int = 3) -> Iterator[TextLine]:
        """The next non-empty lines on the same page."""
        seen = 0
        for other in self.lines[line.number + 1:]:
            if other.page != line.page or seen >= count:
                return
            if other.text.strip():
                seen += 1
                yield other


def _context(document: DocumentText) -> _Context:
    text = document.full_text
    return _Context(document=document, lines=_lines(document),
                    decimal_comma=_uses_decimal_comma(text), month_first=_month_first(text))


def _label_pattern(*alternatives: str) -> re.Pattern[str]:
    # A label ends at a word boundary only if it ends in a letter: "n°562044387" is fine.
    return re.compile(r"(?<![^\W_])(?:" + "|".join(alternatives) + r")(?:(?<=[^\W_])(?![^\W_])|(?<![^\W_]))",
                      re.IGNORECASE)


def _column_value(ctx: _Context, line: TextLine, start: int, end: int,
                  pattern: re.Pattern[str]) -> tuple[TextLine, re.Match[str]] | None:
    """A value printed under a column heading: the first match of ``pattern`` in the next lines
    that overlaps the heading's horizontal extent (layout text keeps columns aligned)."""
    for other in ctx.below(line, count=3):
        for match in pattern.finditer(other.text):
            if match.start() < end + 2 and match.end() > start - 2:
                return other, match
    return None


# --------------------------------------------------------------------------------------------
# Parties: which block of the page a line belongs to, so the buyer's VAT id or IBAN is not
# taken for the supplier's.

# A heading stands alone on its line ("Verkäufer:"), so "Lieferant GmbH" is not one.
_SELLER_HEADING = re.compile(
    r"^\s*(?:verkäufer|lieferant|rechnungssteller|leistungserbringer|seller|supplier|vendor|"
    r"fournisseur|vendeur|leverancier|auftragnehmer)\s*:?\s*$", re.IGNORECASE)
_OTHER_PARTY_HEADING = re.compile(
    r"^\s*(?:käufer|leistungsempfänger|rechnungsempfänger|kunde|buyer|bill(?:ed)?\s+to|invoice\s+to|"
    r"customer|client|acheteur|destinataire|factuuradres|afleveradres|ship\s+to|deliver\s+to|"
    r"lieferanschrift|liefer(?:ung)?\s*an|adresse\s+de\s+(?:livraison|facturation)|"
    r"(?:abweichender\s+)?warenempfänger|abweichender\s+zahlungsempfänger|steuerbevollmächtigter|"
    r"repr[ée]sentant\s+fiscal|tax\s+representative|delivery\s+address)"
    # A heading ends its line or its column ("Bill To:    Ship To:"); "Invoice to pay by ..." is prose.
    r"(?:\s+(?:address|adresse|anschrift))?(?=\s*(?::|$|\s{2,}))", re.IGNORECASE)
_NEUTRAL_HEADING = re.compile(
    r"^\s*(?:bemerkungen|positionsdaten|zahlungsbedingungen|zahlungsart|belegsummen|"
    r"umsatzsteueraufschlüsselung|steueraufschlüsselung|qualifizierung|pos\b)", re.IGNORECASE)
_BUYER_CUE = re.compile(
    r"(?:käufer|kunde|kunden|client|customer|buyer|acheteur|\buw\b|\byour\b|\bihre?\b|\bvotre\b|"
    r"leistungsempfänger|destinataire|empfänger|repr[ée]sentant|bevollmächtigt|tax\s*rep)", re.IGNORECASE)


# An address block is a handful of lines; past that, a heading no longer says whose text it is.
_PARTY_BLOCK_LINES = 10


def _parties(lines: list[TextLine]) -> list[str]:
    """For each line: "seller", "other" or "" (unknown), from the block heading above it."""
    party, remaining = "", 0
    result = []
    for line in lines:
        if line.number and line.page != lines[line.number - 1].page:
            party = ""
        if _OTHER_PARTY_HEADING.search(line.text):
            party, remaining = "other", _PARTY_BLOCK_LINES
        elif _SELLER_HEADING.search(line.text):
            party, remaining = "seller", _PARTY_BLOCK_LINES
        elif _NEUTRAL_HEADING.search(line.text):
            party = ""
        elif line.text.strip():
            remaining -= 1
            if remaining < 0:
                party = ""
        result.append(party)
    return result


def _buyer_cue_before(line: TextLine, position: int) -> bool:
    """Does the label just left of ``position`` (same line, same column) name the buyer?"""
    segment = re.split(r"\s{3,}", line.text[:position].rstrip(" :"))[-1]
    return bool(_BUYER_CUE.search(segment[-40:]))


# --------------------------------------------------------------------------------------------
# Identifiers: VAT id, IBAN, invoice number

# Country prefix + body, as printed (spaces or dots between groups allowed); checked strictly
# after removing the separators.
_VAT_FORMATS = {
    "AT": r"U\d{8}", "BE": r"[01]\d{9}", "BG": r"\d{9,10}", "CY": r"\d{8}[A-Z]", "CZ": r"\d{8,10}",
    "DE": r"\d{9}", "DK": r"\d{8}", "EE": r"\d{9}", "EL": r"\d{9}", "GR": r"\d{9}", "ES": r"[A-Z0-9]\d{7}[A-Z0-9]",
    "FI": r"\d{8}", "FR": r"[A-HJ-NP-Z0-9]{2}\d{9}", "HR": r"\d{11}", "HU": r"\d{8}",
    "IE": r"\d[A-Z0-9+*]\d{5}[A-Z]{1,2}",
    "IT": r"\d{11}", "LT": r"\d{9}|\d{12}", "LU": r"\d{8}", "LV": r"\d{11}", "MT": r"\d{8}",
    "NL": r"\d{9}B\d{2}", "PL": r"\d{10}", "PT": r"\d{9}", "RO": r"\d{2,10}", "SE": r"\d{12}",
    "SI": r"\d{8}", "SK": r"\d{10}", "GB": r"\d{9}|\d{12}|GD\d{3}|HA\d{3}", "XI": r"\d{9}|\d{12}",
    "CH": r"E\d{9}(?:MWST|TVA|IVA)?", "NO": r"\d{9}(?:MVA)?",
}
_VAT_CANDIDATE = re.compile(
    r"(?<![A-Za-z0-9])(" + "|".join(_VAT_FORMATS) + r")[ .\-]?([0-9A-Z](?:[0-9A-Z]|[ .\-](?=[0-9A-Z])){6,16})")
_VAT_LABEL = re.compile(
    r"(?:ust|mwst|vat|tva|btw|uid|iva|moms|alv|dph|dic|nip|tax|steuer|umsatzsteuer|intra|vies)", re.IGNORECASE)

_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29,
    "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24,
    "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21,
    "HU": 28, "IE": 22, "IL": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LI": 21,
    "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30,
    "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SE": 24, "SI": 19, "SK": 24, "SM": 27, "TN": 24, "TR": 26, "UA": 29, "VG": 24, "XK": 20,
}
_IBAN_START = re.compile(r"(?<![A-Za-z0-9])([A-Z]{2})(\d{2})(?=[ \u00a0]?[A-Z0-9])")
_IBAN_GROUP = re.compile(r"[ \u00a0]?([A-Z0-9]+)")
_IBAN_LABEL = re.compile(r"iban", re.IGNORECASE)

_INVOICE_NUMBER_LABELS: tuple[tuple[re.Pattern[str], int], ...] = (
    (_label_pattern(
        r"invoice\s*(?:number|no\.?|nr\.?|num\.?|#|n°|id)", r"inv\.?\s*(?:no\.?|#)", r"bill\s*(?:number|no\.?)",
        r"rechnungs?\s*-?\s*(?:nummer|nr\.?|no\.?)", r"beleg\s*-?\s*(?:nummer|nr\.?)",
        r"gutschrift(?:s)?\s*-?\s*(?:nummer|nr\.?)",
        # "Handelsrechnung (380) Nr.", "Rechnung des Versicherers (575) Nr.", "Gutschrift (...) (389) Nr."
        r"[^\W\d_]*(?:rechnung|korrektur|gutschrift)[^\W\d_]*(?:\s+des\s+[^\W\d_]+)?(?:\s*\([^)\n]{0,40}\))*\s+nr\.?",
        r"f\s?actuur\s*-?\s*(?:nummer|nr\.?|no\.?)", r"facture\s*(?:n\s?°|no\.?|num[ée]ro|#)",
        r"num[ée]ro\s+de\s+facture",
        r"avoir\s*(?:n\s?°|no\.?)", r"credit\s*note\s*(?:number|no\.?|#)", r"factura\s*(?:n[º°o]\.?|n[úu]mero)",
        r"fattura\s*(?:n\.?|numero)", r"document\s*(?:number|no\.?)",
    ), 0),
    (_label_pattern(r"invoice", r"rechnung", r"facture", r"factuur", r"avoir", r"gutschrift", r"credit\s*note",
                    r"factura", r"fattura", r"receipt\s*(?:no\.?|number|#)", r"booking\s*id"), 1),
)
_IDENTIFIER = re.compile(r"(?<![\w/])#?\s?([A-Za-z0-9](?:[A-Za-z0-9/_.\-]*[A-Za-z0-9])?)")
_LABEL_GAP = re.compile(r"[\s:#.]*")


def _is_identifier(text: str) -> bool:
    return (any(c.isdigit() for c in text) and len(text) <= 40 and not _NUMERIC_DATE.fullmatch(text)
            and not re.fullmatch(r"\d+[.,]\d{2}", text))   # an amount, not a number


# --------------------------------------------------------------------------------------------
# Field finders


def find_vat_id(ctx: _Context, parties: list[str]) -> Found | None:
    candidates: list[tuple[int, int, Found]] = []
    for line in ctx.lines:
        for match in _VAT_CANDIDATE.finditer(line.text):
            country = match[1]
            body_chars = [c for c in match[2] if c.isalnum()]
            # The grab is greedy; the id is the longest prefix (by characters) the country accepts.
            pattern = re.compile(_VAT_FORMATS[country])
            taken = None
            for length in range(len(body_chars), 0, -1):
                if pattern.fullmatch("".join(body_chars[:length])):
                    taken = length
                    break
            if taken is None:
                continue
            end = match.start(2)
            seen = 0
            while seen < taken:
                if line.text[end].isalnum():
                    seen += 1
                end += 1
            if parties[line.number] == "other" or _buyer_cue_before(line, match.start()):
                continue
            labelled = bool(_VAT_LABEL.search(line.text[max(0, match.start() - 30):match.start()]))
            score = (2 if parties[line.number] == "seller" else 0) + (1 if labelled else 0)
            if not labelled and parties[line.number] != "seller":
                continue  # a bare "DE123456789" may be any number; require a label or the seller block
            value = country + "".join(body_chars[:taken])
            candidates.append((-score, line.number, _found(line, match.start(), end, value)))
    return min(candidates, key=lambda c: (c[0], c[1]))[2] if candidates else None


def _iban_checksum_ok(iban: str) -> bool:
    rearranged = iban[4:] + iban[:4]
    digits = "".join(str(int(c, 36)) for c in rearranged)
    return int(digits) % 97 == 1


def find_iban(ctx: _Context, parties: list[str]) -> Found | None:
    candidates: list[tuple[int, int, Found]] = []
    for line in ctx.lines:
        for match in _IBAN_START.finditer(line.text):
            country = match[1]
            expected = _IBAN_LENGTHS.get(country)
            if expected is None:
                continue
            value, end = match[1] + match[2], match.end()
            first_group = True
            while len(value) < expected:
                group = _IBAN_GROUP.match(line.text, end)
                if group is None:
                    break
                chars = group[1]
                # Bank codes may be letters (NL "INGB", GB "NWBK") right after the check digits;
                # later groups without a digit are the next word ("BIC").
                if not first_group and not any(c.isdigit() for c in chars):
                    break
                if len(value) + len(chars) > expected:
                    break
                value += chars
                end = group.end()
                first_group = False
            labelled = bool(_IBAN_LABEL.search(line.text[max(0, match.start() - 40):match.start()]))
            valid = len(value) == expected and _iban_checksum_ok(value)
            # Printed dummy accounts (wrong length or checksum) count only right after "IBAN";
            # the validator, not the extractor, decides whether an account is acceptable.
            if not valid and not (labelled and 15 <= len(value) <= 34):
                continue
            if parties[line.number] == "other" or _buyer_cue_before(line, match.start()):
                continue
            score = (2 if labelled else 0) + (1 if valid else 0)
            candidates.append((-score, line.number, _found(line, match.start(), end, value)))
    return min(candidates, key=lambda c: (c[0], c[1]))[2] if candidates else None


def find_invoice_number(ctx: _Context) -> Found | None:
    candidates: list[Found] = []
    for line in ctx.lines:
        for pattern, rank in _INVOICE_NUMBER_LABELS:
            for label in pattern.finditer(line.text):
                gap = _LABEL_GAP.match(line.text, label.end())
                value = _IDENTIFIER.match(line.text, gap.end()) if gap else None
                if value and _is_identifier(value[1]) and (rank == 0 or gap.end() > label.end()):
                    candidates.append(_found(line, value.start(1), value.end(1), value[1], rank))
                    continue
                rest = line.text[label.end():label.end() + 3]
                if rest.strip(" :") == "" or rest.startswith("  "):
                    under = _column_value(ctx, line, label.start(), label.end(), _IDENTIFIER)
                    if under and _is_identifier(under[1][1]):
                        other, match = under
                        candidates.append(_found(other, match.start(1), match.end(1), match[1], rank + 1))
    if not candidates:
        return None
    return min(candidates, key=lambda found: (found.rank, found.line, found.start))


_ISSUE_DATE_LABELS = (
    (_label_pattern(
        r"invoice\s*date", r"date\s*of\s*(?:invoice|issue)", r"issue\s*date", r"date\s*issued", r"billing\s*date",
        r"rechnungsdatum", r"belegdatum", r"ausstellungsdatum", r"datum\s*der\s*rechnung",
        r"date\s*de\s*(?:la\s*)?facture", r"date\s*d'?[ée]mission", r"f\s?actuur\s*datum", r"factuurdatum",
        r"fecha\s*de\s*(?:la\s*)?factura", r"data\s*(?:della\s*)?fattura",
    ), 0),
    (_label_pattern(r"(?:[^\W\d_]*rechnung|facture|invoice|gutschrift|avoir)[^\n]{0,60}?\s(?:vom|du|dated|of)"), 1),
    (_label_pattern(r"datum", r"date", r"dated", r"vom"), 2),
)
_DUE_DATE_LABELS = (
    (_label_pattern(
        r"due\s*date", r"payment\s*due(?:\s*date)?", r"due\s*on", r"pay(?:able)?\s*by", r"f[äa]lligkeits?datum",
        r"f[äa]lligkeit", r"f[äa]llig\s*(?:am|bis|zum)?", r"zahlungsziel", r"zahlbar\s*bis(?:\s*zum)?",
        r"zu\s*zahlen\s*bis",
        r"date\s*d'?[ée]ch[ée]ance", r"[ée]ch[ée]ance", r"date\s*limite\s*de\s*paiement", r"[àa]\s*payer\s*avant\s*le",
        r"vervaldatum", r"te\s*betalen\s*voor", r"fecha\s*de\s*vencimiento", r"scadenza",
    ), 0),
    (_label_pattern(r"zahlbar[^\n]{0,40}?netto\s*bis", r"netto\s*bis"), 1),
)


def _find_date(ctx: _Context, labels: tuple[tuple[re.Pattern[str], int], ...],
               exclude: tuple[re.Pattern[str], ...] = ()) -> Found | None:
    candidates: list[Found] = []
    for line in ctx.lines:
        dates = ctx.dates(line)
        for pattern, rank in labels:
            for label in pattern.finditer(line.text):
                if any(e.search(line.text[max(0, label.start() - 25):label.end() + 5]) for e in exclude):
                    continue
                # The date right of the label, unless another word intervenes (the next label).
                after = [d for d in dates if d.start >= label.end() and d.start - label.end() <= 40
                         and not re.search(r"[^\W\d_]{4,}", line.text[label.end():d.start])]
                if after:
                    date = after[0]
                    candidates.append(_found(line, date.start, date.end, date.value.isoformat(), rank))
                    continue
                for other in ctx.below(line, count=2):
                    under = [d for d in ctx.dates(other) if d.start < label.end() + 4 and d.end > label.start() - 4]
                    if under:
                        candidates.append(_found(other, under[0].start, under[0].end, under[0].value.isoformat(), rank))
                        break
    if not candidates:
        return None
    return min(candidates, key=lambda found: (found.rank, found.line, found.start))


_DUE_CONTEXT = re.compile(
    r"f[äa]llig|due|zahlbar|[ée]ch[ée]ance|vervaldatum|limite|payer|period|zeitraum|leistung|liefer", re.IGNORECASE)


def find_issue_date(ctx: _Context) -> Found | None:
    found = _find_date(ctx, _ISSUE_DATE_LABELS, exclude=(_DUE_CONTEXT,))
    if found is not None:
        return found
    # No label: the first date on the first page that is not a due date or a period.
    for line in ctx.lines:
        if line.page != 1:
            break
        for date in ctx.dates(line):
            if not _DUE_CONTEXT.search(line.text[:date.start]):
                return _found(line, date.start, date.end, date.value.isoformat(), 3)
    return None


def find_due_date(ctx: _Context) -> Found | None:
    return _find_date(ctx, _DUE_DATE_LABELS)


# --------------------------------------------------------------------------------------------
# Currency

_CURRENCY_CODES = frozenset(
    "EUR USD GBP CHF JPY CNY INR PLN CZK DKK NOK SEK HUF RON BGN HRK ISK TRY AUD CAD NZD ZAR BRL MXN "
    "RUB UAH SGD HKD KRW AED SAR ILS THB MYR IDR PHP".split())
_CURRENCY_CODE = re.compile(r"(?<![A-Za-z])(" + "|".join(sorted(_CURRENCY_CODES)) + r")(?![A-Za-z])")
_CURRENCY_SYMBOLS = (
    (re.compile(r"€"), "EUR"), (re.compile(r"£"), "GBP"), (re.compile(r"¥"), "JPY"), (re.compile(r"₹"), "INR"),
    (re.compile(r"(?<![A-Za-z])Rs\.?(?=\s?\d)"), "INR"), (re.compile(r"zł"), "PLN"), (re.compile(r"Kč"), "CZK"),
    # "$" only in front of an amount with cents: OCR reads stray "S"/"5" shapes as "$".
    (re.compile(r"(?<![A-Za-z])(?:US)?\$(?=\s?\d[\d,]*\.\d{2}(?!\d))"), "USD"),
)
_CURRENCY_LABEL = _label_pattern(r"(?:rechnungs)?währung", r"currency", r"devise", r"valuta", r"moneda", r"monnaie")


def find_currency(ctx: _Context) -> Found | None:
    for line in ctx.lines:
        for label in _CURRENCY_LABEL.finditer(line.text):
            code = _CURRENCY_CODE.search(line.text, label.end(), label.end() + 30)
            if code:
                return _found(line, code.start(), code.end(), code[1], 0)
    counts: Counter[str] = Counter()
    first: dict[str, Found] = {}
    for line in ctx.lines:
        for match in _CURRENCY_CODE.finditer(line.text):
            counts[match[1]] += 2     # a code is explicit; a symbol ("$") can be ambiguous
            first.setdefault(match[1], _found(line, match.start(), match.end(), match[1], 1))
        for pattern, code in _CURRENCY_SYMBOLS:
            for match in pattern.finditer(line.text):
                counts[code] += 1
                first.setdefault(code, _found(line, match.start(), match.end(), code, 2))
    if not counts:
        return None
    best = max(counts.items(), key=lambda item: (item[1], -first[item[0]].line))[0]
    return first[best]


# --------------------------------------------------------------------------------------------
# Supplier name

_LEGAL_FORM = (
    r"GmbH\s*&\s*Co\.?\s*KG(?:aA)?|GmbH|gGmbH|AG|KGaA|KG|OHG|e\.\s?K\.|e\.\s?V\.|a\.\s?G\.|UG(?:\s*\(haftungsbeschränkt\))?|"
    r"SE|B\.\s?V\.|BV|N\.\s?V\.|NV|SARL|S\.A\.R\.L\.|SAS|SA|S\.A\.|SASU|EURL|SNC|Ltd\.?|Limited|LLC|L\.L\.C\.|Inc\.?|"
    r"Corp\.?|Corporation|PLC|LLP|LP|Pvt\.?\s*Ltd\.?|Private\s+Limited|S\.p\.A\.|SpA|S\.r\.l\.|Srl|S\.L\.|SL|"
    r"Sp\.\s?z\s?o\.\s?o\.|spółka\s+akcyjna|Oy|Oyj|AB|A/S|ApS|AS|ASA|s\.r\.o\.|a\.s\.|Kft\.?|Zrt\.?|d\.o\.o\."
)
_COMPANY = re.compile(
    r"(?<![\w&])((?:[A-ZÄÖÜÉ0-9][\w&.'’\-]*|&|und|and|de|du|la|le|van|der|von|für)"
    r"(?:[ ,]{1,2}(?:[A-ZÄÖÜÉa-zäöüé0-9&][\w&.'’\-]*)){0,5}?"
    r"[ ,]{1,2}(?:" + _LEGAL_FORM + r"))(?![\w])")
_NAME_LABEL = re.compile(
    r"(?:^|\s)(?:(?:seller|supplier|vendor|lieferant|verkäufer|from|fournisseur|vendeur|leverancier|"
    r"titulaire\s+du\s+compte|kontoinhaber|account\s+holder|beneficiary|begünstigter)\s*:|"
    r"sold\s+by\s*:?|issued\s+by\s*:?|ausgestellt\s+von\s*:?|t\.\s?n\.\s?v\.?)\s*(?=\S)", re.IGNORECASE)
_KEY_VALUE = re.compile(r"^\s*([^\W\d][\w .\-/()]{0,40}?)\s*:\s*(\S.*)$")
_NAME_STOP = re.compile(r"\s{3,}|,\s|\s[-–|•]\s|\s\(")


def _name_span(text: str, start: int) -> tuple[int, int]:
    """From ``start``, the extent of a name: up to a column gap, a ", " or " - " separator."""
    stop = _NAME_STOP.search(text, start)
    end = stop.start() if stop else len(text.rstrip())
    return start, end


def find_supplier_name(ctx: _Context, parties: list[str]) -> Found | None:
    candidates: list[tuple[int, int, Found]] = []
    # 1. The seller block of a structured layout: "Name: X", or its first line that is not "key: value".
    for line in ctx.lines:
        if parties[line.number] != "seller" or _SELLER_HEADING.search(line.text):
            continue
        key_value = _KEY_VALUE.match(line.text)
        if key_value and key_value[1].strip().lower() in ("name", "firma", "company", "nom", "raison sociale"):
            start, end = _name_span(line.text, key_value.start(2))
            candidates.append((0, line.number, _found(line, start, end, line.text[start:end])))
        elif not key_value and line.text.strip() and not candidates:
            start = len(line.text) - len(line.text.lstrip())
            start, end = _name_span(line.text, start)
            if re.search(r"[^\W\d_]{2,}", line.text[start:end]):
                candidates.append((1, line.number, _found(line, start, end, line.text[start:end])))
        if candidates:
            break
    # 2. A labelled name: "Sold By : X", "Titulaire du compte : X".
    for line in ctx.lines:
        for label in _NAME_LABEL.finditer(line.text):
            start, end = _name_span(line.text, label.end())
            name = line.text[start:end].rstrip(" .,;")
            if re.search(r"[^\W\d_]{2,}", name) and len(name) <= 80:
                end = start + len(name)
                candidates.append((2, line.number, _found(line, start, end, name)))
    # 3. A company name with a legal form, outside buyer blocks; repeated (letterhead, footer,
    # sender line) and early names are the supplier's more often than not.
    occurrences: dict[str, list[Found]] = {}
    for line in ctx.lines:
        if parties[line.number] == "other":
            continue
        for match in _COMPANY.finditer(line.text):
            name = match[1].strip(" ,")
            if _buyer_cue_before(line, match.start()) or len(name) < 4:
                continue
            start = match.start(1) + (len(match[1]) - len(match[1].lstrip(" ,")))
            occurrences.setdefault(name.lower(), []).append(_found(line, start, start + len(name), name))
    for found in occurrences.values():
        first = found[0]
        top = first.line < 15
        score = len(found) + (2 if top else 0)
        candidates.append((3 if score >= 3 else 4, -score * 1000 + first.line, first))
    if not candidates:
        return None
    return min(candidates, key=lambda c: (c[0], c[1]))[2]


# --------------------------------------------------------------------------------------------
# Document type

# A "Rechnungskorrektur" (UNTDID 384, corrected invoice) stays an invoice, with negative amounts.
_CREDIT_NOTE = _label_pattern(r"credit\s*note", r"credit\s*memo", r"gutschrift", r"avoir", r"creditnota",
                              r"nota\s*de\s*cr[ée]dito", r"nota\s*di\s*credito", r"stornorechnung")
_INVOICE_TITLE = _label_pattern(r"[^\W\d_]*rechnung[^\W\d_]*", r"invoices?", r"facture", r"factuur", r"factura",
                                r"fattura",
                                r"faktura", r"bill", r"tax\s*invoice")
_TYPE_CODE = re.compile(r"\((\d{3})\)")
_CREDIT_TYPE_CODES = {"381", "396", "81", "83", "532"}


def find_document_type(ctx: _Context) -> Found | None:
    # A printed UNTDID 1001 code ("Gutschrift (389)") says what the German word cannot: a
    # self-billed "Gutschrift" is an invoice, a supplier's "Gutschrift" is a credit note.
    for line in ctx.lines[:40]:
        for title in itertools.chain(_CREDIT_NOTE.finditer(line.text), _INVOICE_TITLE.finditer(line.text)):
            code = _TYPE_CODE.search(line.text, title.end(), title.end() + 60)
            if code:
                kind = "credit_note" if code[1] in _CREDIT_TYPE_CODES else "invoice"
                return _found(line, title.start(), code.end(), kind)
    for line in ctx.lines[:40]:
        match = _CREDIT_NOTE.search(line.text)
        if match and not _INVOICE_TITLE.search(line.text[:match.start()]):
            return _found(line, match.start(), match.end(), "credit_note")
        match = _INVOICE_TITLE.search(line.text)
        if match:
            return _found(line, match.start(), match.end(), "invoice")
    return None


# --------------------------------------------------------------------------------------------
# Totals

_TOTAL_LABELS: dict[str, tuple[tuple[re.Pattern[str], int], ...]] = {
    "gross": (
        (_label_pattern(
            r"bruttosumme", r"rechnungs(?:end)?betrag", r"gesamtbetrag(?!\s+der)(?:\s*brutto)?",
            r"gesamtsumme(?:\s*brutto)?",
            r"summe\s*brutto", r"brutto\s*gesamt", r"endbetrag", r"bruttobetrag", r"total\s*ttc",
            r"montant\s*(?:eur\s*)?ttc",
            r"total\s*(?:incl\.?|including|inkl\.?)\s*(?:vat|tax|btw|mwst\.?|ust\.?)", r"invoice\s*total",
            r"grand\s*total", r"total\s*amount(?!\s*due)", r"totaal\s*(?:incl\.?|inclusief)(?:\s*btw)?",
            r"factuur\s*totaal", r"total\s*for\s*this\s*invoice", r"total\s*facture", r"importe\s*total",
            r"totale\s*fattura", r"gesamt\s*\(brutto\)", r"total\s*gross",
        ), 0),
        (_label_pattern(r"total", r"totaal", r"gesamt", r"summe", r"totale"), 1),
    ),
    "net": (
        (_label_pattern(
            r"rechnungssumme\s*ohne\s*(?:ust|mwst|umsatzsteuer)\.?", r"summe\s*netto", r"nettosumme", r"gesamt\s*netto",
            r"gesamtbetrag\s*netto", r"nettobetrag\s*gesamt", r"netto\s*gesamt", r"total\s*ht",
            r"montant\s*(?:eur\s*)?ht", r"grondslag",
            r"total\s*hors\s*taxes?", r"net\s*total", r"total\s*net", r"net\s*amount",
            r"total\s*(?:excl\.?|excluding|before|without)\s*(?:vat|tax|btw)",
            r"(?:amount|subtotal)\s*(?:excl\.?|before)\s*(?:vat|tax)",
            r"exclusief\s*btw", r"totaal\s*excl\.?(?:\s*btw)?", r"untaxed\s*amount", r"amount\s*untaxed",
            r"summe\s*ohne\s*(?:ust|mwst)\.?", r"netto", r"base\s*imponible", r"imponibile",
        ), 0),
        (_label_pattern(r"sub\s*-?\s*total", r"subtotaal", r"zwischensumme", r"positionssumme", r"summe\s*positionen",
                        r"warenwert", r"nettobetrag"), 1),
    ),
    "tax": (
        (_label_pattern(
            r"steuerbetrag", r"umsatzsteuer\s*gesamt", r"summe\s*(?:ust|mwst|umsatzsteuer)\.?", r"total\s*taxes",
            r"total\s*tva", r"montant\s*tva", r"tax\s*total", r"vat\s*total", r"total\s*vat", r"total\s*tax",
            r"btw\s*bedrag", r"mehrwertsteuer", r"mwst\.?\s*betrag", r"ust\.?\s*betrag", r"tax\s*amount",
            r"vat\s*amount",
        ), 0),
        (_label_pattern(r"mwst\.?", r"ust\.?", r"umsatzsteuer", r"vat", r"tax", r"tva", r"btw", r"gst", r"iva",
                        r"sales\s*tax"), 1),
    ),
    "prepaid": (
        (_label_pattern(
            r"erhaltene\s*anzahlung(?:en)?", r"geleistete\s*anzahlung(?:en)?",
            r"bereits\s*(?:gezahlt|bezahlt|geleistet)",
            r"anzahlung(?:en)?", r"vorauszahlung(?:en)?", r"montant\s*d[ée]j[àa]\s*pay[ée]", r"acomptes?",
            r"d[ée]j[àa]\s*(?:r[ée]gl[ée]|pay[ée])", r"prepaid(?:\s*amount)?", r"amount\s*paid", r"paid\s*amount",
            r"already\s*paid", r"payments?\s*received", r"less\s*payments?", r"reeds\s*betaald", r"aanbetaling",
        ), 0),
    ),
    "amount_due": (
        (_label_pattern(
            r"zahlbetrag", r"zu\s*zahlen(?:der\s*betrag)?", r"noch\s*zu\s*zahlen", r"offener?\s*betrag", r"restbetrag",
            r"total\s*amount\s*due", r"amount\s*due", r"balance\s*due", r"total\s*due", r"amount\s*payable",
            r"net\s*[àa]\s*payer", r"solde\s*[àa]\s*payer", r"reste\s*[àa]\s*payer", r"somme\s*[àa]\s*payer",
            r"montant\s*[àa]\s*payer", r"te\s*betalen", r"nog\s*te\s*betalen", r"importe\s*a\s*pagar",
            r"residual(?:\s*amount)?", r"restant\s*d[ûu]", r"remaining\s*(?:amount|balance)",
        ), 0),
    ),
}
# Words allowed between a total's label and its amount: currency, rate qualifiers, "in EUR".
_FILLER_WORDS = frozenset(
    "in on of auf sur de du ttc ht incl inkl excl zzgl net netto brutto rs rs. eur usd gbp chf ust mwst tva vat "
    "btw tax s e k z g o ae".split()) | {code.lower() for code in _CURRENCY_CODES}
_TOKEN = re.compile(r"\S+")


def _amount_after(ctx: _Context, line: TextLine, position: int) -> list[Amount]:
    """The amounts right of a label, up to the next word that is not filler (the next label)."""
    text = line.text
    dates = ctx.dates(line)
    amounts = ctx.amounts(line, position)
    result: list[Amount] = []
    for token in _TOKEN.finditer(text, position):
        if any(d.start <= token.start() < d.end for d in dates):
            continue
        inside = [a for a in amounts if a.start <= token.start() < a.end or token.start() <= a.start < token.end()]
        if inside:
            for amount in inside:
                if amount not in result:
                    result.append(amount)
            continue
        printed = token[0].strip(":*()[]%.,;=")
        word = printed.lower()
        if word and re.search(r"[^\W\d_]", word) and word not in _FILLER_WORDS:
            if len(word) > 2 or printed.isupper():
                break
    return result


@dataclass(frozen=True)
class _TotalCandidate:
    kind: str
    amount: Decimal
    found: Found


def _labels_in(line: TextLine) -> list[tuple[str, int, re.Match[str]]]:
    """The total labels on a line as (kind, rank, match), left to right, without overlaps:
    "Exclusief BTW" is a net label and its "BTW" is not also a tax label."""
    labels = []
    for kind, patterns in _TOTAL_LABELS.items():
        for pattern, rank in patterns:
            for match in pattern.finditer(line.text):
                labels.append((match.start(), -(match.end() - match.start()), rank, kind, match))
    labels.sort(key=lambda label: label[:3])
    kept: list[tuple[str, int, re.Match[str]]] = []
    for start, _, rank, kind, match in labels:
        if kept and start < kept[-1][2].end():
            continue
        kept.append((kind, rank, match))
    return kept


def _is_whole(printed: str) -> bool:
    return re.search(r"[.,]\d{1,4}$", printed.rstrip(" %")) is None


def _candidate(kind: str, line: TextLine, amount: Amount, rank: int) -> _TotalCandidate:
    found = _found(line, amount.start, amount.end, _decimal_text(amount.value), rank)
    return _TotalCandidate(kind, amount.value, found)


def _total_candidates(ctx: _Context) -> list[_TotalCandidate]:
    """Amounts that labels name as a total:

    1. right of the label on its line ("Total HT : 46,68 €");
    2. under a strong label used as a column heading ("BTW bedrag" / "8,68");
    3. in a totals row of a table whose headings name the columns
       ("Montant EUR HT  Montant TVA  Montant EUR TTC" ... "Total facture 24.99 5.00 29.99").
    """
    candidates: list[_TotalCandidate] = []
    for line in ctx.lines:
        labels = _labels_in(line)
        for kind, rank, match in labels:
            amounts = [a for a in _amount_after(ctx, line, match.end()) if not a.percent]
            if rank > 0:
                # After a weak label ("TVA", "Total") a whole number is more often part of an id.
                amounts = [a for a in amounts if not _is_whole(line.text[a.start:a.end])]
            if amounts:
                candidates.append(_candidate(kind, line, amounts[-1], rank))
            elif rank == 0:
                under = _column_value(ctx, line, match.start(), match.end(), _AMOUNT)
                if under and not under[1]["percent"]:
                    other, value = under
                    parsed = _amounts(other.text, ctx.decimal_comma, value.start(), value.end())
                    if parsed:
                        candidates.append(_candidate(kind, other, parsed[0], rank + 1))
        if labels and labels[0][0] == "gross" and labels[0][2].start() < len(line.text) - len(line.text.lstrip()) + 2:
            candidates.extend(_table_total_row(ctx, line))
    return candidates


def _table_total_row(ctx: _Context, row: TextLine) -> list[_TotalCandidate]:
    amounts = [a for a in ctx.amounts(row) if not a.percent]
    if len(amounts) < 2:
        return []
    for above in reversed(ctx.lines[max(0, row.number - 8):row.number]):
        if above.page != row.page:
            break
        headings = [(kind, match) for kind, rank, match in _labels_in(above) if rank == 0]
        if len(headings) < 2 or ctx.amounts(above):
            continue
        found = []
        for amount in amounts:
            for kind, match in headings:
                if amount.start < match.end() + 3 and amount.end > match.start() - 3:
                    found.append(_candidate(kind, row, amount, 0))
                    break
        return found
    return []


def find_totals(ctx: _Context) -> dict[str, Found | None]:
    """Net, tax, gross, prepaid and amount due; where labels compete, the combination whose
    arithmetic holds (net + tax = gross, gross - prepaid = due) wins, then the stronger label,
    then the later position (totals close a document)."""
    candidates = _total_candidates(ctx)
    by_kind: dict[str, list[_TotalCandidate | None]] = {}
    for kind in _TOTAL_LABELS:
        own = [c for c in candidates if c.kind == kind]
        own.sort(key=lambda c: (c.found.rank, -c.found.line, -c.found.start))
        # Distinct amounts only, the best-placed candidate for each, and a few of them.
        distinct: dict[Decimal, _TotalCandidate] = {}
        for candidate in own:
            distinct.setdefault(candidate.amount, candidate)
        by_kind[kind] = [*list(distinct.values())[:5], None]
    strongest = {kind: min((c.found.rank for c in options if c), default=9) for kind, options in by_kind.items()}

    def cost(choice: dict[str, _TotalCandidate | None]) -> tuple[int, int, int]:
        net, tax, gross = choice["net"], choice["tax"], choice["gross"]
        prepaid, due = choice["prepaid"], choice["amount_due"]
        penalty = 0
        if net and tax and gross:
            penalty += 0 if net.amount + tax.amount == gross.amount else 2
        if gross and due:
            paid = abs(prepaid.amount) if prepaid else Decimal(0)
            penalty += 0 if gross.amount - paid == due.amount else 1
        # Leaving out a labelled amount costs more than an inconsistency: the validator, not the
        # extractor, decides what a document whose sums do not add up means.
        # A weak label ("VAT", "Total") that breaks the arithmetic is dropped rather than kept.
        missing = sum(25 if strongest[kind] == 0 else 15 for kind, c in choice.items() if c is None)
        rank = sum(c.found.rank for c in choice.values() if c is not None)
        lateness = -sum(c.found.line for c in choice.values() if c is not None)
        return penalty * 10 + missing + rank * 4, lateness, 0

    kinds = list(by_kind)
    best = min((dict(zip(kinds, combo, strict=True)) for combo in itertools.product(*by_kind.values())), key=cost)
    result: dict[str, Found | None] = {kind: (c.found if c else None) for kind, c in best.items()}
    # Printed as a deduction ("Erhaltene Anzahlungen -500,00"); the prepaid amount is 500.
    result["prepaid"] = _magnitude(result.get("prepaid"))
    return result


# --------------------------------------------------------------------------------------------
# Line items

_HEADER_COLUMNS: dict[str, re.Pattern[str]] = {
    "position": _label_pattern(r"pos\.?", r"position", r"ligne", r"line", r"#", r"nr\.?"),
    "description": _label_pattern(r"beschreibung", r"bezeichnung", r"artikel(?:bezeichnung)?", r"leistung",
                                  r"description",
                                  r"item", r"product", r"désignation", r"designation", r"libell[ée]", r"omschrijving",
                                  r"title", r"service", r"descripci[óo]n", r"descrizione"),
    "quantity": _label_pattern(r"menge", r"anzahl", r"qty", r"quantity", r"quantité", r"qté", r"aantal", r"hoeveelheid",
                               r"nombre", r"cantidad", r"quantità", r"stück"),
    "unit_price": _label_pattern(r"nettopreis", r"einzelpreis", r"preis", r"e-?preis", r"vk-preis", r"unit\s*price",
                                 r"price", r"rate", r"prix(?:\s*unitaire)?", r"p\.?\s?u\.?(?:\s*ht)?",
                                 r"prijs(?:\s*per\s*stuk)?",
                                 r"precio", r"prezzo"),
    "tax_rate": _label_pattern(r"steuersatz", r"ust\.?(?:\s*%)?", r"mwst\.?(?:\s*%)?", r"tax\s*%?", r"vat\s*%?", r"tva",
                               r"btw", r"taxes", r"iva", r"tax\s*\(%\)"),
    "tax_amount": _label_pattern(r"steuerbetrag", r"tax\s*amount", r"vat\s*amount", r"montant\s*tva", r"btw\s*bedrag"),
    "net_amount": _label_pattern(r"nettobetrag", r"positions-?\s*betrag", r"zeilenbetrag", r"gesamtpreis", r"betrag",
                                 r"amount", r"total", r"montant(?:\s*ht)?", r"prix\s*ht", r"bedrag", r"gesamt",
                                 r"summe",
                                 r"importe", r"importo", r"line\s*total", r"total\s*ht"),
    # Recognized so their numbers are not taken for another column; not part of invoice.v1.
    "discount": _label_pattern(r"disc\.?\s*%?", r"discount", r"rabatt\s*%?", r"rem\.", r"remise", r"korting"),
    "gross_amount": _label_pattern(r"prijs\s*incl\.?\s*btw", r"total\s*ttc", r"bruttobetrag",
                                   r"amount\s*incl\.?(?:\s*vat)?",
                                   r"brutto"),
}
_NUMERIC_COLUMNS = ("quantity", "unit_price", "discount", "tax_amount", "net_amount", "gross_amount")
_LINE_FIELDS = ("description", "quantity", "unit_price", "net_amount", "tax_rate", "tax_amount")
_TABLE_END = re.compile(
    r"(?:umsatzsteueraufschlüsselung|steueraufschlüsselung|belegsummen|zwischensumme|sub\s*-?\s*total|subtotaal|"
    r"summe|total|totaal|gesamtbetrag|exclusief|zahlungsbedingungen|zahlungsart|taxe\s+base|tax\s+summary|"
    r"vat\s+summary|zu-\s*und\s*abschläge|steuer|notes?\b|bemerkung|payment|paiement|règlement|"
    r"seite\s+\d|page\s*\d)",
    re.IGNORECASE)
# What may stand right of a line's description: amounts, rates, currency and units of measure.
_UNIT = re.compile(
    r"(?:stk|stück|st|pcs?|pce|pieces?|units?|unit\(s\)|liters?|liter\(s\)|l|kg|g|t|m|m2|m3|m²|m³|km|h|hrs?|hours?|std|"
    r"hur|kwh|days?|tage?|tag\(e\)|nights?|ea|each|x|c62|[€$£₹]|eur|usd|gbp|chf|rs\.?)", re.IGNORECASE)


@dataclass(frozen=True)
class _Column:
    kind: str
    start: int
    end: int


def _header(line: TextLine) -> list[_Column] | None:
    matches = [(m.end() - m.start(), m.start(), kind, m) for kind, pattern in _HEADER_COLUMNS.items()
               for m in pattern.finditer(line.text)]
    columns: list[_Column] = []
    # Longest first, so "Prix HT" is the net column and not "Prix" the unit price.
    for _, _, kind, match in sorted(matches, key=lambda m: (-m[0], m[1])):
        if any(c.kind == kind for c in columns):
            continue
        if any(c.start < match.end() and match.start() < c.end for c in columns):
            continue
        columns.append(_Column(kind, match.start(), match.end()))
    kinds = {c.kind for c in columns}
    if "description" in kinds and len(kinds & {"quantity", "unit_price", "net_amount"}) >= 2:
        return sorted(columns, key=lambda c: c.start)
    return None


_QUANTITY_WITH_UNIT = re.compile(
    r"(\d+(?:[.,]\d+)?)(?:units?|unit\(s\)|liters?|liter\(s\)|pcs|stk|kg|hrs?|h)", re.IGNORECASE)


def _row_values(ctx: _Context, line: TextLine) -> tuple[int, list[Amount]]:
    """Where a row's description ends, and the amounts right of it (read from the right: values,
    rates, currency signs and units, up to the first word that belongs to the description)."""
    text = line.text
    amounts = ctx.amounts(line)
    tokens = list(_TOKEN.finditer(text))
    cut = len(text.rstrip())
    values: list[Amount] = []
    for token in reversed(tokens):
        glued = _QUANTITY_WITH_UNIT.fullmatch(token[0])
        if glued:
            # "20Unit(s)", "100Liter(s)": a quantity printed against its unit.
            number = _amounts(glued[1], ctx.decimal_comma)
            if number:
                values.insert(0, Amount(number[0].value, token.start(), token.start() + len(glued[1]), False))
                cut = token.start()
                continue
        inside = [a for a in amounts if token.start() <= a.start < token.end() or a.start <= token.start() < a.end]
        if inside:
            values[:0] = [a for a in inside if a not in values]
            cut = min(cut, token.start(), *(a.start for a in inside))
            continue
        if _UNIT.fullmatch(token[0]) or _UNIT.fullmatch(token[0].strip("()")) or token[0] in ("%", "-", "x"):
            cut = token.start()
            continue
        break
    return cut, values


def _assign(columns: list[_Column], values: list[Amount]) -> dict[str, Amount]:
    """Which column each amount of a row belongs to.

    Rates go to the nearest percent column. Other amounts keep their left-to-right order and are
    matched to the numeric columns so that the summed distance between value and heading is
    least (a small dynamic programme); with more amounts than columns the left extras belong to
    the description ("Pils 20/0500").
    """
    assigned: dict[str, Amount] = {}
    percent_columns = [c for c in columns if c.kind in ("tax_rate", "discount")]
    for rate in (v for v in values if v.percent):
        if percent_columns:
            column = min(percent_columns, key=lambda c: abs(_centre(c.start, c.end) - _centre(rate.start, rate.end)))
            assigned.setdefault(column.kind, rate)
    numbers = [v for v in values if not v.percent]
    kinds = set(_NUMERIC_COLUMNS) | ({"tax_rate"} if "tax_rate" not in assigned else set())
    numeric = [c for c in columns if c.kind in kinds and c.kind not in assigned]
    if not numeric or not numbers:
        return assigned
    numbers = numbers[-len(numeric):]
    n, m = len(numbers), len(numeric)
    inf = float("inf")
    # best[i][j]: least cost placing the first i numbers among the first j columns.
    best = [[inf] * (m + 1) for _ in range(n + 1)]
    choice = [[False] * (m + 1) for _ in range(n + 1)]
    for j in range(m + 1):
        best[0][j] = 0.0
    for i in range(1, n + 1):
        for j in range(i, m + 1):
            skip = best[i][j - 1]
            value, column = numbers[i - 1], numeric[j - 1]
            take = best[i - 1][j - 1] + abs(_centre(value.start, value.end) - _centre(column.start, column.end))
            best[i][j], choice[i][j] = (take, True) if take <= skip else (skip, False)
    i, j = n, m
    while i > 0 and j > 0:
        if choice[i][j]:
            column = numeric[j - 1]
            if not (column.kind == "tax_rate" and numbers[i - 1].value > 100):
                assigned[column.kind] = numbers[i - 1]
            i -= 1
        j -= 1
    return assigned


def _centre(start: int, end: int) -> float:
    return (start + end) / 2


def _overlapping(columns: list[_Column], value: Amount) -> _Column | None:
    for column in columns:
        if column.kind in _NUMERIC_COLUMNS and value.start < column.end + 2 and value.end > column.start - 2:
            return column
    return None


def _number_found(line: TextLine, amount: Amount) -> Found:
    printed = line.text[amount.start:amount.end]
    end = amount.start + len(printed.rstrip(" %"))
    return _found(line, amount.start, end, _decimal_text(amount.value))


def find_lines(ctx: _Context) -> list[dict[str, Found]]:
    """Line items of tables with a recognizable header row ("Description ... Qty ... Amount").

    1. Find a header line naming a description column and two of quantity, price, amount.
    2. Each following line until a totals/tax-summary line or the page end: a line with
       description text and amounts right of it starts an item; amounts on the lines below that
       sit under a column the item has not filled yet (a wrapped net amount) are added to it.
    3. Keep items with a unit price or a net amount.
    """
    items: list[dict[str, Found]] = []
    lines = ctx.lines
    index = 0
    while index < len(lines):
        columns = _header(lines[index])
        if columns is None:
            index += 1
            continue
        header = lines[index]
        columns, index = _complete_header(ctx, header, columns)
        description_column = next(c for c in columns if c.kind == "description")
        numbered = any(c.kind == "position" and c.start < description_column.start for c in columns)
        current: dict[str, Found] | None = None
        while index < len(lines) and lines[index].page == header.page:
            line = lines[index]
            stripped = line.text.strip()
            if _header(line) is not None or _TABLE_END.match(stripped) or _closes_table(line):
                break
            index += 1
            if not stripped:
                continue
            cut, values = _row_values(ctx, line)
            # A value right after "label:" ("Bruttopreis :1,0000", "Basismenge: 1 Stk") is a detail
            # of the item above, not a column value.
            values = [v for v in values if not re.search(r":\s*$", line.text[:v.start])]
            left = line.text[:min([cut, *(v.start for v in values)])]
            description = _description(line, left, description_column, numbered)
            labelled = ":" in left
            starts_row = (bool(values) and description is not None and not labelled
                          and (not numbered or re.match(r"\s*\d{1,4}\s", left) is not None
                               or description.start - line.start >= description_column.start - 2))
            if starts_row:
                assigned = _assign(columns, values)
                # Numbers left of the first assigned one belong to the description ("Karton 3 x 20").
                left = line.text[:min((v.start for v in assigned.values()), default=cut)]
                current = {"description": _description(line, left, description_column, numbered)}
                for kind, value in assigned.items():
                    if kind in _LINE_FIELDS:
                        current[kind] = _number_found(line, value)
                items.append(current)
            elif current is not None and values:
                for value in values:
                    column = _overlapping(columns, value)
                    if column is None or value.percent != (column.kind in ("tax_rate", "discount")):
                        continue
                    if column.kind in _LINE_FIELDS and column.kind not in current:
                        current[column.kind] = _number_found(line, value)
    return [item for item in items if "net_amount" in item or ("unit_price" in item and "quantity" in item)]


def _closes_table(line: TextLine) -> bool:
    """A strong totals label anywhere on the line ("... Factuur totaal EUR 49,99") ends the items."""
    return any(rank == 0 and kind in ("net", "tax", "gross", "amount_due") for kind, rank, _ in _labels_in(line))


def _complete_header(ctx: _Context, header: TextLine, columns: list[_Column]) -> tuple[list[_Column], int]:
    """Headings split over several lines ("Positions-" / "betrag", "Prix" / "unitaire"): add the
    columns named on the two lines above and below, and return where the rows begin."""
    columns = list(columns)
    first_row = header.number + 1
    nearby = [*ctx.lines[max(0, header.number - 2):header.number], *ctx.lines[header.number + 1:header.number + 3]]
    for line in nearby:
        if line.page != header.page or not line.text.strip() or ctx.amounts(line):
            continue
        added = False
        for kind, pattern in _HEADER_COLUMNS.items():
            match = pattern.search(line.text)
            if match is None or any(c.kind == kind for c in columns):
                continue
            if any(c.start < match.end() and match.start() < c.end for c in columns):
                continue
            columns.append(_Column(kind, match.start(), match.end()))
            added = True
        if line.number > header.number and (added or line.number == first_row):
            first_row = line.number + 1
    return sorted(columns, key=lambda c: c.start), first_row


def _description(line: TextLine, left: str, column: _Column, numbered: bool) -> Found | None:
    """The description part of a row: from the text that starts nearest the description heading
    (not the position number or article code left of it) to the first amount."""
    segments = [m for m in re.finditer(r"\S+(?:\s\S+)*", left) if re.search(r"[^\W\d_]{2,}", m[0])]
    if numbered and segments and segments[0][0].isdigit():
        segments = segments[1:] or segments
    if not segments:
        return None
    chosen = min(segments, key=lambda m: (abs(m.start() - column.start), m.start()))
    return _found(line, chosen.start(), segments[-1].end(), left[chosen.start():segments[-1].end()])


# --------------------------------------------------------------------------------------------
# Assembly


def extract_invoice(document: DocumentText) -> dict[str, Any]:
    """An ``invoice.v1`` dict for the document, every value with its evidence or null."""
    ctx = _context(document)
    parties = _parties(ctx.lines)
    document_type = find_document_type(ctx)
    totals = find_totals(ctx)
    line_items = find_lines(ctx)
    amounts = [f for f in totals.values() if f]
    amounts += [f for item in line_items for kind, f in item.items() if kind != "description"]
    if document_type and document_type.value == "credit_note" and any(f.value.startswith("-") for f in amounts):
        # A credit note printed with minus signs: invoice.v1 follows EN 16931, where the
        # document type carries the direction and a credit note's amounts are positive.
        totals = {kind: _magnitude(f) for kind, f in totals.items()}
        line_items = [{kind: _magnitude(f) if kind != "description" else f for kind, f in item.items()}
                      for item in line_items]
    return {
        "schema": SCHEMA_ID,
        "document_type": _field(document, document_type),
        "supplier": {
            "name": _field(document, find_supplier_name(ctx, parties)),
            "vat_id": _field(document, find_vat_id(ctx, parties)),
            "iban": _field(document, find_iban(ctx, parties)),
        },
        "invoice_number": _field(document, find_invoice_number(ctx)),
        "issue_date": _field(document, find_issue_date(ctx)),
        "due_date": _field(document, find_due_date(ctx)),
        "currency": _field(document, find_currency(ctx)),
        "lines": [{kind: _field(document, item.get(kind)) for kind in _LINE_FIELDS} for item in line_items],
        "totals": {kind: _field(document, totals.get(kind)) for kind in _TOTAL_LABELS},
    }


def _magnitude(found: Found | None) -> Found | None:
    if found is None or not found.value.startswith("-"):
        return found
    return Found(found.value[1:], found.page, found.start, found.end, found.rank, found.line)


class BuiltinProvider:
    """The rule-based extractor behind the Provider interface: no network, no account, no cost."""

    name = "builtin"

    def extract(self, request: ProviderRequest) -> ProviderResponse:
        started = time.monotonic()
        output_text = json.dumps(extract_invoice(request.document), ensure_ascii=False)
        latency_ms = round((time.monotonic() - started) * 1000)
        return ProviderResponse(
            output_text=output_text,
            model=request.model or self.name,
            # No tokenizer here: about four characters per token, the usual rule of thumb.
            input_tokens=len(request.document.full_text) // 4,
            output_tokens=len(output_text) // 4,
            latency_ms=latency_ms,
        )
