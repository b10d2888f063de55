"""The document totals (net, tax, gross, prepaid, amount due): amounts that labels name, and
where labels compete, the combination whose arithmetic holds.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from decimal import Decimal

from extraction.providers.builtin.layout import (
    Context,
    Found,
    TextLine,
    column_value,
    found_at,
    label_pattern,
    magnitude,
)
from extraction.providers.builtin.readings import Amount, decimal_text
from extraction.validation.locale import CURRENCY_CODES

TOTAL_LABELS: dict[str, tuple[tuple[re.Pattern[str], int], ...]] = {
    "gross": (
        (
            label_pattern(
                r"bruttosumme",
                r"rechnungs(?:end)?betrag",
                r"gesamtbetrag(?!\s+der)(?:\s*brutto)?",
                r"gesamtsumme(?:\s*brutto)?",
                r"summe\s*brutto",
                r"brutto\s*gesamt",
                r"endbetrag",
                r"bruttobetrag",
                r"total\s*ttc",
                r"montant\s*(?:eur\s*)?ttc",
                r"total\s*(?:incl\.?|including|inkl\.?)\s*(?:vat|tax|btw|mwst\.?|ust\.?)",
                r"invoice\s*total",
                r"grand\s*total",
                r"total\s*amount(?!\s*due)",
                r"totaal\s*(?:incl\.?|inclusief)(?:\s*btw)?",
                r"factuur\s*totaal",
                r"total\s*for\s*this\s*invoice",
                r"total\s*facture",
                r"importe\s*total",
                r"totale\s*fattura",
                r"gesamt\s*\(brutto\)",
                r"total\s*gross",
                r"genel\s*toplam",
                r"vergiler\s*dahil\s*toplam\s*tutar(?:ı)?",
                r"kdv\s*dahil\s*(?:toplam\s*)?tutar(?:ı)?",
            ),
            0,
        ),
        (label_pattern(r"total", r"totaal", r"gesamt", r"summe", r"totale", r"toplam"), 1),
    ),
    "net": (
        (
            label_pattern(
                r"rechnungssumme\s*ohne\s*(?:ust|mwst|umsatzsteuer)\.?",
                r"summe\s*netto",
                r"nettosumme",
                r"gesamt\s*netto",
                r"gesamtbetrag\s*netto",
                r"nettobetrag\s*gesamt",
                r"netto\s*gesamt",
                r"total\s*ht",
                r"montant\s*(?:eur\s*)?ht",
                r"grondslag",
                r"total\s*hors\s*taxes?",
                r"net\s*total",
                r"total\s*net",
                r"net\s*amount",
                r"total\s*(?:excl\.?|excluding|before|without)\s*(?:vat|tax|btw)",
                r"(?:amount|subtotal)\s*(?:excl\.?|before)\s*(?:vat|tax)",
                r"exclusief\s*btw",
                r"totaal\s*excl\.?(?:\s*btw)?",
                r"untaxed\s*amount",
                r"amount\s*untaxed",
                r"summe\s*ohne\s*(?:ust|mwst)\.?",
                r"netto",
                r"base\s*imponible",
                r"imponibile",
                # "Mal Hizmet Toplam Tutarı" is the goods total before a document discount ("Toplam
                # İskonto"); where one is printed, the arithmetic prefers the "Vergi Hariç Tutar".
                r"mal\s*hizmet\s*toplam\s*tutarı",
                r"ara\s*toplam",
                r"vergi\s*hariç\s*(?:toplam\s*)?tutar(?:ı)?",
                r"kdv\s*matrahı",
            ),
            0,
        ),
        (
            label_pattern(
                r"sub\s*-?\s*total",
                r"subtotaal",
                r"zwischensumme",
                r"positionssumme",
                r"summe\s*positionen",
                r"warenwert",
                r"nettobetrag",
            ),
            1,
        ),
    ),
    "tax": (
        (
            label_pattern(
                r"steuerbetrag",
                r"umsatzsteuer\s*gesamt",
                r"summe\s*(?:ust|mwst|umsatzsteuer)\.?",
                r"total\s*taxes",
                r"total\s*tva",
                r"montant\s*tva",
                r"tax\s*total",
                r"vat\s*total",
                r"total\s*vat",
                r"total\s*tax",
                r"btw\s*bedrag",
                r"mehrwertsteuer",
                r"mwst\.?\s*betrag",
                r"ust\.?\s*betrag",
                r"tax\s*amount",
                r"vat\s*amount",
                r"hesaplanan\s*kdv",
                r"toplam\s*kdv",
                r"kdv\s*toplamı",
                r"kdv\s*tutarı",
            ),
            0,
        ),
        (
            label_pattern(
                r"mwst\.?",
                r"ust\.?",
                r"umsatzsteuer",
                r"vat",
                r"tax",
                r"tva",
                r"btw",
                r"gst",
                r"iva",
                r"sales\s*tax",
                r"kdv",
            ),
            1,
        ),
    ),
    "prepaid": (
        (
            label_pattern(
                r"erhaltene\s*anzahlung(?:en)?",
                r"geleistete\s*anzahlung(?:en)?",
                r"bereits\s*(?:gezahlt|bezahlt|geleistet)",
                r"anzahlung(?:en)?",
                r"vorauszahlung(?:en)?",
                r"montant\s*d[ée]j[àa]\s*pay[ée]",
                r"acomptes?\s*(?:vers[ée]s?|re[çc]us?|r[ée]gl[ée]s?)",
                r"acomptes?",
                r"d[ée]j[àa]\s*(?:r[ée]gl[ée]|pay[ée])",
                r"prepaid(?:\s*amount)?",
                r"amount\s*paid",
                r"paid\s*amount",
                r"already\s*paid",
                r"payments?\s*received",
                r"less\s*payments?",
                r"reeds\s*betaald",
                r"aanbetaling",
                r"(?:alınan|ödenen)\s*avans",
                r"avans",
            ),
            0,
        ),
    ),
    "amount_due": (
        (
            label_pattern(
                r"zahlbetrag",
                r"zu\s*zahlen(?:der\s*betrag)?",
                r"noch\s*zu\s*zahlen",
                r"offener?\s*betrag",
                r"restbetrag",
                r"total\s*amount\s*due",
                r"amount\s*due",
                r"balance\s*due",
                r"total\s*due",
                r"amount\s*payable",
                r"net\s*[àa]\s*payer",
                r"solde\s*[àa]\s*payer",
                r"reste\s*[àa]\s*payer",
                r"somme\s*[àa]\s*payer",
                r"montant\s*[àa]\s*payer",
                r"te\s*betalen",
                r"nog\s*te\s*betalen",
                r"importe\s*a\s*pagar",
                r"residual(?:\s*amount)?",
                r"restant\s*d[ûu]",
                r"remaining\s*(?:amount|balance)",
                r"ödenecek\s*(?:tutar|toplam)",
            ),
            0,
        ),
    ),
}
# Words allowed between a total's label and its amount: currency, rate qualifiers, "in EUR".
_FILLER_WORDS = frozenset(
    "in on of auf sur de du ttc ht incl inkl excl zzgl net netto brutto rs rs. eur usd gbp chf ust mwst tva vat "
    "btw tax s e k z g o ae tl kdv dahil hariç".split()
) | {code.lower() for code in CURRENCY_CODES}
TOKEN = re.compile(r"\S+")


def _amount_after(ctx: Context, line: TextLine, position: int) -> list[Amount]:
    """The amounts right of a label, up to the next word that is not filler (the next label)."""
    text = line.text
    dates = ctx.dates(line)
    amounts = ctx.amounts(line, position)
    result: list[Amount] = []
    for token in TOKEN.finditer(text, position):
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


def total_labels_in(line: TextLine) -> list[tuple[str, int, re.Match[str]]]:
    """The total labels on a line as (kind, rank, match), left to right, without overlaps:
    "Exclusief BTW" is a net label and its "BTW" is not also a tax label."""
    labels = []
    for kind, patterns in TOTAL_LABELS.items():
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
    found = found_at(line, amount.start, amount.end, decimal_text(amount.value), rank)
    return _TotalCandidate(kind, amount.value, found)


def _total_candidates(ctx: Context) -> list[_TotalCandidate]:
    """Amounts that labels name as a total:

    1. right of the label on its line ("Total HT : 46,68 €");
    2. under a strong label used as a column heading ("BTW bedrag" / "8,68");
    3. in a totals row of a table whose headings name the columns
       ("Montant EUR HT  Montant TVA  Montant EUR TTC" ... "Total facture 24.99 5.00 29.99").
    """
    candidates: list[_TotalCandidate] = []
    for line in ctx.lines:
        labels = total_labels_in(line)
        for kind, rank, match in labels:
            amounts = [a for a in _amount_after(ctx, line, match.end()) if not a.percent]
            if rank > 0:
                # After a weak label ("TVA", "Total") a whole number is more often part of an id.
                amounts = [a for a in amounts if not _is_whole(line.text[a.start : a.end])]
            if amounts:
                candidates.append(_candidate(kind, line, amounts[-1], rank))
            elif rank == 0:
                under = column_value(ctx, line, match.start(), match.end(), ctx.amount_pattern)
                if under and not under[1]["percent"]:
                    other, value = under
                    parsed = ctx.amounts(other, value.start(), value.end())
                    if parsed:
                        candidates.append(_candidate(kind, other, parsed[0], rank + 1))
        if labels and labels[0][0] == "gross" and labels[0][2].start() < len(line.text) - len(line.text.lstrip()) + 2:
            candidates.extend(_table_total_row(ctx, line))
    return candidates


def _table_total_row(ctx: Context, row: TextLine) -> list[_TotalCandidate]:
    amounts = [a for a in ctx.amounts(row) if not a.percent]
    if len(amounts) < 2:
        return []
    for above in reversed(ctx.lines[max(0, row.number - 8) : row.number]):
        if above.page != row.page:
            break
        headings = [(kind, match) for kind, rank, match in total_labels_in(above) if rank == 0]
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


def find_totals(ctx: Context) -> dict[str, Found | None]:
    """Net, tax, gross, prepaid and amount due; where labels compete, the combination whose
    arithmetic holds (net + tax = gross, gross - prepaid = due) wins, then the stronger label,
    then the later position (totals close a document)."""
    candidates = _total_candidates(ctx)
    by_kind: dict[str, list[_TotalCandidate | None]] = {}
    for kind in TOTAL_LABELS:
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
    result["prepaid"] = magnitude(result.get("prepaid"))
    return result
