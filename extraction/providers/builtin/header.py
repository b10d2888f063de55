"""The invoice's header facts: what kind of document it is, when it was issued and is due, and
its currency (a labelled code, else the code or sign printed most).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter

from extraction.providers.builtin.layout import Context, Found, found_at, label_pattern
from extraction.validation.locale import CURRENCY_CODES, currency_of_sign

# --- document type -------------------------------------------------------------------------------

# A "Rechnungskorrektur" (UNTDID 384, corrected invoice) stays an invoice, with negative amounts.
_CREDIT_NOTE = label_pattern(
    r"credit\s*note",
    r"credit\s*memo",
    r"gutschrift",
    r"avoir",
    r"creditnota",
    r"nota\s*de\s*cr[ée]dito",
    r"nota\s*di\s*credito",
    r"stornorechnung",
    r"iade\s*faturası",
)
_INVOICE_TITLE = label_pattern(
    r"[^\W\d_]*rechnung[^\W\d_]*",
    r"invoices?",
    r"facture",
    r"factuur",
    r"factura",
    r"fattura",
    r"faktura",
    r"fatura(?:sı)?",
    r"bill",
    r"tax\s*invoice",
)
_TYPE_CODE = re.compile(r"\((\d{3})\)")
# A Turkish e-invoice states its kind ("Fatura Tipi: SATIS", "IADE", "TEVKIFAT"); its title
# "e-Fatura" / "e-Arşiv Fatura" names the channel, so a return is not told by the title.
_TURKISH_INVOICE_TYPE = label_pattern(r"fatura\s*tipi\s*:?\s*([^\W\d_]+)")
_TURKISH_RETURN = re.compile(r"iade", re.IGNORECASE)
_CREDIT_TYPE_CODES = {"381", "396", "81", "83", "532"}


def document_type_of_title(title: str) -> str | None:
    """What a printed title says the document is: its UNTDID 1001 code if it shows one, else
    its words ("Gutschrift" a credit note, "Rechnung" an invoice); None if it says neither."""
    code = _TYPE_CODE.search(title)
    if code:
        return "credit_note" if code[1] in _CREDIT_TYPE_CODES else "invoice"
    if _CREDIT_NOTE.search(title):
        return "credit_note"
    return "invoice" if _INVOICE_TITLE.search(title) else None


def find_document_type(ctx: Context) -> Found | None:
    # A printed UNTDID 1001 code ("Gutschrift (389)") says what the German word cannot: a
    # self-billed "Gutschrift" is an invoice, a supplier's "Gutschrift" is a credit note.
    for line in ctx.lines[:40]:
        for title in itertools.chain(_CREDIT_NOTE.finditer(line.text), _INVOICE_TITLE.finditer(line.text)):
            code = _TYPE_CODE.search(line.text, title.end(), title.end() + 60)
            if code:
                kind = "credit_note" if code[1] in _CREDIT_TYPE_CODES else "invoice"
                return found_at(line, title.start(), code.end(), kind)
    for line in ctx.lines[:40]:
        stated = _TURKISH_INVOICE_TYPE.search(line.text)
        if stated:
            kind = "credit_note" if _TURKISH_RETURN.fullmatch(stated[1]) else "invoice"
            return found_at(line, stated.start(), stated.end(), kind)
    for line in ctx.lines[:40]:
        match = _CREDIT_NOTE.search(line.text)
        if match and not _INVOICE_TITLE.search(line.text[: match.start()]):
            return found_at(line, match.start(), match.end(), "credit_note")
        match = _INVOICE_TITLE.search(line.text)
        if match:
            return found_at(line, match.start(), match.end(), "invoice")
    return None


# --- dates ---------------------------------------------------------------------------------------

_ISSUE_DATE_LABELS = (
    (
        label_pattern(
            r"invoice\s*date",
            r"date\s*of\s*(?:invoice|issue)",
            r"issue\s*date",
            r"date\s*issued",
            r"billing\s*date",
            r"rechnungsdatum",
            r"belegdatum",
            r"ausstellungsdatum",
            r"datum\s*der\s*rechnung",
            r"date\s*de\s*(?:la\s*)?facture",
            r"date\s*d['’]?[ée]mission",
            r"date\s*(?:de\s*l['’]|d['’])avoir",
            r"f\s?actuur\s*datum",
            r"factuurdatum",
            r"fecha\s*de\s*(?:la\s*)?factura",
            r"data\s*(?:della\s*)?fattura",
            r"fatura\s*tarihi",
            r"düzenle(?:n)?me\s*tarihi",
        ),
        0,
    ),
    (label_pattern(r"(?:[^\W\d_]*rechnung|facture|invoice|gutschrift|avoir)[^\n]{0,60}?\s(?:vom|du|dated|of)"), 1),
    (label_pattern(r"datum", r"date", r"dated", r"vom", r"tarih"), 2),
)
_DUE_DATE_LABELS = (
    (
        label_pattern(
            r"due\s*date",
            r"payment\s*due(?:\s*date)?",
            r"due\s*on",
            r"pay(?:able)?\s*by",
            r"f[äa]lligkeits?datum",
            r"f[äa]lligkeit",
            r"f[äa]llig\s*(?:am|bis|zum)?",
            r"zahlungsziel",
            r"zahlbar\s*bis(?:\s*zum)?",
            r"zu\s*zahlen\s*bis",
            r"date\s*d['’]?[ée]ch[ée]ance",
            r"[ée]ch[ée]ance",
            r"date\s*limite\s*de\s*paiement",
            r"[àa]\s*payer\s*avant\s*le",
            r"vervaldatum",
            r"te\s*betalen\s*voor",
            r"fecha\s*de\s*vencimiento",
            r"scadenza",
            r"son\s*ödeme\s*tarihi",
            r"vade\s*tarihi",
        ),
        0,
    ),
    (label_pattern(r"zahlbar[^\n]{0,40}?netto\s*bis", r"netto\s*bis"), 1),
)


def _find_date(
    ctx: Context, labels: tuple[tuple[re.Pattern[str], int], ...], exclude: tuple[re.Pattern[str], ...] = ()
) -> Found | None:
    candidates: list[Found] = []
    for line in ctx.lines:
        dates = ctx.dates(line)
        for pattern, rank in labels:
            for label in pattern.finditer(line.text):
                if any(e.search(line.text[max(0, label.start() - 25) : label.end() + 5]) for e in exclude):
                    continue
                # The date right of the label, unless another word intervenes (the next label).
                after = [
                    d
                    for d in dates
                    if d.start >= label.end()
                    and d.start - label.end() <= 40
                    and not re.search(r"[^\W\d_]{4,}", line.text[label.end() : d.start])
                ]
                if after:
                    date = after[0]
                    candidates.append(found_at(line, date.start, date.end, date.value.isoformat(), rank))
                    continue
                for other in ctx.below(line, count=2):
                    under = [d for d in ctx.dates(other) if d.start < label.end() + 4 and d.end > label.start() - 4]
                    if under:
                        candidates.append(
                            found_at(other, under[0].start, under[0].end, under[0].value.isoformat(), rank)
                        )
                        break
    if not candidates:
        return None
    return min(candidates, key=lambda found: (found.rank, found.line, found.start))


_DUE_CONTEXT = re.compile(
    r"f[äa]llig|due|zahlbar|[ée]ch[ée]ance|vervaldatum|limite|payer|period|zeitraum|leistung|liefer|"
    r"ödeme|vade|sevk|irsaliye",
    re.IGNORECASE,
)


def find_issue_date(ctx: Context) -> Found | None:
    found = _find_date(ctx, _ISSUE_DATE_LABELS, exclude=(_DUE_CONTEXT,))
    if found is not None:
        return found
    # No label: the first date on the first page that is not a due date or a period.
    for line in ctx.lines:
        if line.page != 1:
            break
        for date in ctx.dates(line):
            if not _DUE_CONTEXT.search(line.text[: date.start]):
                return found_at(line, date.start, date.end, date.value.isoformat(), 3)
    return None


def find_due_date(ctx: Context) -> Found | None:
    return _find_date(ctx, _DUE_DATE_LABELS)


# --- currency ------------------------------------------------------------------------------------

_CURRENCY_CODE = re.compile(r"(?<![A-Za-z])(" + "|".join(sorted(CURRENCY_CODES)) + r")(?![A-Za-z])")
# Where a printed sign counts as a currency; which currency it stands for, the locale table says.
_CURRENCY_SIGNS = tuple(
    re.compile(pattern)
    for pattern in (
        r"€",
        r"£",
        r"¥",
        r"₹",
        r"(?<![A-Za-z])Rs\.?(?=\s?\d)",
        r"zł",
        r"Kč",
        r"₺",
        # "TL" only next to an amount ("1.200,00 TL"): elsewhere it is any two capitals.
        r"(?:(?<=\d)|(?<=\d[ \u00a0]))TL(?![^\W\d_])|(?<![^\W\d_])TL(?=[ \u00a0]?\d)",
        # "$" only in front of an amount with cents: OCR reads stray "S"/"5" shapes as "$".
        r"(?<![A-Za-z])(?:US)?\$(?=\s?\d[\d,]*\.\d{2}(?!\d))",
    )
)
_CURRENCY_LABEL = label_pattern(
    r"(?:rechnungs)?währung",
    r"currency",
    r"devise",
    r"valuta",
    r"moneda",
    r"monnaie",
    r"para\s*birimi",
    r"döviz\s*cinsi",
)


def find_currency(ctx: Context) -> Found | None:
    for line in ctx.lines:
        for label in _CURRENCY_LABEL.finditer(line.text):
            code = _CURRENCY_CODE.search(line.text, label.end(), label.end() + 30)
            if code:
                return found_at(line, code.start(), code.end(), code[1], 0)
    counts: Counter[str] = Counter()
    first: dict[str, Found] = {}
    for line in ctx.lines:
        for match in _CURRENCY_CODE.finditer(line.text):
            counts[match[1]] += 2  # a code is explicit; a symbol ("$") can be ambiguous
            first.setdefault(match[1], found_at(line, match.start(), match.end(), match[1], 1))
        for pattern in _CURRENCY_SIGNS:
            for match in pattern.finditer(line.text):
                currency = currency_of_sign(match[0])
                if currency is None:
                    continue
                counts[currency] += 1
                first.setdefault(currency, found_at(line, match.start(), match.end(), currency, 2))
    if not counts:
        return None
    best = max(counts.items(), key=lambda item: (item[1], -first[item[0]].line))[0]
    return first[best]
