"""Evidence re-found in the document: a quote the model got right at offsets it got wrong is
moved to where the quote is printed, before the evidence checks judge it; a quote printed
nowhere is left for them to report."""

from __future__ import annotations

import copy
import json
from typing import Any

from extraction.intake.text import DocumentText
from extraction.validation.evidence import Relocation, find_quote, relocate_evidence
from extraction.validation.policy import MasterData, check_invoice
from extraction.validation.schema import InvoiceV1, parse_invoice_v1

PAGE_1 = (
    "ACME Supplies GmbH\n"  # 0
    "VAT ID: DE136695976\n"  # 19
    "Invoice number: INV-2026-001\n"  # 39
    "Invoice date: 2026-11-02\n"  # 68
    "Widget 2 x 50.00 = 100.00\n"  # 93; the line net at 112
    "Net total: 100.00 EUR\n"  # 119; the net total at 130
    "VAT 19%: 19.00 EUR\n"  # 141
    "Total: 119.00 EUR\n"  # 160; the gross at 167
)
PAGE_2 = (
    "Due date: 2026-12-02\n"  # 0
    "Amount due: 119.00 EUR\n"  # 21; the amount due at 33
    "IBAN: DE89 3704\n0044 0532 0130 00\n"  # 44; the IBAN at 50, broken over two lines
)
DOCUMENT = DocumentText(pages=(PAGE_1, PAGE_2))
PRINTED_IBAN = "DE89 3704\n0044 0532 0130 00"


def ev(page: int, start: int, end: int, quote: str | None = None) -> dict[str, Any]:
    """Evidence at (page, start, end); its quote is the document's text there unless given."""
    text = DOCUMENT.pages[page - 1][start:end] if quote is None else quote
    return {"page": page, "start": start, "end": end, "quote": text}


def field(value: str | None, evidence: dict[str, Any] | None) -> dict[str, Any]:
    return {"value": value, "evidence": evidence}


# Every value with evidence that holds its quote.
CORRECT: dict[str, Any] = {
    "schema": "invoice.v1",
    "document_type": field("invoice", ev(1, 39, 46)),
    "supplier": {
        "name": field("ACME Supplies GmbH", ev(1, 0, 18)),
        "vat_id": field("DE136695976", ev(1, 27, 38)),
        "iban": field("DE89370400440532013000", ev(2, 50, 77)),
    },
    "invoice_number": field("INV-2026-001", ev(1, 55, 67)),
    "issue_date": field("2026-11-02", ev(1, 82, 92)),
    "due_date": field("2026-12-02", ev(2, 10, 20)),
    "currency": field("EUR", ev(1, 137, 140)),
    "lines": [
        {
            "description": field("Widget", ev(1, 93, 99)),
            "quantity": field("2", ev(1, 100, 101)),
            "unit_price": field("50.00", ev(1, 104, 109)),
            "net_amount": field("100.00", ev(1, 112, 118)),
            "tax_rate": field(None, None),
            "tax_amount": field(None, None),
        }
    ],
    "totals": {
        "net": field("100.00", ev(1, 130, 136)),
        "tax": field("19.00", ev(1, 150, 155)),
        "gross": field("119.00", ev(1, 167, 173)),
        "prepaid": field(None, None),
        "amount_due": field("119.00", ev(2, 33, 39)),
    },
}


def answer(**evidence: dict[str, Any]) -> InvoiceV1:
    """The correct answer with some fields' evidence replaced (``totals__gross=...``,
    ``lines__0__net_amount=...``), parsed as the worker parses a model's answer."""
    output = copy.deepcopy(CORRECT)
    for path, replacement in evidence.items():
        node: Any = output
        for part in path.split("__"):
            node = node[int(part)] if part.isdigit() else node[part]
        node["evidence"] = replacement
    return parse_invoice_v1(json.dumps(output))


def evidence_of(invoice: InvoiceV1, path: str) -> dict[str, Any]:
    return dict(invoice.fields())[path].evidence.model_dump()


def evidence_spans(invoice: InvoiceV1) -> dict[str, Any]:
    outcome = check_invoice(
        invoice=invoice,
        document=DOCUMENT,
        allowed_currencies=["EUR"],
        overrides={},
        master=MasterData(has_records=False, supplier=None),
    )
    return next(check for check in outcome.checks if check["check"] == "evidence_spans")


# --- offsets the model got wrong -------------------------------------------------------------------


def test_wrong_offsets_on_the_right_page_move_to_where_the_quote_is_printed():
    invoice = answer(totals__gross=ev(1, 3, 9, quote="119.00"))

    relocated, relocations = relocate_evidence(invoice, DOCUMENT)

    assert evidence_of(relocated, "totals.gross") == {"page": 1, "start": 167, "end": 173, "quote": "119.00"}
    assert relocations == [
        Relocation(field="totals.gross", claimed=(1, 3, 9), found=(1, 167, 173), whitespace_differs=False)
    ]
    assert evidence_of(invoice, "totals.gross") == {"page": 1, "start": 3, "end": 9, "quote": "119.00"}


def test_a_quote_printed_twice_moves_to_the_occurrence_nearest_the_claimed_start():
    # "100.00" is the line net at 112 and the net total at 130: each claim is a few characters off.
    invoice = answer(lines__0__net_amount=ev(1, 115, 121, quote="100.00"), totals__net=ev(1, 127, 133, quote="100.00"))

    relocated, relocations = relocate_evidence(invoice, DOCUMENT)

    assert evidence_of(relocated, "lines[0].net_amount") == {"page": 1, "start": 112, "end": 118, "quote": "100.00"}
    assert evidence_of(relocated, "totals.net") == {"page": 1, "start": 130, "end": 136, "quote": "100.00"}
    assert [(r.field, r.found) for r in relocations] == [
        ("lines[0].net_amount", (1, 112, 118)),
        ("totals.net", (1, 130, 136)),
    ]


def test_the_claimed_page_is_searched_before_the_others():
    # "119.00" is printed on both pages; the claim is on page 2, far from page 2's occurrence.
    invoice = answer(totals__amount_due=ev(2, 60, 66, quote="119.00"))

    relocated, _ = relocate_evidence(invoice, DOCUMENT)

    assert evidence_of(relocated, "totals.amount_due") == {"page": 2, "start": 33, "end": 39, "quote": "119.00"}


def test_a_quote_printed_only_on_another_page_moves_to_that_page():
    invoice = answer(due_date=ev(1, 10, 20, quote="2026-12-02"))

    relocated, relocations = relocate_evidence(invoice, DOCUMENT)

    assert evidence_of(relocated, "due_date") == {"page": 2, "start": 10, "end": 20, "quote": "2026-12-02"}
    assert relocations == [
        Relocation(field="due_date", claimed=(1, 10, 20), found=(2, 10, 20), whitespace_differs=False)
    ]


def test_a_claimed_page_the_document_does_not_have_moves_to_where_the_quote_is_printed():
    invoice = answer(issue_date=ev(9, 82, 92, quote="2026-11-02"))

    relocated, relocations = relocate_evidence(invoice, DOCUMENT)

    assert evidence_of(relocated, "issue_date") == {"page": 1, "start": 82, "end": 92, "quote": "2026-11-02"}
    assert relocations[0].claimed == (9, 82, 92)


def test_a_line_break_written_as_a_space_moves_and_takes_the_documents_text():
    invoice = answer(supplier__iban=ev(2, 44, 71, quote="DE89 3704 0044 0532 0130 00"))

    relocated, relocations = relocate_evidence(invoice, DOCUMENT)

    assert evidence_of(relocated, "supplier.iban") == {"page": 2, "start": 50, "end": 77, "quote": PRINTED_IBAN}
    assert relocations == [
        Relocation(field="supplier.iban", claimed=(2, 44, 71), found=(2, 50, 77), whitespace_differs=True)
    ]


# --- what is left alone ----------------------------------------------------------------------------------


def test_a_quote_printed_nowhere_is_left_as_given():
    invented = ev(1, 55, 67, quote="INV-2026-999")
    invoice = answer(invoice_number=invented, totals__gross=ev(1, 3, 9, quote="119.00"))

    relocated, relocations = relocate_evidence(invoice, DOCUMENT)

    assert evidence_of(relocated, "invoice_number") == invented
    assert [relocation.field for relocation in relocations] == ["totals.gross"]


def test_correct_evidence_is_untouched_and_the_same_invoice_comes_back():
    invoice = answer()

    relocated, relocations = relocate_evidence(invoice, DOCUMENT)

    assert relocated is invoice
    assert relocations == []


def test_only_the_misplaced_field_changes():
    invoice = answer(totals__gross=ev(1, 3, 9, quote="119.00"))

    relocated, _ = relocate_evidence(invoice, DOCUMENT)

    assert relocated.to_json_dict() == CORRECT


def test_find_quote_prefers_an_exact_match_and_gives_none_for_text_never_printed():
    assert find_quote(DOCUMENT, "100.00", page=1, near=125) == (1, 130, 136)
    assert find_quote(DOCUMENT, "100.00", page=1, near=0) == (1, 112, 118)
    assert find_quote(DOCUMENT, "0044 0532", page=1, near=0) == (2, 60, 69)
    assert find_quote(DOCUMENT, "DE89 3704 0044", page=2, near=0) == (2, 50, 64)
    assert find_quote(DOCUMENT, "INV-2026-999", page=1, near=55) is None


def test_a_relocation_is_stored_as_a_plain_dict():
    relocation = Relocation(field="supplier.iban", claimed=(2, 44, 71), found=(2, 50, 77), whitespace_differs=True)

    assert relocation.as_dict() == {
        "field": "supplier.iban",
        "claimed": [2, 44, 71],
        "found": [2, 50, 77],
        "whitespace_differs": True,
    }


# --- what the evidence check then says -------------------------------------------------------------------


def test_evidence_check_passes_once_every_misplaced_quote_is_relocated():
    invoice = answer(
        totals__gross=ev(1, 3, 9, quote="119.00"),
        lines__0__net_amount=ev(1, 115, 121, quote="100.00"),
        due_date=ev(1, 10, 20, quote="2026-12-02"),
        supplier__iban=ev(2, 44, 71, quote="DE89 3704 0044 0532 0130 00"),
    )
    assert evidence_spans(invoice)["status"] == "failed"

    relocated, relocations = relocate_evidence(invoice, DOCUMENT)

    assert [r.field for r in relocations] == ["supplier.iban", "due_date", "lines[0].net_amount", "totals.gross"]
    check = evidence_spans(relocated)
    assert check["status"] == "passed"
    assert check["detail"] == {"fields_checked": 16, "attested_by_reviewer": []}


def test_evidence_check_still_fails_for_the_quote_printed_nowhere():
    invoice = answer(invoice_number=ev(1, 55, 67, quote="INV-2026-999"), totals__gross=ev(1, 3, 9, quote="119.00"))

    relocated, _ = relocate_evidence(invoice, DOCUMENT)

    check = evidence_spans(relocated)
    assert check["status"] == "failed"
    assert check["reason"] == "evidence_span_mismatch"
    assert check["field"] == "invoice_number"
    assert check["detail"]["problems"] == [
        {
            "field": "invoice_number",
            "reason": "evidence_span_mismatch",
            "page": 1,
            "start": 55,
            "end": 67,
            "quote": "INV-2026-999",
            "document_text": "INV-2026-001",
        }
    ]
