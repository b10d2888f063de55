"""Evidence re-found in the document: a model's quote is trusted, its character offsets are not.

Small models quote the right text but count characters badly. Before validation, every piece of
evidence whose span does not hold its quote is moved to where that quote is printed: on its own
page nearest the claimed offset, else on any page; failing an exact match, where the same words
are printed with different whitespace (a line break the model wrote as a space), and then the
quote becomes the document's own text. A quote printed nowhere keeps its evidence as given, and
the evidence checks report it (VAL-2): relocation never invents a span.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from extraction.intake.text import DocumentText
from extraction.validation.schema import InvoiceV1


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
        _node(data, path)["evidence"] = {"page": page, "start": start, "end": end, "quote": quote}
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


def _node(data: dict[str, Any], path: str) -> dict[str, Any]:
    node: Any = data
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    return node
