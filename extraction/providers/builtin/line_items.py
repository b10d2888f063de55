"""Line items: the rows of a table whose header names a description and two of quantity,
price and amount, each value assigned to the column it stands under.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from extraction.providers.builtin.layout import Context, Found, TextLine, found_at, label_pattern
from extraction.providers.builtin.readings import Amount, decimal_text, read_amounts
from extraction.providers.builtin.totals import TOKEN, total_labels_in

_HEADER_COLUMNS: dict[str, re.Pattern[str]] = {
    "position": label_pattern(r"pos\.?", r"position", r"ligne", r"line", r"#", r"nr\.?", r"sıra(?:\s*no)?"),
    "description": label_pattern(
        r"beschreibung",
        r"bezeichnung",
        r"artikel(?:bezeichnung)?",
        r"leistung",
        r"description",
        r"item",
        r"product",
        r"désignation",
        r"designation",
        r"libell[ée]",
        r"omschrijving",
        r"title",
        r"service",
        r"descripci[óo]n",
        r"descrizione",
        r"mal\s*hizmet",
        r"açıklama(?:sı)?",
        r"ürün(?:\s*adı)?",
    ),
    "quantity": label_pattern(
        r"menge",
        r"anzahl",
        r"qty",
        r"quantity",
        r"quantité",
        r"qté",
        r"aantal",
        r"hoeveelheid",
        r"nombre",
        r"cantidad",
        r"quantità",
        r"stück",
        r"miktar(?:ı)?",
    ),
    "unit_price": label_pattern(
        r"nettopreis",
        r"einzelpreis",
        r"preis",
        r"e-?preis",
        r"vk-preis",
        r"unit\s*price",
        r"price",
        r"rate",
        r"prix(?:\s*unitaire)?",
        r"p\.?\s?u\.?(?:\s*ht)?",
        r"prijs(?:\s*per\s*stuk)?",
        r"precio",
        r"prezzo",
        r"birim\s*fiyat(?:ı)?",
    ),
    "tax_rate": label_pattern(
        r"steuersatz",
        r"ust\.?(?:\s*%)?",
        r"mwst\.?(?:\s*%)?",
        r"tax\s*%?",
        r"vat\s*%?",
        r"tva",
        r"btw",
        r"taxes",
        r"iva",
        r"tax\s*\(%\)",
        r"kdv\s*(?:oranı)?\s*%?",
    ),
    "tax_amount": label_pattern(
        r"steuerbetrag", r"tax\s*amount", r"vat\s*amount", r"montant\s*tva", r"btw\s*bedrag", r"kdv\s*tutarı"
    ),
    "net_amount": label_pattern(
        r"nettobetrag",
        r"positions-?\s*betrag",
        r"zeilenbetrag",
        r"gesamtpreis",
        r"betrag",
        r"amount",
        r"total",
        r"montant(?:\s*ht)?",
        r"prix\s*ht",
        r"bedrag",
        r"gesamt",
        r"summe",
        r"importe",
        r"importo",
        r"line\s*total",
        r"total\s*ht",
        r"mal\s*hizmet\s*tutarı",
        r"tutar(?:ı)?",
    ),
    # Recognized so their numbers are not taken for another column; not part of invoice.v1.
    "discount": label_pattern(
        r"disc\.?\s*%?", r"discount", r"rabatt\s*%?", r"rem\.", r"remise", r"korting", r"iskonto(?:\s*oranı)?\s*%?"
    ),
    "discount_amount": label_pattern(r"iskonto\s*tutarı"),
    "gross_amount": label_pattern(
        r"prijs\s*incl\.?\s*btw", r"total\s*ttc", r"bruttobetrag", r"amount\s*incl\.?(?:\s*vat)?", r"brutto"
    ),
}
_NUMERIC_COLUMNS = ("quantity", "unit_price", "discount", "discount_amount", "tax_amount", "net_amount", "gross_amount")
LINE_FIELDS = ("description", "quantity", "unit_price", "net_amount", "tax_rate", "tax_amount")
_TABLE_END = re.compile(
    r"(?:umsatzsteueraufschlüsselung|steueraufschlüsselung|belegsummen|zwischensumme|sub\s*-?\s*total|subtotaal|"
    r"summe|total|totaal|gesamtbetrag|exclusief|zahlungsbedingungen|zahlungsart|taxe\s+base|tax\s+summary|"
    r"vat\s+summary|zu-\s*und\s*abschläge|steuer|notes?\b|bemerkung|payment|paiement|règlement|"
    r"seite\s+\d|page\s*\d|r[ée]capitulatif|ara\s*toplam|toplam|yalnız)",
    re.IGNORECASE,
)
# What may stand right of a line's description: amounts, rates, currency and units of measure.
_UNIT = re.compile(
    r"(?:stk|stück|st|pcs?|pce|pieces?|units?|unit\(s\)|liters?|liter\(s\)|l|kg|g|t|m|m2|m3|m²|m³|km|h|hrs?|hours?|std|"
    r"hur|kwh|days?|tage?|tag\(e\)|nights?|ea|each|x|c62|[€$£₹₺]|eur|usd|gbp|chf|rs\.?|"
    r"adet|saat|gün|kişi|porsiyon|paket|lt|tl|try)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Column:
    kind: str
    start: int
    end: int


def _header(line: TextLine) -> list[_Column] | None:
    matches = [
        (m.end() - m.start(), m.start(), kind, m)
        for kind, pattern in _HEADER_COLUMNS.items()
        for m in pattern.finditer(line.text)
    ]
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
    r"(\d+(?:[.,]\d+)?)(?:units?|unit\(s\)|liters?|liter\(s\)|pcs|stk|kg|hrs?|h)", re.IGNORECASE
)


def _row_values(ctx: Context, line: TextLine) -> tuple[int, list[Amount]]:
    """Where a row's description ends, and the amounts right of it (read from the right: values,
    rates, currency signs and units, up to the first word that belongs to the description)."""
    text = line.text
    amounts = ctx.amounts(line)
    tokens = list(TOKEN.finditer(text))
    cut = len(text.rstrip())
    values: list[Amount] = []
    for token in reversed(tokens):
        glued = _QUANTITY_WITH_UNIT.fullmatch(token[0])
        if glued:
            # "20Unit(s)", "100Liter(s)": a quantity printed against its unit.
            number = read_amounts(glued[1], ctx.decimal_comma)
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
    numbers = numbers[-len(numeric) :]
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
    printed = line.text[amount.start : amount.end]
    end = amount.start + len(printed.rstrip(" %"))
    return found_at(line, amount.start, end, decimal_text(amount.value))


def find_line_items(ctx: Context) -> list[dict[str, Found | None]]:
    """Line items of tables with a recognizable header row ("Description ... Qty ... Amount").

    1. Find a header line naming a description column and two of quantity, price, amount.
    2. Until a totals line or the page end, a line with a description and amounts starts an item.
    3. Amounts below it under a column the item has not filled (a wrapped net amount) join it.
    4. Keep items with a unit price or a net amount.
    """
    items: list[dict[str, Found | None]] = []
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
        current: dict[str, Found | None] | None = None
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
            values = [v for v in values if not re.search(r":\s*$", line.text[: v.start])]
            left = line.text[: min([cut, *(v.start for v in values)])]
            description = _description(line, left, description_column, numbered)
            labelled = ":" in left
            starts_row = (
                bool(values)
                and description is not None
                and not labelled
                and (
                    not numbered
                    or re.match(r"\s*\d{1,4}\s", left) is not None
                    or description.start - line.start >= description_column.start - 2
                )
            )
            if starts_row:
                assigned = _assign(columns, values)
                # Numbers left of the first assigned one belong to the description ("Karton 3 x 20").
                left = line.text[: min((v.start for v in assigned.values()), default=cut)]
                current = {"description": _description(line, left, description_column, numbered)}
                for kind, value in assigned.items():
                    if kind in LINE_FIELDS:
                        current[kind] = _number_found(line, value)
                items.append(current)
            elif current is not None and values:
                for value in values:
                    column = _overlapping(columns, value)
                    if column is None or value.percent != (column.kind in ("tax_rate", "discount")):
                        continue
                    if column.kind in LINE_FIELDS and column.kind not in current:
                        current[column.kind] = _number_found(line, value)
    return [item for item in items if "net_amount" in item or ("unit_price" in item and "quantity" in item)]


def _closes_table(line: TextLine) -> bool:
    """A strong totals label anywhere on the line ("... Factuur totaal EUR 49,99") ends the items."""
    return any(rank == 0 and kind in ("net", "tax", "gross", "amount_due") for kind, rank, _ in total_labels_in(line))


def _complete_header(ctx: Context, header: TextLine, columns: list[_Column]) -> tuple[list[_Column], int]:
    """Headings split over several lines ("Positions-" / "betrag", "Prix" / "unitaire"): add the
    columns named on the two lines above and below, and return where the rows begin."""
    columns = list(columns)
    first_row = header.number + 1
    nearby = [*ctx.lines[max(0, header.number - 2) : header.number], *ctx.lines[header.number + 1 : header.number + 3]]
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
    return found_at(line, chosen.start(), segments[-1].end(), left[chosen.start() : segments[-1].end()])
