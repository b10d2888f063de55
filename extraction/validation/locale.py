"""How invoices print dates, money and numbers in the languages the service reads.

Month names, the two-digit-year rule, currency signs and codes, the readings of a printed number,
and the labels and check digits of Turkish tax ids: the rule extractor reads values with these
and the validation policy checks the quotes with the same tables, so a value the one reads is
never one the other cannot find.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from types import MappingProxyType
from typing import Any

from stdnum.tr import tckimlik as stdnum_tr_tckimlik
from stdnum.tr import vkn as stdnum_tr_vkn

# --- dates ---------------------------------------------------------------------------------------

# Casefolded, with the abbreviations and accent-less spellings invoices print. Turkish names
# are listed with a dotless "ı" and with an "i" as well: casefolding "MAYIS" gives "mayis".
# fmt: off
_MONTH_NAMES: dict[int, tuple[str, ...]] = {
    1: ("january", "jan", "januar", "jänner", "janvier", "janv", "januari", "enero", "gennaio", "styczeń", "stycznia",
        "ocak"),
    2: ("february", "feb", "februar", "février", "fevrier", "févr", "fevr", "februari", "febrero", "febbraio",
        "lutego", "şubat", "subat"),
    3: ("march", "mar", "märz", "maerz", "mär", "mars", "maart", "mrt", "marzo", "marca", "mart"),
    4: ("april", "apr", "avril", "avr", "abril", "aprile", "kwietnia", "nisan"),
    5: ("may", "mai", "mei", "mayo", "maggio", "maja", "mayıs", "mayis"),
    6: ("june", "jun", "juni", "juin", "junio", "giugno", "czerwca", "haziran"),
    7: ("july", "jul", "juli", "juillet", "juil", "julio", "luglio", "lipca", "temmuz"),
    8: ("august", "aug", "août", "aout", "augustus", "agosto", "sierpnia", "ağustos", "agustos"),
    9: ("september", "sep", "sept", "septembre", "septiembre", "settembre", "września", "eylül", "eylul"),
    10: ("october", "oct", "oktober", "okt", "octobre", "octubre", "ottobre", "października", "ekim"),
    11: ("november", "nov", "novembre", "noviembre", "listopada", "kasım", "kasim"),
    12: ("december", "dec", "dezember", "dez", "décembre", "decembre", "déc", "diciembre", "dicembre", "grudnia",
         "aralık", "aralik"),
}
# fmt: on

# English, German, French, Dutch, Spanish, Italian, Polish and Turkish month names (casefolded) -> month.
MONTHS: Mapping[str, int] = MappingProxyType({name: month for month, names in _MONTH_NAMES.items() for name in names})


def month_of(name: str) -> int | None:
    """The month a printed month name means, in any case: ``"Mart"`` and ``"EKİM"`` too. The
    capital dotted "İ" casefolds to "i" plus a combining dot, which no table entry carries."""
    return MONTHS.get(name.casefold().replace("\u0307", ""))


def full_year(year: int) -> int:
    """The year a printed year means: ``98`` is 1998, ``24`` is 2024, ``2018`` stays 2018."""
    if year >= 100:
        return year
    # An invoice is dated near the present and its due date a few years ahead at most, so a
    # two-digit year is read within a century pivoting at 70 (as POSIX strptime's %y does, give
    # or take a year): 00-69 are 2000-2069, 70-99 are the past century. Reading every one as
    # 20xx would put an invoice dated "05.03.98" in 2098.
    return year + (2000 if year < 70 else 1900)


# --- currencies ----------------------------------------------------------------------------------

CURRENCY_CODES = frozenset(
    "EUR USD GBP CHF JPY CNY INR PLN CZK DKK NOK SEK HUF RON BGN HRK ISK TRY AUD CAD NZD ZAR BRL MXN "
    "RUB UAH SGD HKD KRW AED SAR ILS THB MYR IDR PHP".split()
)

# A sign as printed (casefolded) -> the currencies it can stand for, the one an invoice printing
# it alone most often means first: an extractor takes that one, a validator accepts any.
CURRENCY_SIGNS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "€": ("EUR",),
        "euro": ("EUR",),
        "euros": ("EUR",),
        "$": ("USD", "CAD", "AUD", "NZD", "SGD", "HKD", "MXN"),
        "us$": ("USD",),
        "£": ("GBP",),
        "¥": ("JPY", "CNY"),
        "₹": ("INR",),
        "rs": ("INR",),
        "rs.": ("INR",),
        "zł": ("PLN",),
        "zl": ("PLN",),
        "kr": ("DKK", "NOK", "SEK", "ISK"),
        "kr.": ("DKK", "NOK", "SEK", "ISK"),
        "fr.": ("CHF",),
        "ft": ("HUF",),
        "kč": ("CZK",),
        "lei": ("RON",),
        "₺": ("TRY",),
        "tl": ("TRY",),
    }
)


def currency_of_sign(sign: str) -> str | None:
    """The currency a sign printed alone is taken for (``"$"`` -> ``"USD"``), None if not a sign."""
    codes = CURRENCY_SIGNS.get(sign.casefold())
    return codes[0] if codes else None


# --- numbers -------------------------------------------------------------------------------------

# Thousands separators that are never a decimal mark: spaces (also no-break and narrow no-break
# ones) and apostrophes ("1'234.50", Swiss).
_GROUPING = re.compile(r"[\s'’]")


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


def _point_forms(printed: str) -> tuple[str, ...]:
    """``printed`` written with a decimal point and no grouping: one form, or two for a lone
    separator followed by three digits ("1,234": the decimal reading first, then the grouped)."""
    text = _GROUPING.sub("", printed)
    if "." in text and "," in text:
        # Both marks: the rightmost one is the decimal mark ("1.908,78", "2,012.40").
        decimal_mark = "." if text.rfind(".") > text.rfind(",") else ","
        grouping = "," if decimal_mark == "." else "."
        return (text.replace(grouping, "").replace(decimal_mark, "."),)
    mark = "," if "," in text else "." if "." in text else None
    if mark is None:
        return (text,)
    parts = text.split(mark)
    if len(parts) > 2:
        return ("".join(parts),)  # "1.234.567": grouping only
    whole, fraction = parts
    if len(fraction) == 3:
        return (f"{whole}.{fraction}", whole + fraction)
    return (f"{whole}.{fraction}",)


def number_readings(printed: str) -> set[Decimal]:
    """Every value a printed number can have: ``"1.908,78"`` is 1908.78, ``"1,234"`` is 1.234 or 1234."""
    return {value for form in _point_forms(printed) if (value := _decimal(form)) is not None}


def read_number(printed: str, *, decimal_comma: bool) -> Decimal | None:
    """The value of a printed number in a document that writes decimals with a comma (or a point):
    the convention settles only a lone separator followed by three digits ("1.234", "1,234")."""
    forms = _point_forms(printed)
    if len(forms) == 2:
        # The separator is a decimal mark if it is the document's, a thousands separator if not.
        is_comma = "," in printed
        return _decimal(forms[0] if is_comma == decimal_comma else forms[1])
    return _decimal(forms[0])


# --- Turkish tax ids -------------------------------------------------------------------------------

# Turkish invoices print the supplier's tax id without a country prefix: a company's VKN (Vergi
# Kimlik Numarası, 10 digits) or a sole trader's TCKN (T.C. Kimlik Numarası, 11 digits; a person's
# tax id is their identity number). The label says that a bare number is one of them.
TURKISH_TAX_ID_LABEL = re.compile(
    r"(?<![^\W_])(?:vkn\s*/\s*tckn|tckn\s*/\s*vkn|vkn|v\.\s?k\.\s?n\.?|tckn|t\.?\s?c\.?\s*kimlik\s*(?:no|numaras[ıi])|"
    r"vergi\s*kimlik\s*(?:no|numaras[ıi])|vergi\s*(?:no|numaras[ıi])|kimlik\s*no)(?![^\W_])\.?",
    re.IGNORECASE,
)
# The tax office ("Vergi Dairesi: Konak", "Konak V.D."); the id may follow the office's name.
TURKISH_TAX_OFFICE_LABEL = re.compile(r"(?<![^\W_])(?:vergi\s*dairesi|v\.\s?d\.?)(?![^\W_])", re.IGNORECASE)
# python-stdnum's check for each length: the VKN's check digit, the TCKN's two.
TURKISH_TAX_ID_SCHEMES: Mapping[int, Any] = MappingProxyType({10: stdnum_tr_vkn, 11: stdnum_tr_tckimlik})
