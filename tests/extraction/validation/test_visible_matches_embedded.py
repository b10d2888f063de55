"""A Factur-X/ZUGFeRD PDF's visible copy and its embedded XML must state the same money: the
gross total, the tax total, the amount due and the IBAN of the answer are printed on the pages
the supplier signed off, or the job goes to review (``visible_and_embedded_disagree``)."""

from __future__ import annotations

import functools
import json

import pytest

from extraction.intake.text import DocumentText, einvoice_xml_of, extract_document_text, with_embedded_einvoice
from extraction.providers.einvoice import answer_from_einvoice
from extraction.validation.policy import MasterData, ValidationOutcome, check_invoice
from extraction.validation.schema import parse_invoice_v1
from tests.einvoice_files import ELEKTRON_PDF, elektron_xml, facturx_with_xml, line_two_costs_100_more


@functools.cache
def _judged(pdf: bytes) -> tuple[str, str]:
    xml = einvoice_xml_of(pdf, "application/pdf")
    assert xml is not None
    document = with_embedded_einvoice(extract_document_text(pdf, "application/pdf"), xml)
    answer = answer_from_einvoice(xml, document, schema="invoice.v1")
    assert answer is not None
    outcome = check_invoice(
        invoice=parse_invoice_v1(json.dumps(answer.output)),
        document=document,
        allowed_currencies=["EUR"],
        overrides={},
        master=MasterData(has_records=False, supplier=None),
    )
    return json.dumps(outcome.as_dict()), json.dumps(answer.output)


def judged(pdf: bytes) -> ValidationOutcome:
    data = json.loads(_judged(pdf)[0])
    return ValidationOutcome(
        review_required=data["review_required"],
        policy_version=data["policy_version"],
        checks=data["checks"],
        reasons=data["reasons"],
        severities=data["severities"],
    )


def visible_check(outcome: ValidationOutcome) -> dict:
    return next(check for check in outcome.checks if check["check"] == "visible_matches_embedded")


def test_a_factur_x_pdf_whose_copies_agree_passes():
    outcome = judged(facturx_with_xml(elektron_xml()))

    check = visible_check(outcome)
    assert (check["status"], check["reason"]) == ("passed", None)
    assert check["detail"] == {"fields_compared": ["supplier.iban", "totals.tax", "totals.gross", "totals.amount_due"]}
    assert outcome.reasons == []


def test_a_factur_x_pdf_whose_xml_states_other_totals_goes_to_review():
    outcome = judged(facturx_with_xml(line_two_costs_100_more(elektron_xml())))

    check = visible_check(outcome)
    assert (check["status"], check["reason"], check["field"]) == (
        "failed",
        "visible_and_embedded_disagree",
        "totals.tax",
    )
    assert check["detail"] == {
        "not_printed": [
            {"field": "totals.tax", "value": "66.9"},
            {"field": "totals.gross", "value": "419"},
            {"field": "totals.amount_due", "value": "419"},
        ]
    }
    # The XML is consistent in itself: the visible copy is the only thing it disagrees with.
    assert outcome.reasons == ["visible_and_embedded_disagree"]


def test_a_factur_x_pdf_whose_xml_names_another_iban_goes_to_review():
    xml = elektron_xml().replace(b"DE91100000000123456789", b"DE89370400440532013000")

    outcome = judged(facturx_with_xml(xml))

    check = visible_check(outcome)
    assert check["detail"] == {"not_printed": [{"field": "supplier.iban", "value": "DE89370400440532013000"}]}
    assert outcome.reasons == ["visible_and_embedded_disagree"]


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        (DocumentText(pages=("INVOICE ...",), source="einvoice_xml", einvoice_page=1), "no_embedded_einvoice"),
        (DocumentText(pages=("Invoice 1\nTotal 10.00 EUR",), source="pdf_text_layer"), "no_embedded_einvoice"),
        (DocumentText(pages=("", "INVOICE ..."), source="ocr", einvoice_page=2), "no_visible_text"),
    ],
)
def test_documents_without_two_copies_skip_the_comparison(document: DocumentText, reason: str):
    answer = json.loads(_judged(facturx_with_xml(elektron_xml()))[1])

    outcome = check_invoice(
        invoice=parse_invoice_v1(json.dumps(answer)),
        document=document,
        allowed_currencies=["EUR"],
        overrides={},
        master=MasterData(has_records=False, supplier=None),
    )

    check = visible_check(outcome)
    assert (check["status"], check["reason"]) == ("skipped", reason)


def test_a_factur_x_pdfs_values_keep_where_its_visible_pages_print_them():
    pdf = ELEKTRON_PDF.read_bytes()
    xml = einvoice_xml_of(pdf, "application/pdf")
    assert xml is not None
    document = with_embedded_einvoice(extract_document_text(pdf, "application/pdf"), xml)

    answer = answer_from_einvoice(xml, document, schema="invoice.v2")

    assert answer is not None
    visible = answer.provenance()["visible"]
    assert visible["totals.gross"] == {"page": 2, "start": 1353, "end": 1359, "quote": "300,00"}
    assert visible["issue_date"]["quote"] == "25.04.2018"
    assert visible["supplier.iban"]["quote"] == "DE91100000000123456789"
    for evidence in visible.values():
        assert document.span(evidence["page"], evidence["start"], evidence["end"]) == evidence["quote"]
        assert evidence["page"] < document.einvoice_page  # a visible page, not the printed XML


def test_an_uploaded_xml_has_no_visible_copy_to_point_into():
    invoice_xml = (ELEKTRON_PDF.parent.parent / "CII/EN16931_Elektron.cii.xml").read_bytes()
    document = extract_document_text(invoice_xml, "application/xml")

    answer = answer_from_einvoice(invoice_xml, document, schema="invoice.v2")

    assert answer is not None and "visible" not in answer.provenance()
