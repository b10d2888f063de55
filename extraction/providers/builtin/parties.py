"""Whose text a line is: the block headings that say seller or buyer, so the buyer's VAT id or
IBAN is not taken for the supplier's, and the supplier's name.
"""

from __future__ import annotations

import re

from extraction.providers.builtin.layout import Context, Found, TextLine, found_at

# A heading stands alone on its line ("Verkäufer:"), so "Lieferant GmbH" is not one.
SELLER_HEADING = re.compile(
    r"^\s*(?:verkäufer|lieferant|rechnungssteller|leistungserbringer|seller|supplier|vendor|"
    r"fournisseur|vendeur|leverancier|auftragnehmer|satıcı(?:\s+bilgileri)?|düzenleyen)\s*:?\s*$",
    re.IGNORECASE,
)
_OTHER_PARTY_HEADING = re.compile(
    r"^\s*(?:käufer|leistungsempfänger|rechnungsempfänger|kunde|buyer|bill(?:ed)?\s+to|invoice\s+to|"
    r"customer|client|acheteur|destinataire|factuuradres|afleveradres|ship\s+to|deliver\s+to|"
    r"lieferanschrift|liefer(?:ung)?\s*an|adresse\s+de\s+(?:livraison|facturation)|"
    r"(?:abweichender\s+)?warenempfänger|abweichender\s+zahlungsempfänger|steuerbevollmächtigter|"
    r"repr[ée]sentant\s+fiscal|tax\s+representative|delivery\s+address|factur[ée]\s+[àa]|"
    r"alıcı(?:\s+bilgileri)?|sayın|müşteri(?:\s+bilgileri)?|teslimat\s+adresi)"
    # A heading ends its line or its column ("Bill To:    Ship To:"); "Invoice to pay by ..." is prose.
    r"(?:\s+(?:address|adresse|anschrift))?(?=\s*(?::|$|\s{2,}))",
    re.IGNORECASE,
)
_NEUTRAL_HEADING = re.compile(
    r"^\s*(?:bemerkungen|positionsdaten|zahlungsbedingungen|zahlungsart|belegsummen|"
    r"umsatzsteueraufschlüsselung|steueraufschlüsselung|qualifizierung|pos\b)",
    re.IGNORECASE,
)
_BUYER_CUE = re.compile(
    r"(?:käufer|kunde|kunden|client|customer|buyer|acheteur|\buw\b|\byour\b|\bihre?\b|\bvotre\b|"
    r"leistungsempfänger|destinataire|empfänger|repr[ée]sentant|bevollmächtigt|tax\s*rep|alıcı|müşteri|sayın)",
    re.IGNORECASE,
)


# An address block is a handful of lines; past that, a heading no longer says whose text it is.
_PARTY_BLOCK_LINES = 10


def line_parties(lines: list[TextLine]) -> list[str]:
    """For each line: "seller", "other" or "" (unknown), from the block heading above it."""
    party, remaining = "", 0
    result = []
    for line in lines:
        if line.number and line.page != lines[line.number - 1].page:
            party = ""
        if _OTHER_PARTY_HEADING.search(line.text):
            party, remaining = "other", _PARTY_BLOCK_LINES
        elif SELLER_HEADING.search(line.text):
            party, remaining = "seller", _PARTY_BLOCK_LINES
        elif _NEUTRAL_HEADING.search(line.text):
            party = ""
        elif line.text.strip():
            remaining -= 1
            if remaining < 0:
                party = ""
        result.append(party)
    return result


def buyer_cue_before(line: TextLine, position: int) -> bool:
    """Does the label just left of ``position`` (same line, same column) name the buyer?"""
    segment = re.split(r"\s{3,}", line.text[:position].rstrip(" :"))[-1]
    return bool(_BUYER_CUE.search(segment[-40:]))


# --- the supplier's name -----------------------------------------------------------------------

_LEGAL_FORM = (
    # Turkish forms first: "Ltd. Şti." is one form, not "Ltd." followed by a word.
    r"Ltd\.?\s*Şti\.?|A\.\s?Ş\.|Limited\s+Şirketi|Anonim\s+Şirketi|"
    r"GmbH\s*&\s*Co\.?\s*KG(?:aA)?|GmbH|gGmbH|AG|KGaA|KG|OHG|e\.\s?K\.|e\.\s?V\.|a\.\s?G\.|UG(?:\s*\(haftungsbeschränkt\))?|"
    r"SE|B\.\s?V\.|BV|N\.\s?V\.|NV|SARL|S\.A\.R\.L\.|SAS|SA|S\.A\.|SASU|EURL|SNC|Ltd\.?|Limited|LLC|L\.L\.C\.|Inc\.?|"
    r"Corp\.?|Corporation|PLC|LLP|LP|Pvt\.?\s*Ltd\.?|Private\s+Limited|S\.p\.A\.|SpA|S\.r\.l\.|Srl|S\.L\.|SL|"
    r"Sp\.\s?z\s?o\.\s?o\.|spółka\s+akcyjna|Oy|Oyj|AB|A/S|ApS|AS|ASA|s\.r\.o\.|a\.s\.|Kft\.?|Zrt\.?|d\.o\.o\."
)
_COMPANY = re.compile(
    r"(?<![\w&])((?:[A-ZÄÖÜÉÇĞİŞ0-9][\w&.'’\-]*|&|und|and|de|du|la|le|van|der|von|für|ve)"
    r"(?:[ ,]{1,2}(?:[A-ZÄÖÜÉÇĞİŞa-zäöüéçğış0-9&][\w&.'’\-]*)){0,5}?"
    r"[ ,]{1,2}(?:" + _LEGAL_FORM + r"))(?![\w])"
)
_NAME_LABEL = re.compile(
    r"(?:^|\s)(?:(?:seller|supplier|vendor|lieferant|verkäufer|from|fournisseur|vendeur|leverancier|"
    r"titulaire\s+du\s+compte|kontoinhaber|account\s+holder|beneficiary|begünstigter)\s*:|"
    r"sold\s+by\s*:?|issued\s+by\s*:?|ausgestellt\s+von\s*:?|t\.\s?n\.\s?v\.?)\s*(?=\S)",
    re.IGNORECASE,
)
_NAME_KEYS = ("name", "firma", "company", "nom", "raison sociale", "ünvan", "unvan", "ticari ünvan", "firma adı")
_KEY_VALUE = re.compile(r"^\s*([^\W\d][\w .\-/()]{0,40}?)\s*:\s*(\S.*)$")
_NAME_STOP = re.compile(r"\s{3,}|,\s|\s[-–|•]\s|\s\(")


def _name_span(text: str, start: int) -> tuple[int, int]:
    """From ``start``, the extent of a name: up to a column gap, a ", " or " - " separator."""
    stop = _NAME_STOP.search(text, start)
    end = stop.start() if stop else len(text.rstrip())
    return start, end


def find_supplier_name(ctx: Context, parties: list[str]) -> Found | None:
    candidates: list[tuple[int, int, Found]] = []
    # 1. The seller block of a structured layout: "Name: X", or its first line that is not "key: value".
    for line in ctx.lines:
        if parties[line.number] != "seller" or SELLER_HEADING.search(line.text):
            continue
        key_value = _KEY_VALUE.match(line.text)
        if key_value and key_value[1].strip().lower() in _NAME_KEYS:
            start, end = _name_span(line.text, key_value.start(2))
            candidates.append((0, line.number, found_at(line, start, end, line.text[start:end])))
        elif not key_value and line.text.strip() and not candidates:
            start = len(line.text) - len(line.text.lstrip())
            start, end = _name_span(line.text, start)
            if re.search(r"[^\W\d_]{2,}", line.text[start:end]):
                candidates.append((1, line.number, found_at(line, start, end, line.text[start:end])))
        if candidates:
            break
    # 2. A labelled name: "Sold By : X", "Titulaire du compte : X".
    for line in ctx.lines:
        for label in _NAME_LABEL.finditer(line.text):
            start, end = _name_span(line.text, label.end())
            name = line.text[start:end].rstrip(" .,;")
            if re.search(r"[^\W\d_]{2,}", name) and len(name) <= 80:
                end = start + len(name)
                candidates.append((2, line.number, found_at(line, start, end, name)))
    # 3. A company name with a legal form, outside buyer blocks; repeated (letterhead, footer,
    # sender line) and early names are the supplier's more often than not.
    occurrences: dict[str, list[Found]] = {}
    for line in ctx.lines:
        if parties[line.number] == "other":
            continue
        for match in _COMPANY.finditer(line.text):
            name = match[1].strip(" ,")
            if buyer_cue_before(line, match.start()) or len(name) < 4:
                continue
            start = match.start(1) + (len(match[1]) - len(match[1].lstrip(" ,")))
            occurrences.setdefault(name.lower(), []).append(found_at(line, start, start + len(name), name))
    for found in occurrences.values():
        first = found[0]
        top = first.line < 15
        score = len(found) + (2 if top else 0)
        candidates.append((3 if score >= 3 else 4, -score * 1000 + first.line, first))
    if not candidates:
        return None
    return min(candidates, key=lambda c: (c[0], c[1]))[2]
