"""Each field's trust in ``validation.fields`` (extraction.validation.fields): which value a client
may post unseen, which a person must look at, and why — on real invoices, judged by the policy
as a pure function (no database)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from extraction.intake.text import DocumentText
from extraction.validation.derivation import derive_missing
from extraction.validation.fields import ReadingSource, untrusted_blocking
from extraction.validation.policy import MasterData, SupplierRecord, ValidationOutcome, check_invoice
from extraction.validation.schema import parse_invoice_v1
from tests.extraction.validation.test_validation import (
    CATEGORY_O,
    EINFACH,
    ELEKTRON,
    MINIMUM,
    NEGATIVE,
    NORWAY,
    _evidence,
    changed,
    pdf_case,
    xml_case,
)

NO_MASTER_DATA = MasterData(has_records=False, supplier=None)


def judge(
    output: dict[str, Any],
    document: DocumentText,
    *,
    master: MasterData = NO_MASTER_DATA,
    overrides: dict[str, str] | None = None,
    attested: frozenset[str] = frozenset(),
) -> ValidationOutcome:
    return check_invoice(
        invoice=parse_invoice_v1(json.dumps(output)),
        document=document,
        allowed_currencies=["EUR", "NOK", "DKK", "SEK"],
        overrides=overrides or {},
        master=master,
        attested_fields=attested,
        sources=(ReadingSource.RULES,),
    )


def statuses(outcome: ValidationOutcome) -> dict[str, str]:
    return {path: entry["status"] for path, entry in outcome.fields.items()}


def claimed(output: dict[str, Any]) -> list[str]:
    invoice = parse_invoice_v1(json.dumps(output))
    return [path for path, value in invoice.fields() if value.value is not None]


def test_every_claimed_field_of_a_correct_answer_is_verified_with_the_checks_that_read_it():
    document, output = pdf_case(ELEKTRON)

    outcome = judge(output, document)

    assert outcome.review_required is False, outcome.failed()
    # Every field that holds a value is listed, in document order; a null one no check needs is not.
    assert list(outcome.fields) == claimed(output)
    assert set(statuses(outcome).values()) == {"verified"}
    gross = outcome.fields["totals.gross"]
    assert gross == {
        "status": "verified",
        "blocking": True,
        "sources": ["rules"],
        "checks": ["field_types", "totals_sum", "amount_due", "evidence_spans", "evidence_values", "required_fields"],
        "failed": [],
        "relocated": False,
        "element": None,  # an e-invoice's value names the XML element it was read from
        "rule": None,  # a derived value names its rule
    }
    assert outcome.fields["lines[0].net_amount"]["checks"] == [
        "field_types",
        "line_amounts",
        "lines_sum",
        "tax_by_rate",
        "evidence_spans",
        "evidence_values",
        "required_fields",
    ]
    assert outcome.fields["supplier.iban"]["checks"] == ["iban_checksum", "evidence_spans", "evidence_values"]
    assert outcome.as_dict()["fields"] == outcome.fields


def test_a_failed_sum_puts_every_total_it_read_in_doubt_and_nothing_else():
    document, output = pdf_case(EINFACH)

    outcome = judge(changed(output, "totals.gross", "539.87"), document, overrides={"vat_id_format": "off"})

    assert outcome.reasons == ["totals_sum_mismatch", "amount_due_mismatch", "evidence_value_mismatch"]
    doubted = {path: entry for path, entry in outcome.fields.items() if entry["status"] != "verified"}
    assert {path: (entry["status"], entry["blocking"], entry["failed"]) for path, entry in doubted.items()} == {
        "totals.net": ("unverified", True, ["totals_sum"]),
        "totals.tax": ("unverified", True, ["totals_sum"]),
        # The changed value: its quote does not say it, and both sums it is in fail.
        "totals.gross": ("unverified", True, ["totals_sum", "amount_due", "evidence_values"]),
        "totals.prepaid": ("unverified", True, ["amount_due"]),
        "totals.amount_due": ("unverified", True, ["amount_due"]),
    }
    assert outcome.fields["lines[0].net_amount"]["status"] == "verified"


def test_an_iban_other_than_the_master_datas_doubts_the_iban_alone():
    document, output = pdf_case(ELEKTRON)
    supplier = output["supplier"]
    master = MasterData(
        has_records=True,
        supplier=SupplierRecord(
            name=supplier["name"]["value"],
            vat_id=supplier["vat_id"]["value"].replace(" ", ""),
            iban="DE89370400440532013000",
        ),
        matched_by="vat_id",
    )

    outcome = judge(output, document, master=master)

    assert outcome.reasons == ["supplier_iban_mismatch"]
    assert untrusted_blocking(outcome.fields) == ["supplier.iban"]
    assert outcome.fields["supplier.iban"]["failed"] == ["supplier_master_data"]
    # The name and VAT id the lookup matched on were read by it and passed.
    assert outcome.fields["supplier.vat_id"]["status"] == "verified"
    assert "supplier_master_data" in outcome.fields["supplier.name"]["checks"]


def test_a_quote_printed_nowhere_makes_its_field_unverified():
    document, output = pdf_case(ELEKTRON)
    moved = {**_evidence(output, "invoice_number"), "quote": "INV-INVENTED-1"}

    outcome = judge(changed(output, "invoice_number", "INV-INVENTED-1", moved), document)

    assert outcome.reasons == ["evidence_span_mismatch"]
    assert untrusted_blocking(outcome.fields) == ["invoice_number"]
    assert outcome.fields["invoice_number"]["failed"] == ["evidence_spans"]


def test_a_required_field_left_null_is_missing_and_one_withheld_too():
    document, output = pdf_case(ELEKTRON)

    outcome = judge(changed(changed(output, "totals.gross", None, None), "issue_date", None), document)

    assert outcome.reasons == ["field_value_withheld"]
    assert {path: outcome.fields[path]["status"] for path in ("issue_date", "totals.gross")} == {
        "issue_date": "missing",
        "totals.gross": "missing",
    }
    assert outcome.fields["totals.gross"]["sources"] == []
    assert untrusted_blocking(outcome.fields) == ["issue_date", "totals.gross"]


def test_a_warning_check_leaves_its_fields_in_doubt_without_sending_the_job_to_review():
    document, output = pdf_case(EINFACH)
    wrong_price = changed(output, "lines[0].unit_price", "9.0000", {**_evidence(output, "lines[0].unit_price")})

    outcome = judge(wrong_price, document, overrides={"vat_id_format": "off", "evidence_values": "off"})

    assert outcome.review_required is False
    price = outcome.fields["lines[0].unit_price"]
    assert (price["status"], price["blocking"], price["failed"]) == ("unverified", False, ["line_amounts"])
    assert untrusted_blocking(outcome.fields) == []


def test_with_the_evidence_check_off_no_value_is_verified_and_none_blocks():
    document, output = pdf_case(ELEKTRON)

    outcome = judge(output, document, overrides={"evidence_spans": "off"})

    assert outcome.review_required is False
    assert set(statuses(outcome).values()) == {"unverified"}
    assert outcome.fields["invoice_number"]["blocking"] is False


def test_a_value_the_reviewer_typed_is_verified_by_the_reviewer():
    document, output = pdf_case(ELEKTRON)

    outcome = judge(changed(output, "invoice_number", "471102", None), document, attested=frozenset({"invoice_number"}))

    assert outcome.review_required is False, outcome.failed()
    number = outcome.fields["invoice_number"]
    assert (number["status"], number["sources"]) == ("verified", ["reviewer"])
    assert outcome.fields["totals.gross"]["sources"] == ["rules"]


def test_relocated_evidence_is_marked():
    document, output = pdf_case(ELEKTRON)

    outcome = judge(output, document).with_relocated(["totals.gross"])

    assert [path for path, entry in outcome.fields.items() if entry["relocated"]] == ["totals.gross"]


@pytest.mark.parametrize(
    ("relative", "broken"),
    [
        (relative, broken)
        for relative in (NORWAY, NEGATIVE, MINIMUM, CATEGORY_O)
        for broken in (None, "totals.gross", "totals.net", "supplier.iban", "lines[0].net_amount")
        if not (relative == MINIMUM and broken == "lines[0].net_amount")  # MINIMUM has no lines
    ],
)
def test_a_job_goes_to_review_exactly_when_a_blocking_field_is_not_trusted(relative, broken):
    """The promise to clients: posting every verified blocking field is posting what the job's
    verdict would let through — on real invoices, correct and with one value changed."""
    document, truth = xml_case(relative)
    output = truth if broken is None else changed(truth, broken, "1234.56")

    # The samples' supplier ids are dummies with wrong check digits (the ids' own checks have tests).
    outcome = judge(output, document, overrides={"vat_id_format": "off", "iban_checksum": "off"})

    assert outcome.review_required is bool(untrusted_blocking(outcome.fields)), (outcome.reasons, outcome.fields)
    assert outcome.review_required is (broken is not None)


# --- derived: what an invoice states without printing it ------------------------------------------


def judge_derived(output: dict[str, Any], document: DocumentText, **kwargs: Any) -> ValidationOutcome:
    invoice, derived = derive_missing(parse_invoice_v1(json.dumps(output)))
    return check_invoice(
        invoice=invoice,
        document=document,
        allowed_currencies=["EUR", "NOK", "DKK", "SEK"],
        overrides={"vat_id_format": "off", "iban_checksum": "off", **kwargs.pop("overrides", {})},
        master=NO_MASTER_DATA,
        sources=(ReadingSource.MODEL,),
        derived=derived,
        **kwargs,
    )


def test_an_amount_due_printed_nowhere_is_derived_from_gross_and_prepaid():
    document, truth = xml_case(NORWAY)  # prepaid 1000
    due = truth["totals"]["amount_due"]["value"]

    outcome = judge_derived(changed(truth, "totals.amount_due", None, None), document)

    assert outcome.review_required is False, outcome.failed()
    entry = outcome.fields["totals.amount_due"]
    assert (entry["status"], entry["rule"], entry["sources"], entry["blocking"]) == (
        "derived",
        "amount_due = gross − prepaid",
        ["model"],
        True,
    )
    invoice, _ = derive_missing(parse_invoice_v1(json.dumps(changed(truth, "totals.amount_due", None, None))))
    assert Decimal(invoice.totals.amount_due.value) == Decimal(due)
    # Without the rule the same answer goes to review for a value nobody needs to read.
    assert judge(changed(truth, "totals.amount_due", None, None), document).reasons[-1] == "required_field_missing"


def test_a_value_derived_from_a_doubted_one_is_not_trusted():
    document, truth = xml_case(NORWAY)
    wrong = changed(changed(truth, "totals.amount_due", None, None), "totals.gross", "99999.00")

    outcome = judge_derived(wrong, document)

    assert outcome.review_required is True
    assert outcome.fields["totals.gross"]["status"] == "unverified"
    entry = outcome.fields["totals.amount_due"]
    assert (entry["status"], entry["blocking"], entry["rule"]) == ("unverified", False, "amount_due = gross − prepaid")


def test_a_tax_withheld_with_its_evidence_is_not_derived():
    document, output = pdf_case(ELEKTRON)

    outcome = judge_derived(changed(output, "totals.tax", None), document)

    # Read as 0, the absent tax fails the sums too; the withheld value is what review is for.
    assert outcome.reasons == ["tax_by_rate_mismatch", "totals_sum_mismatch", "field_value_withheld"]
    assert (outcome.fields["totals.tax"]["status"], outcome.fields["totals.tax"]["rule"]) == ("missing", None)
