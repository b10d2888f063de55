"""invoice.v2: EN 16931's allowances, charges, VAT breakdown and rounding in the answer, and the
arithmetic that follows its business rules, so correct invoices with a discount, a freight
charge, a price per 100 units or a rounding amount pass. invoice.v1 keeps its own semantics."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from extraction.einvoice import read_einvoice
from extraction.einvoice.answer import invoice_answer
from extraction.einvoice.rendering import render
from extraction.intake.text import DocumentText
from extraction.providers.einvoice import answer_from_einvoice
from extraction.validation.policy import (
    NO_TERMS,
    AmountDueTerms,
    MasterData,
    SupplierRecord,
    ValidationOutcome,
    check_invoice,
)
from extraction.validation.schema import (
    InvoiceV1,
    InvoiceV2,
    SchemaValidationError,
    parse_invoice,
    upgraded_to_v2,
)
from extraction.validation.suppliers import normalize_vat_id

INVOICES = Path(__file__).resolve().parents[3] / "testdata" / "invoices"
# Two document allowances (19 % and 7 %), a shipping charge (7 %), a prepayment.
RABATTE = INVOICES / "zugferd-corpus/XML-Rechnung/CII/EN16931_Rabatte.cii.xml"
# ZUGFeRD EXTENDED: a freight charge as a logistics service charge, and a document allowance.
KOSTENRECHNUNG = (
    INVOICES / "zugferd-corpus/ZUGFeRDv2/correct/intarsys/EXTENDED/zugferd_2p0_EXTENDED_Kostenrechnung.embedded.xml"
)
# Unit prices per 3 units (BT-149).
PER_THREE = INVOICES / "factur-x-python/fixtures/xml/factur-x-en16931.xml"
ROUNDED = INVOICES / "xrechnung-testsuite/business-cases/standard/01.17a-INVOICE_ubl.xml"
# XRechnung's extension: 19.96 + 10.00 paid to third parties through the invoice (BG-DEX-09).
THIRD_PARTY = INVOICES / "xrechnung-testsuite/business-cases/extension/05.01a-INVOICE_ubl.xml"
# Factur-X MINIMUM: gross 671.15, due 470.15, and no element for what was prepaid.
FR_MINIMUM = INVOICES / "zugferd-corpus/ZUGFeRDv2/correct/FNFE-factur-x-examples/Facture_FR_MINIMUM.embedded.xml"


def answered(xml: bytes, schema: str) -> tuple[InvoiceV1, DocumentText]:
    invoice = read_einvoice(xml)
    rendering = render(invoice)
    document = DocumentText(pages=(rendering.text,), source="einvoice_xml", einvoice_page=1)
    return parse_invoice(json.dumps(invoice_answer(invoice, rendering, page=1, schema=schema)), schema=schema), document


def judged(xml: bytes, schema: str, terms: AmountDueTerms = NO_TERMS) -> ValidationOutcome:
    """The policy's verdict, with master data listing the supplier exactly as the XML states it
    (the corpus's German samples use dummy VAT ids)."""
    invoice, document = answered(xml, schema)
    supplier = SupplierRecord(
        name=invoice.supplier.name.value or "",
        vat_id=normalize_vat_id(invoice.supplier.vat_id.value or ""),
        iban=(invoice.supplier.iban.value or ""),
    )
    return check_invoice(
        invoice=invoice,
        document=document,
        allowed_currencies=["EUR"],
        overrides={},
        master=MasterData(has_records=True, supplier=supplier, matched_by="vat_id"),
        amount_due_terms=terms,
    )


def check(outcome: ValidationOutcome, name: str) -> dict[str, Any]:
    return next(c for c in outcome.checks if c["check"] == name)


def test_a_correct_invoice_with_document_discounts_and_a_freight_charge_passes_as_v2():
    outcome = judged(RABATTE.read_bytes(), "invoice.v2")

    assert outcome.reasons == []
    assert check(outcome, "lines_sum")["detail"] == {
        "sum_of_lines": "202.70",
        "net_total": "193.77",
        "charges_minus_allowances": "-8.93",
    }
    assert check(outcome, "tax_by_rate")["detail"]["tax_by_rate"] == {"7": "9.06", "19": "12.24"}
    assert check(outcome, "amount_due")["status"] == "passed"


def test_a_v1_answer_without_the_xmls_allowances_and_charges_does_not_add_up():
    outcome = judged(RABATTE.read_bytes(), "invoice.v1")

    assert outcome.reasons == ["line_items_exceed"]
    assert check(outcome, "lines_sum")["detail"] == {
        "sum_of_lines": "202.70",
        "net_total": "193.77",
        "excess_amount": "8.93",
        "tolerance": "0.04",
    }


def test_a_v1_answer_adds_up_with_the_allowances_and_charges_its_xml_states():
    """What v1 cannot hold is counted from the XML's own totals, so a consistent e-invoice
    accepted as v1 (the API's default) is no false review."""
    xml = RABATTE.read_bytes()
    invoice, document = answered(xml, "invoice.v1")
    omitted = answer_from_einvoice(xml, document, schema="invoice.v1").omitted_from_v1
    supplier = SupplierRecord(
        name=invoice.supplier.name.value or "", vat_id=normalize_vat_id(invoice.supplier.vat_id.value or ""), iban=""
    )

    outcome = check_invoice(
        invoice=invoice,
        document=document,
        allowed_currencies=["EUR"],
        overrides={},
        master=MasterData(has_records=True, supplier=supplier, matched_by="vat_id"),
        omitted_from_v1=omitted,
    )

    assert omitted == {"allowance_total": "14.73", "charge_total": "5.80"}
    assert outcome.reasons == []
    assert check(outcome, "lines_sum")["detail"] == {
        "sum_of_lines": "202.70",
        "net_total": "193.77",
        "charges_minus_allowances_omitted_from_v1": "-8.93",
    }
    # The rates of what v1 omitted are not known: the tax by rate cannot be recomputed.
    assert (check(outcome, "tax_by_rate")["status"], check(outcome, "tax_by_rate")["reason"]) == (
        "skipped",
        "allowance_or_charge_without_rate",
    )
    # A v2 answer holds them itself.
    assert answer_from_einvoice(xml, document, schema="invoice.v2").omitted_from_v1 == {}


def test_a_zugferd_extended_logistics_charge_counts_as_a_charge():
    invoice, _ = answered(KOSTENRECHNUNG.read_bytes(), "invoice.v2")
    assert isinstance(invoice, InvoiceV2)
    assert [(c.amount.value, c.reason.value, c.tax_rate.value) for c in invoice.charges] == [
        ("15.00", "Transportkosten: Frachbetrag", "19.00")
    ]
    assert [a.amount.value for a in invoice.allowances] == ["21.55"]

    assert check(judged(KOSTENRECHNUNG.read_bytes(), "invoice.v2"), "lines_sum")["status"] == "passed"


def test_a_price_per_three_units_is_not_a_line_amount_mismatch_in_v2():
    v2 = check(judged(PER_THREE.read_bytes(), "invoice.v2"), "line_amounts")
    v1 = check(judged(PER_THREE.read_bytes(), "invoice.v1"), "line_amounts")

    assert v2["status"] == "passed"
    assert v1["status"] == "failed" and v1["severity"] == "warning"


def test_a_rounding_amount_is_part_of_the_amount_due_in_v2():
    xml = ROUNDED.read_bytes()
    # The sample rounds by one cent, within any tolerance; 0.10 is not.
    xml = xml.replace(b">0.01</cbc:PayableRoundingAmount>", b">0.10</cbc:PayableRoundingAmount>")
    xml = xml.replace(b">336.91</cbc:PayableAmount>", b">337.00</cbc:PayableAmount>")

    assert check(judged(xml, "invoice.v2"), "amount_due")["status"] == "passed"
    v1 = check(judged(xml, "invoice.v1"), "amount_due")
    assert (v1["status"], v1["reason"]) == ("failed", "amount_due_mismatch")


def test_the_vat_breakdown_and_references_are_in_the_answer_with_evidence():
    invoice, document = answered(RABATTE.read_bytes(), "invoice.v2")
    assert isinstance(invoice, InvoiceV2)

    assert [
        (g.category.value, g.rate.value, g.taxable_amount.value, g.tax_amount.value) for g in invoice.tax_breakdown
    ] == [
        ("S", "7.00", "129.37", "9.06"),
        ("S", "19.00", "64.40", "12.24"),
    ]
    assert invoice.totals.line_total.value == "202.70"
    assert invoice.totals.allowance_total.value == "14.73"
    assert invoice.totals.charge_total.value == "5.80"
    for path, field in invoice.fields():
        if field.value is not None:
            assert field.evidence is not None, path
            assert document.span(field.evidence.page, field.evidence.start, field.evidence.end) == field.evidence.quote


def test_a_v1_answer_is_upgraded_for_a_v2_job_with_every_v2_field_empty():
    v1, _ = answered(RABATTE.read_bytes(), "invoice.v1")

    upgraded = parse_invoice(json.dumps(v1.to_json_dict()), schema="invoice.v2")

    assert isinstance(upgraded, InvoiceV2)
    assert upgraded.schema_id == "invoice.v2"
    assert (upgraded.allowances, upgraded.charges, upgraded.tax_breakdown) == ([], [], [])
    assert upgraded.buyer.name.value is None and upgraded.totals.rounding.value is None
    assert upgraded.totals.gross.value == v1.totals.gross.value == "215.07"
    assert [line.allowances for line in upgraded.lines] == [[]] * len(v1.lines)
    assert upgraded_to_v2(v1.to_json_dict())["lines"][0]["price_base_quantity"] == {"value": None, "evidence": None}


def test_a_v1_job_refuses_a_v2_answer():
    v2, _ = answered(RABATTE.read_bytes(), "invoice.v2")

    with pytest.raises(
        SchemaValidationError, match=r"^output does not match invoice.v1: schema: Input should be 'invoice.v1'"
    ):
        parse_invoice(json.dumps(v2.to_json_dict()), schema="invoice.v1")


def terms_of(xml: bytes) -> tuple[AmountDueTerms, dict[str, Any]]:
    _, document = answered(xml, "invoice.v2")
    answer = answer_from_einvoice(xml, document, schema="invoice.v2")
    assert answer is not None
    return answer.amount_due_terms, answer.provenance()


def test_third_party_payments_are_part_of_the_amount_due():
    xml = THIRD_PARTY.read_bytes()
    terms, provenance = terms_of(xml)

    assert terms == AmountDueTerms(third_party_paid=Decimal("29.96"), states_prepaid=True)
    assert provenance["third_party_paid"] == "29.96"
    assert check(judged(xml, "invoice.v2", terms), "amount_due")["status"] == "passed"
    # Without them, 336.90 gross is not the 366.86 due: what BR-CO-16 alone says.
    alone = check(judged(xml, "invoice.v2"), "amount_due")
    assert (alone["status"], alone["reason"]) == ("failed", "amount_due_mismatch")


def test_a_profile_with_no_prepaid_element_explains_a_lower_amount_due():
    xml = FR_MINIMUM.read_bytes()
    terms, provenance = terms_of(xml)

    assert terms == AmountDueTerms(third_party_paid=Decimal(0), states_prepaid=False)
    assert provenance["states_prepaid"] is False
    amount_due = check(judged(xml, "invoice.v2", terms), "amount_due")
    assert (amount_due["status"], amount_due["detail"]) == ("passed", {"prepaid_the_profile_cannot_state": "201.00"})


def test_a_profile_with_no_prepaid_element_cannot_explain_more_due_than_gross():
    xml = FR_MINIMUM.read_bytes().replace(b">470.15</ram:DuePayableAmount>", b">700.00</ram:DuePayableAmount>")
    terms, _ = terms_of(xml)

    amount_due = check(judged(xml, "invoice.v2", terms), "amount_due")
    assert (amount_due["status"], amount_due["reason"]) == ("failed", "amount_due_mismatch")
