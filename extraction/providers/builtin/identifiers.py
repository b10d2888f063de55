"""The supplier's VAT id and IBAN, and the invoice number, as printed next to their labels.

Whether a string is shaped like a country's VAT id, a Turkish tax id or an IBAN is python-stdnum's
answer, the same library the validator checks them with; the rules here only decide where an id
ends and whose it is.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import stdnum
from stdnum import iban as stdnum_iban
from stdnum import numdb
from stdnum.eu import vat as stdnum_eu_vat
from stdnum.exceptions import InvalidChecksum
from stdnum.exceptions import ValidationError as StdnumValidationError

from extraction.providers.builtin.layout import Context, Found, TextLine, column_value, found_at, label_pattern
from extraction.providers.builtin.parties import buyer_cue_before
from extraction.providers.builtin.readings import NUMERIC_DATE
from extraction.validation.locale import TURKISH_TAX_ID_LABEL, TURKISH_TAX_ID_SCHEMES, TURKISH_TAX_OFFICE_LABEL

# --- VAT id --------------------------------------------------------------------------------------

# The VAT id schemes looked for: the EU's (Greece prints "EL", Northern Ireland "XI") and those of
# the neighbours whose invoices arrive here.
_VAT_SCHEMES: dict[str, Any] = {
    **{code.upper(): stdnum_eu_vat for code in (*stdnum_eu_vat.MEMBER_STATES, "el")},
    **{code.upper(): stdnum.get_cc_module(code, "vat") for code in ("gb", "ch", "no")},
}
# Country prefix + body, as printed (spaces, dots or dashes between groups allowed), long enough
# for the longest printed form, a Swiss "CHE-116.281.710 MWST".
_VAT_CANDIDATE = re.compile(
    r"(?<![A-Za-z0-9])(" + "|".join(sorted(_VAT_SCHEMES)) + r")[ .\-]?([0-9A-Z](?:[0-9A-Z]|[ .\-](?=[0-9A-Z])){6,19})"
)
_VAT_LABEL = re.compile(
    r"(?:ust|mwst|vat|tva|btw|uid|iva|moms|alv|dph|dic|nip|tax|steuer|umsatzsteuer|intra|vies)", re.IGNORECASE
)


def _is_vat_id_shaped(vat_id: str) -> bool:
    """Whether python-stdnum reads ``vat_id`` as an id of its country's format and length. Wrong
    check digits still count: a printed dummy id is what the invoice shows, and the validator is
    the one to reject it. An impossible component does not: there the greedy grab ran into the
    next word ("CHE-116.281.710 Bern" has no suffix "BER")."""
    try:
        _VAT_SCHEMES[vat_id[:2]].validate(vat_id)
    except InvalidChecksum:
        return True
    except StdnumValidationError:
        return False
    return True


class _TaxId(NamedTuple):
    start: int
    end: int
    value: str
    labelled: bool


def _prefixed_vat_ids(line: TextLine) -> Iterator[_TaxId]:
    """VAT ids with their country prefix ("DE 123 456 789", "CHE-116.281.710 MWST")."""
    for match in _VAT_CANDIDATE.finditer(line.text):
        country = match[1]
        body_chars = [c for c in match[2] if c.isalnum()]
        # The grab is greedy; the id is the longest prefix (by characters) the country accepts,
        # which may leave a suffix ("NO 123 456 789 MVA") but never cuts a run of digits: the
        # first eight digits of "ATU123456789" are not an id printed there.
        taken = end = None
        for length in range(len(body_chars), 0, -1):
            if not _is_vat_id_shaped(country + "".join(body_chars[:length])):
                continue
            end = _end_of(line.text, match.start(2), length)
            if end < len(line.text) and line.text[end].isdigit():
                continue
            taken = length
            break
        if taken is None or end is None:
            continue
        labelled = bool(_VAT_LABEL.search(line.text[max(0, match.start() - 30) : match.start()]))
        yield _TaxId(match.start(), end, country + "".join(body_chars[:taken]), labelled)


def _end_of(text: str, start: int, characters: int) -> int:
    """Where the first ``characters`` letters and digits from ``start`` end in ``text``."""
    end, seen = start, 0
    while seen < characters:
        if text[end].isalnum():
            seen += 1
        end += 1
    return end


_TURKISH_TAX_ID = re.compile(r"(?<!\d)\d{10,11}(?!\d)")
_TURKISH_LABEL_GAP = re.compile(r"[\s:./\-]*")


def _is_turkish_tax_id(number: str, *, checksum_required: bool) -> bool:
    scheme = TURKISH_TAX_ID_SCHEMES.get(len(number))
    if scheme is None:
        return False
    try:
        scheme.validate(number)
    except InvalidChecksum:
        return not checksum_required
    except StdnumValidationError:
        return False
    return True


def _turkish_tax_ids(line: TextLine) -> Iterator[_TaxId]:
    """A VKN or TCKN, which Turkish invoices print bare: only after its label, since a bare 10- or
    11-digit number is as often a phone, MERSIS or order number.

    1. Right after "VKN", "TCKN", "Vergi Kimlik No", ...: python-stdnum's length and format; a
       wrong check digit still counts (the validator is the one to reject it).
    2. After the tax office and its name ("Vergi Dairesi / No: Konak / 7351209481"): there the
       label does not say which number is the id, so its check digits must hold too.
    """
    for label in TURKISH_TAX_ID_LABEL.finditer(line.text):
        gap = _TURKISH_LABEL_GAP.match(line.text, label.end())
        number = _TURKISH_TAX_ID.match(line.text, gap.end() if gap else label.end())
        if number and _is_turkish_tax_id(number[0], checksum_required=False):
            yield _TaxId(number.start(), number.end(), number[0], labelled=True)
    for label in TURKISH_TAX_OFFICE_LABEL.finditer(line.text):
        number = _TURKISH_TAX_ID.search(line.text, label.end(), label.end() + 40)
        if number and _is_turkish_tax_id(number[0], checksum_required=True):
            yield _TaxId(number.start(), number.end(), number[0], labelled=True)


def find_vat_id(ctx: Context, parties: list[str]) -> Found | None:
    candidates: list[tuple[int, int, Found]] = []
    for line in ctx.lines:
        for tax_id in (*_prefixed_vat_ids(line), *_turkish_tax_ids(line)):
            if parties[line.number] == "other" or buyer_cue_before(line, tax_id.start):
                continue
            if not tax_id.labelled and parties[line.number] != "seller":
                continue  # a bare "DE123456789" may be any number; require a label or the seller block
            score = (2 if parties[line.number] == "seller" else 0) + (1 if tax_id.labelled else 0)
            candidates.append((-score, line.number, found_at(line, tax_id.start, tax_id.end, tax_id.value)))
    return min(candidates, key=lambda c: (c[0], c[1]))[2] if candidates else None


# --- IBAN ----------------------------------------------------------------------------------------

_IBAN_START = re.compile(r"(?<![A-Za-z0-9])([A-Z]{2})(\d{2})(?=[ \u00a0]?[A-Z0-9])")
_IBAN_GROUP = re.compile(r"[ \u00a0]?([A-Z0-9]+)")
_IBAN_LABEL = re.compile(r"iban", re.IGNORECASE)
_IBAN_REGISTRY = numdb.get("iban")


@functools.cache
def _iban_length(country: str) -> int | None:
    """How long the country's IBANs are, by the IBAN registry python-stdnum carries (None: the
    country has no IBAN). The printed groups are gathered up to that length."""
    structure = _IBAN_REGISTRY.info(country)[0][1].get("bban")
    if not structure:
        return None
    # The registry's notation: "8!n10!n" is 8 digits then 10 digits (a: letters, c: either).
    return 4 + sum(int(run) for run in re.findall(r"(\d+)!?[nac]", structure))


def find_iban(ctx: Context, parties: list[str]) -> Found | None:
    candidates: list[tuple[int, int, Found]] = []
    for line in ctx.lines:
        for match in _IBAN_START.finditer(line.text):
            country = match[1]
            expected = _iban_length(country)
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
            labelled = bool(_IBAN_LABEL.search(line.text[max(0, match.start() - 40) : match.start()]))
            valid = stdnum_iban.is_valid(value)
            # Printed dummy accounts (wrong length or checksum) count only right after "IBAN";
            # the validator, not the extractor, decides whether an account is acceptable.
            if not valid and not (labelled and 15 <= len(value) <= 34):
                continue
            if parties[line.number] == "other" or buyer_cue_before(line, match.start()):
                continue
            score = (2 if labelled else 0) + (1 if valid else 0)
            candidates.append((-score, line.number, found_at(line, match.start(), end, value)))
    return min(candidates, key=lambda c: (c[0], c[1]))[2] if candidates else None


# --- invoice number ------------------------------------------------------------------------------

_INVOICE_NUMBER_LABELS: tuple[tuple[re.Pattern[str], int], ...] = (
    (
        label_pattern(
            r"invoice\s*(?:number|no\.?|nr\.?|num\.?|#|n°|id)",
            r"inv\.?\s*(?:no\.?|#)",
            r"bill\s*(?:number|no\.?)",
            r"rechnungs?\s*-?\s*(?:nummer|nr\.?|no\.?)",
            r"beleg\s*-?\s*(?:nummer|nr\.?)",
            r"gutschrift(?:s)?\s*-?\s*(?:nummer|nr\.?)",
            # "Handelsrechnung (380) Nr.", "Rechnung des Versicherers (575) Nr.", "Gutschrift (...) (389) Nr."
            r"[^\W\d_]*(?:rechnung|korrektur|gutschrift)[^\W\d_]*(?:\s+des\s+[^\W\d_]+)?(?:\s*\([^)\n]{0,40}\))*\s+nr\.?",
            r"f\s?actuur\s*-?\s*(?:nummer|nr\.?|no\.?)",
            r"facture\s*(?:n\s?°|no\.?|num[ée]ro|#)",
            r"num[ée]ro\s+de\s+facture",
            r"avoir\s*(?:n\s?°|no\.?)",
            r"credit\s*note\s*(?:number|no\.?|#)",
            r"factura\s*(?:n[º°o]\.?|n[úu]mero)",
            r"fattura\s*(?:n\.?|numero)",
            r"document\s*(?:number|no\.?)",
            r"n\s?[°º]\s*(?:de\s+)?facture",
            r"n\s?[°º]\s*(?:de\s+l['’]|d['’])avoir",
            r"fatura\s*(?:no\.?|numarası|nr\.?|#)",
        ),
        0,
    ),
    (
        label_pattern(
            r"invoice",
            r"rechnung",
            r"facture",
            r"factuur",
            r"avoir",
            r"gutschrift",
            r"credit\s*note",
            r"factura",
            r"fattura",
            r"fatura",
            r"receipt\s*(?:no\.?|number|#)",
            r"booking\s*id",
        ),
        1,
    ),
)
_IDENTIFIER = re.compile(r"(?<![\w/])#?\s?([A-Za-z0-9](?:[A-Za-z0-9/_.\-]*[A-Za-z0-9])?)")
_LABEL_GAP = re.compile(r"[\s:#.]*")


def _is_identifier(text: str) -> bool:
    return (
        any(c.isdigit() for c in text)
        and len(text) <= 40
        and not NUMERIC_DATE.fullmatch(text)
        and not re.fullmatch(r"\d+[.,]\d{2}", text)
    )  # an amount, not a number


def find_invoice_number(ctx: Context) -> Found | None:
    candidates: list[Found] = []
    for line in ctx.lines:
        for pattern, rank in _INVOICE_NUMBER_LABELS:
            for label in pattern.finditer(line.text):
                gap = _LABEL_GAP.match(line.text, label.end())
                value = _IDENTIFIER.match(line.text, gap.end()) if gap else None
                if gap and value and _is_identifier(value[1]) and (rank == 0 or gap.end() > label.end()):
                    candidates.append(found_at(line, value.start(1), value.end(1), value[1], rank))
                    continue
                rest = line.text[label.end() : label.end() + 3]
                if rest.strip(" :") == "" or rest.startswith("  "):
                    under = column_value(ctx, line, label.start(), label.end(), _IDENTIFIER)
                    if under and _is_identifier(under[1][1]):
                        other, match = under
                        candidates.append(found_at(other, match.start(1), match.end(1), match[1], rank + 1))
    if not candidates:
        return None
    return min(candidates, key=lambda found: (found.rank, found.line, found.start))
