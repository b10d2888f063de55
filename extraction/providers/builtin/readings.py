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

from extraction.validation.locale import MONTHS, full_year, read_number

# --- amounts ----------------------------------------------------------------------------------

# An amount as printed: optional sign, digits with optional thousands groups ("1.234", "1,234",
# "1'234", "1 234" with a no-break space) and optional decimals. The look-arounds keep it from
# starting or ending inside a word, a date ("05.03.2018") or an id ("DE123456789").
AMOUNT = re.compile(
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


def read_amounts(text: str, decimal_comma: bool, start: int = 0, end: int | None = None) -> list[Amount]:
    """The amounts printed in ``text[start:end]``; ``decimal_comma`` settles "1.234" versus "1,234"."""
    found = []
    for match in AMOUNT.finditer(text, start, len(text) if end is None else end):
        value = read_number(match["number"], decimal_comma=decimal_comma)
        if value is None:
            continue
        if match["sign"]:
            value = -value
        found.append(Amount(value=value, start=match.start(), end=match.end(), percent=bool(match["percent"])))
    return found


def decimal_text(value: Decimal) -> str:
    """An amount as invoice.v1 writes it ("1234.50")."""
    if value == 0:
        value = abs(value)  # "-0,00" is printed for an empty deduction
    return format(value, "f")


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

    def add(match: re.Match[str], year: int, month: int, day: int) -> None:
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
        add(match, int(match[3]), MONTHS[match[2].casefold()], int(match[1]))
    for match in _MONTH_NAME_DAY.finditer(text):
        add(match, int(match[3]), MONTHS[match[1].casefold()], int(match[2]))
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
