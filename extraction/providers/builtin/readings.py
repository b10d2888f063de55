"""Amounts and dates as a line prints them, and the document's conventions for reading them.

Month names, two-digit years and the decimal-mark rule come from :mod:`extraction.validation.locale`,
the tables the validator checks the quotes with.
"""

from __future__ import annotations

import contextlib
import datetime
import re
from dataclasses import dataclass
from decimal import Decimal

from extraction.validation.locale import MONTHS, full_year, month_of, read_number

# --- amounts ----------------------------------------------------------------------------------

_NUMBER = r"\d{1,3}(?:[.,'\u00a0\u202f]\d{3})+(?:[.,]\d{1,4})?|\d+(?:[.,]\d{1,4})?"
# French invoices also group thousands with a plain space ("1 234,56 €"), which elsewhere is the
# gap between a quantity and a price ("2 150,00"); read so only in documents that group that way.
_SPACE_GROUPED_NUMBER = r"\d{1,3}(?: \d{3})+,\d{2}(?!\d)"


def _amount_pattern(number: str) -> re.Pattern[str]:
    # An amount as printed: optional sign, digits with optional thousands groups ("1.234", "1,234",
    # "1'234", "1 234" with a no-break space) and optional decimals. The look-arounds keep it from
    # starting or ending inside a word, a date ("05.03.2018") or an id ("DE123456789").
    return re.compile(rf"(?<![\w.,/\-−])(?P<sign>[-−–]\s?)?(?P<number>{number})(?![\w/]|[.,]\d)(?P<percent>\s?%)?")


AMOUNT = _amount_pattern(_NUMBER)
_SPACE_GROUPED_AMOUNT = _amount_pattern(f"{_SPACE_GROUPED_NUMBER}|{_NUMBER}")
_SPACE_GROUPED_ONLY = _amount_pattern(_SPACE_GROUPED_NUMBER)


def amount_pattern(*, space_grouping: bool) -> re.Pattern[str]:
    return _SPACE_GROUPED_AMOUNT if space_grouping else AMOUNT


@dataclass(frozen=True)
class Amount:
    value: Decimal
    start: int
    end: int
    percent: bool


def read_amounts(
    text: str, decimal_comma: bool, start: int = 0, end: int | None = None, *, space_grouping: bool = False
) -> list[Amount]:
    """The amounts printed in ``text[start:end]``; ``decimal_comma`` settles "1.234" versus "1,234",
    ``space_grouping`` whether "1 234,56" is one amount."""
    found = []
    for match in amount_pattern(space_grouping=space_grouping).finditer(text, start, len(text) if end is None else end):
        value = read_number(match["number"], decimal_comma=decimal_comma)
        if value is None:
            continue
        if match["sign"]:
            value = -value
        # Turkish prints the percent sign first ("KDV %20").
        percent = bool(match["percent"]) or (not match["sign"] and text[match.start() - 1 : match.start()] == "%")
        found.append(Amount(value=value, start=match.start(), end=match.end(), percent=percent))
    return found


def decimal_text(value: Decimal) -> str:
    """An amount as invoice.v1 writes it ("1234.50")."""
    if value == 0:
        value = abs(value)  # "-0,00" is printed for an empty deduction
    return format(value, "f")


def groups_thousands_with_spaces(text: str) -> bool:
    """Whether the document writes 1 234,56: it prints that form and never 1.234,56."""
    text = NUMERIC_DATE.sub(" ", text)
    return bool(_SPACE_GROUPED_ONLY.search(text)) and not re.search(r"\d\.\d{3}(?!\d)", text)


def uses_decimal_comma(text: str) -> bool:
    """Whether the document writes 12,50 rather than 12.50 (dates masked so 05.03.2018 does not count)."""
    text = NUMERIC_DATE.sub(" ", text)
    commas = len(re.findall(r"\d,\d{2}(?!\d)", text))
    points = len(re.findall(r"\d\.\d{2}(?!\d)", text))
    return commas > points


# --- dates ------------------------------------------------------------------------------------

_MONTH_NAMES = "|".join(sorted(map(re.escape, MONTHS), key=len, reverse=True))
NUMERIC_DATE = re.compile(r"(?<![\d.,/-])(\d{1,2})([./-])(\d{1,2})\2(\d{4}|\d{2})(?![\d/]|[.,-]\d)")
_ISO_DATE = re.compile(r"(?<![\d.])(\d{4})-(\d{2})-(\d{2})(?!\d)")
_DAY_MONTH_NAME = re.compile(
    rf"(?<!\d)(\d{{1,2}})(?:\.|er|st|nd|rd|th)?\s*(?:de\s+)?({_MONTH_NAMES})\.?,?\s+(?:de\s+)?(\d{{4}})(?!\d)",
    re.IGNORECASE,
)
_MONTH_NAME_DAY = re.compile(
    rf"(?<![^\W\d_])({_MONTH_NAMES})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\s*,?\s*(\d{{4}})(?!\d)", re.IGNORECASE
)


@dataclass(frozen=True)
class DateMatch:
    value: datetime.date
    start: int
    end: int


def read_dates(text: str, month_first: bool) -> list[DateMatch]:
    """The dates printed in ``text``, numeric or with a month name; ``month_first`` reads 03/05 as March 5."""
    found: list[DateMatch] = []

    def add(match: re.Match[str], year: int, month: int | None, day: int) -> None:
        if month is None:
            return
        with contextlib.suppress(ValueError):  # 31.02.: not a date, whatever it looks like
            found.append(DateMatch(datetime.date(full_year(year), month, day), match.start(), match.end()))

    for match in _ISO_DATE.finditer(text):
        add(match, int(match[1]), int(match[2]), int(match[3]))
    for match in NUMERIC_DATE.finditer(text):
        first, second = int(match[1]), int(match[3])
        if match[2] == "/" and month_first:
            first, second = second, first
        add(match, int(match[4]), second, first)
    for match in _DAY_MONTH_NAME.finditer(text):
        add(match, int(match[3]), month_of(match[2]), int(match[1]))
    for match in _MONTH_NAME_DAY.finditer(text):
        add(match, int(match[3]), month_of(match[1]), int(match[2]))
    found.sort(key=lambda date: (date.start, -date.end))
    # Keep the longest match at each place ("7. Mai 2014" rather than nothing overlapping it).
    kept: list[DateMatch] = []
    for date in found:
        if not kept or date.start >= kept[-1].end:
            kept.append(date)
    return kept


def writes_month_first(text: str) -> bool:
    """US-style 03/20/2023? Decided by any slash date that only reads one way, else by "$"."""
    for match in NUMERIC_DATE.finditer(text):
        if match[2] != "/":
            continue
        if int(match[1]) > 12:
            return False
        if int(match[3]) > 12:
            return True
    return "$" in text and "€" not in text
