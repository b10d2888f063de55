"""einvoice_intake "both": the XML's answer is the result and a model's reading must agree with it
on the money, the dates and the ids; a value the model leaves out is no disagreement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from extraction.einvoice import read_einvoice
from extraction.einvoice.answer import invoice_answer
from extraction.einvoice.rendering import render
from extraction.intake.text import DocumentText
from extraction.validation.cross_check import judged_with_model, model_agreement
from extraction.validation.fields import ReadingSource, untrusted_blocking
from extraction.validation.policy import MasterData, check_invoice
from extraction.validation.schema import InvoiceV1, parse_invoice

XRECHNUNG = (
    Path(__file__).resolve().parents[3]
    / "testdata/invoices/xrechnung-testsuite/business-cases/standard/01.04a-INVOICE_ubl.xml"
)


def _answer() -> dict[str, Any]:
    invoice = read_einvoice(XRECHNUNG.read_bytes())
    return invoice_answer(invoice, render(invoice), page=1, schema="invoice.v1")


def _parsed(answer: dict[str, Any]) -> InvoiceV1:
    return parse_invoice(json.dumps(answer), schema="invoice.v1")


def test_a_model_reading_the_same_values_agrees():
    check = model_agreement(_parsed(_answer()), _parsed(_answer()))

    assert (check["check"], check["status"], check["severity"], check["reason"]) == (
        "model_agrees",
        "passed",
        "blocking",
        None,
    )
    # The sample shows no seller VAT id: nothing to compare there.
    assert check["detail"]["compared"] == [
        "invoice_number",
        "issue_date",
        "currency",
        "supplier.iban",
        "totals.net",
        "totals.tax",
        "totals.gross",
        "totals.amount_due",
    ]


def test_a_model_reading_another_gross_and_iban_disagrees_naming_both():
    model = _answer()
    model["totals"]["gross"]["value"] = "999.00"
    model["supplier"]["iban"]["value"] = "DE89 3704 0044 0532 0130 00"
    einvoice = _parsed(_answer())

    check = model_agreement(einvoice, _parsed(model))

    assert (check["status"], check["reason"], check["field"]) == (
        "failed",
        "model_and_einvoice_disagree",
        "supplier.iban",
    )
    assert check["detail"] == {
        "compared": [
            "invoice_number",
            "issue_date",
            "currency",
            "supplier.iban",
            "totals.net",
            "totals.tax",
            "totals.gross",
            "totals.amount_due",
        ],
        "differing": [
            {
                "field": "supplier.iban",
                "einvoice": einvoice.supplier.iban.value,
                "model": "DE89 3704 0044 0532 0130 00",
            },
            {"field": "totals.gross", "einvoice": einvoice.totals.gross.value, "model": "999.00"},
        ],
    }


def test_what_the_model_leaves_out_and_how_it_writes_a_number_are_no_disagreement():
    model = _answer()
    model["supplier"]["vat_id"] = {"value": None, "evidence": None}
    gross = model["totals"]["gross"]["value"]
    model["totals"]["gross"]["value"] = f"{gross}0" if "." in gross else f"{gross}.00"

    assert model_agreement(_parsed(_answer()), _parsed(model))["status"] == "passed"


def test_a_disagreement_is_a_review_reason_beside_the_policys():
    einvoice = _parsed(_answer())
    model = _answer()
    model["totals"]["gross"]["value"] = "999.00"
    outcome = check_invoice(
        invoice=einvoice,
        document=DocumentText(
            pages=(render(read_einvoice(XRECHNUNG.read_bytes())).text,), source="einvoice_xml", einvoice_page=1
        ),
        allowed_currencies=["EUR"],
        overrides={},
        master=MasterData(has_records=False, supplier=None),
        sources=(ReadingSource.EINVOICE,),
    )
    assert outcome.reasons == []

    judged = judged_with_model(outcome, einvoice, _parsed(model))

    assert (judged.review_required, judged.reasons) == (True, ["model_and_einvoice_disagree"])
    assert judged.checks[-1]["check"] == "model_agrees"
    assert judged.severities["model_agrees"] == "blocking"
    # The field the two readings disagree on conflicts and sends the job to review; the ones
    # they read alike are verified by both.
    gross, number = judged.fields["totals.gross"], judged.fields["invoice_number"]
    assert (gross["status"], gross["blocking"], gross["sources"], gross["failed"]) == (
        "conflicting",
        True,
        ["einvoice"],
        ["model_agrees"],
    )
    assert (number["status"], number["sources"], number["checks"][-1]) == (
        "verified",
        ["einvoice", "model"],
        "model_agrees",
    )
    assert untrusted_blocking(judged.fields) == ["totals.gross"]
