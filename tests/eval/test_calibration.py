"""The accuracy harness's calibration: each field's status set against the truth, counted the
way the per-field table compares values (eval/accuracy.py)."""

from __future__ import annotations

import json
from typing import Any

from eval.accuracy import Answer, Case, TogetherExtractor, _calibration_summary, field_calibration, run_extraction
from extraction.intake.text import DocumentText, extract_document_text
from extraction.providers.builtin import extract_invoice
from tests.factories import INVOICES

TRUTH = {"invoice_number": "INV-1", "totals.gross": "119.00", "totals.tax": None, "due_date": None}
TRUTH_LINES = [{"description": "Widget", "net_amount": "100.00"}]


def _case() -> Case:
    return Case(name="one", source="test", load=lambda: DocumentText(pages=("",)), truth=TRUTH, truth_lines=TRUTH_LINES)


def _output(**values: Any) -> dict[str, Any]:
    def value(v: Any) -> dict[str, Any]:
        return {"value": v, "evidence": None}

    return {
        "schema": "invoice.v1",
        "document_type": value("invoice"),
        "supplier": {name: value(None) for name in ("name", "vat_id", "iban")},
        "invoice_number": value(values.get("invoice_number", "INV-1")),
        "issue_date": value("2026-01-02"),
        "due_date": value(None),
        "currency": value("EUR"),
        "lines": [
            {
                "description": value("Widget"),
                "quantity": value(None),
                "unit_price": value(None),
                "net_amount": value(values.get("net", "100.00")),
                "tax_rate": value(None),
                "tax_amount": value(None),
            }
        ],
        "totals": {
            "net": value("100.00"),
            "tax": value(values.get("tax", "0.00")),
            "gross": value("119.00"),
            "prepaid": value(None),
            "amount_due": value(None),
        },
    }


def test_each_status_is_right_where_the_truth_agrees_and_unknown_where_it_does_not_know():
    fields = {
        "invoice_number": {"status": "verified"},
        "totals.gross": {"status": "verified"},
        "totals.tax": {"status": "verified"},  # "0.00" where the truth has none: the same thing
        "issue_date": {"status": "verified"},  # the truth does not know it
        "lines[0].net_amount": {"status": "unverified"},
    }

    rows = field_calibration(_case(), _output(invoice_number="INV-7", net="100.0"), fields)

    assert [(row["path"], row["field"], row["status"], row["right"]) for row in rows] == [
        ("invoice_number", "invoice_number", "verified", False),
        ("totals.gross", "totals.gross", "verified", True),
        ("totals.tax", "totals.tax", "verified", True),
        ("issue_date", "issue_date", "verified", None),
        ("lines[0].net_amount", "lines.net_amount", "unverified", True),
    ]


def test_the_summary_counts_per_status_per_field_and_what_posting_trusted_values_gives():
    case = _case()
    trusting = {"invoice_number": {"status": "verified"}, "totals.gross": {"status": "verified"}}
    doubting = {"invoice_number": {"status": "verified"}, "totals.gross": {"status": "unverified"}}
    rows = [
        {"trust": field_calibration(case, _output(), trusting)},
        {"trust": field_calibration(case, _output(invoice_number="INV-7"), doubting)},
        {"trust": None},  # a failed document: no answer to judge
    ]

    summary = _calibration_summary(rows, [case, case, case])

    assert summary["by_status"]["verified"] == {"fields": 3, "known": 3, "right": 2, "precision": 2 / 3}
    assert summary["by_status"]["unverified"] == {"fields": 1, "known": 1, "right": 1, "precision": 1.0}
    assert summary["by_field"]["invoice_number"]["verified"] == {"fields": 2, "known": 2, "right": 1, "precision": 0.5}
    assert (summary["fields_listed"], summary["fields_trusted"]) == (4, 3)
    assert (summary["documents"], summary["documents_fully_trusted"]) == (2, 1)
    # The truth holds 2 header values and 2 line values per document, three documents.
    assert summary["posting_trusted_only"] == {
        "posted_known": 3,
        "posted_right": 2,
        "posted_wrong": 1,
        "truth_values": 12,
    }


def test_read_together_the_printed_iban_wins_over_the_models_invention():
    path = INVOICES / "zugferd-corpus/XML-Rechnung/FX/EN16931_Elektron.pdf"
    document = extract_document_text(path.read_bytes(), "application/pdf")
    rules = extract_invoice(document.for_providers())
    printed = rules["supplier"]["iban"]["value"]
    invented = "DE89370400440532013000"
    answer = json.loads(json.dumps(rules))
    answer["supplier"]["iban"] = {
        "value": invented,
        "evidence": {**rules["supplier"]["iban"]["evidence"], "quote": invented},
    }
    case = Case(
        name="Elektron",
        source="test",
        load=lambda: document,
        truth={"supplier.iban": printed, "invoice_number": rules["invoice_number"]["value"]},
    )

    def model(index: int, case: Case, document: DocumentText) -> Answer:
        return Answer(answer, seconds=1.0)

    alone = run_extraction([case], model, documents=[document])
    together = run_extraction([case], TogetherExtractor(model), documents=[document])  # type: ignore[arg-type]

    assert (alone["per_field"]["supplier.iban"]["tp"], together["per_field"]["supplier.iban"]["tp"]) == (0, 1)
    [row] = together["cases_detail"]
    assert row["values"]["supplier.iban"] == printed
    assert "rules_and_model_disagree" not in row["reasons"]
    assert together["calibration"]["by_status"]["verified"]["right"] == 2
